rule fetch_corpus:
    output:
        corpus=CORPUS,
    params:
        identity=data_identity,
    log:
        "results/logs/fetch_corpus.log",
    message:
        "Fetching and verifying the corpus"
    shell:
        "python -m attnlab.data --out {output.corpus} > {log} 2>&1"
