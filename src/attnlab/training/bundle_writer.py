"""Write a cell's bundle whole or not at all, and never over anything the project did not make."""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from attnlab.core.bundle_format import BUNDLE_FILE, CURVE_COLUMNS, DATA_FILES, sha256_file
from attnlab.core.errors import ConfigError
from attnlab.core.io import atomic_write_json


def check_out_dir(out: Path, variant: str, lr: float, seed: int) -> Path:
    """Refuse, before any training, an --out that is neither absent nor an earlier bundle of this cell.

    A bundle folder is replaced whole when the cell is written, so anything
    else there (a user's folder, a results tree, another cell's bundle) would
    be lost: that is refused, naming the path.
    """
    out = Path(out).resolve()
    if not out.exists():
        if out.parent.exists() and not out.parent.is_dir():
            raise ConfigError(f"--out {out}: its parent {out.parent} is a file; choose another path")
        return out
    if out.is_dir() and not out.is_symlink():
        summary = _earlier_summary(out)
        if summary is not None and (summary.get("variant"), _as_float(summary.get("lr")), summary.get("seed")) \
                == (variant, float(lr), int(seed)):
            return out
    raise ConfigError(
        f"--out {out} already exists and is not an earlier bundle of {variant} lr={lr:g} seed={seed}; "
        "a bundle folder is replaced whole, so pick a path that does not exist yet (nothing was trained)"
    )


def write_bundle(out: Path, summary: dict, curve: pd.DataFrame, telemetry: dict, attention: dict,
                 save_params) -> Path:
    """Write every file into a fresh staging folder beside `out`, then move it into place in one rename."""
    out = Path(out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.partial-"))
    try:
        curve.to_csv(staging / "curve.csv", index=False, columns=list(CURVE_COLUMNS))
        _save_npz(staging / "telemetry.npz", telemetry)
        _save_npz(staging / "attention.npz", attention)
        save_params(staging / "params")
        files = {name: sha256_file(staging / name) for name in DATA_FILES}
        files |= {str(f.relative_to(staging)): sha256_file(f)
                  for f in sorted((staging / "params").rglob("*")) if f.is_file()}
        atomic_write_json(staging / BUNDLE_FILE, dict(summary, files=files))
        check_out_dir(out, summary["variant"], summary["lr"], summary["seed"])  # still ours to replace?
        _replace_bundle(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    os.chmod(out, 0o777 & ~_umask())  # mkdtemp makes folders private; a bundle is shared like any output
    return out


def _replace_bundle(staging: Path, final: Path) -> None:
    """Swap in the new bundle; an earlier bundle of the same cell is moved aside, then removed."""
    if final.exists():
        trash = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}.old-"))
        os.replace(final, trash / "bundle")
        os.replace(staging, final)
        shutil.rmtree(trash, ignore_errors=True)
    else:
        os.replace(staging, final)


def _earlier_summary(folder: Path) -> dict | None:
    try:
        summary = json.loads((folder / BUNDLE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return summary if isinstance(summary, dict) else None


def _as_float(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _save_npz(path: Path, arrays: dict) -> None:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **{k: np.asarray(v) for k, v in arrays.items()})
    path.write_bytes(buffer.getvalue())
