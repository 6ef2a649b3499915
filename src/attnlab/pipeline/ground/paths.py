"""Every path under results/, in one place: the rules, the tables, the figures and the writeup use these.

Paths are relative to the workspace (the folder Snakemake runs in); a reader
handed a table elsewhere finds the workspace from the table's own place.
"""

from __future__ import annotations

import os
from pathlib import Path

from attnlab.core.bundle_format import cell_dir
from attnlab.core.studies import BUILT_IN, point_text

RESULTS_ENV = "ATTNLAB_RESULTS"  # the writeup notebook reads results from here (default: results)
RESULTS = Path("results")
RUNS = RESULTS / "runs"
STUDIES = RESULTS / "studies"
TABLES = RESULTS / "tables"
FIGURES = RESULTS / "figures"
WRITEUP = RESULTS / "writeup"
WRITEUP_NOTEBOOK = WRITEUP / "writeup.ipynb"
WRITEUP_HTML = WRITEUP / "writeup.html"
WRITEUP_PDF = WRITEUP / "writeup.pdf"
LOGS = RESULTS / "logs"
CHECKPOINTS = RESULTS / "checkpoints"
SELECTED_LR = RESULTS / "selected_lr"
SELECTED_LR_PATTERN = SELECTED_LR / "{variant}.json"
# A sweep that brackets: each step's decision whether a variant's sweep needs one more LR (sweep.extend)
SWEEP_STEP_PATTERN = RESULTS / "sweep_steps" / "{variant}" / "step{step}.json"
ROUNDS = RESULTS / "rounds"  # seeds added until decided: each round's decision (attnlab.pipeline.tables.rounds)
ROUND_PATTERN = ROUNDS / "round{round}.json"
CORPUS = RESULTS / "data" / "corpus.txt"
COMPILE_CACHE = RESULTS / "jax-cache"
RUNS_TABLE = TABLES / "runs.csv"
# Every cell's folder: results/<place>/<variant>/lr<lr>/seed<seed>, where <place> is runs (the contest and
# the sweep) or studies/<study>/<axis values> (attnlab.pipeline.ground.grid.place).
CELL_PATTERN = RESULTS / "{place}" / "{variant}" / "lr{lr}" / "seed{seed}"
TRAIN_LOG_PATTERN = LOGS / "train" / "{place}" / "{variant}" / "lr{lr}" / "seed{seed}.log"


PLACE_PATTERN = r"runs|studies/[a-z][a-z0-9_]*/[A-Za-z0-9_.=,+-]+"  # what {place} may be


def place(key) -> str:
    """The folder under results/ that holds a cell's folder (a grid.CellKey): runs for the contest and the
    sweep, else studies/<study>/<the study's axis values at the cell>."""
    return study_place(key.study, key.point)


def study_place(study: str, point=()) -> str:
    """The folder under results/ of one point of a study (see place)."""
    if study in BUILT_IN:
        return RUNS.name
    return f"{STUDIES.name}/{study}/{point_text(point)}"


def cell_bundle(key) -> Path:
    """The folder of a cell's bundle (a grid.CellKey; pass the owner key, Grid.owner, for a shared cell)."""
    return cell_dir(RESULTS / place(key), key.variant, key.lr, key.seed)


def checkpoint_root(place: str) -> Path:
    """Where the trainer keeps the resumable state of the cells under results/<place>."""
    return CHECKPOINTS if place == RUNS.name else CHECKPOINTS / place


def log(rule: str, name: str | None = None) -> Path:
    """results/logs/<rule>.log, or results/logs/<rule>/<name>.log for a rule with a wildcard."""
    return LOGS / f"{rule}.log" if name is None else LOGS / rule / f"{name}.log"


def study_table(study: str, ext: str = "csv") -> Path:
    """results/tables/study_<name>.<ext>: one study's table."""
    return TABLES / f"{study_file(study)}.{ext}"


def study_runs(study: str) -> Path:
    """results/tables/runs_<name>.csv: one row per cell of one study (runs.csv holds the contest and sweep's)."""
    return TABLES / f"{RUNS_TABLE.stem}_{study}.csv"


def study_file(study: str) -> str:
    return f"study_{study}"


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
