"""The catalog view: every catalogued score function in the build against softmax, read as one family.

Each catalogued variant (published.yaml's `catalog`) at its contest LR (its own
best sweep LR where the contest LR is `auto`) is compared with softmax seed by
seed, as in the contest table. Read one at a time, each 95% interval leaves a
5% chance of a false difference, so among ten functions equal to softmax one
would often look different by chance. The family is therefore read twice:

- Holm's step-down on the two-sided paired t-test p-values (`finding`): the
  family-wise error rate, the chance that any equal function is called
  different, stays at most 5%;
- simultaneous intervals, each at 1 − 0.05/m (Bonferroni, m the functions with
  an interval): all m cover together at least 95%. Every function Bonferroni's
  interval separates from 0, Holm also calls different; Holm may call more.

The first row is the A/A reference: softmax's contest seeds split in two halves
in seed order, a difference that is 0 by construction, read through the same
per-comparison interval over half as many pairs (so much wider, and a weak
check where the pairs are few); it is not one of the family, so it has no Holm
p or family-wise interval. Where
seeds were added under a design (`contest.rounds`), the per-comparison interval
is the design's and no p-value or family-wise interval is computed from it: the
design's error rate is per comparison, and a Bonferroni split of it is not what
the design ran.
"""

from __future__ import annotations

import math

import pandas as pd

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.ground import contract, intervals, statistics, verdicts
from attnlab.pipeline.ground.contest_grid import ContestGrid
from attnlab.pipeline.ground.contract import BASELINE
from attnlab.pipeline.ground.design import ALPHA
from attnlab.pipeline.ground.formatting import MISSING, difference, finite, interval, lr_text, percent, signed
from attnlab.pipeline.ground.published import published
from attnlab.pipeline.tables.contest import contest_cells, losses_by_seed, trained
from attnlab.pipeline.tables.sweep import grid_edge

AA = f"{BASELINE} (A/A)"  # the reference row's name in the variant column
LOWER, HIGHER, UNRESOLVED = "lower loss", "higher loss", "no difference resolved"
AA_HOLDS, AA_FAILS = "reference: holds 0", "reference: excludes 0 (a false positive)"
BY_DESIGN = "(the design's interval, one comparison)"  # a finding read off a design's interval, not the family's


def catalogued() -> dict[str, str]:
    """variant -> where it was published, as a short citation (published.yaml's catalog and sources)."""
    data = published()
    sources = data["sources"]
    out = {}
    for variant, entry in data["catalog"].items():
        if "source" in entry:
            source = sources[entry["source"]]
            out[variant] = f"{source.get('author', source['short'])} {source.get('date', '')}".strip()
        else:
            out[variant] = entry["cite"]
    return out


def family_findings(estimates: dict[str, statistics.Estimate]) -> pd.DataFrame:
    """The family's reading of paired differences (variant − softmax, key -> Estimate): per key, the two-sided
    p-value, Holm's adjusted p, the finding at the family-wise level and the Bonferroni interval at
    1 − α/m. The build's decision for the catalog, on its own so a simulation can hold it to its error rate."""
    p = {key: verdicts.p_two_sided(e) for key, e in estimates.items()}
    adjusted = verdicts.holm_adjusted(p)
    m = sum(math.isfinite(v) for v in p.values())
    confidence = 1 - ALPHA / m if m else math.nan
    rows = []
    for key, estimate in estimates.items():
        low, high = statistics.at_confidence(estimate, confidence) if m else (math.nan, math.nan)
        if math.isfinite(adjusted[key]) and adjusted[key] <= ALPHA:
            finding = LOWER if estimate.mean < 0 else HIGHER
        elif estimate.sequential and estimate.has_interval and not estimate.low <= 0 <= estimate.high:
            finding = f"{LOWER if estimate.mean < 0 else HIGHER} {BY_DESIGN}"
        elif estimate.reason and estimate.reason != statistics.UNBOUNDED:
            finding = estimate.reason  # no interval to read: one seed, none, or a degenerate zero spread
        else:
            finding = UNRESOLVED
        rows.append({"key": key, "p_value": p[key], "p_holm": adjusted[key], "finding": finding,
                     "family_ci_low": low, "family_ci_high": high, "family_confidence": confidence})
    return pd.DataFrame(rows, columns=["key", "p_value", "p_holm", "finding", "family_ci_low", "family_ci_high",
                                       "family_confidence"])


