rule collect_tables:
    input:
        known=known_cells,
        auto=auto_cells,
        src=src_closure("attnlab.tables"),
    output:
        tables=TABLES,
    params:
        grid=grid_json,
        out="results/tables",
    log:
        "results/logs/collect_tables.log",
    message:
        "Collecting every bundle into tables"
    shell:
        "python -m attnlab.tables collect --grid {params.grid} --out {params.out} {input.known} {input.auto} > {log} 2>&1"
