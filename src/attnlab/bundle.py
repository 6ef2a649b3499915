"""A cell's result bundle: write it whole or not at all, read it only if it is whole.

results/runs/<variant>/lr<lr>/seed<seed>/ holds bundle.json (summary and
provenance, plus the sha256 of every other file), curve.csv, telemetry.npz,
attention.npz and params/ (Orbax). The folder is built beside its final place
and renamed in one step, and readers check every listed hash.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from attnlab.io import atomic_write_json, replace_dir

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
    """Canonical text of an LR in paths and tables: 0.0003, 0.003, 0.01."""
    return f"{float(lr):g}"


def write_bundle(out: Path, summary: dict, curve: pd.DataFrame, telemetry: dict, attention: dict,
                 save_params) -> Path:
    """Write every file into a staging folder, then move it into place in one rename."""
    out = Path(out)
    staging = out.with_name(f".{out.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    curve.to_csv(staging / "curve.csv", index=False, columns=list(CURVE_COLUMNS))
    _save_npz(staging / "telemetry.npz", telemetry)
    _save_npz(staging / "attention.npz", attention)
    save_params(staging / "params")
    files = {name: _sha256(staging / name) for name in DATA_FILES}
    files |= {str(f.relative_to(staging)): _sha256(f) for f in sorted((staging / "params").rglob("*")) if f.is_file()}
    summary = dict(summary, files=files)
    atomic_write_json(staging / BUNDLE_FILE, summary)
    replace_dir(staging, out)
    return out


def read_bundle(path: Path) -> dict:
    """The bundle.json of a complete bundle, after checking every file it lists."""
    path = Path(path)
    folder = path.parent if path.name == BUNDLE_FILE else path
    summary_file = folder / BUNDLE_FILE
    if not summary_file.is_file():
        raise BundleError(f"missing bundle file {summary_file}; rerun that cell (snakemake will)")
    try:
        summary = json.loads(summary_file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise BundleError(f"corrupt bundle file {summary_file}: {err}; delete the folder and rerun") from None
    missing = [key for key in REQUIRED_KEYS if key not in summary]
    if missing:
        raise BundleError(f"bundle file {summary_file} lacks {', '.join(missing)}; delete the folder and rerun")
    listed = set(summary["files"])
    unlisted = [name for name in DATA_FILES if name not in listed]
    if unlisted or not any(name.startswith("params/") for name in listed):
        raise BundleError(f"bundle file {summary_file} does not list {', '.join(unlisted) or 'params/'}; "
                          "delete the folder and rerun")
    for name, digest in summary["files"].items():
        file = folder / name
        if not file.is_file():
            raise BundleError(f"missing bundle file {file}; delete {folder} and rerun")
        if _sha256(file) != digest:
            raise BundleError(f"corrupt bundle file {file} (sha256 differs from bundle.json); delete {folder} and rerun")
    summary["path"] = str(folder)
    return summary


def read_curve(folder: Path) -> pd.DataFrame:
    return pd.read_csv(Path(folder) / "curve.csv")


def read_arrays(folder: Path, name: str) -> dict[str, np.ndarray]:
    """telemetry.npz or attention.npz as plain arrays (never unpickles)."""
    with np.load(Path(folder) / name, allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


def _save_npz(path: Path, arrays: dict) -> None:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **{k: np.asarray(v) for k, v in arrays.items()})
    path.write_bytes(buffer.getvalue())


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
