"""Which interval every estimate gets, and how wide it is: the design a build's seeds were added under.

A fixed-seed build reads every mean through a t-interval at 95%. A build whose
seeds were added by a design reads it through that design's interval instead:
inside `repeated(looks, levels)` a group-sequential design's repeated
t-interval at the nominal confidence of the look its seeds reached
(attnlab.pipeline.ground.design, attnlab.pipeline.ground.group_sequential);
inside `sequential(precision)` the confidence sequence's
(attnlab.pipeline.ground.confidence_sequence). The design is a context, so the
tables, the ledger and the figures all compute one interval through
attnlab.pipeline.ground.statistics without passing it along.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np
from scipy import stats

CONFIDENCE = 0.95

# The mixture precision of the confidence sequence every interval is computed with, where seeds were added until
# decided (None: fixed seeds, t-intervals). Set with `sequential`.
_SEQUENTIAL: ContextVar[float | None] = ContextVar("sequential_precision", default=None)

# A group-sequential design's looks (seeds per variant) and each look's nominal confidence: an interval over n
# seeds is the repeated t-interval of the last look at or below n (None: no design). Set with `repeated`.
_REPEATED: ContextVar[tuple[tuple[int, ...], tuple[float, ...]] | None] = ContextVar("repeated", default=None)

# The confidence of an exact sign-test interval of a median inside `sequential` (the binomial interval has no
# mixture form: a share of α per planned round). Set with `sequential`.
_MEDIAN: ContextVar[float | None] = ContextVar("median_confidence", default=None)


@contextmanager
def sequential(precision: float, median: float | None = None) -> Iterator[None]:
    """Within it, every interval is the confidence sequence's of this mixture precision (tuned to the budget of
    the rule that added the seeds: attnlab.pipeline.ground.confidence_sequence.tuned_precision), and a median's exact
    interval is read at confidence `median` (attnlab.pipeline.ground.design)."""
    token, median_token = _SEQUENTIAL.set(float(precision)), _MEDIAN.set(median)
    try:
        yield
    finally:
        _SEQUENTIAL.reset(token)
        _MEDIAN.reset(median_token)


@contextmanager
def repeated(looks, confidences) -> Iterator[None]:
    """Within it, an interval over n seeds is a t-interval at the nominal confidence of the design's last look at
    or below n (its first look below that): a group-sequential design's repeated confidence interval, whose
    looks cover together at CONFIDENCE (attnlab.pipeline.ground.group_sequential). A comparison that stopped at an
    early look is read at that look's level; a look short of a diverged cell at the look before (wider)."""
    looks, confidences = tuple(int(n) for n in looks), tuple(float(c) for c in confidences)
    if len(looks) != len(confidences) or not all(0 < c <= 1 for c in confidences):
        raise ValueError(f"one nominal confidence in (0, 1] per look, not {confidences} for looks {looks}")
    token = _REPEATED.set((looks, confidences))
    try:
        yield
    finally:
        _REPEATED.reset(token)


@contextmanager
def fixed() -> Iterator[None]:
    """Within it, intervals are fixed-seed t-intervals whatever design surrounds it: for values that are not
    contest seeds (sweep seeds, timing rounds, ladder rungs), which no look of the design added."""
    tokens = _SEQUENTIAL.set(None), _REPEATED.set(None), _MEDIAN.set(None)
    try:
        yield
    finally:
        for var, token in zip((_SEQUENTIAL, _REPEATED, _MEDIAN), tokens):
            var.reset(token)


@contextmanager
def halved() -> Iterator[None]:
    """Within it, a repeated design's looks count pairs of seeds (half the seeds each): a comparison of one
    variant's seeds in two halves (the A/A check) reads at the look its variant reached."""
    design = _REPEATED.get()
    token = _REPEATED.set(None if design is None else (tuple(n // 2 for n in design[0]), design[1]))
    try:
        yield
    finally:
        _REPEATED.reset(token)


def designed() -> bool:
    """Whether the intervals computed now are a design's (a confidence sequence or repeated intervals)."""
    return _SEQUENTIAL.get() is not None or _REPEATED.get() is not None


def nominal_confidence(n: int | None = None) -> float:
    """The confidence a t-interval over n seeds is read at: CONFIDENCE, or inside `repeated` its look's own (the
    last look's where n is not given)."""
    design = _REPEATED.get()
    if design is None:
        return CONFIDENCE
    looks, confidences = design
    if n is None:
        return confidences[-1]
    return confidences[max([k for k, at in enumerate(looks) if at <= n] or [0])]


def median_confidence(n: int | None = None) -> float:
    """The confidence a median's exact sign-test interval over n seeds is read at (attnlab.pipeline.ground.sign_test):
    the look's nominal level inside `repeated`, the share `sequential` was given, else CONFIDENCE."""
    return _MEDIAN.get() or nominal_confidence(n)


def interval_kind() -> str:
    """What an interval computed here is called: 'CS' (the confidence sequence) inside `sequential`, 'RCI' (a
    repeated confidence interval) inside `repeated`, else 'CI'."""
    return "CS" if _SEQUENTIAL.get() is not None else "RCI" if _REPEATED.get() is not None else "CI"


def half_widths(n, spread: float) -> np.ndarray:
    """The interval's half-width at n values (an int or an array of them) of sample standard deviation `spread`:
    the t-interval's, or inside `sequential` the confidence sequence's (inf while it is the whole line)."""
    n = np.asarray(n, dtype=float)
    precision = _SEQUENTIAL.get()
    if precision is None:
        levels = np.vectorize(nominal_confidence)(n.astype(int)) if n.ndim else nominal_confidence(int(n))
        return stats.t.ppf(0.5 + levels / 2, n - 1) * spread / np.sqrt(n)
    return half_width_factor(n, precision) * spread * np.sqrt((n - 1) / n)  # its spread is the ddof-0 one


def half_width_factor(n: np.ndarray | int, precision: float, alpha: float = 1 - CONFIDENCE) -> np.ndarray:
    """Lai's confidence sequence (attnlab.pipeline.ground.confidence_sequence, which explains it): its half-width at n
    values over their root mean squared deviation (inf where the interval is the whole line)."""
    n = np.asarray(n, dtype=float)
    r = np.exp((2 * math.log(alpha) + np.log(precision) - np.log(n + precision)) / n)
    k = (1 - r) * (n + precision)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > k, np.sqrt(k / np.maximum(n - k, 1e-300)), np.inf)


def interval(center: float, spread: float, n: int) -> tuple[float, float]:
    """The t-interval of a mean of n values with sample standard deviation `spread` (NaN below two), or inside
    `sequential` the confidence sequence's (±inf while too few seeds bound the mean)."""
    if n < 2 or not math.isfinite(spread) or spread == 0:  # zero spread: degenerate, no interval (ZERO_SPREAD)
        return math.nan, math.nan
    if _SEQUENTIAL.get() is None:  # scipy's own interval, as ever: every fixed-seed table keeps its bytes
        low, high = stats.t.interval(nominal_confidence(n), n - 1, loc=center, scale=spread / math.sqrt(n))
        return float(low), float(high)
    half = float(half_widths(n, spread))
    return center - half, center + half

