# One rule per figure. A figure reads tables (and the bundles runs.csv points at), never trains;
# its inputs are exactly the tables it reads, its params the fingerprint of the code it imports and
# the `figures` config section, so editing one figure module or a colour reruns only figures.

FIGURE_DIR = paths.FIGURES
RUNS_TABLE = str(paths.RUNS_TABLE)
CONTEST_TABLE = str(paths.table("contest"))
SWEEP_TABLE = str(paths.table("lr_sweep"))
SCORE_TABLE = str(paths.table("score_scale"))
BEST_LR_TABLE = str(paths.table("best_lr"))

FIGURES = [
    str(FIGURE_DIR / name)
    for name in (
        "loss_curves.png",
        "loss_curves.gif",
        "lr_sweep.png",
        "depth_grid.png",
        "training_maps.png",
        "reading.gif",
        "score_orbit.gif",
        "scalars.png",
        "a3_gates.png",
        "entropy.png",
        "score_scale.png",
        "mass_auroc.png",
        "paired_differences.png",
    )
]
# One caption per figure, the single source of both the Snakemake report's captions and the
# writeup's numbered ones (the writeup reads them; editing a caption reruns only the writeup).
CAPTION_DIR = REPO / "workflow" / "report"
CAPTIONS = sorted(str(path.relative_to(REPO)) for path in CAPTION_DIR.glob("*.rst"))


def figure_style(wildcards=None):
    """The `figures` config section as shell-quoted JSON: presentation only, never retrains."""
    return shlex.quote(attnlab_config.to_json(config.get("figures", {})))


rule figure_loss_curves:
    input:
        runs=RUNS_TABLE,
        contest=CONTEST_TABLE,
    output:
        png=report(
            str(FIGURE_DIR / "loss_curves.png"),
            caption="../report/loss_curves.rst",
            category="Figures",
        ),
        gif=report(
            str(FIGURE_DIR / "loss_curves.gif"),
            caption="../report/loss_curves.gif.rst",
            category="Figures",
        ),
    params:
        code=pipeline_code("attnlab.pipeline.figures.loss_curves"),
        style=figure_style,
    log:
        "results/logs/figures/loss_curves.log",
    message:
        "Drawing the contest runs' validation-loss curves (still and animated)"
    shell:
        "python -m attnlab.pipeline.figures.loss_curves --runs {input.runs} --contest {input.contest} "
        "--style {params.style} --out {output.png} --gif {output.gif} > {log} 2>&1"


rule figure_lr_sweep:
    input:
        sweep=SWEEP_TABLE,
        contest=CONTEST_TABLE,
    output:
        png=report(
            str(FIGURE_DIR / "lr_sweep.png"),
            caption="../report/lr_sweep.rst",
            category="Figures",
        ),
    params:
        code=pipeline_code("attnlab.pipeline.figures.lr_sweep"),
        style=figure_style,
    log:
        "results/logs/figures/lr_sweep.log",
    message:
        "Drawing best validation loss against learning rate"
    shell:
        "python -m attnlab.pipeline.figures.lr_sweep --sweep {input.sweep} --contest {input.contest} "
        "--style {params.style} --out {output.png} > {log} 2>&1"


rule figure_depth_grid:
    input:
        runs=RUNS_TABLE,
        contest=CONTEST_TABLE,
    output:
        png=report(
            str(FIGURE_DIR / "depth_grid.png"),
            caption="../report/depth_grid.rst",
            category="Figures",
        ),
    params:
        code=pipeline_code("attnlab.pipeline.figures.depth_grid"),
        style=figure_style,
    log:
        "results/logs/figures/depth_grid.log",
    message:
        "Drawing trained attention maps through depth"
    shell:
        "python -m attnlab.pipeline.figures.depth_grid --runs {input.runs} --contest {input.contest} "
        "--style {params.style} --out {output.png} > {log} 2>&1"


rule figure_training_maps:
    input:
        runs=RUNS_TABLE,
        contest=CONTEST_TABLE,
    output:
        png=report(
            str(FIGURE_DIR / "training_maps.png"),
            caption="../report/training_maps.rst",
            category="Figures",
        ),
    params:
        code=pipeline_code("attnlab.pipeline.figures.training_maps"),
        style=figure_style,
    log:
        "results/logs/figures/training_maps.log",
    message:
        "Drawing one head's attention map at the four training checkpoints"
    shell:
        "python -m attnlab.pipeline.figures.training_maps --runs {input.runs} --contest {input.contest} "
        "--style {params.style} --out {output.png} > {log} 2>&1"


rule figure_reading:
    input:
        runs=RUNS_TABLE,
        contest=CONTEST_TABLE,
    output:
        gif=report(
            str(FIGURE_DIR / "reading.gif"),
            caption="../report/reading.rst",
            category="Figures",
        ),
    params:
        code=pipeline_code("attnlab.pipeline.figures.reading"),
        style=figure_style,
    log:
        "results/logs/figures/reading.log",
    message:
        "Animating one head of every variant reading the window, query by query"
    shell:
        "python -m attnlab.pipeline.figures.reading --runs {input.runs} --contest {input.contest} "
        "--style {params.style} --out {output.gif} > {log} 2>&1"


