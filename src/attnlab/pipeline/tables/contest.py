"""The contest (every variant at its contest LR, paired by seed with the baseline) and best_lr (each at its best
sweep LR, beside the contest). The columns are the table contract's (attnlab.pipeline.ground.contract)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.ground import contract, statistics, verdicts
from attnlab.pipeline.ground.contract import BASELINE
from attnlab.pipeline.ground.contract import at_lr
from attnlab.pipeline.tables.sweep import best_sweep_lr, grid_edge, sweep_cells
from attnlab.pipeline.ground.contest_grid import ContestGrid


def contest_cells(runs: pd.DataFrame, grid: ContestGrid, variant: str) -> pd.DataFrame:
    """The rows of one variant's contest: its contest LR (by identity), the contest seeds."""
    return contract.contest_rows(runs, variant, grid.contest_lr.get(variant), grid.contest_seeds)


def contest_table(runs: pd.DataFrame, grid: ContestGrid | dict) -> pd.DataFrame:
    """Per variant at its contest LR: seeds, best validation loss mean and std (ddof 0; the posts' measure) and
    the held-out reading's beside it, bits/char, and the paired comparison with the baseline over the seeds both
    have (the contract's contest columns)."""
    grid = ContestGrid.of(grid)
    rows = []
    base = losses_by_seed(trained(contest_cells(runs, grid, BASELINE)))
    for variant in grid.variants:
        lr = grid.contest_lr.get(variant)
        cells = contest_cells(runs, grid, variant)
        if cells.empty:
            continue
        healthy = trained(cells)
        best = healthy.best_val_loss.to_numpy(dtype=float) if len(healthy) else np.array([np.nan])
        rows.append({
            "variant": variant,
            "lr": format_lr(lr),
            "lr_choice": grid.lr_choice(variant),
            "n_seeds": len(cells),
            "best_val_mean": best.mean(),
            "best_val_std": best.std(ddof=0),
            **held_out_columns(healthy),
            "bpc_mean": best.mean() / np.log(2),
            "n_diverged": int(cells.diverged.sum()),
            "n_params": int(cells.n_params.iloc[0]),
            "seeds": " ".join(str(s) for s in sorted(healthy.seed)),
            **paired_columns(losses_by_seed(healthy), base),
            "lr_edge": grid_edge(grid, variant, lr),
            "best_val_whole_mean": (float(healthy.best_val_loss_whole_split.astype(float).mean())
                                    if "best_val_loss_whole_split" in healthy and len(healthy) else np.nan),
            "n_improving": int(cells.improving.astype(bool).sum()) if "improving" in cells else 0,
        })
    return pd.DataFrame(rows, columns=contract.columns("contest"))


def held_out_columns(healthy: pd.DataFrame) -> dict:
    """The mean and std (ddof 0) over the cells that trained of best_val_loss_heldout: each cell's report-half
    loss where its select half was best. NaN where a cell has none (a bundle from before the halves)."""
    if "best_val_loss_heldout" not in healthy or not len(healthy):
        return {"heldout_val_mean": np.nan, "heldout_val_std": np.nan}
    values = healthy.best_val_loss_heldout.to_numpy(dtype=float)
    return {"heldout_val_mean": values.mean(), "heldout_val_std": values.std(ddof=0)}


def trained(cells: pd.DataFrame) -> pd.DataFrame:
    """The cells that trained: a diverged cell's best loss is from before it broke (at worst the untrained
    model's), so it never enters a mean or a paired difference; the tables count it in n_diverged instead."""
    if cells.empty or "diverged" not in cells:
        return cells
    return cells[~cells.diverged.fillna(False).astype(bool)]


def losses_by_seed(cells: pd.DataFrame) -> dict[int, float]:
    """seed -> best validation loss of one variant's cells at one LR."""
    if cells.empty:
        return {}
    return {int(s): float(v) for s, v in zip(cells.seed, cells.best_val_loss)}


def paired_columns(losses: dict[int, float], base: dict[int, float]) -> dict:
    """The contract's PAIRED_COLUMNS of one variant against the baseline, over the seeds both have."""
    delta = statistics.paired(losses, base)
    gap = statistics.paired(losses, base, ratio=True)
    return {"delta_vs_softmax": delta.mean, "delta_ci_low": delta.low, "delta_ci_high": delta.high,
            "wins": delta.wins_text, "n_paired": delta.n, "gap_vs_softmax": gap.mean - 1,
            "gap_ci_low": gap.low - 1, "gap_ci_high": gap.high - 1, "p_vs_softmax": verdicts.p_value(delta, 0.0)}


def best_lr_table(runs: pd.DataFrame, grid: ContestGrid | dict, contest: pd.DataFrame) -> pd.DataFrame:
    """Each variant at its best sweep LR (chosen on the select half of the validation windows, best_sweep_lr)
    against the baseline at its own, beside the contest."""
    grid = ContestGrid.of(grid)
    columns = contract.columns("best_lr")
    sweep = sweep_cells(runs, grid) if not runs.empty else pd.DataFrame()
    if sweep.empty:
        return pd.DataFrame(columns=columns)
    best = {}
    for variant in grid.variants:
        cells = sweep[sweep.variant == variant]
        choice = best_sweep_lr(cells) if len(cells) else None
        if choice is not None:
            best[variant] = (choice["lr"], losses_by_seed(cells[at_lr(cells, choice["lr"])]))
    base = best.get(BASELINE, (None, {}))[1]
    in_contest = contest.set_index("variant") if not contest.empty else pd.DataFrame()
    rows = []
    for variant, (lr, losses) in best.items():
        estimate = statistics.paired(losses, base)
        row = {"variant": variant, "best_lr": lr, "lr_edge": grid_edge(grid, variant, lr),
               "n_sweep_seeds": len(losses),
               "best_val_mean": float(np.mean(list(losses.values()))), **paired_columns(losses, base),
               "interval_note": estimate.reason, "lrs_added": grid.sweep_added(variant),
               "extend_limit": grid.sweep_extend if variant in grid.sweep_given else 0}
        if variant in in_contest.index:
            c = in_contest.loc[variant]
            row.update({"contest_lr": float(c.lr), "contest_lr_choice": c.lr_choice,
                        "contest_delta_vs_softmax": c.delta_vs_softmax, "contest_delta_ci_low": c.delta_ci_low,
                        "contest_delta_ci_high": c.delta_ci_high, "contest_gap_vs_softmax": c.gap_vs_softmax})
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)
