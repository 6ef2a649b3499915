"""The scale ladder's tables: the study named `ladder`, one row per cell (ladder_seeds) and per point x variant
(ladder).

A ladder is a study whose points are model sizes (rungs: d_model, layers and
heads rising together) and, at one rung, training lengths. A rung is one model
config; its `steps` column is train.steps: how long it trained, or, where the
cells train to their plateau (train.plateau, `to_plateau`), the ceiling, with
the steps each cell did train in `trained_steps`. The ladder's length is
the steps value most rungs share; the rows at that length are the size series
(what the trend over parameter count reads), and the rows of a rung trained at
several lengths are the length series. Every comparison is paired by seed with
the baseline at the same point (attnlab.pipeline.ground.statistics): the best
validation loss difference, the max-score ratio and the entropy gap; A³'s gate
mean is the mean over layers and heads of its per-token gate.

`python -m attnlab.pipeline.tables.ladder --study JSON --expect FILE --out DIR` writes ladder.csv (.md, .tex)
and ladder_seeds.csv; --study is the study spec the study tables read (attnlab.pipeline.tables.study).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from attnlab.core.bundle_format import BundleError, format_lr
from attnlab.core.config_types import to_json
from attnlab.core.io import atomic_write_text
from attnlab.core.studies import LADDER, axis_column
from attnlab.pipeline.ground import contract, intervals, statistics, verdicts
from attnlab.pipeline.ground.contract import BASELINE
from attnlab.core.cell_key import CellKey
from attnlab.pipeline.tables.checks import CELL_KEYS
from attnlab.pipeline.tables.display import write_table
from attnlab.pipeline.tables.study_cli import study_cli
from attnlab.pipeline.tables.runs import late_gain

LADDER_PROTOCOL = "scale ladder"  # how a verdict measured on the ladder names where it was measured
STEPS = "steps"  # the training-length column (train.steps), set by the study or by the config
SIZE, LENGTH = "size", "length"  # the `series` of a row: at the ladder's length, or at another length
LOG10_PARAMS = "log10_n_params"
# The per-seed values of one cell, and what each becomes against the baseline of the same seed and point.
PAIRED = {"delta_vs_softmax": ("best_val_loss", "difference"), "max_score_ratio": ("max_score", "ratio"),
          "entropy_gap": ("entropy_mean", "difference")}


# Each mean column of the ladder table and its interval's columns.
INTERVALS = {"best_val_mean": ("best_val_ci_low", "best_val_ci_high"),
             "delta_vs_softmax": ("delta_ci_low", "delta_ci_high"),
             "max_score_ratio": ("max_score_ratio_ci_low", "max_score_ratio_ci_high"),
             "entropy_gap": ("entropy_gap_ci_low", "entropy_gap_ci_high"),
             "a3_gate_mean": ("a3_gate_ci_low", "a3_gate_ci_high")}


# ---- one row per cell


def axis_keys(cells: list[tuple[CellKey, dict]]) -> list[str]:
    """The dotted keys any point of the ladder sets, in the order they first appear, with train.steps."""
    keys = dict.fromkeys(key for cell, _ in cells for key, _ in cell.point)
    keys.setdefault(f"train.{STEPS}")
    return list(keys)


def axis_columns(cells: list[tuple[CellKey, dict]]) -> list[str]:
    """The ladder's axis columns (the keys without their section), steps last unless a point sets it."""
    return [axis_column(k) for k in axis_keys(cells)]


def cell_value(cell: CellKey, bundle: dict, key: str):
    """A dotted key's value at a cell: the point's, else what the cell's config says (the study's fixed value or
    the config's own)."""
    point = dict(cell.point)
    if key in point:
        return point[key]
    section, name = key.split(".", 1)
    return bundle["config"][section].get(name)


def point_key(bundle: dict) -> str:
    """What makes two cells one point of the ladder: their config apart from the variant, LR and seed."""
    return to_json({k: v for k, v in bundle["config"].items() if k not in CELL_KEYS})


def gate_mean(bundle: dict) -> float:
    """A³'s gate G averaged over layers and heads (its telemetry), NaN for a variant without a gate."""
    grid = bundle.get("telemetry", {}).get("a3_gate_mean")
    return float(np.mean(grid)) if grid is not None else math.nan


