"""What every claim of the ledger shares: the Claim row, the posts it cites, how a verdict is judged, and how a
check reads the tables (by the table contract's names and columns; an LR by its exact text)."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

import pandas as pd
import yaml

from attnlab.pipeline import statistics
from attnlab.pipeline.contract import at_lr
from attnlab.pipeline.statistics import (BY_CONSTRUCTION, CONTRADICTED, INCONCLUSIVE, Estimate, Verdict,
                                         interval_text, not_testable)

# Where each claim comes from: the ledger's source column. How the writeup cites each is published.yaml's
# `sources`, keyed by these words.
KERNEL_POST = "kernel post"
A3_POST = "A³ post"
LATER_POST = "kernel post series, later post"
BEYOND = "beyond the posts"  # a control no post runs
SOURCES = (KERNEL_POST, A3_POST, LATER_POST, BEYOND)
KERNELS = ("yat_b", "yat")


@dataclass
class Claim:
    source: str  # which post makes it (SOURCES)
    claim: str  # the claim in a sentence
    check: str  # what is computed from the tables
    measured: str
    published: str
    verdict: str  # one of statistics.VERDICTS ("not testable at <protocol>")
    interval: str = ""  # the interval the verdict rests on, or why there is none
    seeds: int = 0  # how many seeds it rests on
    seeds_to_resolve: float | None = None  # inconclusive: about how many seeds would resolve it
    resolution: str = ""  # inconclusive: that, in words
    protocol: str = ""  # the build's protocol (runs.csv config.name)
    note: str = ""  # conditions: LRs compared, what a published number mixes, what drives a result


def published() -> dict:
    """The posts' numbers the ledger sets beside each measured value (published.yaml)."""
    return yaml.safe_load(resources.files("attnlab.pipeline").joinpath("published.yaml").read_text())


def judged(claim: Claim, verdict: Verdict, estimates: dict[str, Estimate], fmt=None) -> Claim:
    """The claim with its verdict, its intervals ('label: 95% CI [a, b]' per estimate) and its seeds."""
    claim.verdict = verdict.word
    shown = [f"{label}: {interval_text(e, fmt)}" if label else interval_text(e, fmt) for label, e in estimates.items()]
    claim.interval = "; ".join(shown)
    claim.seeds = min((e.n for e in estimates.values()), default=0)
    if verdict.word == INCONCLUSIVE:
        claim.seeds_to_resolve = verdict.seeds_to_resolve
        claim.resolution = verdict.resolution
    return claim


def untestable(claim: Claim, protocol: str, why: str) -> Claim:
    """Not testable at this protocol, and why (no interval: nothing was compared)."""
    claim.verdict = not_testable(protocol)
    claim.interval = f"none: {why}"
    return claim


def constructed(claim: Claim, seeds: int, why: str, holds: bool) -> Claim:
    """A claim the model's construction settles; the check shows this build's code keeps to it."""
    claim.verdict = BY_CONSTRUCTION if holds else CONTRADICTED
    claim.interval = f"none needed: {why}"
    claim.seeds = seeds
    return claim


def judged_by_divergence(claim: Claim, diverged: int, seeds: int, every_seed: str, every_seed_why: str) -> Claim:
    """A sweep claim decided by divergence, which leaves no loss to put in an interval.

    `every_seed` is the verdict when every one of two or more sweep seeds
    diverged; fewer seeds, or seeds that disagree, are inconclusive.
    """
    claim.seeds = seeds
    why = "a diverged cell has no loss to put in an interval"
    if diverged == seeds and seeds >= 2:
        claim.verdict, claim.interval = every_seed, f"none: {every_seed_why} ({why})"
        return claim
    claim.verdict = INCONCLUSIVE
    claim.interval = f"none: {statistics.ONE_SEED}" if seeds == 1 else f"none: {why}"
    claim.resolution = ("two or more sweep seeds (sweep.seeds) would give an interval" if seeds == 1
                        else "seeds disagree: more sweep seeds (sweep.seeds) would tell")
    return claim


def table_of(t, name) -> pd.DataFrame:
    """A table of the build, empty where the build has none."""
    table = t.get(name)
    return table if table is not None else pd.DataFrame()


def posts_lr(value) -> str:
    """An LR as the posts write it: 3e-4, 1e-2, 2.5e-3."""
    mantissa, exponent = f"{float(value):.3e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def contest_row(t, variant) -> pd.Series | None:
    contest = table_of(t, "contest")
    rows = contest[contest.variant == variant] if "variant" in contest else contest
    return rows.iloc[0] if len(rows) else None


def contest_lr_text(t, variant) -> str:
    row = contest_row(t, variant)
    if row is None:
        return "?"
    auto = " (auto)" if str(row.get("lr_choice", "")) == "auto" else ""
    return posts_lr(row.lr) + auto


def contest_losses(t, variant) -> dict[int, float]:
    """seed -> best validation loss of a variant's contest cells (its contest LR, the contest's seeds)."""
    row, runs = contest_row(t, variant), table_of(t, "runs")
    if row is None or runs.empty:
        return {}
    cells = runs[(runs.variant == variant) & at_lr(runs, row.lr)]
    if "seeds" in row and pd.notna(row.seeds):  # "0 1 2"; a lone seed reads back from the CSV as a number
        cells = cells[cells.seed.isin([int(float(s)) for s in str(row.seeds).split()])]
    return {int(s): float(v) for s, v in zip(cells.seed, cells.best_val_loss)}


def per_seed(frame: pd.DataFrame, variant: str, column: str, how: str = "first") -> dict[int, float]:
    """seed -> one value of a variant in a per-seed table."""
    if frame.empty or "variant" not in frame:
        return {}
    cells = frame[frame.variant == variant]
    return {int(s): float(v) for s, v in cells.groupby("seed")[column].agg(how).items()}


def pct(x: float) -> str:
    return f"{x - 1:+.2%}"


def ratio(x: float) -> str:
    return f"{x:,.3g}×"
