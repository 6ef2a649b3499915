"""The LR sweep: every variant at every sweep LR and sweep seed, and which sweep LR is a variant's best."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnlab.core.bundle_format import BundleError, format_lr
from attnlab.pipeline.ground import contract
from attnlab.pipeline.ground.contest_grid import ContestGrid


EDGE_LOW, EDGE_HIGH, EDGE_ONLY = "lowest", "highest", "only"  # where an LR sits on its variant's sweep grid
# What an LR is chosen on: each cell's best loss on the select half of the validation windows (the trainer's
# attnlab.training.summary.held_out), so the report half of the same cells stays unseen by the choice.
CHOSEN_ON = "best_val_loss_select"


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


def sweep_cells(runs: pd.DataFrame, grid: ContestGrid | dict) -> pd.DataFrame:
    """The rows of runs.csv that are sweep cells: at the sweep seed(s), each variant at its own sweep LRs."""
    grid = ContestGrid.of(grid)
    cells = runs[runs.seed.isin([int(s) for s in grid.sweep_seeds])]
    own = {(v, format_lr(lr)) for v in set(cells.variant) for lr in variant_sweep_lrs(grid, v)}
    return cells[pd.Series([(v, format_lr(lr)) in own for v, lr in zip(cells.variant, cells.lr)], index=cells.index,
                           dtype=bool)]


def sweep_table(runs: pd.DataFrame, grid: ContestGrid | dict) -> pd.DataFrame:
    """Long form: variant, lr, seed, best validation loss, diverged flag and step, at the sweep seed(s), each
    variant at its own sweep LRs."""
    columns = contract.columns("lr_sweep")
    return sweep_cells(runs, grid)[columns].sort_values(["variant", "lr", "seed"]).reset_index(drop=True)


def best_sweep_lr(cells: pd.DataFrame) -> dict | None:
    """The LR of one variant's sweep cells with the lowest mean select-half loss (CHOSEN_ON) over its seeds,
    among the LRs where no seed diverged; None when every LR had a divergence. Also that LR's mean best
    validation loss over all windows, and each LR's select-half mean (candidates).

    The select half chooses so that the report half reads the chosen cells
    without the luck of the choice (best_val_loss_heldout). LRs are grouped by
    their exact text (format_lr); a tie goes to the smaller LR.
    """
    check_chosen_on(cells)
    lrs = cells.lr.map(format_lr)
    means = cells.groupby(lrs)[CHOSEN_ON].mean()
    means = means.reindex(sorted(means.index, key=float))
    failed = cells[["diverged", CHOSEN_ON]].groupby(lrs).apply(
        lambda c: bool(c.diverged.astype(bool).any() or not np.isfinite(c[CHOSEN_ON].astype(float)).all()))
    healthy = means[~failed.reindex(means.index).astype(bool)]
    if healthy.empty:
        return None
    lr = healthy.idxmin()
    return {"lr": float(lr), CHOSEN_ON: float(healthy[lr]),
            "best_val_loss": float(cells[lrs == lr].best_val_loss.mean()),
            "candidates": {k: float(v) for k, v in means.items()},
            "excluded": [k for k in means.index if k not in healthy.index]}  # a seed diverged there


def check_chosen_on(cells: pd.DataFrame) -> None:
    """Every sweep cell that trained has its select-half loss; a bundle written before the validation windows
    were halved has none, and stops the choice naming its cells rather than choosing on the full loss."""
    missing = cells if CHOSEN_ON not in cells else cells[cells[CHOSEN_ON].isna()]
    missing = missing[~missing.diverged.fillna(False).astype(bool)]
    if len(missing):
        named = ", ".join(f"{v} lr {format_lr(lr)} seed {int(s)}" for v, lr, s in
                          zip(missing.get("variant", ["?"] * len(missing)), missing.lr, missing.seed))
        raise BundleError(f"no {CHOSEN_ON} for the sweep cells {named}: their bundles were written before "
                          "evaluations read a select and a report half of the validation windows, and an LR is "
                          "chosen on the select half. Delete those bundles and train them again (a build does: "
                          "their code fingerprint changed)")
