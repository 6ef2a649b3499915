"""The median over seeds with an exact sign-test (order-statistic) interval, for heavy-tailed paired quantities.

Why: a quantity such as the kernel post's score-scale ratio (per seed, yat's largest trained score over
softmax's) is heavy-tailed: its seeds have read 83×, 365×, 382×, 442×, 450×, 1,459×, 5,461× and 72,524×. The
mean log-ratio's t-interval is driven by the spread, so one seed far out in the claim's favour widens the
interval and lowers its lower edge: more evidence for the claim reads as less. The median with the
distribution-free interval between two order statistics only counts how many seeds fall on each side, so it
needs no normality and no finite variance (it covers even for Cauchy data), and a seed further out in the
claim's favour can never hurt it.

The interval [x_(k), x_(n−k+1)] covers the median of i.i.d. continuous values with probability
1 − 2·P(Binom(n, 1/2) ≤ k − 1), exactly; k is the largest that keeps that at or above the confidence asked
for, and `achieved` is the coverage it gives (e.g. 96.1% at 9 seeds for 95%). Below 6 seeds at 95% no two
order statistics reach it (5 seeds give at most 93.75%): the interval is then the whole line (−∞, +∞), of
coverage 1, and never settles a claim. Order statistics are scale-free, so the interval of a ratio is the
same read on the ratio or on its log. The verdicts are those of attnlab.pipeline.ground.verdicts (its words,
its Verdict); the p-values are exact two-sided sign tests (scipy.stats.binomtest).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import stats

from attnlab.pipeline.ground import intervals, statistics, verdicts
from attnlab.pipeline.ground.intervals import CONFIDENCE
from attnlab.pipeline.ground.statistics import NO_SEED
from attnlab.pipeline.ground.verdicts import CONTRADICTED, HOLDS, INCONCLUSIVE, Verdict

METHOD = "median of the per-seed values with an exact sign-test (order-statistic) interval"
_TOLERANCE = 1e-12  # coverage compared with the confidence asked for, past floating-point rounding


@lru_cache(maxsize=None)
def order_rank(n: int, confidence: float = CONFIDENCE) -> int:
    """The largest k (1 ≤ k ≤ n/2) with coverage 1 − 2·P(Binom(n, 1/2) ≤ k − 1) ≥ confidence; 0 where none
    reaches it (n = 0, or too few values: below 6 at 95%)."""
    if n < 2:
        return 0
    j = np.arange(0, n // 2)  # j = k − 1
    coverage = 1 - 2 * stats.binom.cdf(j, n, 0.5)
    ok = np.flatnonzero(coverage >= confidence - _TOLERANCE)  # coverage falls as k grows: the last one that holds
    return int(ok[-1]) + 1 if ok.size else 0


def coverage(n: int, k: int) -> float:
    """The exact coverage of [x_(k), x_(n−k+1)] for the median of n i.i.d. continuous values."""
    return float(1 - 2 * stats.binom.cdf(k - 1, n, 0.5))


def median_interval(values: Iterable[float], confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(low, high, achieved): the distribution-free interval for the median, [x_(k), x_(n−k+1)] with the largest
    k whose exact coverage is at least `confidence`, and that coverage.

    No values: (nan, nan, nan). Too few for any order-statistic interval at that confidence (below 6 at 95%):
    (−inf, +inf, 1.0), the whole line, which is the only interval certain to reach it.
    """
    x = np.sort(np.asarray(list(values), dtype=float))
    n = len(x)
    if n == 0:
        return math.nan, math.nan, math.nan
    k = order_rank(n, confidence)
    if k == 0:
        return -math.inf, math.inf, 1.0
    return float(x[k - 1]), float(x[n - k]), coverage(n, k)


def sign_counts(values: Iterable[float], threshold: float) -> tuple[int, int, int]:
    """(above, below, n): the values above and below `threshold`, and their sum; ties at it are dropped, as the
    sign test drops them."""
    x = np.asarray(list(values), dtype=float)
    above, below = int((x > threshold).sum()), int((x < threshold).sum())
    return above, below, above + below


def p_above(values: Iterable[float], threshold: float) -> float:
    """The exact one-sided sign-test p-value that the median lies above `threshold` (NaN without an untied
    value)."""
    above, _, n = sign_counts(values, threshold)
    return float(stats.binomtest(above, n, 0.5, alternative="greater").pvalue) if n else math.nan


def p_below(values: Iterable[float], threshold: float) -> float:
    """The exact one-sided sign-test p-value that the median lies below `threshold` (NaN without an untied
    value)."""
    above, _, n = sign_counts(values, threshold)
    return float(stats.binomtest(above, n, 0.5, alternative="less").pvalue) if n else math.nan


@dataclass(frozen=True)
class MedianEstimate:
    """The median over seeds of a paired quantity with its exact sign-test interval.

    `values` are the per-seed numbers on the reported scale (ratios when `ratio`, else differences), in the
    order of `seeds`; `low` and `high` are the order-statistic interval (±inf below the seeds that can bound
    it, NaN with no seed); `achieved` its exact coverage against the `confidence` asked for; `above` the seeds
    whose value lies above `threshold` (1 for a ratio, 0 for a difference, unless one is given).
    """

    median: float
    low: float
    high: float
    n: int
    seeds: tuple
    values: tuple
    above: int
    confidence: float
    achieved: float
    ratio: bool = True
    threshold: float = 1.0

    @property
    def has_interval(self) -> bool:
        return self.n > 0 and math.isfinite(self.low) and math.isfinite(self.high)

    @property
    def reason(self) -> str:
        """Why there is no interval ('' when there is one)."""
        if self.has_interval:
            return ""
        if self.n == 0:
            return NO_SEED
        return (f"{self.n} seed{'s' if self.n != 1 else ''}: too few for an exact sign-test interval at "
                f"{100 * self.confidence:.4g}% (it needs {seeds_to_bound(self.confidence)})")

    def count_above(self, threshold: float) -> int:
        return sign_counts(self.values, threshold)[0]


