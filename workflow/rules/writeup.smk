WRITEUP = ["results/writeup/writeup.ipynb", "results/writeup/writeup.html"]


rule writeup:
    input:
        notebook="notebooks/writeup.py",
        template="notebooks/paper.html.j2",
        tables=TABLES,
        figures=FIGURES,
        captions=CAPTIONS,
        composability=COMPOSABILITY_TABLES if COMPOSABILITY else [],
    output:
        notebook="results/writeup/writeup.ipynb",
        html="results/writeup/writeup.html",
    params:
        code=pipeline_code(
            "attnlab.pipeline.claims",
            "attnlab.pipeline.report",
            "attnlab.pipeline.environment",
            "attnlab.core.telemetry_stats",
        ),
    log:
        "results/logs/writeup.log",
    message:
        "Executing the writeup notebook"
    shell:
        # Build in a scratch folder, then move: a failed execution leaves no half-written writeup,
        # and the trap removes the scratch folder whether the build succeeds or fails.
        "scratch=$(mktemp -d results/writeup/.build.XXXXXX) && trap 'rm -rf \"$scratch\"' EXIT && "
        "(ATTNLAB_RESULTS=results jupytext --to ipynb --execute --run-path . {input.notebook} "
        "-o $scratch/writeup.ipynb && "
        # --no-input: the HTML reads as a paper (no code, no prompts); the .ipynb keeps the code.
        # The template drops the CDN scripts, so the page is one self-contained file.
        "jupyter nbconvert --to html --no-input --template-file {input.template} $scratch/writeup.ipynb "
        "--output-dir $scratch && "
        "mv $scratch/writeup.ipynb {output.notebook} && mv $scratch/writeup.html {output.html}) > {log} 2>&1"
