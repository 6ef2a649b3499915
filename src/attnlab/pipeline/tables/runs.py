"""runs.csv: one row per cell with every scalar of its bundle, read and checked through the one bundle reader."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

import math

from attnlab.core.bundle_format import BundleError
from attnlab.pipeline.ground.bundle_reader import read_bundle, read_curve
from attnlab.pipeline.tables.checks import check_cells, check_one_cpu_pool, check_one_pack_mode

SCALAR_TYPES = (int, float, bool, str, type(None))
# A cell is still improving when the last LATE_SHARE of its training lowered its best validation loss by more
# than PLATEAU_TOLERANCE (relative). The posts give no plateau rule; this is the project's: a cell that gained
# under half a percent over its last fifth has flattened enough that more steps would not reorder variants
# separated by the posts' 1% claims.
LATE_SHARE = 0.2
PLATEAU_TOLERANCE = 0.005


def load_runs(bundle_dirs: list[Path]) -> tuple[pd.DataFrame, list[dict]]:
    """One row per cell with every scalar of its bundle (nested keys joined by '.'), and the bundles.

    A bundle whose variant, LR or seed disagrees with its folder
    (<variant>/lr<lr>/seed<seed>), two bundles of one cell, or bundles of both pack modes or two CPU pools stop the
    collection.
    """
    bundles = [read_bundle(Path(d)) for d in bundle_dirs]
    check_cells(bundles)
    check_one_pack_mode(bundles)
    check_one_cpu_pool(bundles)
    for b in bundles:
        check_finite(b)
    rows = [flatten({k: v for k, v in b.items() if k not in ("files",)}) | late_gain(b) for b in bundles]
    runs = pd.DataFrame(rows)
    if not runs.empty:
        runs = runs.sort_values(["variant", "lr", "seed"]).reset_index(drop=True)
    return runs, bundles


def check_finite(bundle: dict) -> None:
    """A bundle that did not diverge has finite losses; one that says it trained but holds NaN or inf is no
    result, and stops the collection naming its file."""
    if bundle.get("diverged"):
        return
    for key in ("best_val_loss", "final_val_loss"):
        value = bundle.get(key)
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            raise BundleError(f"bundle {bundle['path']}/bundle.json has {key} {value!r}, which is not a finite "
                              "number, while its diverged flag is false: it is no result. Delete the folder and "
                              "rerun that cell")


def late_gain(bundle: dict) -> dict:
    """How much the last LATE_SHARE of training lowered the cell's best validation loss (relative; `late_gain`),
    and whether that makes it still improving (`improving`), read from its curve."""
    if bundle.get("diverged"):
        return {"late_gain": math.nan, "improving": False}
    if "path" not in bundle:  # a summary without its folder (made by hand): nothing to tell
        return {"late_gain": math.nan, "improving": None}
    curve = read_curve(Path(bundle["path"]))
    val = curve.dropna(subset=["val_loss"]) if "val_loss" in curve else curve.iloc[0:0]
    if val.empty:
        return {"late_gain": math.nan, "improving": None}
    last = float(val.step.max())
    before = val[val.step <= last * (1 - LATE_SHARE)].val_loss
    best = float(val.val_loss.min())
    if before.empty or not math.isfinite(best):  # no evaluation before the last fifth: nothing to tell
        return {"late_gain": math.nan, "improving": None}
    gain = (float(before.min()) - best) / float(before.min())
    if bundle.get("plateau_step") is not None:  # stopped by its own plateau rule (train.plateau): not improving
        return {"late_gain": gain, "improving": False}
    return {"late_gain": gain, "improving": bool(gain > PLATEAU_TOLERANCE)}


def flatten(obj: dict, prefix: str = "") -> dict:
    """{"a": {"b": 1}} -> {"a.b": 1}; values that are neither scalars nor dicts (lists) are left out."""
    flat = {}
    for key, value in obj.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, SCALAR_TYPES):
            flat[name] = value
    return flat

