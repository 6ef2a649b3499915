# The scale ladder (config/ladder.yaml): a study named `ladder`, whose points are model sizes (rungs) and, at
# one rung, training lengths, also gets the ladder tables (attnlab.pipeline.tables.ladder), every check of the
# ledger at each of its points (attnlab.pipeline.claims.rungs), its figures (the figure catalog's ladder
# entries), the ledger's scale rows and the writeup's Scale section. Both rules read the study's cells as its
# study table does (studies.smk).

from types import SimpleNamespace  # noqa: E402

LADDER = attnlab_studies.LADDER in STUDIES
LADDER_TABLES = [str(paths.TABLES / f) for name in ("ladder", "ladder_seeds") for f in table_contract.files(name)]
LADDER_CLAIMS = [str(paths.TABLES / f) for f in table_contract.files("ladder_claims")]
# What a build with a ladder adds to rule all, the ledger and the writeup (nothing without one).
LADDER_OUTPUTS = LADDER_TABLES + LADDER_CLAIMS if LADDER else []
_LADDER = SimpleNamespace(study=attnlab_studies.LADDER)  # the wildcards of the ladder's study table

if LADDER:

    rule ladder_table:
        input:
            bundles=lambda wildcards: study_cells(_LADDER),
            expected=EXPECTED_STUDY[attnlab_studies.LADDER],
        output:
            tables=LADDER_TABLES,
        params:
            code=pipeline_code("attnlab.pipeline.tables.ladder"),
            study=lambda wildcards: study_json(_LADDER),
            out=paths.TABLES,
        log:
            str(paths.log("ladder_table")),
        message:
            "Collecting the scale ladder: each rung x variant, paired by seed with softmax"
        localrule: True
        shell:
            "python -m attnlab.pipeline.tables.ladder --study {params.study} --expect {input.expected} "
            "--out {params.out} > {log} 2>&1"

    rule ladder_claims:
        input:
            bundles=lambda wildcards: study_cells(_LADDER),
            expected=EXPECTED_STUDY[attnlab_studies.LADDER],
        output:
            tables=LADDER_CLAIMS,
        params:
            code=pipeline_code("attnlab.pipeline.claims.rungs"),
            study=lambda wildcards: study_json(_LADDER),
            out=paths.TABLES,
        log:
            str(paths.log("ladder_claims")),
        message:
            "Checking every claim of the ledger at each rung of the scale ladder"
        localrule: True
        shell:
            "python -m attnlab.pipeline.claims.rungs --study {params.study} --expect {input.expected} "
            "--out {params.out} > {log} 2>&1"
