# The config's own studies (`studies:`): each gets its tables, study_<name> and runs_<name>, from the bundles
# of its cells (attnlab.pipeline.tables.study). train_cell trains the cells; a cell an earlier study also has
# is read from that study's folder. A study named `composability` also gets the composability table and the
# ledger's verdict on it (attnlab.pipeline.composability).


rule study_table:
    input:
        bundles=PLAN.study_cells,
        expected=PLAN.study_expectation,
    output:
        tables=update([str(paths.study_table("{study}", ext)) for ext in contract.DISPLAYED]),
        runs=update(str(paths.study_runs("{study}"))),
    log:
        str(paths.log("study_table", "{study}")),
    localrule: True
    params:
        code=PLAN.pipeline_code("attnlab.pipeline.tables.study"),
        study=PLAN.study_json,
        out=paths.TABLES,
    message:
        "Collecting study {wildcards.study} into its tables"
    shell:
        "python -m attnlab.pipeline.tables.study --study {params.study} --expect {input.expected} --out {params.out} "
        "> {log} 2>&1"


rule composability_table:
    input:
        bundles=PLAN.composability_cells,
        expected=PLAN.composability_expectation(),
    output:
        tables=update(PLAN.composability_tables),
    log:
        str(paths.log("composability_table")),
    localrule: True
    params:
        code=PLAN.pipeline_code("attnlab.pipeline.composability", "attnlab.pipeline.tables"),
        heads=config["model"]["heads"],
        out=paths.TABLES,
    message:
        "Collecting the composability study (GQA/MQA x dense/blockwise) into a table and a verdict"
    shell:
        # First every run is checked against what the grid expects of it (a stale run stops the table).
        "(python -m attnlab.pipeline.tables check --expect {input.expected} {input.bundles} && "
        "python -m attnlab.pipeline.composability --heads {params.heads} --out {params.out} {input.bundles}) "
        "> {log} 2>&1"
