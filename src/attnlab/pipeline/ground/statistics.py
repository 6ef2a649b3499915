"""Every comparison between variants, paired by seed: differences, 95% t-intervals, wins, ratios and verdicts.

Every variant of a seed trains on the same batches, in the same order, from the
same skeleton initialisation, so two variants are compared seed by seed: the
per-seed differences, their mean, a t-interval of that mean (scipy.stats' t
distribution) and how many seeds the first variant wins. A ratio (a score
scale, one variant's loss over another's) goes through the mean of the
per-seed log-ratios and is reported back as a ratio. One seed gives a value
and no interval.

A claim is checked by where the interval lies against what the claim says:
inside it, the claim holds; outside it, the claim is contradicted; across its
edge, the result is inconclusive, and the observed spread says about how many
seeds would settle it. This module is the only place a fixed-seed interval is
computed: the tables, the claims ledger, the figures and the writeup all call
it; how an estimate is written is attnlab.pipeline.ground.estimate_text. The interval
for seeds added until a comparison is decided is
attnlab.pipeline.ground.confidence_sequence: inside `sequential(precision)`, every
interval computed here is that confidence sequence's instead (a build whose
seeds were added by a rule that read the data). Inside `repeated(looks, levels)`,
every interval is a group-sequential design's repeated t-interval at the nominal
confidence of the look its seeds reached (attnlab.pipeline.ground.design).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
ONE_SEED = "one seed: no interval"
NO_SEED = "no seed to compare"
ZERO_SPREAD = "the seeds' values are identical: zero spread is degenerate evidence, not an interval"
TOO_FEW_POINTS = "too few points for an interval (a trend needs more rungs than seeds plus one)"
NOISE_RESOLUTION = "one seed: more seeds would give an interval of their own"
UNBOUNDED = "too few seeds for the confidence sequence to bound the mean (its interval is still the whole line)"
STABLE_MARGIN = 2.0  # a verdict is stable when its interval's half-width is at most 1/STABLE_MARGIN of its clearance
MAX_SEEDS = 1000  # beyond this many seeds, "more than" is all that is said
# The mixture precision of the confidence sequence every interval is computed with, where seeds were added until
# decided (None: fixed seeds, t-intervals). Set with `sequential`.
_SEQUENTIAL: ContextVar[float | None] = ContextVar("sequential_precision", default=None)
# A group-sequential design's looks (seeds per variant) and each look's nominal confidence: an interval over n
# seeds is the repeated t-interval of the last look at or below n (None: no design). Set with `repeated`.
_REPEATED: ContextVar[tuple[tuple[int, ...], tuple[float, ...]] | None] = ContextVar("repeated", default=None)
# The confidence of an exact sign-test interval of a median inside `sequential` (the binomial interval has no
# mixture form: a share of α per planned round). Set with `sequential`.
_MEDIAN: ContextVar[float | None] = ContextVar("median_confidence", default=None)

# The verdicts of the claims ledger. The two "by construction" verdicts are settled by how the model is built,
# not by an experiment, and are counted apart from the empirical ones everywhere.
HOLDS = "holds"
CONTRADICTED = "contradicted"
INCONCLUSIVE = "inconclusive"  # "inconclusive at <protocol>" where the build is off the claim's protocol
NOT_TESTABLE = "not testable"  # always followed by "at <protocol>"
HOLDS_BY_CONSTRUCTION = "holds by construction"
CONTRADICTED_BY_CONSTRUCTION = "contradicted by construction"
BY_CONSTRUCTION = (HOLDS_BY_CONSTRUCTION, CONTRADICTED_BY_CONSTRUCTION)
EMPIRICAL = (HOLDS, CONTRADICTED, INCONCLUSIVE, NOT_TESTABLE)
# Longest first: verdict_word reads a verdict by its first words.
VERDICTS = (HOLDS_BY_CONSTRUCTION, CONTRADICTED_BY_CONSTRUCTION, HOLDS, CONTRADICTED, INCONCLUSIVE, NOT_TESTABLE)


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

    @property
    def has_interval(self) -> bool:
        return (self.n >= 2 or bool(self.noise)) and math.isfinite(self.low) and math.isfinite(self.high)

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


def mean_interval(values: Iterable[float], seeds: Iterable | None = None, ratio: bool = False) -> Estimate:
    """The mean of one quantity over seeds (of a ratio: the geometric mean) with its t-interval."""
    values = [float(v) for v in values]
    seeds = tuple(seeds) if seeds is not None else tuple(range(len(values)))
    working = np.log(values) if ratio else np.asarray(values, dtype=float)
    return _estimate(working, seeds, ratio, wins=None)


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


def _estimate(working: np.ndarray, seeds: tuple, ratio: bool, wins: int | None) -> Estimate:
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
    return Estimate(float(back(center)), float(back(low)), float(back(high)), n, seeds, values, center, spread,
                    ratio, wins, sequential=_SEQUENTIAL.get() is not None or _REPEATED.get() is not None,
                    kind=interval_kind())


def against_noise(value: float, noise: Estimate, source: str, ratio: bool = False) -> Estimate:
    """One seed's value with an interval from a stated noise scale: value ± t · σ, where σ is the seed-to-seed
    standard deviation of `noise` (the same variant's values over seeds, on the same working scale) and t has
    that estimate's degrees of freedom. `source` says where σ comes from; without two noise seeds there is none.
    """
    working = math.log(value) if ratio else float(value)
    if noise.n < 2 or not math.isfinite(noise.spread) or noise.spread == 0:
        return _estimate(np.array([working]), (0,), ratio, wins=None)
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, noise.n - 1)) * noise.spread
    back = math.exp if ratio else float
    return Estimate(back(working), back(working - half), back(working + half), 1, (0,), (back(working),),
                    working, noise.spread, ratio, None,
                    noise=f"one seed against the seed spread σ = {noise.spread:.3g} of {source} "
                          f"({noise.n} seeds)")


def count_interval(k: int, n: int) -> tuple[float, float]:
    """The exact (Clopper–Pearson) 95% interval of a share of k events in n seeds (scipy's binomtest)."""
    if n == 0:
        return math.nan, math.nan
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=CONFIDENCE, method="exact")
    return float(ci.low), float(ci.high)


def count_verdict(k: int, n: int, share: float = 0.5) -> "Verdict":
    """A claim that an event (a divergence) happens in more than `share` of seeds: holds when the exact
    interval of k/n lies above it, contradicted when below, else inconclusive with the seeds that would
    settle it at the observed rate."""
    if n == 0:
        return Verdict(INCONCLUSIVE, NO_SEED)
    low, high = count_interval(k, n)
    above = float(stats.binomtest(k, n, share, alternative="greater").pvalue) if 0 < share < 1 else math.nan
    below = float(stats.binomtest(k, n, share, alternative="less").pvalue) if 0 < share < 1 else math.nan
    if low > share:
        return Verdict(HOLDS, p=above)
    if high < share:
        return Verdict(CONTRADICTED, p=below)
    if k / n == share:
        return Verdict(INCONCLUSIVE, "", math.inf, p=p_least(above, below))
    for m in range(n + 1, MAX_SEEDS + 1):
        lo, hi = count_interval(round(k / n * m), m)
        if lo > share or hi < share:
            return Verdict(INCONCLUSIVE, "", m, p=p_least(above, below))
    return Verdict(INCONCLUSIVE, "", None, p=p_least(above, below))


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
                    noise=f"a regression of {len(x)} points on {df} residual degrees of freedom")


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


