# ---- what every bundle must have been trained with (attnlab.pipeline.plan.expectation)
#
# Collection compares each bundle's recorded config slice and code fingerprint with what this grid
# expects for its cell. The expectation is a file named by the digest of its content, inside .snakemake/,
# written while the Snakefile is read (common.smk; attnlab.pipeline.plan.expectation says why): a changed
# expectation is a new file, newer than the tables, so collection reruns and checks.


rule collect_tables:
    input:
        **PLAN.auto_cell_inputs(),
        known=PLAN.known_cells,
        expected=PLAN.expected_runs,
        settings=PLAN.contest_settings,
    output:
        # update: a failed collection puts the last good tables back (Snakemake keeps a backup), instead of
        # leaving none while the figures and the writeup made from them stay
        tables=update(PLAN.tables),
    log:
        str(paths.log("collect_tables")),
    localrule: True
    params:
        code=PLAN.pipeline_code("attnlab.pipeline.tables"),
        grid=PLAN.grid_json,
        out=paths.TABLES,
    message:
        "Collecting every bundle into tables"
    shell:
        "python -m attnlab.pipeline.tables collect --grid {params.grid} --expect {input.expected} --out {params.out} "
        "{input.known} " + "".join(f"{{input.{name}}} " for name in PLAN.auto_cell_inputs()) + "> {log} 2>&1"