def cell_frame(cells: list[tuple[CellKey, dict]]) -> pd.DataFrame:
    """One row per cell in the order given (row i is cells[i]), with its rung, its point (`point`: the config
    apart from variant, LR and seed), its model (`model`) and the values ladder_seeds holds."""
    keys = axis_keys(cells)
    rows = []
    for cell, bundle in cells:
        telemetry = bundle.get("telemetry", {})
        rows.append({
            **{axis_column(k): cell_value(cell, bundle, k) for k in keys},
            "model": to_json(bundle["config"]["model"]), "point": point_key(bundle),
            "variant": cell.variant, "lr": cell.lr, "seed": cell.seed, "n_params": int(bundle["n_params"]),
            "best_val_loss": float(bundle["best_val_loss"]), "diverged": bool(bundle["diverged"]),
            "max_score": float(telemetry.get("max_score", math.nan)),
            "entropy_mean": float(telemetry.get("entropy", {}).get("mean", math.nan)),
            "a3_gate_mean": gate_mean(bundle), **late_gain(bundle),
            "to_plateau": bool(bundle["config"]["train"].get("plateau")),
            "trained_steps": int(bundle.get("steps_done", cell_value(cell, bundle, f"train.{STEPS}"))),
        })
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    frame = number_rungs(frame)
    mixed = frame.groupby(["rung", STEPS]).point.nunique()
    if (mixed > 1).any():
        rung, steps = mixed[mixed > 1].index[0]
        raise BundleError(f"the {LADDER} study has several points at rung {rung} and {steps} steps: a ladder's "
                          "points differ only in model size and train.steps; put any other axis in a study of its own")
    base = frame[frame.variant == BASELINE].set_index(["point", "seed"])
    for column, (source, kind) in PAIRED.items():
        reference = base[source].reindex(pd.MultiIndex.from_frame(frame[["point", "seed"]])).to_numpy(dtype=float)
        own = frame[source].to_numpy(dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            frame[column] = own / reference if kind == "ratio" else own - reference
    frame[LOG10_PARAMS] = np.log10(frame.n_params.astype(float))
    frame["series"] = np.where(frame[STEPS] == ladder_steps(frame), SIZE, LENGTH)
    return frame


def seed_table(cells: list[tuple[CellKey, dict]]) -> pd.DataFrame:
    """ladder_seeds: one row per cell, its rung and axis values, its own scalars and the paired values against
    the baseline of the same seed and point (delta_vs_softmax, max_score_ratio, entropy_gap), by rung, length,
    variant (in the study's order) and seed."""
    columns = seed_columns(axis_columns(cells))
    frame = cell_frame(cells)
    if frame.empty:
        return pd.DataFrame(columns=columns)
    order = {v: i for i, v in enumerate(dict.fromkeys(frame.variant))}
    frame = frame.assign(_v=frame.variant.map(order)).sort_values(["rung", STEPS, "_v", "seed"], kind="stable")
    return frame.reset_index(drop=True)[columns]


def number_rungs(frame: pd.DataFrame) -> pd.DataFrame:
    """rung = 1, 2, ... by the model's parameter count (the baseline's where it trained), smallest first."""
    sizes = frame.groupby("model").n_params.min()
    base = frame[frame.variant == BASELINE].groupby("model").n_params.min()
    sizes.update(base)
    rank = {model: i + 1 for i, model in enumerate(sizes.sort_values(kind="stable").index)}
    return frame.assign(rung=frame.model.map(rank))


def ladder_steps(frame: pd.DataFrame) -> int | None:
    """The ladder's training length: the steps value the most rungs trained at (a tie: the smaller)."""
    if frame.empty:
        return None
    counts = frame.groupby(STEPS).rung.nunique()
    return int(counts[counts == counts.max()].index.min())


def seed_columns(axes: list[str]) -> list[str]:
    """The contract's ladder_seeds columns with the ladder's axis columns after `rung` (steps always there)."""
    named = contract.columns("ladder_seeds")
    return named[:1] + [a for a in axes if a not in named] + named[1:]


# ---- one row per point x variant


def ladder_table(seeds: pd.DataFrame) -> pd.DataFrame:
    """Per point of the ladder and variant: the seeds, the best validation loss (mean and its t-interval), the
    paired comparison with the baseline at the same point, the max-score ratio and entropy gap (paired, with
    intervals), A³'s gate mean (with its interval over seeds), and the series the row belongs to."""
    axes = [c for c in seeds.columns if c not in contract.columns("ladder_seeds")]
    columns = ladder_columns(axes)
    if seeds.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for (rung, steps), point in seeds.groupby(["rung", STEPS], sort=True):
        base = point[point.variant == BASELINE]
        for variant, own in point.groupby("variant", sort=False):
            first = own.iloc[0]
            loss = statistics.mean_interval(own.best_val_loss, own.seed)
            delta = paired(own, base, "best_val_loss")
            gap = paired(own, base, "best_val_loss", ratio=True)
            scores = paired(own, base, "max_score", ratio=True)
            entropy = paired(own, base, "entropy_mean")
            gates = own.a3_gate_mean.dropna()
            gate = statistics.mean_interval(gates, own.seed[gates.index]) if len(gates) else None
            rows.append({
                "rung": rung, **{a: first[a] for a in axes}, STEPS: steps, "n_params": int(first.n_params),
                "variant": variant, "lr": first.lr, "n_seeds": len(own),
                "seeds": " ".join(str(s) for s in sorted(own.seed)), "n_diverged": int(own.diverged.sum()),
                "best_val_mean": loss.mean, "best_val_ci_low": loss.low, "best_val_ci_high": loss.high,
                "delta_vs_softmax": delta.mean, "delta_ci_low": delta.low, "delta_ci_high": delta.high,
                "wins": delta.wins_text, "n_paired": delta.n, "gap_vs_softmax": gap.mean - 1,
                "gap_ci_low": gap.low - 1, "gap_ci_high": gap.high - 1, "p_vs_softmax": verdicts.p_value(delta, 0.0),
                "max_score_ratio": scores.mean, "max_score_ratio_ci_low": scores.low,
                "max_score_ratio_ci_high": scores.high,
                "entropy_gap": entropy.mean, "entropy_gap_ci_low": entropy.low, "entropy_gap_ci_high": entropy.high,
                "a3_gate_mean": gate.mean if gate else math.nan, "a3_gate_ci_low": gate.low if gate else math.nan,
                "a3_gate_ci_high": gate.high if gate else math.nan, "a3_gate_init": contract.A3_GATE_INIT,
                "series": first.series, "interval_note": delta.reason or loss.reason,
                "to_plateau": bool(own.to_plateau.any()), "trained_steps_min": int(own.trained_steps.min()),
                "trained_steps_max": int(own.trained_steps.max()),
            })
    return pd.DataFrame(rows, columns=columns)


def paired(own: pd.DataFrame, base: pd.DataFrame, column: str, ratio: bool = False) -> statistics.Estimate:
    """One variant's column against the baseline's at the same point, paired by seed (finite values only)."""
    def by_seed(cells):
        values = cells[["seed", column]].astype({column: float})
        values = values[np.isfinite(values[column]) & ((values[column] > 0) if ratio else True)]
        return dict(zip(values.seed.astype(int), values[column]))
    return statistics.paired(by_seed(own), by_seed(base), ratio=ratio)


def ladder_columns(axes: list[str]) -> list[str]:
    """The contract's ladder columns with the ladder's axis columns after `rung` (steps always there)."""
    named = contract.columns("ladder")
    return named[:1] + [a for a in axes if a not in named] + named[1:]


def size_series(table: pd.DataFrame) -> pd.DataFrame:
    """The rows at the ladder's length: one per rung and variant, what a trend over parameter count reads."""
    return table[table.series == SIZE] if not table.empty else table


def length_series(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of every rung trained at more than one length (the training-length axis), shortest first."""
    if table.empty:
        return table
    lengths = table.groupby("rung")[STEPS].nunique()
    return table[table.rung.isin(lengths[lengths > 1].index)].sort_values(["rung", STEPS], kind="stable")


def length_text(rows: pd.DataFrame, lowest: str = "trained_steps", highest: str = "trained_steps") -> str:
    """How long rows of the ladder trained: '1,000 steps', or, where they train to their plateau, 'each cell to
    its plateau (3,750–10,000 steps, at most 10,000)'."""
    ceiling = int(rows[STEPS].max())
    if "to_plateau" not in rows or not rows.to_plateau.astype(bool).any():
        return f"{ceiling:,} steps"
    trained = steps_range(rows[lowest].min(), rows[highest].max())
    return f"each cell to its plateau ({trained} steps, at most {ceiling:,})"


def steps_range(low, high) -> str:
    """'3,750–10,000', or '5,000' where both ends are one number."""
    low, high = int(low), int(high)
    return f"{low:,}" if low == high else f"{low:,}–{high:,}"


# ---- the .md and .tex


def params_text(n) -> str:
    """A parameter count as the ladder writes it: 31.7 k, 818 k, 2.72 M."""
    n = float(n)
    if n >= 1e6:
        return f"{n / 1e6:.3g} M"
    return f"{n / 1e3:.3g} k"


def ladder_display(table: pd.DataFrame) -> pd.DataFrame:
    """The table for reading: each rung's axis values and size, then each comparison as 'mean [interval]'."""
    axes = [c for c in table.columns if c not in contract.columns("ladder")]
    level = f"{intervals.CONFIDENCE:.0%}"

    def estimate(mean, low, high, fmt):
        if not np.isfinite(mean):
            return "–"
        return fmt(mean) + (f" [{fmt(low)}, {fmt(high)}]" if np.isfinite(low) and np.isfinite(high) else "")

    def column(stem, low, high, fmt, skip_baseline=True):
        return [("baseline" if skip_baseline and r.variant == BASELINE else
                 estimate(getattr(r, stem), getattr(r, low), getattr(r, high), fmt)) for r in table.itertuples()]

    shown = table[["rung", *axes, STEPS]].copy()
    if "to_plateau" in table and table.to_plateau.astype(bool).any():  # steps is the ceiling: what the cells trained
        shown["trained"] = [steps_range(lo, hi) for lo, hi in zip(table.trained_steps_min, table.trained_steps_max)]
    shown["parameters"] = table.n_params.map(params_text)
    shown["variant"], shown["LR"] = table.variant, table.lr.map(lambda lr: format_lr(float(lr)))
    shown["seeds"] = table.n_seeds
    shown[f"best val loss [{level} CI]"] = column("best_val_mean", "best_val_ci_low", "best_val_ci_high",
                                                  lambda x: f"{x:.4f}", skip_baseline=False)
    shown[f"Δ vs {BASELINE} [{level} CI]"] = column("delta_vs_softmax", "delta_ci_low", "delta_ci_high",
                                                   lambda x: f"{x:+.4f}")
    shown["wins"] = ["–" if v == BASELINE else w for v, w in zip(table.variant, table.wins)]
    shown[f"max score / {BASELINE}'s"] = column("max_score_ratio", "max_score_ratio_ci_low",
                                                "max_score_ratio_ci_high", lambda x: f"{x:,.3g}×")
    shown[f"entropy − {BASELINE}'s"] = column("entropy_gap", "entropy_gap_ci_low", "entropy_gap_ci_high",
                                              lambda x: f"{x:+.3f}")
    shown["A³ gate mean"] = [estimate(r.a3_gate_mean, r.a3_gate_ci_low, r.a3_gate_ci_high, lambda x: f"{x:.3f}")
                             for r in table.itertuples()]
    shown["series"] = table.series
    return shown


def write_ladder(cells: list[tuple[CellKey, dict]], out_dir: Path) -> pd.DataFrame:
    """ladder.csv/.md/.tex and ladder_seeds.csv under out_dir; returns the ladder table."""
    lrs = {}
    for cell, _ in cells:
        lrs.setdefault(cell.variant, set()).add(cell.lr)
    several = {v: sorted(found, key=float) for v, found in lrs.items() if len(found) > 1}
    if several:
        raise BundleError(f"the study {LADDER} trains {', '.join(f'{v} at {s}' for v, s in several.items())}: a "
                          "ladder compares each variant at one LR; give the study one LR per variant (lrs: contest, "
                          "or one number)")
    seeds = seed_table(cells)
    table = ladder_table(seeds)
    out_dir = Path(out_dir)
    atomic_write_text(out_dir / contract.files("ladder_seeds")[0], seeds.to_csv(index=False))
    write_table(table, out_dir / LADDER, ladder_display(table))
    return table


def main(argv: list[str] | None = None) -> int:
    """`python -m attnlab.pipeline.tables.ladder --study JSON --expect FILE --out DIR`: the ladder's tables
    (attnlab.pipeline.tables.study_cli)."""
    return study_cli("The scale ladder's tables: ladder and ladder_seeds.",
                     lambda cells, out, _spec: ladder_display(write_ladder(cells, out)), argv)


if __name__ == "__main__":
    raise SystemExit(main())