rule figure_score_orbit:
    input:
    output:
        gif=report(
            str(FIGURE_DIR / "score_orbit.gif"),
            caption="../report/score_orbit.rst",
            category="Figures",
        ),
    params:
        code=pipeline_code("attnlab.pipeline.figures.score_orbit"),
        style=figure_style,
    log:
        "results/logs/figures/score_orbit.log",
    message:
        "Animating the bilinear and Yat scores of an orbiting query (analytic, no runs)"
    shell:
        "python -m attnlab.pipeline.figures.score_orbit --style {params.style} --out {output.gif} > {log} 2>&1"


rule figure_scalars:
    input:
        runs=RUNS_TABLE,
        contest=CONTEST_TABLE,
    output:
        png=report(
            str(FIGURE_DIR / "scalars.png"),
            caption="../report/scalars.rst",
            category="Figures",
        ),
    params:
        code=pipeline_code("attnlab.pipeline.figures.scalars"),
        style=figure_style,
    log:
        "results/logs/figures/scalars.log",
    message:
        "Drawing yat_b's learned b and epsilon per layer and head"
    shell:
        "python -m attnlab.pipeline.figures.scalars --runs {input.runs} --contest {input.contest} "
        "--style {params.style} --out {output.png} > {log} 2>&1"


rule figure_a3_gates:
    input:
        runs=RUNS_TABLE,
        contest=CONTEST_TABLE,
    output:
        png=report(
            str(FIGURE_DIR / "a3_gates.png"),
            caption="../report/a3_gates.rst",
            category="Figures",
        ),
    params:
        code=pipeline_code("attnlab.pipeline.figures.a3_gates"),
        style=figure_style,
    log:
        "results/logs/figures/a3_gates.log",
    message:
        "Drawing the A3 gate and bias per layer and head"
    shell:
        "python -m attnlab.pipeline.figures.a3_gates --runs {input.runs} --contest {input.contest} "
        "--style {params.style} --out {output.png} > {log} 2>&1"


rule figure_entropy:
    input:
        runs=RUNS_TABLE,
        contest=CONTEST_TABLE,
    output:
        png=report(
            str(FIGURE_DIR / "entropy.png"),
            caption="../report/entropy.rst",
            category="Figures",
        ),
    params:
        code=pipeline_code("attnlab.pipeline.figures.entropy"),
        style=figure_style,
    log:
        "results/logs/figures/entropy.log",
    message:
        "Drawing the attention-entropy distributions"
    shell:
        "python -m attnlab.pipeline.figures.entropy --runs {input.runs} --contest {input.contest} "
        "--style {params.style} --out {output.png} > {log} 2>&1"


rule figure_score_scale:
    input:
        score_scale=SCORE_TABLE,
        contest=CONTEST_TABLE,
    output:
        png=report(
            str(FIGURE_DIR / "score_scale.png"),
            caption="../report/score_scale.rst",
            category="Figures",
        ),
    params:
        code=pipeline_code("attnlab.pipeline.figures.score_scale"),
        style=figure_style,
    log:
        "results/logs/figures/score_scale.log",
    message:
        "Drawing the attention score scale per layer and per seed"
    shell:
        "python -m attnlab.pipeline.figures.score_scale --score-scale {input.score_scale} "
        "--contest {input.contest} --style {params.style} --out {output.png} > {log} 2>&1"


rule figure_mass_auroc:
    input:
        runs=RUNS_TABLE,
        contest=CONTEST_TABLE,
    output:
        png=report(
            str(FIGURE_DIR / "mass_auroc.png"),
            caption="../report/mass_auroc.rst",
            category="Figures",
        ),
    params:
        code=pipeline_code("attnlab.pipeline.figures.mass_auroc"),
        style=figure_style,
    log:
        "results/logs/figures/mass_auroc.log",
    message:
        "Drawing the kernel mass against next-token correctness (ROC and distributions)"
    shell:
        "python -m attnlab.pipeline.figures.mass_auroc --runs {input.runs} --contest {input.contest} "
        "--style {params.style} --out {output.png} > {log} 2>&1"


rule figure_paired_differences:
    input:
        runs=RUNS_TABLE,
        contest=CONTEST_TABLE,
        best_lr=BEST_LR_TABLE,
    output:
        png=report(
            str(FIGURE_DIR / "paired_differences.png"),
            caption="../report/paired_differences.rst",
            category="Figures",
        ),
    params:
        code=pipeline_code("attnlab.pipeline.figures.paired_differences"),
        style=figure_style,
    log:
        "results/logs/figures/paired_differences.log",
    message:
        "Drawing each variant's paired difference from softmax with its interval"
    shell:
        "python -m attnlab.pipeline.figures.paired_differences --runs {input.runs} --contest {input.contest} "
        "--best-lr {input.best_lr} --style {params.style} --out {output.png} > {log} 2>&1"
