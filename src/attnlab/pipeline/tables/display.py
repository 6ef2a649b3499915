"""How each table reads: one display per table (DISPLAYS), for its .md and .tex and for the writeup alike.

The .csv holds the numbers (the table contract's columns); the .md, the .tex
and the writeup's table show the same display of it, cell for cell (`shown`:
the display with its numbers written by `human`). The writeup adds beside it
only what a build of the published protocol can compare (the published
numbers) and folds a table's per-seed rows under it (DETAILS). Numbers are
written by attnlab.pipeline.ground.formatting. The telemetry tables' displays are in
display_telemetry; the contest's, the sweep's, the arms' and the ledger's here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from attnlab.core.io import atomic_write_text
from attnlab.pipeline.ground import intervals, statistics
from attnlab.pipeline.ground.contract import BASELINE, READING, TEMPERATURE_ARMS
from attnlab.pipeline.ground.formatting import MISSING, difference, fixed, lr_text, mean_pm, percent, plural, signed
from attnlab.pipeline.ground.published import published
from attnlab.pipeline.tables import display_telemetry as telemetry
from attnlab.pipeline.tables.arms import share
from attnlab.pipeline.tables.catalog import catalog_display

LEVEL = f"{intervals.CONFIDENCE:.0%}"
SEED_MEAN_LABEL = telemetry.SEED_MEAN_LABEL


def write_table(df: pd.DataFrame, stem: Path, display: pd.DataFrame | None = None) -> None:
    """stem.csv holds the numbers; stem.md and stem.tex the human form."""
    stem = Path(stem)
    text = (df if display is None else display).map(human)
    atomic_write_text(stem.with_suffix(".csv"), df.to_csv(index=False))
    atomic_write_text(stem.with_suffix(".md"), text.to_markdown(index=False, disable_numparse=True) + "\n")
    atomic_write_text(stem.with_suffix(".tex"), text.to_latex(index=False, escape=True))


def human(value):
    """Readable text for a table cell: 4 decimals, thousands separators for large values."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (float, np.floating)):
        return value
    if not np.isfinite(value):
        return MISSING if np.isnan(value) else str(value)
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if value == 0 or abs(value) >= 0.01:
        return f"{value:.4f}"
    return f"{value:.3g}"


# ---- the contest, the sweep, each variant at its best sweep LR


