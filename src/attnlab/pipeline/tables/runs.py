"""runs.csv: one row per cell with every scalar of its bundle, read and checked through the one bundle reader."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from attnlab.pipeline.bundle_reader import read_bundle
from attnlab.pipeline.tables.checks import check_cells

SCALAR_TYPES = (int, float, bool, str, type(None))


def load_runs(bundle_dirs: list[Path]) -> tuple[pd.DataFrame, list[dict]]:
    """One row per cell with every scalar of its bundle (nested keys joined by '.'), and the bundles.

    A bundle whose variant, LR or seed disagrees with its folder
    (<variant>/lr<lr>/seed<seed>), or two bundles of one cell, stop the collection.
    """
    bundles = [read_bundle(Path(d)) for d in bundle_dirs]
    check_cells(bundles)
    rows = [flatten({k: v for k, v in b.items() if k not in ("files",)}) for b in bundles]
    runs = pd.DataFrame(rows)
    if not runs.empty:
        runs = runs.sort_values(["variant", "lr", "seed"]).reset_index(drop=True)
    return runs, bundles


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

