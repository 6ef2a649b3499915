"""The LR sweep: every variant at every sweep LR and sweep seed, and which sweep LR is a variant's best."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline import contract
from attnlab.pipeline.plan.contest_grid import ContestGrid


EDGE_LOW, EDGE_HIGH, EDGE_ONLY = "lowest", "highest", "only"  # where an LR sits on its variant's sweep grid


def variant_sweep_lrs(grid: ContestGrid | dict, variant: str) -> list[float]:
    """One variant's sweep LRs, ascending (its own list where sweep.lrs maps variants to lists)."""
    return ContestGrid.of(grid).sweep_lrs_of(variant)


def grid_edge(grid: ContestGrid | dict, variant: str, lr) -> str:
    """Whether an LR is at the edge of its variant's sweep grid: 'lowest', 'highest', 'only' (a one-LR sweep),
    or '' (inside the grid, or not one of its LRs). A best LR at an edge may have a better one beyond it."""
    grid = ContestGrid.of(grid)
    lrs = [format_lr(x) for x in variant_sweep_lrs(grid, variant)]
    text = format_lr(lr)
    if text not in lrs:
        return ""
    if len(lrs) == 1:
        return EDGE_ONLY
    return EDGE_LOW if text == lrs[0] else EDGE_HIGH if text == lrs[-1] else ""


def sweep_table(runs: pd.DataFrame, grid: ContestGrid | dict) -> pd.DataFrame:
    """Long form: variant, lr, seed, best validation loss, diverged flag and step, at the sweep seed(s), each
    variant at its own sweep LRs."""
    grid = ContestGrid.of(grid)
    cells = runs[runs.seed.isin([int(s) for s in grid.sweep_seeds])]
    own = {(v, format_lr(lr)) for v in set(cells.variant) for lr in variant_sweep_lrs(grid, v)}
    cells = cells[pd.Series([(v, format_lr(lr)) in own for v, lr in zip(cells.variant, cells.lr)], index=cells.index,
                            dtype=bool)]
    columns = contract.columns("lr_sweep")
    return cells[columns].sort_values(["variant", "lr", "seed"]).reset_index(drop=True)


def best_sweep_lr(cells: pd.DataFrame) -> dict | None:
    """The LR of one variant's sweep cells with the lowest mean best validation loss over its seeds, among
    the LRs where no seed diverged; None when every LR had a divergence. Also each LR's mean (candidates).

    LRs are grouped by their exact text (format_lr); a tie goes to the smaller LR.
    """
    lrs = cells.lr.map(format_lr)
    means = cells.groupby(lrs).best_val_loss.mean()
    means = means.reindex(sorted(means.index, key=float))
    failed = cells[["diverged", "best_val_loss"]].groupby(lrs).apply(
        lambda c: bool(c.diverged.astype(bool).any() or not np.isfinite(c.best_val_loss.astype(float)).all()))
    healthy = means[~failed.reindex(means.index).astype(bool)]
    if healthy.empty:
        return None
    lr = healthy.idxmin()
    return {"lr": float(lr), "best_val_loss": float(healthy[lr]), "candidates": {k: float(v) for k, v in means.items()}}
