# ---- what every bundle must have been trained with
#
# Collection compares each bundle's recorded config slice and code fingerprint with what this grid
# expects for its cell, so a stale bundle (trained by hand with another config, or by other code
# while Snakemake's records were lost with .snakemake/) stops the build by name instead of being
# collected. The expectation travels as a file named by the digest of its content, inside
# .snakemake/ on purpose:
#   - a changed expectation (a model edit, a new train.steps) is a new file, newer than the tables,
#     so collection reruns and checks, even when Snakemake has no records left to compare params;
#   - an unchanged one keeps its old file and time, so a dry run or a reverted edit reruns nothing;
#   - removing .snakemake/ removes the files too, and the next run checks every bundle again.
# The files are written while the Snakefile is read, before Snakemake plans: an input that appeared
# while the plan is built would be missed by Snakemake's own view of the folder.

import hashlib  # noqa: E402

from attnlab.core.io import atomic_write_text  # noqa: E402

EXPECTED = Path(".snakemake") / "attnlab" / "expected"
# The command line of this build, for the fix a stale bundle's message names (never a param: it is no input).
os.environ["ATTNLAB_SNAKEMAKE_COMMAND"] = shlex.join(["snakemake", *sys.argv[1:]])


def expected_file(slices, rule):
    """The file of {"code": {variant: fingerprint}, "slices": {folder: config slice}, "rule": the rule that
    trains those folders' cells} (attnlab.pipeline.tables.check_expected)."""
    code_of = {variant: code.training_fingerprint(variant, src=SRC) for variant in config["variants"]}
    content = attnlab_config.to_json({"code": code_of, "slices": slices, "rule": rule}) + "\n"
    path = EXPECTED / f"{hashlib.sha256(content.encode()).hexdigest()[:20]}.json"
    try:
        if not path.is_file() or path.read_text() != content:
            atomic_write_text(path, content)
    except OSError as err:
        raise WorkflowError(f"cannot write {path} ({err}); collection needs it: make the workspace writable")
    return str(path)


def expected_slices(*studies):
    """{folder: config slice} of every folder these studies' cells are read from."""
    slices = {}
    for study in studies:
        slices.update({str(paths.RESULTS / place): sliced for place, sliced in GRID.slices(study).items()})
    return slices


EXPECTED_RUNS = expected_file(expected_slices(attnlab_studies.CONTEST, attnlab_studies.SWEEP), "train_cell")


rule collect_tables:
    input:
        known=known_cells,
        auto=auto_cells,
        expected=EXPECTED_RUNS,
    output:
        tables=TABLES,
    params:
        code=pipeline_code("attnlab.pipeline.tables"),
        grid=grid_json,
        out=paths.TABLES,
    log:
        str(paths.log("collect_tables")),
    message:
        "Collecting every bundle into tables"
    localrule: True
    shell:
        "python -m attnlab.pipeline.tables collect --grid {params.grid} --expect {input.expected} --out {params.out} "
        "{input.known} {input.auto} > {log} 2>&1"
