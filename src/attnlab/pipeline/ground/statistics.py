"""Every comparison between variants, paired by seed: differences, ratios, wins and their intervals.

Every variant of a seed trains on the same batches, in the same order, from the
same skeleton initialisation, so two variants are compared seed by seed: the
per-seed differences, their mean, a t-interval of that mean (scipy.stats' t
distribution) and how many seeds the first variant wins. A ratio (a score
scale, one variant's loss over another's) goes through the mean of the
per-seed log-ratios and is reported back as a ratio. One seed gives a value
and no interval.

This module is the only place an estimate and its interval are computed: the
tables, the claims ledger, the figures and the writeup all call it. Which
interval that is, a fixed-seed t-interval or the interval of the design the
seeds were added under, is attnlab.pipeline.ground.intervals; what an interval
says of a claim is attnlab.pipeline.ground.verdicts; how an estimate is
written is attnlab.pipeline.ground.estimate_text.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
from scipy import stats

from attnlab.pipeline.ground.intervals import CONFIDENCE, designed, half_widths, interval, interval_kind

ONE_SEED = "one seed: no interval"
NO_SEED = "no seed to compare"
ZERO_SPREAD = "the seeds' values are identical: zero spread is degenerate evidence, not an interval"
TOO_FEW_POINTS = "too few points for an interval (a trend needs more rungs than seeds plus one)"
NOISE_RESOLUTION = "one seed: more seeds would give an interval of their own"
UNBOUNDED = "too few seeds for the confidence sequence to bound the mean (its interval is still the whole line)"
STABLE_MARGIN = 2.0  # a verdict is stable when its interval's half-width is at most 1/STABLE_MARGIN of its clearance
MAX_SEEDS = 1000  # beyond this many seeds, "more than" is all that is said


@dataclass(frozen=True)
class Estimate:
    """A mean over seeds with its t-interval.

    `values` are the per-seed numbers on the reported scale (differences, or
    ratios when `ratio`); `center` and `spread` are the mean and the sample
    standard deviation (ddof 1) on the working scale (the log of a ratio).
    `low` and `high` are NaN below two seeds. `wins` (paired estimates only)
    counts the seeds where the first variant's value is below the second's.
    """

    mean: float
    low: float
    high: float
    n: int
    seeds: tuple
    values: tuple
    center: float
    spread: float
    ratio: bool = False
    wins: int | None = None
    noise: str = ""  # one seed read against a stated noise scale: where that scale comes from
    sequential: bool = False  # the interval is a sequential design's (seeds added under contest.rounds)
    kind: str = "CI"  # what the interval is called: CI, or a design's RCI (repeated) or CS (confidence sequence)
    degrees: int | None = None  # the t-interval's degrees of freedom where not n − 1 (a regression, a noise scale)
    bounds: tuple[float, float] | None = None  # what the quantity can take: its interval is clipped to it

    @property
    def dof(self) -> int:
        """The degrees of freedom of its t-interval: n − 1 over seeds, else what its source gave."""
        return self.degrees if self.degrees is not None else self.n - 1

    @property
    def has_interval(self) -> bool:
        return (self.n >= 2 or bool(self.noise)) and math.isfinite(self.low) and math.isfinite(self.high)

    @property
    def fixed_seed(self) -> bool:
        """A t-interval over two or more seeds: not one seed read against a noise scale, not a design's."""
        return self.n >= 2 and not self.sequential and not self.noise and math.isfinite(self.spread)

    @property
    def reason(self) -> str:
        """Why there is no interval ('' when there is one)."""
        if self.has_interval:
            return ""
        if self.n >= 2 and self.spread == 0:
            return ZERO_SPREAD
        if self.n >= 2 and self.sequential:
            return UNBOUNDED
        if self.n >= 2:
            return TOO_FEW_POINTS
        return ONE_SEED if self.n == 1 else NO_SEED

    @property
    def wins_text(self) -> str:
        return f"{self.wins}/{self.n}" if self.wins is not None and self.n else "–"

    def working(self, value: float) -> float:
        """A threshold on the reported scale, on the scale the interval is computed on."""
        return math.log(value) if self.ratio else float(value)


