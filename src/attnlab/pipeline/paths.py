"""Every path under results/, in one place: the rules, the tables, the figures and the writeup use these.

Paths are relative to the workspace (the folder Snakemake runs in); a reader
handed a table elsewhere finds the workspace from the table's own place.
"""

from __future__ import annotations

import os
from pathlib import Path

from attnlab.core.bundle_format import cell_dir

RESULTS_ENV = "ATTNLAB_RESULTS"  # the writeup notebook reads results from here (default: results)
RESULTS = Path("results")
RUNS = RESULTS / "runs"
TABLES = RESULTS / "tables"
FIGURES = RESULTS / "figures"
WRITEUP = RESULTS / "writeup"
LOGS = RESULTS / "logs"
CHECKPOINTS = RESULTS / "checkpoints"
SELECTED_LR = RESULTS / "selected_lr"
CORPUS = RESULTS / "data" / "corpus.txt"
COMPILE_CACHE = RESULTS / "jax-cache"
RUNS_TABLE = TABLES / "runs.csv"
CELL_PATTERN = RUNS / "{variant}" / "lr{lr}" / "seed{seed}"  # the same layout as cell_bundle, as wildcards
COMPOSABILITY = RESULTS / "composability"
COMPOSABILITY_PATTERN = COMPOSABILITY / "kv{kv}-{impl}" / "{variant}" / "lr{lr}" / "seed{seed}"


def cell_bundle(variant: str, lr: float, seed: int) -> Path:
    """results/runs/<variant>/lr<lr>/seed<seed>: one bundle per cell."""
    return cell_dir(RUNS, variant, lr, seed)


def composability_bundle(kv_heads: int, impl: str, variant: str, lr: float, seed: int) -> Path:
    """results/composability/kv<k>-<impl>/<variant>/lr<lr>/seed<seed>: one run of the composability grid."""
    return cell_dir(COMPOSABILITY / f"kv{int(kv_heads)}-{impl}", variant, lr, seed)


def table(name: str, ext: str = "csv") -> Path:
    return TABLES / f"{name}.{ext}"


def figure(name: str) -> Path:
    return FIGURES / name


def results_dir() -> Path:
    """The results folder a notebook or report reads: $ATTNLAB_RESULTS, else ./results."""
    return Path(os.environ.get(RESULTS_ENV, str(RESULTS))).resolve()


def workspace_of(table_path: Path) -> Path:
    """The workspace that holds a table at <workspace>/results/tables/<name>."""
    return Path(table_path).resolve().parents[2]