def catalog_table(runs: pd.DataFrame, grid: ContestGrid | dict) -> pd.DataFrame:
    """The A/A reference, then each catalogued variant of the build at its contest LR against softmax, paired by
    contest seed, with its interval, the family's Holm finding and Bonferroni interval (module docstring)."""
    grid = ContestGrid.of(grid)
    columns = contract.columns("catalog")
    sources = catalogued()
    base_cells = contest_cells(runs, grid, BASELINE)
    base = losses_by_seed(trained(base_cells))
    estimates, rows = {}, {}
    for variant in (v for v in grid.variants if v in sources):
        cells = contest_cells(runs, grid, variant)
        if cells.empty:
            continue
        losses = losses_by_seed(trained(cells))
        estimate = statistics.paired(losses, base)
        lr = grid.contest_lr.get(variant)
        estimates[variant] = estimate
        rows[variant] = {"variant": variant, "source": sources[variant], "lr": format_lr(lr),
                         "lr_choice": grid.lr_choice(variant), "lr_edge": grid_edge(grid, variant, lr),
                         "n_diverged": diverged(cells),
                         **_paired(estimate, losses, base)}
    if not rows:
        return pd.DataFrame(columns=columns)
    family = family_findings(estimates).set_index("key")
    first, second = statistics.halves(base)
    with intervals.halved():  # pairs of seeds: the look softmax's seeds reached, as the ledger's A/A row
        reference = statistics.paired(first, second)
    first_seeds, second_seeds = statistics.seed_halves(base)
    lr = grid.contest_lr.get(BASELINE)
    aa = {"variant": AA, "source": "this project's control", "lr": format_lr(lr) if lr is not None else "",
          "lr_choice": grid.lr_choice(BASELINE), "lr_edge": grid_edge(grid, BASELINE, lr) if lr is not None else "",
          "n_diverged": diverged(base_cells), **_paired(reference, first, second),
          "seeds": (f"{' '.join(map(str, first_seeds))} against {' '.join(map(str, second_seeds))}"
                    if first_seeds else ""),
          "family_ci_low": math.nan, "family_ci_high": math.nan, "family_confidence": math.nan,
          "p_value": verdicts.p_two_sided(reference), "p_holm": math.nan, "finding": _reference_finding(reference)}
    out = [aa] + [{**rows[v], **family.loc[v].to_dict()} for v in rows]
    return pd.DataFrame(out, columns=columns)


def diverged(cells: pd.DataFrame) -> int:
    return len(cells) - len(trained(cells))


def _paired(estimate: statistics.Estimate, first: dict, second: dict) -> dict:
    gap = statistics.paired(first, second, ratio=True)
    return {"n_paired": estimate.n, "seeds": " ".join(str(s) for s in estimate.seeds),
            "delta_vs_softmax": estimate.mean, "delta_ci_low": estimate.low, "delta_ci_high": estimate.high,
            "interval": estimate.kind if estimate.has_interval else "", "interval_note": estimate.reason,
            "wins": estimate.wins_text, "gap_vs_softmax": gap.mean - 1}


def _reference_finding(estimate: statistics.Estimate) -> str:
    if not estimate.has_interval:
        return estimate.reason
    return AA_HOLDS if estimate.low <= 0 <= estimate.high else AA_FAILS


def family_level(table: pd.DataFrame) -> str:
    """How the family-wise intervals are read, for a header or a title: 'each at 99.5%', or why there are none."""
    family = pd.to_numeric(table.family_confidence, errors="coerce").dropna()
    if len(family):
        return f"each at {100 * family.iloc[0]:.4g}%"
    if table.interval.isin(["RCI", "CS"]).any():
        return "none: the seeds were added under a design, whose error rate holds per comparison"
    return "none: no function has a t-interval"


def catalog_display(table: pd.DataFrame) -> pd.DataFrame:
    """One row per function: its source and LR, the difference from softmax with its interval (or why it has
    none) and with the family-wise one, the gap in percent, Holm's adjusted p and the finding."""
    level = f"{intervals.CONFIDENCE:.0%}"

    def paired(row) -> str:
        if finite(row.delta_ci_low) and finite(row.delta_ci_high):
            return difference(row.delta_vs_softmax, row.delta_ci_low, row.delta_ci_high)
        return f"{signed(row.delta_vs_softmax)} ({row.interval_note})" if finite(row.delta_vs_softmax) else MISSING

    return pd.DataFrame({
        "function": table.variant, "published by": table.source,
        "LR": [lr_text(lr, c) for lr, c in zip(table.lr, table.lr_choice)],
        "seeds": table.seeds, "diverged": table.n_diverged.astype(int),
        f"− {BASELINE} (nats) [{level} interval]": [paired(row) for row in table.itertuples()],
        f"family-wise interval ({family_level(table)})": [
            interval(lo, hi) if finite(lo) and finite(hi) else MISSING
            for lo, hi in zip(table.family_ci_low, table.family_ci_high)],
        "gap": table.gap_vs_softmax.map(percent),
        "Holm p": table.p_holm,
        "finding": table.finding,
    })