# ---- verdicts


@dataclass(frozen=True)
class Verdict:
    """A verdict word, why there is no interval ('' when there is one), what would resolve it, and for one
    seed which side of the claim that seed falls on (`side`)."""

    word: str
    reason: str = ""
    seeds_to_resolve: float | None = None
    side: str = ""
    p: float = math.nan  # the one-sided p-value of the settled side (the likelier side when open); Holm reads it

    @property
    def resolution(self) -> str:
        """What would resolve an inconclusive verdict: 'about 7 seeds would resolve it at the observed spread'."""
        if self.word != INCONCLUSIVE:
            return ""
        if self.reason == ONE_SEED:
            return "; ".join(filter(None, [self.side, "two or more seeds would give an interval"]))
        return resolve_text(self.seeds_to_resolve, self.reason)


def one_sided(estimate: Estimate, threshold: float, above: bool) -> Verdict:
    """A claim that the quantity lies above (or below) `threshold`.

    Holds when the whole interval is on the claim's side, contradicted when the
    whole interval is on the other side; with one seed there is no interval and
    the result is inconclusive whichever side that seed falls on.
    """
    if estimate.n == 0:
        return Verdict(INCONCLUSIVE, NO_SEED)
    if not estimate.has_interval:
        side = "on" if (estimate.mean > threshold) == above else "against"
        return Verdict(INCONCLUSIVE, estimate.reason,
                       side=f"the one seed falls {side} the claim's side" if estimate.n == 1 else "")
    on_side = p_beyond(estimate, threshold, above)
    against = p_beyond(estimate, threshold, not above)
    if (estimate.low > threshold) if above else (estimate.high < threshold):
        return Verdict(HOLDS, p=on_side)
    if (estimate.high < threshold) if above else (estimate.low > threshold):
        return Verdict(CONTRADICTED, p=against)
    return replace(_open(estimate, threshold), p=p_least(on_side, against))


