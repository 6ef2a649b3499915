rule fetch_corpus:
    output:
        corpus=paths.CORPUS,
    params:
        identity=data_identity,
    log:
        str(paths.LOGS / "fetch_corpus.log"),
    message:
        "Fetching and verifying the corpus"
    shell:
        "python -m attnlab.core.corpus --out {output.corpus} > {log} 2>&1"