def mean_interval(values: Iterable[float], seeds: Iterable | None = None, ratio: bool = False,
                  bounds: tuple[float, float] | None = None) -> Estimate:
    """The mean of one quantity over seeds (of a ratio: the geometric mean) with its t-interval. `bounds`: the
    range the quantity can take (a share's [0, 1]); the interval is intersected with it, which keeps its
    coverage (the true mean lies inside) and never prints a bound the quantity cannot reach. A positive scale
    quantity (a ratio, a band, a gap) goes on the log scale instead (`ratio`), which is bounded by itself."""
    values = [float(v) for v in values]
    seeds = tuple(seeds) if seeds is not None else tuple(range(len(values)))
    working = np.log(values) if ratio else np.asarray(values, dtype=float)
    return _estimate(working, seeds, ratio, wins=None, bounds=bounds)


def paired(first: Mapping, second: Mapping, ratio: bool = False) -> Estimate:
    """first − second (or first / second, through the mean log-ratio) over the seeds both have.

    `first` and `second` map seed -> value. Wins: the seeds where first < second
    (for a loss, the seeds the first variant wins).
    """
    shared = sorted(set(first) & set(second))
    a = np.array([float(first[s]) for s in shared])
    b = np.array([float(second[s]) for s in shared])
    working = np.log(a) - np.log(b) if ratio else a - b
    return _estimate(working, tuple(shared), ratio, wins=int((a < b).sum()))


def _estimate(working: np.ndarray, seeds: tuple, ratio: bool, wins: int | None,
              bounds: tuple[float, float] | None = None) -> Estimate:
    working = np.asarray(working, dtype=float)
    n = len(working)
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, 0, (), (), math.nan, math.nan, ratio, wins)
    center = float(working.mean())
    # identical values are zero spread exactly (a float std of equal numbers can come out 1e-17, not 0)
    spread = (0.0 if np.ptp(working) == 0 else float(working.std(ddof=1))) if n >= 2 else math.nan
    low, high = interval(center, spread, n)
    if not (math.isfinite(low) and math.isfinite(high)):  # a sequence still unbounded: no interval, on either scale
        low = high = math.nan
    back = np.exp if ratio else (lambda x: x)
    values = tuple(float(v) for v in back(working))
    low, high = float(back(low)), float(back(high))
    if bounds is not None and math.isfinite(low):
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return Estimate(float(back(center)), low, high, n, seeds, values, center, spread,
                    ratio, wins, sequential=designed(), kind=interval_kind(), bounds=bounds)


def at_confidence(estimate: Estimate, confidence: float) -> tuple[float, float]:
    """The fixed-seed t-interval of an estimate's mean at another confidence (a family's Bonferroni level), on the
    reported scale; NaN where the estimate has no t-interval over seeds (one seed, zero spread, a design's)."""
    if not estimate.fixed_seed or estimate.spread == 0:
        return math.nan, math.nan
    low, high = stats.t.interval(confidence, estimate.n - 1, loc=estimate.center,
                                 scale=estimate.spread / math.sqrt(estimate.n))
    back = math.exp if estimate.ratio else float
    return back(float(low)), back(float(high))


def seed_halves(seeds) -> tuple[list, list]:
    """Seeds in two halves in seed order (an odd last seed left out): an A/A check's two arms."""
    ordered = sorted(seeds)
    half = len(ordered) // 2
    return ordered[:half], ordered[half:2 * half]


def halves(values: Mapping) -> tuple[dict, dict]:
    """One variant's seed -> value split by seed_halves, the k-th seed of each half a pair keyed k: the two arms
    of an A/A check, whose true difference is 0."""
    return tuple({k: values[s] for k, s in enumerate(part)} for part in seed_halves(values))


def against_noise(value: float, noise: Estimate, source: str, ratio: bool = False,
                  bounds: tuple[float, float] | None = None) -> Estimate:
    """One seed's value with an interval from a stated noise scale: value ± t · σ, where σ is the seed-to-seed
    standard deviation of `noise` (the same variant's values over seeds, on the same working scale) and t has
    that estimate's degrees of freedom. `source` says where σ comes from; without two noise seeds there is none.
    """
    working = math.log(value) if ratio else float(value)
    if noise.n < 2 or not math.isfinite(noise.spread) or noise.spread == 0:
        return _estimate(np.array([working]), (0,), ratio, wins=None)
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, noise.n - 1)) * noise.spread
    back = math.exp if ratio else float
    low, high = back(working - half), back(working + half)
    if bounds is not None:  # intersected with what the quantity can take (mean_interval's `bounds`)
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return Estimate(back(working), low, high, 1, (0,), (back(working),),
                    working, noise.spread, ratio, None, degrees=noise.n - 1, bounds=bounds,
                    noise=f"one seed against the seed spread σ = {noise.spread:.3g} of {source} "
                          f"({noise.n} seeds)")


