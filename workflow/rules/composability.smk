# Composability: when the config has a `composability:` section, every variant also trains
# at each listed kv_heads x attention_impl, from the contest seeds at its contest LR, into
# results/composability/kv<k>-<impl>/<variant>/lr<lr>/seed<seed>/. One table and the ledger's
# "composes with GQA/MQA/flash" row read them (attnlab.pipeline.composability).

COMPOSABILITY = config.get("composability") or {}
COMPOSABILITY_TABLES = [str(paths.table("composability", ext)) for ext in ("csv", "md", "tex")] + [
    str(paths.table("composability_verdict", "json"))]


def composability_cells(wildcards=None):
    """Every composability bundle of the grid (contest LRs must be numbers: the variants are compared at one)."""
    grid = attnlab_grid.grid(config, selected_lrs())
    return [str(paths.composability_bundle(kv, impl, variant, lr, seed))
            for kv in COMPOSABILITY.get("kv_heads", []) for impl in COMPOSABILITY.get("attention_impls", [])
            for variant, lr in grid["contest_lr"].items() for seed in grid["contest_seeds"]]


def composability_slice(kv, impl):
    """The cell slice with this run's kv_heads and attention path: the only differences from the contest cell."""
    sliced = attnlab_config.cell_slice(config)
    sliced["model"] = dict(sliced["model"], kv_heads=int(kv), attention_impl=impl)
    return sliced


def composability_cell_json(wildcards):
    return shlex.quote(attnlab_config.to_json(composability_slice(wildcards.kv, wildcards.impl)))


# What every composability run must have been trained with, per kv<k>-<impl> folder (collect.smk).
EXPECTED_COMPOSABILITY = expected_file({
    str(paths.COMPOSABILITY / f"kv{int(kv)}-{impl}"): composability_slice(kv, impl)
    for kv in COMPOSABILITY.get("kv_heads", []) for impl in COMPOSABILITY.get("attention_impls", [])
}, "train_composability_cell") if COMPOSABILITY else []


rule train_composability_cell:
    input:
        corpus=paths.CORPUS,
    output:
        bundle=directory(str(paths.COMPOSABILITY_PATTERN)),
    params:
        cell=composability_cell_json,
        code=training_code,
        checkpoints=str(paths.CHECKPOINTS / "composability" / "kv{kv}-{impl}"),
        cache=paths.COMPILE_CACHE,
    wildcard_constraints:
        kv="[0-9]+",
        impl="dense|blockwise",
    threads: 1
    resources:
        mem_mb=train_mem_mb,
    log:
        str(paths.LOGS / "composability" / "kv{kv}-{impl}" / "{variant}" / "lr{lr}" / "seed{seed}.log"),
    message:
        "Training {wildcards.variant} with kv_heads={wildcards.kv}, {wildcards.impl} attention"
    shell:
        "set -o pipefail; python -m attnlab.training.train --cell-config {params.cell} --variant {wildcards.variant} "
        "--lr {wildcards.lr} --seed {wildcards.seed} --corpus {input.corpus} --out {output.bundle} "
        "--code-fingerprint {params.code} --checkpoint-dir {params.checkpoints} --compile-cache {params.cache} "
        "--threads {threads} --watch-pid $PPID 2>&1 | tee {log}"


rule composability_table:
    input:
        bundles=composability_cells,
        expected=EXPECTED_COMPOSABILITY,
    output:
        tables=COMPOSABILITY_TABLES,
    params:
        code=pipeline_code("attnlab.pipeline.composability", "attnlab.pipeline.tables"),
        heads=config["model"]["heads"],
        out=paths.TABLES,
    log:
        str(paths.LOGS / "composability_table.log"),
    message:
        "Collecting the composability runs (GQA/MQA x dense/blockwise) into a table and a verdict"
    shell:
        # First every run is checked against what the grid expects of it (a stale run stops the table).
        "(python -m attnlab.pipeline.tables check --expect {input.expected} {input.bundles} && "
        "python -m attnlab.pipeline.composability --heads {params.heads} --out {params.out} {input.bundles}) "
        "> {log} 2>&1"
