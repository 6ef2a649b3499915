rule fetch_corpus:
    output:
        corpus=paths.CORPUS,
    params:
        identity=PLAN.data_identity,
    log:
        str(paths.log("fetch_corpus")),
    message:
        "Fetching and verifying the corpus"
    localrule: True
    shell:
        "python -m attnlab.core.corpus --out {output.corpus} > {log} 2>&1"
