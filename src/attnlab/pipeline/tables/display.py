"""How each table reads in its .md and .tex: one display per table (DISPLAYS), and the writer of all three files.

The .csv holds the numbers (the table contract's columns); the .md and .tex
hold the display of the same table, or the numbers themselves where a table
has no display. Cells are formatted by `human` unless a display already made
them text.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from attnlab.core.bundle_format import format_lr
from attnlab.core.io import atomic_write_text
from attnlab.pipeline import statistics
from attnlab.pipeline.contract import BASELINE, SEED_MEAN_OVER_LAYERS, SHARE_DIFFUSE, SHARE_SHARP, TEMPERATURE_ARMS
from attnlab.pipeline.tables.arms import share

SEED_MEAN_LABEL = "mean over layers of max score, per seed (range over seeds)"


def write_table(df: pd.DataFrame, stem: Path, display: pd.DataFrame | None = None) -> None:
    """stem.csv holds the numbers; stem.md and stem.tex the human form."""
    stem = Path(stem)
    shown = (df if display is None else display).map(human)
    atomic_write_text(stem.with_suffix(".csv"), df.to_csv(index=False))
    atomic_write_text(stem.with_suffix(".md"), shown.to_markdown(index=False, disable_numparse=True) + "\n")
    atomic_write_text(stem.with_suffix(".tex"), shown.to_latex(index=False, escape=True))


def human(value):
    """Readable text for a table cell: 4 decimals, thousands separators for large values."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (float, np.floating)):
        return value
    if not np.isfinite(value):
        return "–" if np.isnan(value) else str(value)
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if value == 0 or abs(value) >= 0.01:
        return f"{value:.4f}"
    return f"{value:.3g}"


def lr_text(lr, choice) -> str:
    """An LR as a table shows it, '0.01 (auto)' when the sweep chose it."""
    if lr is None or (isinstance(lr, float) and not np.isfinite(lr)):
        return "–"
    return format_lr(float(lr)) + (" (auto)" if choice == "auto" else "")


def _signed(value: float) -> str:
    return f"{value:+.4f}" if np.isfinite(value) else "–"


def contest_display(contest: pd.DataFrame) -> pd.DataFrame:
    level = f"{statistics.CONFIDENCE:.0%}"

    def delta(r):
        if r.variant == BASELINE:
            return "baseline"
        if not np.isfinite(r.delta_vs_softmax):
            return "–"
        if np.isfinite(r.delta_ci_low) and np.isfinite(r.delta_ci_high):
            return f"{r.delta_vs_softmax:+.4f} [{r.delta_ci_low:+.4f}, {r.delta_ci_high:+.4f}]"
        return f"{r.delta_vs_softmax:+.4f} ({statistics.ONE_SEED})"

    return pd.DataFrame({
        "variant": contest.variant,
        "LR": [lr_text(lr, choice) for lr, choice in zip(contest.lr, contest.lr_choice)],
        "seeds": contest.n_seeds,
        "best-val (nats/char)": [f"{m:.4f} ± {s:.4f}" for m, s in zip(contest.best_val_mean, contest.best_val_std)],
        "bits/char": contest.bpc_mean.map(lambda x: f"{x:.3f}"),
        f"Δ vs {BASELINE} (nats) [{level} CI]": [delta(r) for r in contest.itertuples()],
        f"wins vs {BASELINE}": ["–" if v == BASELINE else w for v, w in zip(contest.variant, contest.wins)],
        "diverged": contest.n_diverged,
    })


def sweep_display(sweep: pd.DataFrame) -> pd.DataFrame:
    """LR rows x variant columns, the mean over the sweep seeds; a cell with a diverged seed reads
    'diverged @ step' (one seed) or 'diverged on k/n seeds', never as a number."""
    def cell(group):
        diverged = group[group.diverged.astype(bool)]
        if len(diverged) and len(group) == 1:
            step = diverged.diverged_step.iloc[0]
            return f"diverged @ {int(step)}" if pd.notna(step) else "diverged"
        if len(diverged):
            return f"diverged on {len(diverged)}/{len(group)} seeds"
        return f"{group.best_val_loss.astype(float).mean():.4f}"
    values = (sweep.groupby(["lr", "variant"])[["diverged", "diverged_step", "best_val_loss"]].apply(cell)
              .rename("value").reset_index())
    wide = values.pivot(index="lr", columns="variant", values="value").sort_index()  # numeric LR order
    wide.index = wide.index.map(format_lr)
    return wide.reset_index()


