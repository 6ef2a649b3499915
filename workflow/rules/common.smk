import ast
import json
import os
import shlex
import sys
from pathlib import Path

from snakemake.utils import validate

REPO = Path(workflow.basedir)
SRC = REPO / "src"
# Rules run `python -m attnlab...` from this checkout whether or not it is installed.
sys.path.insert(0, str(SRC))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)

from attnlab import config as attnlab_config  # noqa: E402
from attnlab.attention import variant_module  # noqa: E402
from attnlab.bundle import format_lr  # noqa: E402

validate(config, schema="../schemas/config.schema.yaml", set_default=True)
try:
    attnlab_config.check_semantics(config, "config")
except attnlab_config.ConfigError as err:
    raise WorkflowError(str(err)) from None

RESULTS = Path("results")
CORPUS = RESULTS / "data" / "corpus.txt"
COMPILE_CACHE = RESULTS / "jax-cache"
TABLE_NAMES = [
    "contest", "lr_sweep", "params", "score_scale", "mass_auroc", "entropy", "scalars", "a3_gates", "a3_init",
]
TABLES = [str(RESULTS / "tables" / "runs.csv")] + [
    str(RESULTS / "tables" / f"{name}.{ext}") for name in TABLE_NAMES for ext in ("csv", "md", "tex")
]

wildcard_constraints:
    variant="[a-z][a-z0-9_]*",
    lr="[0-9][0-9.e+-]*",
    seed="[0-9]+",


# ---- inputs derived from the import graph: a rule reruns only when code it imports changes


def module_file(mod):
    """Source file of an attnlab module or package."""
    path = SRC.joinpath(*mod.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def imported_modules(mod):
    """attnlab modules imported anywhere in `mod`'s source, parent packages included."""
    tree = ast.parse(module_file(mod).read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = node.module
            if node.level:
                base = ".".join(mod.split(".")[: -node.level] + [node.module])
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] == "attnlab" and module_file(name).exists():
                found.add(name)
    return found


def src_closure(*modules):
    """Every src file that importing `modules` executes (attnlab only), sorted."""
    seen, todo = set(), list(modules)
    while todo:
        mod = todo.pop()
        parts = mod.split(".")
        for i in range(1, len(parts) + 1):
            name = ".".join(parts[:i])
            if name not in seen:
                seen.add(name)
                todo.extend(imported_modules(name))
    return sorted(str(module_file(m).relative_to(REPO)) for m in seen)


def train_sources(wildcards):
    return src_closure("attnlab.train", variant_module(wildcards.variant))


# ---- the grid


def cell_bundle(variant, lr, seed):
    return str(RESULTS / "runs" / variant / f"lr{format_lr(lr)}" / f"seed{seed}")


def selected_lrs():
    """Contest LRs of 'auto' variants, read from the select_lr checkpoint's outputs."""
    chosen = {}
    for variant in config["variants"]:
        if config["contest"]["lr"][variant] == attnlab_config.AUTO:
            path = checkpoints.select_lr.get(variant=variant).output[0]
            chosen[variant] = json.loads(Path(path).read_text())["lr"]
    return chosen


def known_cells(wildcards=None):
    """Cells whose LR is known before any training: the sweep and the fixed-LR contest."""
    grid = attnlab_config.grid(config)
    return [cell_bundle(v, lr, seed) for v, lr, seed in grid["cells"]]


def auto_cells(wildcards=None):
    """Contest cells of 'auto' variants, known once the select_lr checkpoint has run."""
    known = set(known_cells())
    grid = attnlab_config.grid(config, selected_lrs())
    return [b for b in (cell_bundle(v, lr, seed) for v, lr, seed in grid["cells"]) if b not in known]


def grid_json(wildcards=None):
    return shlex.quote(attnlab_config.to_json(attnlab_config.grid(config, selected_lrs())))


def sweep_cells(wildcards):
    return [cell_bundle(wildcards.variant, lr, config["sweep"]["seed"]) for lr in config["sweep"]["lrs"]]


def cell_config_json(wildcards=None):
    return shlex.quote(attnlab_config.to_json(attnlab_config.cell_slice(config)))


# Where the corpus comes from travels by environment, not params: a new local path with the same
# bytes must not count as a change (params changes rerun a rule and all that follows it).
os.environ["ATTNLAB_DATA_CONFIG"] = attnlab_config.to_json(config["data"])


def data_identity(wildcards=None):
    """What makes the corpus the corpus: a new local path with the same bytes is no change."""
    return {"sha256": config["data"]["sha256"]}
