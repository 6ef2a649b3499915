# The rules that train: every cell of every study, into paths.CELL_PATTERN (<place> is runs for the
# contest and the sweep, studies/<study>/<axis values> for the config's own studies, as paths.place says).
# Their params are the cells' identity: the config slice of their folder and the code they run, and the job's
# threads, which are its cells' XLA pool (a job whose threads change runs again, and the trainer retrains the
# cells of another pool).
#
# With execution.pack_size above 1 (the default), one rule per pack of cells (attnlab.pipeline.plan.packs):
# its outputs are the pack's bundles, flagged `update` so Snakemake keeps the finished ones when the pack runs
# again, and the trainer leaves every bundle that is already current as it is. With 1, train_cell: one cell
# per job, through the same trainer (a pack of one).


if PLAN.packs:
    for pack in PLAN.packs:

        rule:
            name:
                pack.rule
            input:
                corpus=ancient(str(paths.CORPUS)),
            output:
                bundles=[update(directory(bundle)) for bundle in pack.outputs()],
            priority: PLAN.pack_priority(pack)
            threads: 1
            resources:
                mem_mb=PLAN.pack_mem_mb(pack),
                gpu=PLAN.train_gpu(),
            params:
                cell=PLAN.cell_config(pack),
                code=PLAN.training_code(pack),
                pool=PLAN.pack_pool(pack),
                cells=pack.cell_arguments,
                variant=pack.variant,
                root=str(paths.RESULTS / pack.place),
                checkpoints=PLAN.checkpoint_root(pack),
                cache=paths.COMPILE_CACHE,
                log=PLAN.pack_log(pack),
            message:
                f"Training the pack {pack.describe()}"
            shell:
                "python -m attnlab.training.pack --cell-config {params.cell} "
                "--variant {params.variant} {params.cells} --corpus {input.corpus} --out-root {params.root} "
                "--code-fingerprint {params.code} --checkpoint-dir {params.checkpoints} "
                "--compile-cache {params.cache} --threads {threads} --watch-pid $PPID --log {params.log}"

else:

    rule train_cell:
        input:
            corpus=ancient(str(paths.CORPUS)),
        output:
            bundle=update(directory(str(paths.CELL_PATTERN))),
        priority: PLAN.cell_priority
        threads: 1
        resources:
            mem_mb=PLAN.train_mem_mb,
            gpu=PLAN.train_gpu,
        params:
            cell=PLAN.cell_config,
            code=PLAN.training_code,
            pool=PLAN.cell_pool(),
            root=PLAN.cell_root,
            checkpoints=PLAN.checkpoint_root,
            cache=paths.COMPILE_CACHE,
            log=PLAN.cell_log,
        message:
            f"Training {{wildcards.variant}} lr={{wildcards.lr}} seed={{wildcards.seed}} "
            f"in {paths.RESULTS}/{{wildcards.place}}"
        shell:
            # A pack of one: a current bundle is left as it is, so switching to or from packs retrains nothing.
            # --watch-pid $PPID: the trainer exits if this Snakemake dies, so no orphan writes a bundle later.
            # --log: the trainer writes its log itself, under a lock, so a second build with --nolock is refused
            # and the first one's log stays whole (attnlab.training.files.job_log). It is a param, not a `log:`:
            # Snakemake removes a job's `log:` files when it starts the job, a running one's too.
            "python -m attnlab.training.pack --cell-config {params.cell} --variant {wildcards.variant} "
            "--cell {wildcards.lr},{wildcards.seed} --corpus {input.corpus} --out-root {params.root} "
            "--code-fingerprint {params.code} --checkpoint-dir {params.checkpoints} --compile-cache {params.cache} "
            "--threads {threads} --watch-pid $PPID --log {params.log}"


checkpoint select_lr:
    input:
        bundles=PLAN.sweep_cells,
    output:
        choice=str(paths.SELECTED_LR_PATTERN),
    log:
        str(paths.log("select_lr", "{variant}")),
    localrule: True
    params:
        code=PLAN.pipeline_code("attnlab.pipeline.tables"),
    message:
        "Choosing {wildcards.variant}'s contest LR from its sweep"
    shell:
        "python -m attnlab.pipeline.tables select-lr --out {output.choice} {input.bundles} > {log} 2>&1"


# A sweep that brackets (sweep.extend; attnlab.pipeline.ground.sweep_extension): step k reads the variant's grid and
# the k LRs added so far, and asks for one more beyond an edge while the best sits there and the limit allows;
# select_lr reads the cells of every LR the steps added.
checkpoint extend_sweep:
    input:
        bundles=PLAN.step_cells,
        settings=PLAN.step_settings,
    output:
        step=str(paths.SWEEP_STEP_PATTERN),
    log:
        str(paths.log("extend_sweep", "{variant}-step{step}")),
    wildcard_constraints:
        step=r"\d+",
    localrule: True
    params:
        grid=PLAN.step_config,
        code=PLAN.pipeline_code("attnlab.pipeline.tables"),
    message:
        "Deciding whether {wildcards.variant}'s sweep needs one more LR beyond its grid (step {wildcards.step})"
    shell:
        "python -m attnlab.pipeline.tables extend-sweep --grid {params.grid} --step {wildcards.step} "
        "--out {output.step} {input.bundles} > {log} 2>&1"
