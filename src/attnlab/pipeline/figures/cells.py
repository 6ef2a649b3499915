"""Which runs a figure shows: tables read from disk, the contest's cells in contest order, one cell per variant.

An LR is identified by its exact text (attnlab.core.bundle_format.format_lr),
never by closeness: 0.0010000001 is not the cell of 0.001.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.ground import contract
from attnlab.pipeline.ground.bundle_reader import check_collected
from attnlab.pipeline.ground.paths import workspace_of

RUNS = "runs"  # the one table whose rows point at bundles


def read_table(name: str, path: Path) -> pd.DataFrame:
    """A table as pandas reads it; runs.csv's bundle paths resolved against its workspace."""
    table = pd.read_csv(path)
    if name == RUNS:
        table["path"] = [str(resolve_bundle(p, Path(path))) for p in table["path"]]
        if "content_sha256" in table:  # every bundle a figure reads is the one collection checked
            for folder, digest in zip(table["path"], table["content_sha256"]):
                check_collected(Path(folder), str(digest))
    return table


def resolve_bundle(path: str, runs_path: Path) -> Path:
    """A bundle path from runs.csv: relative to the working dir, else to the workspace of runs.csv."""
    path = Path(path)
    if path.is_absolute() or path.exists():
        return path
    workspace = workspace_of(runs_path)
    return workspace / path if (workspace / path).exists() else path


def lr_keys(lrs) -> pd.Series:
    """Each LR of a column as its exact text: the key two LRs are compared by."""
    return pd.Series(lrs).astype(float).map(format_lr)


def variant_order(contest: pd.DataFrame, runs: pd.DataFrame | None = None) -> list[str]:
    """Variants in the contest table's order (the config's), then any others that ran."""
    order = list(dict.fromkeys(contest.variant))
    if runs is not None:
        order += [v for v in dict.fromkeys(runs.variant) if v not in order]
    return order


def contest_cells(runs: pd.DataFrame, contest: pd.DataFrame) -> pd.DataFrame:
    """Every seed of every variant at that variant's contest LR, in contest order."""
    parts = []
    for row in contest.itertuples():
        seeds = contract.seeds_of(row.seeds) if "seeds" in contest.columns else runs.seed.unique()
        parts.append(contract.contest_rows(runs, row.variant, row.lr, seeds).sort_values("seed"))
    if not parts:
        return runs.iloc[0:0]
    return pd.concat(parts).reset_index(drop=True)


def shown_cells(runs: pd.DataFrame, contest: pd.DataFrame) -> pd.DataFrame:
    """One cell per variant for per-variant pictures: the contest LR at the variant's lowest contest seed."""
    cells = contest_cells(runs, contest)
    return cells.groupby("variant", sort=False).head(1).reset_index(drop=True)


def cell_label(row) -> str:
    return f"{row.variant} (lr {format_lr(row.lr)}, seed {int(row.seed)})"
