import os
import sys
from pathlib import Path

REPO = Path(workflow.basedir)
# The rules fingerprint this checkout's code but read the notebook and results from the working directory: a
# build of another folder (--directory) would mix two checkouts, so it is refused before anything runs.
if workflow.overwrite_workdir is not None and Path(workflow.overwrite_workdir).resolve() != REPO.resolve():
    raise WorkflowError(
        f"--directory {workflow.overwrite_workdir}: build a workspace from inside it (cd "
        f"{workflow.overwrite_workdir} && snakemake --cores all), not from {REPO}: the rules' code "
        "is this checkout's, the notebook and results the other folder's"
    )
SRC = REPO / "src"
# Rules run `python -m attnlab...` from this checkout whether or not it is installed.
sys.path.insert(0, str(SRC))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)

# Pipeline side only: nothing here loads JAX. Every input, output and param below comes from the plan
# (attnlab.pipeline.plan.rules), ordinary Python with its own tests.
from snakemake.cli import parse_config as _snakemake_parse_config  # noqa: E402
from snakemake.logging import logger  # noqa: E402

from attnlab.core import fingerprint as code  # noqa: E402
from attnlab.core.errors import ConfigError  # noqa: E402
from attnlab.pipeline.ground import contract  # noqa: E402
from attnlab.pipeline.plan import expectation
from attnlab.pipeline.ground import paths  # noqa: E402
from attnlab.pipeline.plan.config_file import snakemake_config_file  # noqa: E402
from attnlab.pipeline.plan.rules import Plan, export  # noqa: E402

# ---- one config path: the file's own values over the schema's defaults, read by the project's loader
#
# The Snakefile has no `configfile:` directive, because Snakemake would merge a --configfile over it
# and the same file would mean something else here than to `attnlab train --config`. `--config file=PATH`
# gives Snakemake only the path, so no parser but attnlab's ever reads the file: the form for a config
# from anyone. A `--configfile` is parsed by Snakemake itself before this line runs: trusted files only.

# What each source file's bytes imply is kept between runs, so a no-op dry run parses nothing.
code.persist_to(Path(".snakemake") / "attnlab" / "code-facts.json")
try:
    CONFIG_FILE = snakemake_config_file(
        workflow.overwrite_configfiles,
        workflow.config_settings.config,
        REPO / "config" / "default.yaml",
        reparse=_snakemake_parse_config,
        argv=sys.argv,
    )
    PLAN = Plan(CONFIG_FILE, SRC, checkpoints, workflow.resource_settings.overwrite_threads)
    PLAN.write_expectations()
except ConfigError as err:
    raise WorkflowError(str(err)) from None
except OSError as err:
    raise WorkflowError(
        f"cannot write {expectation.EXPECTED} ({err}); every build, a dry run too, keeps its state under "
        ".snakemake/ (Snakemake's own as well): make the workspace writable, or copy it to a writable place"
    ) from None
config = PLAN.config
if workflow.is_main_process:
    for note in PLAN.plugin_notes:
        logger.warning(note)
export(PLAN, sys.argv)
# On a GPU, training jobs claim the resource `gpu` (1 each): allow the card's share of them at once, unless the
# command line says otherwise (--resources gpu=N).
if PLAN.gpu_slots:
    workflow.global_resources.setdefault("gpu", PLAN.gpu_slots)


wildcard_constraints:
    place=paths.PLACE_PATTERN,
    variant="[a-z][a-z0-9_]*",
    lr="[0-9][0-9.e+-]*",
    seed="[0-9]+",
    study="|".join(PLAN.studies) or "(?!)",


onstart:
    # Cluster jobs parse this Snakefile again on their nodes: hand them the cache the plan just filled.
    code.save_cache()