def best_lr_display(table: pd.DataFrame) -> pd.DataFrame:
    """Per variant: its best sweep LR and contest LR, and the paired difference with the baseline at each."""
    def at(mean, low, high, note=""):
        estimate_text = f"{mean:+.4f}" if np.isfinite(mean) else "–"
        if np.isfinite(low) and np.isfinite(high):
            return f"{estimate_text} [{low:+.4f}, {high:+.4f}]"
        return f"{estimate_text} ({note})" if note else estimate_text
    level = f"{statistics.CONFIDENCE:.0%}"
    return pd.DataFrame({
        "variant": table.variant,
        "best sweep LR": table.best_lr.map(format_lr),
        "sweep seeds": table.n_sweep_seeds,
        f"Δ vs {BASELINE} at best LRs [{level} CI]": [
            "baseline" if r.variant == BASELINE else at(r.delta_vs_softmax, r.delta_ci_low, r.delta_ci_high,
                                                         r.interval_note) for r in table.itertuples()],
        "contest LR": [lr_text(lr, choice) for lr, choice in zip(table.contest_lr, table.contest_lr_choice)],
        f"Δ vs {BASELINE} in the contest [{level} CI]": [
            "baseline" if r.variant == BASELINE else at(r.contest_delta_vs_softmax, r.contest_delta_ci_low,
                                                         r.contest_delta_ci_high, statistics.ONE_SEED)
            for r in table.itertuples()],
    })


def normswap_display(table: pd.DataFrame) -> pd.DataFrame:
    """The contest cells: per variant and seed, native loss, swapped loss and their difference."""
    shown = table[table.in_contest.astype(bool)] if not table.empty else table
    return pd.DataFrame({
        "variant": shown.variant, "LR": shown.lr.map(format_lr), "seed": shown.seed,
        "trained with": shown.native_normaliser, "native loss": shown.native_loss,
        "swapped to": [f"{n} (= {t})" for n, t in zip(shown.swapped_normaliser, shown.swapped_to)],
        "swapped loss": shown.swapped_loss, "swapped − native": shown.difference.map(lambda x: f"{x:+.4f}"),
    }, columns=["variant", "LR", "seed", "trained with", "native loss", "swapped to", "swapped loss",
                "swapped − native"])


def a3_vs_temperature_display(table: pd.DataFrame) -> pd.DataFrame:
    """Per seed and the mean over seeds: each arm's best-val (its LR in the header) and gain over the baseline."""
    arms = (BASELINE,) + TEMPERATURE_ARMS
    if table.empty:
        return pd.DataFrame(columns=["seed", *arms, *(f"{v} gain" for v in TEMPERATURE_ARMS), "softmax_t / a3 gain"])
    headers = {v: f"{v} (LR {table[f'{v}_lr'].iloc[0]})" for v in arms}
    mean = table.drop(columns=[c for c in table.columns if c.endswith("_lr")]).mean(numeric_only=True)

    def line(seed, r, part):
        row = {"seed": seed, **{headers[v]: r[f"{v}_best_val"] for v in arms}}
        row.update({f"{v} gain": _signed(r[f"{v}_gain"]) for v in TEMPERATURE_ARMS})
        row["softmax_t / a3 gain"] = part
        return row

    rows = [line(str(int(r.seed)), r, r.softmax_t_share_of_a3_gain) for _, r in table.iterrows()]
    rows.append(line("mean", mean, share(mean["softmax_t_gain"], mean["a3_gain"])))
    return pd.DataFrame(rows)


