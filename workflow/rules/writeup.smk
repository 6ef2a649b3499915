WRITEUP = ["results/writeup/writeup.ipynb", "results/writeup/writeup.html"]


rule writeup:
    input:
        notebook="notebooks/writeup.py",
        tables=TABLES,
        figures=FIGURES,
    output:
        notebook="results/writeup/writeup.ipynb",
        html="results/writeup/writeup.html",
    params:
        code=pipeline_code("attnlab.pipeline.claims", "attnlab.pipeline.report"),
    log:
        "results/logs/writeup.log",
    message:
        "Executing the writeup notebook"
    shell:
        # Build in a scratch folder, then move: a failed execution leaves no half-written writeup.
        "(scratch=$(mktemp -d results/writeup/.build.XXXXXX) && "
        "ATTNLAB_RESULTS=results jupytext --to ipynb --execute --run-path . {input.notebook} "
        "-o $scratch/writeup.ipynb && "
        "jupyter nbconvert --to html $scratch/writeup.ipynb --output-dir $scratch && "
        "mv $scratch/writeup.ipynb {output.notebook} && mv $scratch/writeup.html {output.html} && "
        "rm -rf $scratch) > {log} 2>&1"