def contest_display(contest: pd.DataFrame) -> pd.DataFrame:
    """Each variant's loss at its contest LR (the posts' measure, and the held-out half's beside it where the
    cells have one; bits/char, nats / ln 2, stay in contest.csv so the table fits the text column), then its
    paired comparison with the baseline over the seeds both have: the difference with its interval, wins, and
    the gap in percent through the mean per-seed log-ratio."""
    base = contest.variant == BASELINE
    return pd.DataFrame({
        "variant": contest.variant,
        "LR": [lr_text(lr, c) for lr, c in zip(contest.lr, contest.lr_choice)],
        "seeds": contest.n_seeds.astype(int),
        "best val. loss, posts' measure (nats/char)": mean_pm(contest.best_val_mean, contest.best_val_std),
        **({"held-out half (nats/char)": mean_pm(contest.heldout_val_mean, contest.heldout_val_std)}
           if "heldout_val_mean" in contest and contest.heldout_val_mean.notna().any() else {}),
        **({"whole split (nats/char)": contest.best_val_whole_mean.map(lambda x: fixed(x, 4))}
           if "best_val_whole_mean" in contest and contest.best_val_whole_mean.notna().any() else {}),
        f"− {BASELINE} (nats) [{LEVEL} interval]": [
            "baseline" if b else difference(d, lo, hi)
            for b, d, lo, hi in zip(base, contest.delta_vs_softmax, contest.delta_ci_low, contest.delta_ci_high)],
        "wins": ["" if b else w for b, w in zip(base, contest.wins)],
        f"gap to {BASELINE}": ["baseline" if b else percent(g) for b, g in zip(base, contest.gap_vs_softmax)],
        "diverged seeds": contest.n_diverged.astype(int),
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
        return fixed(group.best_val_loss.astype(float).mean(), 4)
    values = (sweep.groupby(["lr", "variant"])[["diverged", "diverged_step", "best_val_loss"]].apply(cell)
              .rename("value").reset_index())
    wide = values.pivot(index="lr", columns="variant", values="value").sort_index()  # numeric LR order
    wide.index = wide.index.map(lr_text)
    return wide.reset_index().rename(columns={"lr": "LR"}).rename_axis(columns=None)


def best_lr_display(best: pd.DataFrame) -> pd.DataFrame:
    """Each variant at its best sweep LR against the baseline at its own, beside the same comparison in the
    contest: the difference with its interval (or why it has none) and the gap in percent."""
    def cell(variant, mean, low, high, gap):
        return "baseline" if variant == BASELINE else f"{difference(mean, low, high)}, {percent(gap)}"

    return pd.DataFrame({
        "variant": best.variant,
        "best sweep LR": [where_best(r) for r in best.itertuples()],
        "sweep seeds": best.n_sweep_seeds.astype(int),
        f"− {BASELINE} at the best LRs (nats) [{LEVEL} interval], gap": [
            cell(r.variant, r.delta_vs_softmax, r.delta_ci_low, r.delta_ci_high, r.gap_vs_softmax)
            for r in best.itertuples()],
        "contest LR": [lr_text(lr, c) for lr, c in zip(best.contest_lr, best.contest_lr_choice)],
        f"− {BASELINE} in the contest (nats) [{LEVEL} interval], gap": [
            cell(r.variant, r.contest_delta_vs_softmax, r.contest_delta_ci_low, r.contest_delta_ci_high,
                 r.contest_gap_vs_softmax) for r in best.itertuples()],
    })


def where_best(row) -> str:
    """A best sweep LR with where it sits: at an edge of its sweep (a better LR may lie beyond it), and how many
    LRs the sweep added past its grid (sweep.extend), the limit said where it stopped the sweep."""
    added = getattr(row, "lrs_added", 0)
    added = int(added) if pd.notna(added) else 0
    limit = getattr(row, "extend_limit", 0)
    limit = int(limit) if pd.notna(limit) else 0
    edge = getattr(row, "lr_edge", "")
    extended = f"{added} LR{'s' * (added > 1)} added past its grid" if added else ""
    if isinstance(edge, str) and edge:
        note = f"{edge} of its sweep" + (f" after {extended}" if extended else "")
        note += ", the limit" if limit and added >= limit else ""
    else:
        note = extended
    return lr_text(row.best_lr) + (f" ({note})" if note else "")


def params_display(params: pd.DataFrame) -> pd.DataFrame:
    """Each variant's trainable parameters and what it adds to the baseline's."""
    base = params.n_params[params.variant == BASELINE]
    base = int(base.iloc[0]) if len(base) else None
    extra = [None if v == BASELINE or pd.isna(n) else int(n) for v, n in zip(params.variant, params.vs_softmax)]
    return pd.DataFrame({
        "variant": params.variant,
        "parameters": params.n_params.map(lambda n: f"{int(n):,}"),
        f"extra vs {BASELINE}": ["baseline" if v == BASELINE else (MISSING if n is None else f"{n:+,}")
                                 for v, n in zip(params.variant, extra)],
        f"extra vs {BASELINE} (%)": ["baseline" if v == BASELINE else (f"{n / base:+.3%}" if base and n is not None
                                                                       else MISSING)
                                     for v, n in zip(params.variant, extra)],
        **({"steps/s": params.steps_per_s.map(lambda x: f"{x:.1f}" if pd.notna(x) else MISSING),
            f"time per step vs {BASELINE} [95% interval]": [
                "baseline" if v == BASELINE else _time_text(r, c_lo, c_hi, source)
                for v, r, c_lo, c_hi, source in zip(params.variant, params.time_vs_softmax, params.time_ci_low,
                                                    params.time_ci_high, params.get("time_source",
                                                                                    [""] * len(params)))]}
           if "steps_per_s" in params else {}),
    })


def _time_text(ratio, low, high, source: str = "") -> str:
    """'+5.0% [-4.6%, +15.6%]', with where it was timed where the table says (arms.with_step_times)."""
    if pd.isna(ratio):
        return MISSING
    text = f"{ratio - 1:+.1%}"
    text += f" [{low - 1:+.1%}, {high - 1:+.1%}]" if pd.notna(low) and pd.notna(high) else " (one seed)"
    return text + (f", {source}" if source else "")


# ---- the arms: the normaliser swap, A³ against a learned temperature


def normswap_display(normswap: pd.DataFrame) -> pd.DataFrame:
    """Per kernel-family variant, over its contest cells: native and swapped loss and the swap's cost
    (swapped − native) with its interval over the seeds."""
    rows = []
    for variant, cells in normswap[normswap.in_contest.astype(bool)].groupby("variant", sort=False):
        cost = statistics.mean_interval(cells.difference, seeds=cells.seed)
        rows.append({"variant": variant, "LR": lr_text(cells.lr.iloc[0]), "seeds": cost.n,
                     "trained with": cells.native_normaliser.iloc[0],
                     "native loss (nats/char)": fixed(cells.native_loss.mean(), 4),
                     "swapped to": f"{cells.swapped_normaliser.iloc[0]} (= {cells.swapped_to.iloc[0]})",
                     "swapped loss (nats/char)": fixed(cells.swapped_loss.mean(), 4),
                     f"swapped − native [{LEVEL} interval]": difference(cost.mean, cost.low, cost.high)})
    return pd.DataFrame(rows, columns=["variant", "LR", "seeds", "trained with", "native loss (nats/char)",
                                       "swapped to", "swapped loss (nats/char)",
                                       f"swapped − native [{LEVEL} interval]"])


def normswap_cells(normswap: pd.DataFrame) -> pd.DataFrame:
    """Every kernel-family cell, contest and sweep: its native and swapped loss."""
    return pd.DataFrame({
        "variant": normswap.variant, "LR": normswap.lr.map(lr_text), "seed": normswap.seed.astype(int),
        "cell": ["contest" if c else "sweep" for c in normswap.in_contest.astype(bool)],
        "native loss": normswap.native_loss.map(lambda x: fixed(x, 4)),
        "swapped loss": normswap.swapped_loss.map(lambda x: fixed(x, 4)),
        "swapped − native": normswap.difference.map(signed)})


def a3_vs_temperature_display(table: pd.DataFrame) -> pd.DataFrame:
    """Per seed and the mean over seeds: each arm's best-val (its LR in the header) and its difference from the
    baseline (arm − baseline: below 0 is better, as everywhere in the writeup; the CSV keeps the gains)."""
    arms = (BASELINE,) + TEMPERATURE_ARMS
    differences = {v: f"{v} − {BASELINE}" for v in TEMPERATURE_ARMS}
    if table.empty:
        return pd.DataFrame(columns=["seed", *arms, *differences.values(), "softmax_t / a3 gain"])
    headers = {v: f"{v} (LR {table[f'{v}_lr'].iloc[0]})" for v in arms}
    mean = table.drop(columns=[c for c in table.columns if c.endswith("_lr")]).mean(numeric_only=True)

    def line(seed, r, part):
        row = {"seed": seed, **{headers[v]: fixed(r[f"{v}_best_val"], 4) for v in arms}}
        row.update({differences[v]: signed(-r[f"{v}_gain"]) for v in TEMPERATURE_ARMS})
        row["softmax_t / a3 gain"] = fixed(part, 2)
        return row

    rows = [line(str(int(r.seed)), r, r.softmax_t_share_of_a3_gain) for _, r in table.iterrows()]
    rows.append(line("mean", mean, share(mean["softmax_t_gain"], mean["a3_gain"])))
    return pd.DataFrame(rows)


def composability_display(table: pd.DataFrame) -> pd.DataFrame:
    """Per variant and kv_heads: dense and blockwise best loss, how far apart they are at step 0 and at the
    best, and the two checks (the same training; every run's loss fell)."""
    def yes(flag):
        return "yes" if bool(flag) else "no"

    return pd.DataFrame({
        "variant": table.variant, "kv_heads": table.kv_heads.astype(int), "seeds": table.seeds,
        "dense loss": table.dense_loss.map(lambda x: fixed(x, 4)),
        "blockwise loss": table.blockwise_loss.map(lambda x: fixed(x, 4)),
        "|dense − blockwise| at step 0": table.step0_diff.map(lambda x: f"{x:.2g}"),
        "|dense − blockwise| at the best": table.rel_diff.map(lambda x: percent(x, signed=False, digits=2)),
        "same training": table.agree.map(yes), "loss fell": table.loss_fell.map(yes),
        f"cost vs {BASELINE}": table.cost_vs_softmax.map(percent),
    })


# ---- the ledger


def ledger_display(ledger: pd.DataFrame) -> pd.DataFrame:
    """The ledger for reading: each claim under the post it comes from (published.yaml's short name), the
    source's words verbatim (or what stands in for them), the claim as this project names it, its reading, the
    measured and published values, the verdict, what it rests on (the interval, the seeds, what would resolve an
    inconclusive one) and the note."""
    names = {name: source.get("short", name) for name, source in published()["sources"].items()}
    rows = ledger.fillna({"interval": "", "resolution": "", "note": "", "seeds": 0})
    quotes = rows["quote"].fillna("") if "quote" in rows else pd.Series("", index=rows.index)
    return pd.DataFrame({
        "post": rows.source.map(lambda s: names.get(s, s)), "the source's words": quotes,
        "claim": rows.claim, READING: rows.check.astype(str).str.removeprefix(f"{READING}: "),
        "measured": rows.measured, "published": rows.published, "verdict": rows.verdict,
        "rests on": [_basis(r) for r in rows.itertuples()],
        "note": [_note(r) for r in rows.itertuples()],
    }).replace("", MISSING)


def _note(row) -> str:
    """The row's note, then its protocol preconditions (which failed, which were met)."""
    extra = getattr(row, "preconditions", "")
    extra = extra if isinstance(extra, str) else ""
    return "; ".join(p for p in (row.note, f"protocol: {extra}" if extra else "") if isinstance(p, str) and p)


def _basis(row) -> str:
    """What a verdict rests on: its interval (or why there is none), its seeds, what would resolve it."""
    parts = (row.interval, plural(int(row.seeds), "seed") if row.seeds > 0 else "", row.resolution)
    return "; ".join(str(p) for p in parts if isinstance(p, str) and p)


# One display per table; a table without one (runs) shows its numbers. DETAILS: the per-seed rows the writeup
# folds under a table whose display summarises its seeds.
DISPLAYS = {"contest": contest_display, "lr_sweep": sweep_display, "best_lr": best_lr_display,
            "params": params_display, "normswap": normswap_display, "a3_vs_temperature": a3_vs_temperature_display,
            "composability": composability_display, "ledger": ledger_display, "catalog": catalog_display,
            **telemetry.DISPLAYS}
DETAILS = {"normswap": normswap_cells, **telemetry.DETAILS}


def display(name: str, table: pd.DataFrame) -> pd.DataFrame | None:
    """The human form of a table, or None where it shows its numbers."""
    shown = DISPLAYS.get(name)
    return shown(table) if shown is not None else None


def shown(name: str, table: pd.DataFrame) -> pd.DataFrame:
    """The table as every reader sees it, cell for cell: its display (or its numbers), written by `human`."""
    made = display(name, table)
    return (table if made is None else made).map(human)


def details(name: str, table: pd.DataFrame) -> pd.DataFrame | None:
    """The per-seed rows behind a table's display, where it summarises its seeds (None elsewhere)."""
    detail = DETAILS.get(name)
    return detail(table).map(human) if detail is not None else None
