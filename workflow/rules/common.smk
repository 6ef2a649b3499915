import json
import os
import shlex
import sys
from pathlib import Path

REPO = Path(workflow.basedir)
# The rules fingerprint this checkout's code but read the notebook and results from the working directory: a
# build of another folder (--directory) would mix two checkouts, so it is refused before anything runs.
if workflow.overwrite_workdir is not None and Path(workflow.overwrite_workdir).resolve() != REPO.resolve():
    raise WorkflowError(f"--directory {workflow.overwrite_workdir}: build a workspace from inside it (cd "
                        f"{workflow.overwrite_workdir} && snakemake --cores all), not from {REPO}: the rules' code "
                        "is this checkout's, the notebook and results the other folder's")
SRC = REPO / "src"
# Rules run `python -m attnlab...` from this checkout whether or not it is installed.
sys.path.insert(0, str(SRC))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)

# Pipeline side only: nothing here loads JAX.
from attnlab.core import config as attnlab_config  # noqa: E402
from attnlab.core import fingerprint as code  # noqa: E402
from attnlab.core import studies as attnlab_studies  # noqa: E402
from attnlab.core.errors import ConfigError  # noqa: E402
from attnlab.pipeline import grid as attnlab_grid  # noqa: E402
from attnlab.pipeline import paths  # noqa: E402
from attnlab.pipeline import contract as table_contract  # noqa: E402


# ---- one config path: the file's own values over the schema's defaults, read by the project's loader
#
# The Snakefile has no `configfile:` directive, because Snakemake would merge a --configfile over it
# and the same file would mean something else here than to `attnlab train --config`. The chosen file
# is loaded and validated by attnlab.core.config (the schema is workflow/schemas/config.schema.yaml).
#
# `--config file=PATH` gives Snakemake only the path, so no parser but attnlab's ever reads the file:
# the form for a config from anyone. A `--configfile` is parsed by Snakemake itself before this line
# runs (as a YTE template when it asks to be one): trusted files only.

from snakemake.cli import parse_config as _snakemake_parse_config  # noqa: E402

try:
    CONFIG_FILE = attnlab_config.snakemake_config_file(
        workflow.overwrite_configfiles, workflow.config_settings.config, REPO / "config" / "default.yaml",
        reparse=_snakemake_parse_config, argv=sys.argv)
    config = attnlab_config.load_config(CONFIG_FILE)
except ConfigError as err:
    raise WorkflowError(str(err)) from None

# Every file the collect step writes, from the table contract (attnlab.pipeline.contract).
TABLES = [str(paths.TABLES / file) for name in table_contract.COLLECTED for file in table_contract.files(name)]

wildcard_constraints:
    place=paths.PLACE_PATTERN,
    variant="[a-z][a-z0-9_]*",
    lr="[0-9][0-9.e+-]*",
    seed="[0-9]+",


# ---- code fingerprints: a rule reruns when the behaviour of code it imports changes (attnlab.core.fingerprint)


# What each source file's bytes imply is kept between runs, so a no-op dry run parses nothing.
code.persist_to(Path(".snakemake") / "attnlab" / "code-facts.json")


onstart:
    # Cluster jobs parse this Snakefile again on their nodes: hand them the cache the plan just filled.
    code.save_cache()


def pipeline_code(*modules):
    """Fingerprint of pipeline-side modules and what they import."""
    return code.cached_fingerprint(tuple(modules), str(SRC))


def training_code(wildcards):
    """Fingerprint of the trainer, the cell's own variant module and its registry line."""
    return code.training_fingerprint(wildcards.variant, src=SRC)


# ---- the grid: every study's cells (attnlab.pipeline.grid), each distinct cell trained once by train_cell


try:
    GRID = attnlab_grid.Grid(config)  # the cells whose LR is known before any training
    attnlab_grid.check_corpus_room(GRID, attnlab_grid.local_corpus(config, paths.CORPUS))
except ConfigError as err:
    raise WorkflowError(f"{CONFIG_FILE}: {err}") from None


def selected_lrs():
    """Contest LRs of 'auto' variants, read from the select_lr checkpoint's outputs."""
    chosen = {}
    for variant in config["variants"]:
        if config["contest"]["lr"][variant] == attnlab_config.AUTO:
            path = checkpoints.select_lr.get(variant=variant).output[0]
            chosen[variant] = json.loads(Path(path).read_text())["lr"]
    return chosen


def resolved_grid():
    """The grid with every 'auto' contest LR chosen (asks the select_lr checkpoints)."""
    return attnlab_grid.Grid(config, selected_lrs())


def bundles(keys):
    """The bundle folders of these cells, each once, in order (a shared cell lives in its owner's folder)."""
    return list(dict.fromkeys(str(paths.cell_bundle(key)) for key in keys))


def known_cells(wildcards=None):
    """Contest and sweep cells whose LR is known before any training: the sweep and the fixed-LR contest."""
    return bundles(GRID.bundles(attnlab_studies.CONTEST) + GRID.bundles(attnlab_studies.SWEEP))


def auto_cells(wildcards=None):
    """Contest cells of 'auto' variants, known once the select_lr checkpoint has run."""
    known = set(known_cells())
    return [b for b in bundles(resolved_grid().bundles(attnlab_studies.CONTEST)) if b not in known]


def grid_json(wildcards=None):
    return shlex.quote(attnlab_config.to_json(attnlab_grid.grid(config, selected_lrs())))


def sweep_cells(wildcards):
    """A variant's sweep cells, every sweep LR at every sweep seed: the select_lr checkpoint reads them."""
    return bundles(key for key in GRID.bundles(attnlab_studies.SWEEP) if key.variant == wildcards.variant)


def cell_slice(wildcards):
    """The config slice of the cells in one folder (paths.place): the identity train_cell's params carry."""
    try:
        return GRID.slice_at(wildcards.place)
    except KeyError:
        raise WorkflowError(f"{paths.RESULTS / wildcards.place} is no folder of this config's studies") from None


def cell_config_json(wildcards):
    return shlex.quote(attnlab_config.to_json(cell_slice(wildcards)))


def checkpoint_root(wildcards):
    """The trainer's resumable state for the cells of one folder (a Path, which Snakemake does not record as a
    param: moving it is never a change)."""
    return paths.checkpoint_root(wildcards.place)


def train_mem_mb(wildcards, attempt=1):
    """Declared memory of one training job, scaled from its model (measured peaks: smoke 0.77 GB,
    default 0.88 GB, paper 2.94 GB on CPU). Override in a profile: set-resources train_cell:mem_mb=N."""
    sliced = cell_slice(wildcards)
    m, t = sliced["model"], sliced["train"]
    attention_bytes = 4 * t["batch_size"] * m["heads"] * m["block_size"] ** 2 * m["layers"]
    return int(1000 + 24 * attention_bytes / 2**20) * attempt


# Where the corpus comes from travels by environment, not params: a new local path with the same
# bytes must not count as a change (params changes rerun a rule and all that follows it).
os.environ["ATTNLAB_DATA_CONFIG"] = attnlab_config.to_json(config["data"])


def data_identity(wildcards=None):
    """What makes the corpus the corpus: a new local path with the same bytes is no change."""
    return {"sha256": config["data"]["sha256"]}
