"""The bundle format both sides agree on: its files, its required keys, its folder names.

results/runs/<variant>/lr<lr>/seed<seed>/ holds bundle.json (summary and
provenance, plus the sha256 of every other file), curve.csv, telemetry.npz,
attention.npz and params/ (Orbax). The writer (attnlab.training.files.bundle_writer)
stages the folder and renames it in one step; the reader
(attnlab.pipeline.ground.bundle_reader) checks every listed hash.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path, PurePosixPath

BUNDLE_FILE = "bundle.json"
DATA_FILES = ("curve.csv", "telemetry.npz", "attention.npz")
SELF_KEY = "content_sha256"  # bundle.json's checksum of its own content (every other key), as the trainer wrote it
REQUIRED_KEYS = (
    "variant", "lr", "seed", "config", "provenance", "n_params", "best_val_loss", "final_val_loss",
    "best_val_bpc", "diverged", "wall_time_s", "steps_per_s", "files", SELF_KEY,
)
# One row per evaluation. val_loss reads every validation window (the posts' measure); val_loss_select and
# val_loss_report read its two fixed halves (even and odd windows): choices read the select half, and the report
# half says what the chosen evaluation scores on windows no choice saw (attnlab.training.steps.evaluate).
CURVE_COLUMNS = ("step", "train_loss", "val_loss", "elapsed_s", "val_loss_select", "val_loss_report")


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


def content_digest(summary: dict, default=None) -> str:
    """The sha256 of a bundle summary's content: every key but SELF_KEY (and the `path` a reader adds), in one
    canonical JSON form, so a number edited by hand no longer matches what the trainer recorded."""
    body = {k: v for k, v in summary.items() if k not in (SELF_KEY, "path")}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=default)
    return hashlib.sha256(text.encode()).hexdigest()


def sealed(summary: dict, default=None) -> dict:
    """The summary as the trainer writes it: plain JSON values, with its own content's checksum under SELF_KEY."""
    plain = json.loads(json.dumps(summary, default=default))
    return dict(plain, **{SELF_KEY: content_digest(plain)})


def manifest_name_is_inside(name: str) -> bool:
    """A manifest entry may only name a file inside its bundle: relative, no '..', no absolute path."""
    path = PurePosixPath(name)
    return bool(name) and not path.is_absolute() and ".." not in path.parts and "\\" not in name
