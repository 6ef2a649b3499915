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
from collections.abc import Callable, Iterator
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

# A group-sequential design's looks' nominal confidences at another overall α (alpha -> one per look), from which
# a repeated p-value is read (`repeated_p`). Set with `repeated`.
_AT_ALPHA: ContextVar[Callable[[float], tuple[float, ...]] | None] = ContextVar("levels_at_alpha", default=None)
_P_FLOOR = 1e-12  # a repeated p-value below this is reported as this (the bisection's floor)


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
def repeated(looks, confidences, at_alpha: Callable[[float], tuple[float, ...]] | None = None) -> Iterator[None]:
    """Within it, an interval over n seeds is a t-interval at the nominal confidence of the design's last look at
    or below n (its first look below that): a group-sequential design's repeated confidence interval, whose
    looks cover together at CONFIDENCE (attnlab.pipeline.ground.group_sequential). A comparison that stopped at an
    early look is read at that look's level; a look short of a diverged cell at the look before (wider).
    `at_alpha` gives the looks' nominal confidences had the design spent another overall α (the design's
    spending function): what a repeated p-value is read from; without it a repeated p-value is NaN."""
    looks, confidences = tuple(int(n) for n in looks), tuple(float(c) for c in confidences)
    if len(looks) != len(confidences) or not all(0 < c <= 1 for c in confidences):
        raise ValueError(f"one nominal confidence in (0, 1] per look, not {confidences} for looks {looks}")
    token, alpha_token = _REPEATED.set((looks, confidences)), _AT_ALPHA.set(at_alpha)
    try:
        yield
    finally:
        _REPEATED.reset(token)
        _AT_ALPHA.reset(alpha_token)


@contextmanager
def fixed() -> Iterator[None]:
    """Within it, intervals are fixed-seed t-intervals whatever design surrounds it: for values that are not
    contest seeds (sweep seeds, timing rounds, ladder rungs), which no look of the design added."""
    tokens = _SEQUENTIAL.set(None), _REPEATED.set(None), _MEDIAN.set(None), _AT_ALPHA.set(None)
    try:
        yield
    finally:
        for var, token in zip((_SEQUENTIAL, _REPEATED, _MEDIAN, _AT_ALPHA), tokens):
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
    return confidences[_look(looks, n)]


def median_confidence(n: int | None = None) -> float:
    """The confidence a median's exact sign-test interval over n seeds is read at (attnlab.pipeline.ground.sign_test):
    the look's nominal level inside `repeated`, the share `sequential` was given, else CONFIDENCE."""
    return _MEDIAN.get() or nominal_confidence(n)


def _look(looks: tuple[int, ...], n: int) -> int:
    """The index of the last look at or below n seeds (the first look below that), as nominal_confidence."""
    return max([k for k, at in enumerate(looks) if at <= n] or [0])


def _smallest_alpha(rejects: Callable[[float], bool]) -> float:
    """The smallest overall α in [_P_FLOOR, 1] at which `rejects(α)` (monotone: true at every larger α), by
    bisection on log α; 1 where it rejects at no α below 1."""
    if not rejects(1.0 - 1e-9):
        return 1.0
    if rejects(_P_FLOOR):
        return _P_FLOOR
    low, high = math.log(_P_FLOOR), math.log(1.0 - 1e-9)
    for _ in range(40):  # log α to within 1e-6 of its width: p to six figures
        mid = (low + high) / 2
        low, high = (low, mid) if rejects(math.exp(mid)) else (mid, high)
    return math.exp(high)


def designed_p(n: int, fixed_p: float, distance: float = math.nan, spread: float = math.nan) -> float:
    """The p-value of a test read under this context's design, from its fixed-sample two-sided p-value at n
    seeds (a t-test's or a sign test's): the smallest overall α at which the design's interval at n seeds would
    exclude the null (a repeated p-value, Jennison & Turnbull 2000, ch. 9), so it rejects at 0.05 exactly when
    the build's interval does, and Holm's step-down can take it beside fixed-seed p-values.

    - fixed seeds: `fixed_p` itself;
    - `repeated`: the smallest α whose spending puts n seeds' look at a nominal level 1 − α_k ≥ fixed_p;
    - `sequential`, a mean: the smallest α at which the confidence sequence's half-width at n seeds (this
      spread, the mixture precision fixed) is below `distance`, the mean's distance from the null;
    - `sequential`, a median (no spread given): fixed_p times the planned rounds (the share of α each round's
      exact interval is read at), capped at 1.
    NaN where the design cannot say (a repeated design without its spending function)."""
    if not math.isfinite(fixed_p):
        return math.nan
    precision = _SEQUENTIAL.get()
    if precision is not None:
        if not math.isfinite(spread):
            rounds = (1 - CONFIDENCE) / (1 - (_MEDIAN.get() or CONFIDENCE))
            return min(1.0, fixed_p * rounds)
        if spread == 0 or n < 2:
            return math.nan
        scale = spread * math.sqrt((n - 1) / n)
        return _smallest_alpha(lambda a: float(half_width_factor(n, precision, a)) * scale < distance)
    design, at_alpha = _REPEATED.get(), _AT_ALPHA.get()
    if design is None:
        return fixed_p
    if at_alpha is None:
        return math.nan
    k = _look(design[0], n)
    return _smallest_alpha(lambda a: 1 - at_alpha(a)[k] >= fixed_p)


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