def holm(p_values: Mapping, alpha: float = 1 - CONFIDENCE) -> set:
    """Holm's step-down over a family of p-values (key -> p): the keys whose null it rejects. The smallest p is
    held to alpha / m, the next to alpha / (m − 1), ...; the first that fails stops the rest."""
    ordered = sorted(((p, key) for key, p in p_values.items() if math.isfinite(p)), key=lambda pair: pair[0])
    rejected = set()
    for rank, (p, key) in enumerate(ordered):
        if p > alpha / (len(ordered) - rank):
            break
        rejected.add(key)
    return rejected


def p_least(*ps: float) -> float:
    """The smallest p-value, NaN ones left out (NaN if all are)."""
    finite = [p for p in ps if math.isfinite(p)]
    return min(finite) if finite else math.nan


def p_most(*ps: float) -> float:
    """The largest p-value; NaN if any part has none (an intersection of tests is as weak as its weakest)."""
    return max(ps) if ps and all(math.isfinite(p) for p in ps) else math.nan


def p_beyond(estimate: Estimate, threshold: float, above: bool) -> float:
    """The one-sided t-test p-value that the mean lies above (or below) `threshold`, on the estimate's working
    scale; NaN where the interval is not a t-interval over seeds (one seed, a confidence sequence)."""
    if estimate.n < 2 or estimate.sequential or estimate.noise or not math.isfinite(estimate.spread):
        return math.nan
    bar = math.log(threshold) if estimate.ratio else threshold
    if estimate.spread == 0:
        return 0.0 if (estimate.center > bar) == above and estimate.center != bar else 1.0
    t = (estimate.center - bar) / (estimate.spread / math.sqrt(estimate.n))
    return float(stats.t.sf(t, estimate.n - 1) if above else stats.t.cdf(t, estimate.n - 1))


def in_range(estimate: Estimate, low: float, high: float) -> Verdict:
    """A claim that the quantity lies within [low, high]: the interval inside it holds, clear of it contradicts."""
    if estimate.n == 0:
        return Verdict(INCONCLUSIVE, NO_SEED)
    if not estimate.has_interval:
        side = "inside" if low <= estimate.mean <= high else "outside"
        return Verdict(INCONCLUSIVE, estimate.reason,
                       side=f"the one seed falls {side} the claimed range" if estimate.n == 1 else "")
    inside = p_most(p_beyond(estimate, low, True), p_beyond(estimate, high, False))  # both sides: two one-sided tests
    outside = p_least(p_beyond(estimate, low, False), p_beyond(estimate, high, True))
    if low <= estimate.low and estimate.high <= high:
        return Verdict(HOLDS, p=inside)
    if estimate.high < low or estimate.low > high:
        return Verdict(CONTRADICTED, p=outside)
    return replace(_open(estimate, low, high), p=p_least(inside, outside))


def _open(estimate: Estimate, *thresholds: float) -> Verdict:
    """An interval across a threshold: how many seeds would settle it (a one-seed reading cannot say)."""
    if estimate.n == 1 and estimate.noise:
        return Verdict(INCONCLUSIVE, NOISE_RESOLUTION)
    return Verdict(INCONCLUSIVE, "", seeds_to_resolve(estimate, *thresholds))


def every(*verdicts: Verdict) -> Verdict:
    """A claim made of parts that must all hold: contradicted if one part is, holds if all do."""
    if any(v.word == CONTRADICTED for v in verdicts):  # one part refuted refutes the claim
        return Verdict(CONTRADICTED, p=p_least(*(v.p for v in verdicts if v.word == CONTRADICTED)))
    if all(v.word == HOLDS for v in verdicts):  # every part must hold: the weakest part's p (intersection-union)
        return Verdict(HOLDS, p=p_most(*(v.p for v in verdicts)))
    open_parts = [v for v in verdicts if v.word != HOLDS]
    reason = "; ".join(dict.fromkeys(v.reason for v in open_parts if v.reason))
    side = "; ".join(dict.fromkeys(v.side for v in open_parts if v.side))
    needed = [v.seeds_to_resolve for v in open_parts]
    return Verdict(INCONCLUSIVE, reason, None if any(n is None for n in needed) else max(needed), side,
                   p=p_most(*(v.p for v in verdicts)))


def not_testable(protocol: str) -> str:
    return f"{NOT_TESTABLE} at {protocol}"


def inconclusive_at(protocol: str) -> str:
    """The verdict of a check whose build is off the claim's protocol (a precondition failed)."""
    return f"{INCONCLUSIVE} at {protocol}"


def verdict_word(verdict: str) -> str:
    """The verdict without its protocol: 'not testable at smoke' -> 'not testable'."""
    text = str(verdict)
    return next((word for word in VERDICTS if text.startswith(word)), text)


def resolve_text(needed: float | None, reason: str = "") -> str:
    if reason:
        return reason
    if needed is None:
        return f"more than {MAX_SEEDS:,} seeds would be needed at the observed spread"
    if math.isinf(needed):
        return "the mean sits on the threshold: no number of seeds would resolve it"
    return f"about {int(needed)} seeds would resolve it at the observed spread"
