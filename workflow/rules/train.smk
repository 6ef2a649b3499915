rule train_cell:
    input:
        corpus=CORPUS,
        src=train_sources,
    output:
        bundle=directory("results/runs/{variant}/lr{lr}/seed{seed}"),
    params:
        cell=cell_config_json,
        checkpoints="results/checkpoints/{variant}/lr{lr}/seed{seed}",
        cache=COMPILE_CACHE,
    threads: config["train"]["threads"]
    resources:
        mem_mb=config["train"]["mem_mb"],
    log:
        "results/logs/train/{variant}/lr{lr}/seed{seed}.log",
    message:
        "Training {wildcards.variant} lr={wildcards.lr} seed={wildcards.seed}"
    shell:
        "python -m attnlab.train --cell-config {params.cell} --variant {wildcards.variant} "
        "--lr {wildcards.lr} --seed {wildcards.seed} --corpus {input.corpus} --out {output.bundle} "
        "--checkpoint-dir {params.checkpoints} --compile-cache {params.cache} --threads {threads} "
        "2>&1 | tee {log}"


checkpoint select_lr:
    input:
        bundles=sweep_cells,
        src=src_closure("attnlab.tables"),
    output:
        choice="results/selected_lr/{variant}.json",
    log:
        "results/logs/select_lr/{variant}.log",
    message:
        "Choosing {wildcards.variant}'s contest LR from its sweep"
    shell:
        "python -m attnlab.tables select-lr --out {output.choice} {input.bundles} > {log} 2>&1"
