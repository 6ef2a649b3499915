"""The arms beyond the posts' four variants: the normaliser crossover (normswap), A³ against a learned
temperature (a3_vs_temperature), and every variant's parameter count against the baseline (params)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.ground import contract, statistics
from attnlab.pipeline.ground.contract import BASELINE, TEMPERATURE_ARMS
from attnlab.pipeline.tables.contest import contest_cells, trained
from attnlab.pipeline.ground.contest_grid import ContestGrid


def normswap_table(runs: pd.DataFrame, grid: ContestGrid | dict) -> pd.DataFrame:
    """Every cell whose bundle holds a normaliser crossover (bundle field "normswap", written by the trainer):
    native and swapped loss of its final weights."""
    grid = ContestGrid.of(grid)
    columns = contract.columns("normswap")
    needed = {"normswap.native_loss", "normswap.swapped_loss"}
    if runs.empty or not needed <= set(runs.columns):
        return pd.DataFrame(columns=columns)
    cells = runs[runs["normswap.native_loss"].notna()]
    contest = set()
    for variant in grid.variants:
        contest |= set(contest_cells(runs, grid, variant).index)
    table = pd.DataFrame({
        "variant": cells.variant, "lr": cells.lr.astype(float), "seed": cells.seed.astype(int),
        "in_contest": [i in contest for i in cells.index], "diverged": cells.diverged.astype(bool),
        "native_normaliser": cells["normswap.native_normaliser"], "native_loss": cells["normswap.native_loss"],
        "swapped_to": cells["normswap.swapped_to"], "swapped_normaliser": cells["normswap.swapped_normaliser"],
        "swapped_loss": cells["normswap.swapped_loss"],
        "difference": cells["normswap.swapped_loss"] - cells["normswap.native_loss"],
    }, columns=columns)
    order = {v: i for i, v in enumerate(grid.variants)}
    return (table.assign(_order=table.variant.map(order)).sort_values(["_order", "lr", "seed"])
            .drop(columns="_order").reset_index(drop=True))


def a3_vs_temperature_table(runs: pd.DataFrame, grid: ContestGrid | dict) -> pd.DataFrame:
    """Per contest seed: A³'s gain over the baseline beside softmax_t's (and a3_heads'), each at its contest LR."""
    grid = ContestGrid.of(grid)
    columns = contract.columns("a3_vs_temperature")
    best = {}
    for variant in (BASELINE,) + TEMPERATURE_ARMS:
        cells = contest_cells(runs, grid, variant)
        best[variant] = dict(zip(cells.seed.astype(int), cells.best_val_loss.astype(float))) if len(cells) else {}
    if not best[BASELINE] or not any(best[v] for v in TEMPERATURE_ARMS):
        return pd.DataFrame(columns=columns)
    rows = []
    for seed in sorted(best[BASELINE]):
        soft = best[BASELINE][seed]
        row = {"seed": seed, f"{BASELINE}_best_val": soft, f"{BASELINE}_lr": _contest_lr_text(grid, BASELINE)}
        for variant in TEMPERATURE_ARMS:
            value = best[variant].get(seed, np.nan)
            row[f"{variant}_best_val"] = value
            row[f"{variant}_gain"] = soft - value
            row[f"{variant}_lr"] = _contest_lr_text(grid, variant)
        row["softmax_t_share_of_a3_gain"] = share(row["softmax_t_gain"], row["a3_gain"])
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def _contest_lr_text(grid: ContestGrid, variant: str) -> str:
    lr = grid.contest_lr.get(variant)
    return format_lr(lr) if lr is not None else "–"


def share(part: float, whole: float) -> float:
    """part / whole, NaN where whole is 0 or missing."""
    return float(part / whole) if np.isfinite(whole) and whole != 0 and np.isfinite(part) else np.nan


def params_table(runs: pd.DataFrame, grid: ContestGrid | dict) -> pd.DataFrame:
    """Each variant's parameter count and its difference from the baseline's, beside its compute overhead: the
    time per training step against the baseline's, paired by contest seed (the baseline's steps/s over the
    variant's, through the mean log-ratio, with its t-interval). steps/s is wall-clock training time measured
    by the trainer, so a busy machine moves it: the pairing by seed compares cells that ran in one build."""
    grid = ContestGrid.of(grid)
    variants = grid.variants
    counts = runs.groupby("variant").n_params.first().reindex([v for v in variants if v in set(runs.variant)])
    base = counts.get(BASELINE, np.nan)
    speed = {v: _steps_per_s(runs, grid, v) for v in counts.index}
    rows = []
    for variant, n in counts.items():
        own = speed[variant]
        time = statistics.paired(speed.get(BASELINE, {}), own, ratio=True)  # baseline steps/s / variant's
        rows.append({"variant": variant, "n_params": n, "vs_softmax": n - base,
                     "steps_per_s": float(np.mean(list(own.values()))) if own else np.nan,
                     "time_vs_softmax": time.mean, "time_ci_low": time.low, "time_ci_high": time.high,
                     "n_timed": time.n})
    return pd.DataFrame(rows, columns=contract.columns("params"))


def step_time_ratios(step_times: pd.DataFrame | None) -> dict[str, statistics.Estimate]:
    """variant -> its time per training step over the baseline's from the interleaved timing rounds
    (step_times.csv: one process, the variants taking turns), paired by round through the mean log-ratio: the
    one estimate of a variant's compute overhead wherever the build timed it (the ledger's row and the
    parameters table both read it); {} without timed rounds of the baseline."""
    if step_times is None or step_times.empty or BASELINE not in set(step_times.variant):
        return {}

    def per_round(variant) -> dict[int, float]:
        cells = step_times[step_times.variant == variant]
        return dict(zip(cells["round"].astype(int), cells.seconds_per_step.astype(float)))

    base = per_round(BASELINE)
    return {v: statistics.paired(per_round(v), base, ratio=True) for v in dict.fromkeys(step_times.variant)
            if v != BASELINE}


def with_step_times(params: pd.DataFrame, step_times: pd.DataFrame | None) -> pd.DataFrame:
    """The parameters table with each timed variant's time per step taken from step_time_ratios (the interleaved
    rounds, the estimate the ledger judges), the others' kept from the training logs' steps/s; `time_source`
    says which each row shows."""
    timed = step_time_ratios(step_times)
    out = params.copy()
    out["time_source"] = ["" if v == BASELINE else "interleaved rounds" if v in timed else "training logs"
                          for v in out.variant]
    for i, v in zip(out.index, out.variant):
        if v in timed:
            e = timed[v]
            out.loc[i, ["time_vs_softmax", "time_ci_low", "time_ci_high", "n_timed"]] = [e.mean, e.low, e.high, e.n]
    return out


def _steps_per_s(runs: pd.DataFrame, grid: ContestGrid, variant: str) -> dict[int, float]:
    """seed -> training steps per second of a variant's contest cells that trained."""
    cells = trained(contest_cells(runs, grid, variant)) if "steps_per_s" in runs else runs.iloc[0:0]
    return {int(s): float(v) for s, v in zip(cells.seed, cells.steps_per_s) if np.isfinite(v) and v > 0}
