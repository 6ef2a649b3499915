rule fetch_corpus:
    output:
        corpus=paths.CORPUS,
    log:
        str(paths.log("fetch_corpus")),
    localrule: True
    params:
        identity=PLAN.data_identity,
    message:
        "Fetching and verifying the corpus"
    shell:
        "python -m attnlab.core.corpus --out {output.corpus} > {log} 2>&1"
