"""The bundle format both sides agree on: its files, its required keys, its folder names.

results/runs/<variant>/lr<lr>/seed<seed>/ holds bundle.json (summary and
provenance, plus the sha256 of every other file), curve.csv, telemetry.npz,
attention.npz and params/ (Orbax). The writer (attnlab.training.bundle_writer)
stages the folder and renames it in one step; the reader
(attnlab.pipeline.bundle_reader) checks every listed hash.
"""

from __future__ import annotations

import hashlib
from pathlib import Path, PurePosixPath

BUNDLE_FILE = "bundle.json"
DATA_FILES = ("curve.csv", "telemetry.npz", "attention.npz")
REQUIRED_KEYS = (
    "variant", "lr", "seed", "config", "provenance", "n_params", "best_val_loss", "final_val_loss",
    "best_val_bpc", "diverged", "wall_time_s", "steps_per_s", "files",
)
CURVE_COLUMNS = ("step", "train_loss", "val_loss", "elapsed_s")


class BundleError(RuntimeError):
    """A bundle that is missing, incomplete or corrupt; the message names the file."""


def cell_dir(root: Path, variant: str, lr: float, seed: int) -> Path:
    return Path(root) / variant / f"lr{format_lr(lr)}" / f"seed{seed}"


def format_lr(lr: float) -> str:
    """Canonical, lossless text of an LR in paths and tables: 0.0003, 0.003, 0.01, 0.0010000001.

    The shortest text that reads back as the same float, so two different LRs
    never share a folder and a folder's LR is exactly the one trained.
    """
    return repr(float(lr))


def sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def manifest_name_is_inside(name: str) -> bool:
    """A manifest entry may only name a file inside its bundle: relative, no '..', no absolute path."""
    path = PurePosixPath(name)
    return bool(name) and not path.is_absolute() and ".." not in path.parts and "\\" not in name
