# The ledger (one row per claim, readable without the notebook), the build manifest (this build's optional
# tables, so that the ledger and the writeup never report another config's ladder or study tables still on
# disk: attnlab.pipeline.ground.build_manifest) and the writeup. The writeup reports whether this build ran on
# the locked environment (its "Version drift" line), so it depends on the lock and on what is installed:
# editing constraints.txt, or installing other versions of the packages it pins, reruns it.


rule build_manifest:
    output:
        PLAN.build_manifest,
    log:
        str(paths.log("build_manifest")),
    localrule: True
    params:
        tables=PLAN.optional_tables,
        code=PLAN.pipeline_code("attnlab.pipeline.ground.build_manifest"),
    message:
        "Listing this build's optional tables"
    shell:
        "python -m attnlab.pipeline.ground.build_manifest --out {output} {params.tables} > {log} 2>&1"


rule ledger:
    input:
        tables=PLAN.tables,
        composability=PLAN.composability_tables,
        ladder=PLAN.ladder_outputs,
        rounds=PLAN.rounds_tables,
        studies=PLAN.ledger_study_tables,
        timing=PLAN.step_times,
    output:
        ledger=update(PLAN.ledger),
    log:
        str(paths.log("ledger")),
    localrule: True
    params:
        code=PLAN.pipeline_code("attnlab.pipeline.claims"),
        tables=paths.TABLES,
        out=paths.TABLES / contract.LEDGER,
        optional=PLAN.ledger_optional,  # what it reads of the optional tables
    message:
        "Checking each claim of the posts against the tables (the claims ledger)"
    shell:
        "python -m attnlab.pipeline.claims --tables {params.tables} --out {params.out} --optional {params.optional} "
        "> {log} 2>&1"


rule writeup:
    input:
        notebook="notebooks/writeup.py",
        template="notebooks/paper.html.j2",
        tables=PLAN.tables,
        ledger=PLAN.ledger,
        manifest=PLAN.build_manifest,
        figures=PLAN.figures,
        captions=PLAN.captions,
        composability=PLAN.composability_tables,
        ladder=PLAN.ladder_outputs,
        rounds=PLAN.rounds_tables,
        studies=PLAN.study_tables,
        published_config=PLAN.published_config,
        lock=PLAN.lock,
    output:
        notebook=update(str(paths.WRITEUP_NOTEBOOK)),
        html=update(str(paths.WRITEUP_HTML)),
    log:
        str(paths.log("writeup")),
    localrule: True
    params:
        code=PLAN.pipeline_code(
            "attnlab.pipeline.claims",
            "attnlab.pipeline.report",
            "attnlab.pipeline.ground.environment",
            "attnlab.core.telemetry_stats",
        ),
        environment=PLAN.locked_versions,
        results=paths.RESULTS,
        scratch=paths.WRITEUP / ".build.XXXXXX",
    message:
        "Executing the writeup notebook"
    shell:
        # Build in a scratch folder, then move: a failed execution leaves no half-written writeup,
        # and the trap removes the scratch folder whether the build succeeds or fails.
        # The manifest is read strictly first: one line names a build.json that is not one, and the fix.
        "python -m attnlab.pipeline.ground.build_manifest --check {input.manifest} 2> {log} || {{ cat {log} >&2; exit 2; }}; "
        "scratch=$(mktemp -d {params.scratch}) && trap 'rm -rf \"$scratch\"' EXIT && "
        "(ATTNLAB_RESULTS={params.results} jupytext --to ipynb --execute --run-path . {input.notebook} "
        "-o $scratch/writeup.ipynb && "
        # --no-input: the HTML reads as a paper (no code, no prompts); the .ipynb keeps the code.
        # The template drops the CDN scripts, so the page is one self-contained file.
        "jupyter nbconvert --to html --no-input --template-file {input.template} $scratch/writeup.ipynb "
        "--output-dir $scratch && "
        "mv $scratch/writeup.ipynb {output.notebook} && mv $scratch/writeup.html {output.html}"
        ") > {log} 2>&1"


# The printed writeup: its own target, so the main job never fails for want of a browser. `all` asks for it
# only when the planning finds one to print with (PLAN.printed_writeup); `snakemake writeup_pdf` asks for it
# anywhere, and says in one line how to install a browser when there is none.


rule writeup_pdf:
    input:
        html=str(paths.WRITEUP_HTML),
    output:
        # update: Snakemake neither removes the last good PDF before printing nor keeps a failed one (it puts the
        # old one back); the printer replaces it only with a whole new PDF.
        pdf=update(str(paths.WRITEUP_PDF)),
    log:
        str(paths.log("writeup_pdf")),
    localrule: True
    params:
        code=PLAN.pipeline_code("attnlab.pipeline.report.pdf"),
        paper=config["writeup"]["paper"],  # the printed writeup's paper size (a4 or letter)
    message:
        "Printing the writeup to PDF"
    shell:
        # Printed from the page in place (its relative links then resolve) and written whole.
        "python -m attnlab.pipeline.report.pdf --html {input.html} --out {output.pdf} --paper {params.paper} "
        "> {log} 2>&1 || {{ cat {log} >&2; exit 2; }}"
