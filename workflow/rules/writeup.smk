WRITEUP = [str(paths.WRITEUP_NOTEBOOK), str(paths.WRITEUP_HTML), str(paths.WRITEUP_PDF)]
# The claims ledger as a table of its own (one row per claim, a `verdict` column), readable without the
# notebook; the writeup shows this file.
LEDGER = [str(paths.table("ledger", ext)) for ext in ("csv", "md", "tex")]

# The writeup reports whether this build ran on the locked environment (its "Version drift" line),
# so it depends on the lock and on what is installed: editing constraints.txt, or installing other
# versions of the packages it pins, reruns it.
from attnlab.core import packages as attnlab_packages  # noqa: E402
from attnlab.pipeline import environment as attnlab_environment  # noqa: E402

LOCK = attnlab_environment.LOCK  # the checkout's constraints.txt, the one the notebook reads
# The config of the protocol the posts published at (published.yaml's `protocol`): the writeup sets its size
# beside this build's.
_PUBLISHED = SRC / "attnlab" / "pipeline" / "published.yaml"
PUBLISHED_CONFIG = f"config/{attnlab_config.parse_yaml(_PUBLISHED.read_text(), str(_PUBLISHED))['protocol']}.yaml"


def locked_versions(wildcards=None):
    """The installed version of every package the lock pins (none when there is no lock)."""
    if not LOCK.is_file():
        return "{}"
    try:
        pinned = attnlab_environment.read_lock(LOCK)
    except (OSError, UnicodeDecodeError) as err:
        raise WorkflowError(f"cannot read {LOCK} ({err}); restore it (git checkout constraints.txt)")
    return attnlab_config.to_json(attnlab_packages.installed_versions(pinned))


# The optional tables this build has, so that the ledger and the writeup never report another config's
# ladder or study tables still on disk: the writeup reads them from build.json (attnlab.pipeline.build_manifest,
# rewritten when the list changes), the ledger from its params (so a study it does not read never reruns it).
OPTIONAL_TABLES = (["composability"] if COMPOSABILITY else []) + [
    Path(t).stem for t in LADDER_OUTPUTS if t.endswith(".csv")] + [paths.study_file(name) for name in STUDIES]
BUILD_MANIFEST = str(paths.table("build", "json"))


rule build_manifest:
    output:
        BUILD_MANIFEST,
    params:
        tables=sorted(set(OPTIONAL_TABLES)),
        code=pipeline_code("attnlab.pipeline.build_manifest"),
    log:
        str(paths.log("build_manifest")),
    message:
        "Listing this build's optional tables"
    localrule: True
    shell:
        "python -m attnlab.pipeline.build_manifest --out {output} {params.tables} > {log} 2>&1"


rule ledger:
    input:
        tables=TABLES,
        composability=COMPOSABILITY_TABLES if COMPOSABILITY else [],
        ladder=LADDER_OUTPUTS,
    output:
        ledger=LEDGER,
    params:
        code=pipeline_code("attnlab.pipeline.claims"),
        tables=paths.TABLES,
        out=paths.TABLES / "ledger",
        optional=[name for name in OPTIONAL_TABLES if name in table_contract.LEDGER_OPTIONAL],  # what it reads of them
    log:
        str(paths.log("ledger")),
    message:
        "Checking each claim of the posts against the tables (the claims ledger)"
    localrule: True
    shell:
        "python -m attnlab.pipeline.claims --tables {params.tables} --out {params.out} --optional {params.optional} "
        "> {log} 2>&1"


rule writeup:
    input:
        notebook="notebooks/writeup.py",
        template="notebooks/paper.html.j2",
        tables=TABLES,
        ledger=LEDGER,
        manifest=BUILD_MANIFEST,
        figures=FIGURES,
        captions=CAPTIONS,
        composability=COMPOSABILITY_TABLES if COMPOSABILITY else [],
        ladder=LADDER_OUTPUTS,
        studies=STUDY_TABLES,
        published_config=PUBLISHED_CONFIG,
        lock=[str(LOCK)] if LOCK.is_file() else [],
    output:
        notebook=str(paths.WRITEUP_NOTEBOOK),
        html=str(paths.WRITEUP_HTML),
        pdf=str(paths.WRITEUP_PDF),
    params:
        code=pipeline_code(
            "attnlab.pipeline.claims",
            "attnlab.pipeline.report",
            "attnlab.pipeline.environment",
            "attnlab.core.telemetry_stats",
            "attnlab.pipeline.report.pdf",
        ),
        environment=locked_versions,
        results=paths.RESULTS,
        scratch=paths.WRITEUP / ".build.XXXXXX",
        paper=config["writeup"]["paper"],  # the printed writeup's paper size (a4 or letter)
    log:
        str(paths.log("writeup")),
    message:
        "Executing the writeup notebook"
    localrule: True
    shell:
        # Build in a scratch folder, then move: a failed execution leaves no half-written writeup,
        # and the trap removes the scratch folder whether the build succeeds or fails.
        # The manifest is read strictly first: one line names a build.json that is not one, and the fix;
        # so is the browser that prints the PDF: one line says how to install it.
        "python -m attnlab.pipeline.build_manifest --check {input.manifest} 2> {log} || {{ cat {log} >&2; exit 2; }}; "
        "python -m attnlab.pipeline.report.pdf --check > {log} 2>&1 || {{ cat {log} >&2; exit 2; }}; "
        "scratch=$(mktemp -d {params.scratch}) && trap 'rm -rf \"$scratch\"' EXIT && "
        "(ATTNLAB_RESULTS={params.results} jupytext --to ipynb --execute --run-path . {input.notebook} "
        "-o $scratch/writeup.ipynb && "
        # --no-input: the HTML reads as a paper (no code, no prompts); the .ipynb keeps the code.
        # The template drops the CDN scripts, so the page is one self-contained file.
        "jupyter nbconvert --to html --no-input --template-file {input.template} $scratch/writeup.ipynb "
        "--output-dir $scratch && "
        "mv $scratch/writeup.ipynb {output.notebook} && mv $scratch/writeup.html {output.html} && "
        # The PDF is printed from the page in place (its relative links then resolve) and written whole.
        "python -m attnlab.pipeline.report.pdf --html {output.html} --out {output.pdf} --paper {params.paper}"
        ") > {log} 2>&1"
