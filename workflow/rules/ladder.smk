# The scale ladder (config/ladder.yaml): a study named `ladder`, whose points are model sizes (rungs) and, at
# one rung, training lengths, also gets the ladder tables (attnlab.pipeline.tables.ladder), every check of the
# ledger at each of its points (attnlab.pipeline.claims.ladder_points), its figures (the figure catalog's ladder
# entries), the ledger's scale rows and the writeup's Scale section. Both rules read the study's cells as its
# study table does (studies.smk).

if PLAN.ladder:

    rule ladder_table:
        input:
            bundles=PLAN.ladder_cells,
            expected=PLAN.ladder_expectation(),
        output:
            tables=update(PLAN.ladder_tables),
        log:
            str(paths.log("ladder_table")),
        localrule: True
        params:
            code=PLAN.pipeline_code("attnlab.pipeline.tables.ladder"),
            study=PLAN.ladder_json,
            out=paths.TABLES,
        message:
            "Collecting the scale ladder: each rung x variant, paired by seed with softmax"
        shell:
            "python -m attnlab.pipeline.tables.ladder --study {params.study} --expect {input.expected} "
            "--out {params.out} > {log} 2>&1"

    rule ladder_claims:
        input:
            bundles=PLAN.ladder_cells,
            expected=PLAN.ladder_expectation(),
        output:
            tables=update(PLAN.ladder_claims),
        log:
            str(paths.log("ladder_claims")),
        localrule: True
        params:
            code=PLAN.pipeline_code("attnlab.pipeline.claims.ladder_points"),
            study=PLAN.ladder_json,
            out=paths.TABLES,
        message:
            "Checking every claim of the ledger at each rung of the scale ladder"
        shell:
            "python -m attnlab.pipeline.claims.ladder_points --study {params.study} --expect {input.expected} "
            "--out {params.out} > {log} 2>&1"