def score_display(score: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for variant, cells in score.groupby("variant", sort=False):
        per_seed = cells.groupby("seed")[SEED_MEAN_OVER_LAYERS].first()
        rows.append({"variant": variant, "LR": format_lr(cells.lr.iloc[0]),
                     SEED_MEAN_LABEL: f"{per_seed.min():,.4g} – {per_seed.max():,.4g}",
                     "max score": f"{cells.max_score.max():,.6g}"})
    return pd.DataFrame(rows, columns=["variant", "LR", SEED_MEAN_LABEL, "max score"])


def auroc_display(auroc: pd.DataFrame) -> pd.DataFrame:
    rows = [{"variant": v, "LR": format_lr(cells.lr.iloc[0]),
             "AUROC per seed": ", ".join(f"{x:.3f}" for x in cells.mass_auroc),
             "AUROC mean": f"{cells.mass_auroc.mean():.3f}",
             "mass, correct (per seed)": ", ".join(f"{x:,.4g}" for x in cells.mass_correct_mean),
             "mass, wrong (per seed)": ", ".join(f"{x:,.4g}" for x in cells.mass_wrong_mean)}
            for v, cells in auroc.groupby("variant", sort=False)]
    return pd.DataFrame(rows, columns=["variant", "LR", "AUROC per seed", "AUROC mean", "mass, correct (per seed)",
                                       "mass, wrong (per seed)"])


def entropy_display(entropy: pd.DataFrame) -> pd.DataFrame:
    """Each variant's mean over its contest seeds."""
    columns = ["mean", SHARE_SHARP, SHARE_DIFFUSE]
    return entropy.groupby("variant", sort=False)[columns].mean().reset_index()


def scalars_display(scalars: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (variant, name), cells in scalars.groupby(["variant", "scalar"], sort=False):
        mean = cells.groupby(["layer", "head"]).value.mean()
        rows.append({"variant": variant, "scalar": name, "min": mean.min(), "max": mean.max(),
                     "per layer x head (seed mean)": "; ".join(
                         " ".join(f"{mean[(layer, h)]:.2f}" for h in sorted(mean[layer].index))
                         for layer in sorted(mean.index.get_level_values(0).unique()))})
    return pd.DataFrame(rows, columns=["variant", "scalar", "min", "max", "per layer x head (seed mean)"])


def gates_display(gates: pd.DataFrame) -> pd.DataFrame:
    a3 = gates[gates.variant == "a3"]
    soft = gates[gates.variant == BASELINE].groupby("layer").entropy.mean()
    rows = []
    for layer, cells in a3.groupby("layer"):
        rows.append({"layer": layer, "gate mean": cells.gate_mean.mean(),
                     "gate spread over heads": cells.groupby("head").gate_mean.mean().std(ddof=0),
                     "gate std over tokens": cells.gate_std.mean(),
                     "a3 entropy": cells.entropy.mean(), f"{BASELINE} entropy": soft.get(layer, np.nan)})
    return pd.DataFrame(rows, columns=["layer", "gate mean", "gate spread over heads", "gate std over tokens",
                                       "a3 entropy", f"{BASELINE} entropy"])


def ledger_display(table: pd.DataFrame) -> pd.DataFrame:
    """The ledger for reading in ledger.md and ledger.tex: the claim, the measured value, the verdict."""
    return pd.DataFrame({
        "source": table.source, "claim": table.claim, "measured": table.measured, "published": table.published,
        "verdict": [f"{v} ({r})" if r else v for v, r in zip(table.verdict, table.resolution.fillna(""))],
        "interval": table.interval, "seeds": table.seeds, "protocol": table.protocol,
    })


# One display per table; a table without one (runs, params, a3_init, a3_vs_softmax_entropy) shows its numbers.
DISPLAYS = {"contest": contest_display, "lr_sweep": sweep_display, "best_lr": best_lr_display,
            "normswap": normswap_display, "a3_vs_temperature": a3_vs_temperature_display,
            "score_scale": score_display, "mass_auroc": auroc_display, "entropy": entropy_display,
            "scalars": scalars_display, "a3_gates": gates_display, "ledger": ledger_display}


def display(name: str, table: pd.DataFrame) -> pd.DataFrame | None:
    """The human form of a table, or None where it shows its numbers."""
    shown = DISPLAYS.get(name)
    return shown(table) if shown is not None else None