def seeds_to_bound(confidence: float = CONFIDENCE) -> int:
    """The fewest values whose order statistics give an interval at `confidence` (6 at 95%)."""
    return next(n for n in range(1, statistics.MAX_SEEDS + 1) if order_rank(n, confidence))


def median_of(values: Mapping, ratio: bool = True, confidence: float = CONFIDENCE,
              threshold: float | None = None) -> MedianEstimate:
    """The median of seed -> value with its interval; `above` counts against `threshold` (1 for a ratio, 0
    otherwise, when none is given)."""
    seeds = tuple(sorted(values))
    x = [float(values[s]) for s in seeds]
    threshold = (1.0 if ratio else 0.0) if threshold is None else float(threshold)
    low, high, achieved = median_interval(x, confidence)
    median = float(np.median(x)) if x else math.nan
    return MedianEstimate(median, low, high, len(x), seeds, tuple(x), sign_counts(x, threshold)[0],
                          float(confidence), achieved, ratio, threshold)


def paired_median(first: Mapping, second: Mapping, ratio: bool = True, confidence: float = CONFIDENCE,
                  threshold: float | None = None) -> MedianEstimate:
    """Per seed both have, first / second (`ratio`) or first − second, read by the median and its exact
    sign-test interval on that scale (the order statistics are the same on the log scale). `confidence` is
    where a design's nominal confidence is passed; `threshold` is what `above` counts against."""
    shared = sorted(set(first) & set(second))
    per_seed = {s: float(first[s]) / float(second[s]) if ratio else float(first[s]) - float(second[s])
                for s in shared}
    return median_of(per_seed, ratio, confidence, threshold)


def clears(n: int, others: int, confidence: float = CONFIDENCE) -> bool:
    """Whether n values, `others` of which are not on one side of a threshold, put the order-statistic interval
    wholly on that side: x_(k) above it takes at most k − 1 values at or below it."""
    k = order_rank(n, confidence)
    return k > 0 and others <= k - 1


def seeds_to_resolve(values: Iterable[float], threshold: float, confidence=CONFIDENCE) -> float | None:
    """The smallest number of seeds, up to statistics.MAX_SEEDS, at which the observed shares of seeds above and
    below `threshold` would put the interval clear of it; math.inf when neither side holds a majority (the
    median sits on the threshold: no number resolves it), None when more than MAX_SEEDS would be needed.
    `confidence`: a level, or a function of the number of seeds (a design's level at the look m seeds reach)."""
    x = list(values)
    n = len(x)
    if n == 0:
        return None
    above, below, _ = sign_counts(x, threshold)
    if 2 * above <= n and 2 * below <= n:
        return math.inf
    share = max(above, below) / n
    level = confidence if callable(confidence) else (lambda m: confidence)
    for m in range(n + 1, statistics.MAX_SEEDS + 1):
        if clears(m, m - round(share * m), level(m)):
            return m
    return None


def verdict(estimate: MedianEstimate, threshold: float, above: bool = True) -> Verdict:
    """A claim that the median lies above (or below) `threshold`: holds when the whole interval is on the
    claim's side, contradicted when on the other side, else inconclusive with the seeds that would settle it
    at the observed shares. p: two-sided (`p_value`), the one Holm's step-down reads."""
    if estimate.n == 0:
        return Verdict(INCONCLUSIVE, NO_SEED)
    designed = intervals.interval_kind() != "CI"
    p = p_value(estimate, threshold)
    if (estimate.low > threshold) if above else (estimate.high < threshold):
        return Verdict(HOLDS, p=p)
    if (estimate.high < threshold) if above else (estimate.low > threshold):
        return Verdict(CONTRADICTED, p=p)
    side = ""
    if estimate.n == 1:
        falls = "on" if (estimate.values[0] > threshold) == above else "against"
        side = f"the one seed falls {falls} the claim's side"
    level = intervals.median_confidence if designed else estimate.confidence  # each count at its own look's
    lean = verdicts.side_text(estimate.median, None if estimate.median == threshold else
                              (estimate.median > threshold) == above,
                              f"{'above' if above else 'below'} {threshold:.4g}", what="median")
    return Verdict(INCONCLUSIVE, "", seeds_to_resolve(estimate.values, threshold, level), side, p=p, lean=lean)


def p_value(estimate: MedianEstimate, threshold: float) -> float:
    """The two-sided exact sign-test p-value that the median differs from `threshold` (twice the smaller
    one-sided one, capped at 1), under a design its repeated p-value (intervals.designed_p, read in the context
    the estimate was made in); NaN without an untied seed."""
    smaller = verdicts.p_least(p_above(estimate.values, threshold), p_below(estimate.values, threshold))
    if not math.isfinite(smaller):
        return math.nan
    fixed_p = min(1.0, 2 * smaller)
    return intervals.designed_p(estimate.n, fixed_p) if intervals.designed() else fixed_p


def fragility(estimate: MedianEstimate, threshold: float) -> int:
    """How many seeds of a settled verdict would have to fall on the other side of `threshold` to reopen it
    (0 when it is open): the interval's edge is the k-th value from that side."""
    k = order_rank(estimate.n, estimate.confidence)
    above, below, _ = sign_counts(estimate.values, threshold)
    ties = estimate.n - above - below
    if estimate.has_interval and estimate.low > threshold:
        return k - (below + ties)
    if estimate.has_interval and estimate.high < threshold:
        return k - (above + ties)
    return 0
