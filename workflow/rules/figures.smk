# One rule per figure, generated from the figure catalog (attnlab.pipeline.ground.figure_catalog): its
# module, the tables it reads, its outputs and its caption. A figure reads tables (and the bundles
# runs.csv points at), never trains; its params are the fingerprint of the code it imports and the
# `figures` config section, so editing one figure module or a colour reruns only figures. The figures
# a build draws are the plan's (a study's figures only when the config has that study), and one
# caption per figure is the single source of the Snakemake report's captions and the writeup's.

for figure in PLAN.drawn:

    rule:
        name:
            figure.rule
        input:
            **PLAN.figure_inputs(figure),
        output:
            **PLAN.figure_outputs(figure, report, update),
        log:
            str(paths.LOGS / "figures" / f"{figure.name}.log"),
        priority: PLAN.figure_priority(figure)
        localrule: True
        params:
            code=PLAN.pipeline_code(figure.module),
            style=PLAN.figure_style,
            module=figure.module,
            tables=PLAN.figure_arguments(figure),
            poster=PLAN.figure_poster(figure),
        message:
            figure.message
        shell:
            "python -m {params.module} {params.tables} --style {params.style} --out {output.file} {params.poster} "
            "> {log} 2>&1"
