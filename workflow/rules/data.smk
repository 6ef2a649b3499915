rule fetch_corpus:
    output:
        corpus=CORPUS,
    params:
        identity=data_identity,
        data=data_config_json,
    log:
        "results/logs/fetch_corpus.log",
    message:
        "Fetching and verifying the corpus"
    shell:
        "python -m attnlab.data --cell-config {params.data} --out {output.corpus} > {log} 2>&1"
