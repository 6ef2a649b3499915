rule collect_tables:
    input:
        known=known_cells,
        auto=auto_cells,
    output:
        tables=TABLES,
    params:
        code=pipeline_code("attnlab.pipeline.tables"),
        grid=grid_json,
        out=paths.TABLES,
    log:
        str(paths.LOGS / "collect_tables.log"),
    message:
        "Collecting every bundle into tables"
    shell:
        "python -m attnlab.pipeline.tables collect --grid {params.grid} --out {params.out} {input.known} {input.auto} > {log} 2>&1"