def count_interval(k: int, n: int) -> tuple[float, float]:
    """The exact (Clopper–Pearson) 95% interval of a share of k events in n seeds (scipy's binomtest)."""
    if n == 0:
        return math.nan, math.nan
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=CONFIDENCE, method="exact")
    return float(ci.low), float(ci.high)


def slope_with_seed_effect(points: Mapping) -> Estimate:
    """A trend over every paired point: the least-squares slope of y on x with one intercept per seed (a fixed
    seed effect), its t-interval on N − S − 1 degrees of freedom (N points, S seeds).

    `points` maps seed -> [(x, y), ...]. Each seed's points share that seed's
    batches, so each seed gets its own level; the slope is common, and every
    rung × seed difference counts, not one slope per seed. `spread` is the
    slope's standard error times √S (the spread of one seed's worth of data),
    so seeds_to_resolve reads it like a mean over seeds.
    """
    xs, ys, groups = [], [], []
    for seed, pairs in points.items():
        for x, y in pairs:
            if math.isfinite(float(x)) and math.isfinite(float(y)):
                xs.append(float(x)), ys.append(float(y)), groups.append(seed)
    seeds = tuple(sorted(set(groups)))
    x, y, g = np.array(xs), np.array(ys), np.array(groups, dtype=object)
    xc, yc = x.copy(), y.copy()
    for seed in seeds:
        own = g == seed
        xc[own] -= x[own].mean()
        yc[own] -= y[own].mean()
    sxx, df = float((xc ** 2).sum()), len(x) - len(seeds) - 1
    if not seeds or sxx == 0:
        return Estimate(math.nan, math.nan, math.nan, 0, (), (), math.nan, math.nan)
    slope = float((xc * yc).sum() / sxx)
    if df < 1:
        return Estimate(slope, math.nan, math.nan, len(seeds), seeds, (slope,), slope, math.nan)
    se = math.sqrt(float(((yc - slope * xc) ** 2).sum()) / df / sxx)
    if se == 0:
        return Estimate(slope, math.nan, math.nan, len(seeds), seeds, (slope,), slope, 0.0)
    low, high = stats.t.interval(CONFIDENCE, df, loc=slope, scale=se)
    return Estimate(slope, float(low), float(high), len(seeds), seeds, (slope,), slope, se * math.sqrt(len(seeds)),
                    degrees=df, noise=f"a regression of {len(x)} points on {df} residual degrees of freedom")


def seeds_for_stability(estimate: Estimate, *thresholds: float) -> float | None:
    """About how many seeds would make a verdict stable at the observed spread: the smallest n whose interval
    half-width is at most 1/STABLE_MARGIN of the distance from the mean to the nearest threshold, so a new
    draw of seeds moving the mean by a half-width would not flip it (None without a spread)."""
    if estimate.n < 2 or not math.isfinite(estimate.spread) or estimate.spread == 0:
        return None
    gap = min(abs(estimate.center - estimate.working(t)) for t in thresholds) / STABLE_MARGIN
    if gap == 0:
        return math.inf
    n = np.arange(2, MAX_SEEDS + 1)
    half = half_widths(n, estimate.spread)
    enough = np.flatnonzero(half <= gap)
    return int(n[enough[0]]) if enough.size else None


def seeds_to_resolve(estimate: Estimate, *thresholds: float) -> float | None:
    """About how many seeds would put the interval clear of the nearest threshold at the observed spread.

    The smallest n whose t-interval half-width, at this spread, is below the
    distance from the mean to the nearest threshold; math.inf when the mean
    sits on a threshold, None when there is no spread to go by (fewer than two
    seeds) or more than MAX_SEEDS would be needed.
    """
    if estimate.n < 2 or not math.isfinite(estimate.spread):
        return None
    gap = min(abs(estimate.center - estimate.working(t)) for t in thresholds)
    if gap == 0:
        return math.inf
    if estimate.spread == 0:
        return estimate.n
    n = np.arange(2, MAX_SEEDS + 1)
    half = half_widths(n, estimate.spread)
    enough = np.flatnonzero(half < gap)
    return int(n[enough[0]]) if enough.size else None

