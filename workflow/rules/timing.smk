# The training step of the baseline and A³ timed in one process, the variants taking turns
# (attnlab.training.step_timing): what the ledger's compute-overhead row reads, free of the machine's drift
# between training jobs. Its params are what it times: the contest cells' config slice and the code it runs.


if PLAN.step_times:

    rule step_times:
        output:
            times=PLAN.step_times,
        log:
            str(paths.log("step_times")),
        threads: 1
        resources:
            mem_mb=PLAN.timing_mem_mb,
            gpu=PLAN.train_gpu(),
        params:
            cell=PLAN.timing_config(),
            code=PLAN.timing_code(),
            variants=" ".join(PLAN.timed_variants),
        message:
            "Timing the training step of {params.variants}, interleaved in one process"
        shell:
            "python -m attnlab.training.step_timing --cell-config {params.cell} --variants {params.variants} "
            "--threads {threads} --out {output.times} > {log} 2>&1"
