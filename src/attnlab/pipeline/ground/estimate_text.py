"""How an estimate reads in a table cell or a ledger row: '−0.0330 nats, 95% CI [−0.041, −0.025], 3 seeds, wins 3/3'.

One spelling for every interval, count and resolution the tables, the ledger
and the writeup print (attnlab.pipeline.ground.statistics computes them).
"""

from __future__ import annotations

from attnlab.pipeline.ground.intervals import CONFIDENCE
from attnlab.pipeline.ground.statistics import NO_SEED, Estimate, count_interval


def count_text(k: int, n: int, event: str) -> str:
    """'diverged on 2 of 3 seeds (share 95% CI [0.09, 0.99], exact binomial)'."""
    low, high = count_interval(k, n)
    return (f"{event} on {k} of {n} seed{'s' if n != 1 else ''} (share {CONFIDENCE:.0%} CI [{low:.2f}, {high:.2f}], "
            "exact binomial)")


def interval_text(estimate: Estimate, fmt=None) -> str:
    """'95% CI [a, b]' in `fmt` (a callable of one number), or why there is none."""
    if not estimate.has_interval:
        return estimate.reason
    fmt = fmt or number_text(estimate)
    return f"{CONFIDENCE:.0%} {estimate.kind} [{fmt(estimate.low)}, {fmt(estimate.high)}]"


def describe(estimate: Estimate, fmt=None, unit: str = "", wins: bool = True) -> str:
    """'−0.0330 nats, 95% CI [−0.041, −0.025], 3 seeds, wins 3/3', or '+0.0120 nats (one seed: no interval)'."""
    if estimate.n == 0:
        return NO_SEED
    fmt = fmt or number_text(estimate)
    text = f"{fmt(estimate.mean)}{' ' + unit if unit else ''}"
    if not estimate.has_interval:
        return f"{text} ({estimate.reason})"
    seeds = "one seed against the seed spread" if estimate.noise else f"{estimate.n} seeds"
    text += f", {interval_text(estimate, fmt)}, {seeds}"
    if wins and estimate.wins is not None:
        text += f", wins {estimate.wins_text}"
    return text


def number_text(estimate: Estimate):
    """How the numbers of an estimate are written: a ratio as '5.67×', a difference signed to 4 decimals."""
    if estimate.ratio:
        return lambda x: f"{x:,.3g}×"
    return lambda x: f"{x:+.4f}"
