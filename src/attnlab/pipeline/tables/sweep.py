"""The LR sweep: every variant at every sweep LR and sweep seed, and which sweep LR is a variant's best."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline import contract


def sweep_table(runs: pd.DataFrame, grid: dict) -> pd.DataFrame:
    """Long form: variant, lr, seed, best validation loss, diverged flag and step, at the sweep seed(s)."""
    cells = runs[runs.seed.isin([int(s) for s in grid["sweep_seeds"]])]
    cells = cells[cells.lr.map(format_lr).isin({format_lr(lr) for lr in grid["sweep_lrs"]})]
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
