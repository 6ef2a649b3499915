"""The claims ledger's verdicts: where an interval lies against what a claim says.

Inside the claim's side, the claim holds; wholly on the other side, it is
contradicted; across its edge, it is inconclusive, and the observed spread
says about how many seeds would settle it. Each verdict carries a two-sided
p-value that agrees with its interval: the verdict is settled exactly when
that p is at most 0.05 (for a band, the larger of its two edges' p-values; a
design's repeated p-value where the seeds were added under one, so Holm's
step-down takes every verdict of a build in one family at 0.05).
The two "by construction" verdicts are settled by how the model is built, not
by an experiment, and are counted apart from the empirical ones everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from scipy import stats

from attnlab.pipeline.ground.intervals import CONFIDENCE, designed_p
from attnlab.pipeline.ground.statistics import (MAX_SEEDS, NO_SEED, NOISE_RESOLUTION, ONE_SEED, Estimate,
                                                count_interval, seeds_to_resolve)

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
class Verdict:
    """A verdict word, why there is no interval ('' when there is one), what would resolve it, and for one
    seed which side of the claim that seed falls on (`side`)."""

    word: str
    reason: str = ""
    seeds_to_resolve: float | None = None
    side: str = ""
    p: float = math.nan  # two-sided, settled exactly when p <= 0.05 (p_value); Holm's step-down reads it
    lean: str = ""  # an open verdict: which side of the claim its estimate lies on, and where the threshold is

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
    p = p_value(estimate, threshold)
    if (estimate.low > threshold) if above else (estimate.high < threshold):
        return Verdict(HOLDS, p=p)
    if (estimate.high < threshold) if above else (estimate.low > threshold):
        return Verdict(CONTRADICTED, p=p)
    on_side = None if estimate.mean == threshold else (estimate.mean > threshold) == above
    return replace(_open(estimate, threshold), p=p,
                   lean=side_text(estimate.mean, on_side, f"{'above' if above else 'below'} {threshold:.4g}"))


def count_verdict(k: int, n: int, share: float = 0.5) -> "Verdict":
    """A claim that an event (a divergence) happens in more than `share` of seeds: holds when the exact
    interval of k/n lies above it, contradicted when below, else inconclusive with the seeds that would
    settle it at the observed rate."""
    if n == 0:
        return Verdict(INCONCLUSIVE, NO_SEED)
    low, high = count_interval(k, n)
    # twice the smaller exact tail: settled exactly when the exact (Clopper–Pearson) interval clears the share
    p = min(1.0, 2 * min(float(stats.binomtest(k, n, share, alternative=side).pvalue)
                         for side in ("greater", "less"))) if 0 < share < 1 else math.nan
    if low > share:
        return Verdict(HOLDS, p=p)
    if high < share:
        return Verdict(CONTRADICTED, p=p)
    lean = side_text(k / n, None if k / n == share else k / n > share, f"above {share:.4g}",
                     what=f"share of {n} seeds")
    if k / n == share:
        return Verdict(INCONCLUSIVE, "", math.inf, p=p, lean=lean)
    for m in range(n + 1, MAX_SEEDS + 1):
        lo, hi = count_interval(round(k / n * m), m)
        if lo > share or hi < share:
            return Verdict(INCONCLUSIVE, "", m, p=p, lean=lean)
    return Verdict(INCONCLUSIVE, "", None, p=p, lean=lean)


def in_range(estimate: Estimate, low: float, high: float) -> Verdict:
    """A claim that the quantity lies within [low, high]: the interval inside it holds, clear of it contradicts."""
    if estimate.n == 0:
        return Verdict(INCONCLUSIVE, NO_SEED)
    if not estimate.has_interval:
        side = "inside" if low <= estimate.mean <= high else "outside"
        return Verdict(INCONCLUSIVE, estimate.reason,
                       side=f"the one seed falls {side} the claimed range" if estimate.n == 1 else "")
    inside = low <= estimate.mean <= high
    at_low, at_high = p_value(estimate, low), p_value(estimate, high)
    # inside: both edges excluded (two one-sided tests); outside: the nearer edge excluded; 1 where the mean
    # itself is on the other side, so an open verdict's p (the smaller) is never one that would settle it
    p_inside = p_most(at_low, at_high) if inside else 1.0
    p_outside = 1.0 if inside else at_low if estimate.mean < low else at_high
    if low <= estimate.low and estimate.high <= high:
        return Verdict(HOLDS, p=p_inside)
    if estimate.high < low or estimate.low > high:
        return Verdict(CONTRADICTED, p=p_outside)
    return replace(_open(estimate, low, high), p=p_least(p_inside, p_outside),
                   lean=side_text(estimate.mean, inside, f"within [{low:.4g}, {high:.4g}]"))


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
                   p=p_most(*(v.p for v in verdicts)), lean="; ".join(v.lean for v in open_parts if v.lean))


def holm(p_values: Mapping, alpha: float = 1 - CONFIDENCE) -> set:
    """Holm's step-down over a family of p-values (key -> p): the keys whose null it rejects. The smallest p is
    held to alpha / m, the next to alpha / (m − 1), ...; the first that fails stops the rest (the keys whose
    adjusted p-value is at most alpha)."""
    return {key for key, p in holm_adjusted(p_values).items() if math.isfinite(p) and p <= alpha}


def holm_adjusted(p_values: Mapping) -> dict:
    """Holm's adjusted p-values over a family (key -> p): the k-th smallest p times (m − k + 1), made monotone
    and capped at 1; a key's null is rejected at level α exactly when its adjusted p is at most α (`holm`'s set).
    NaN p-values stay NaN and are not counted in m."""
    ordered = sorted(((p, key) for key, p in p_values.items() if math.isfinite(p)), key=lambda pair: pair[0])
    adjusted, running = {key: math.nan for key in p_values}, 0.0
    for rank, (p, key) in enumerate(ordered):
        running = max(running, min(1.0, (len(ordered) - rank) * p))
        adjusted[key] = running
    return adjusted


def p_value(estimate: Estimate, value: float) -> float:
    """The two-sided p-value that the estimate's mean differs from `value`, read the way its interval is: a
    t-test over seeds (on the working scale, with the estimate's degrees of freedom: a regression's residual
    ones, a noise scale's seeds), or under a design its repeated p-value (intervals.designed_p). It is at most
    0.05 exactly when the interval excludes `value`. NaN with no interval (one seed alone, zero spread)."""
    if not estimate.has_interval or not math.isfinite(estimate.spread) or estimate.spread == 0:
        return math.nan
    distance = abs(estimate.center - estimate.working(value))
    t = distance / (estimate.spread / math.sqrt(estimate.n))
    tail = float(2 * stats.t.sf(t, estimate.dof))
    if not math.isfinite(tail):  # min(1.0, nan) would read as 1.0
        return math.nan
    fixed_p = min(1.0, tail)
    if not estimate.sequential:
        return fixed_p
    return designed_p(estimate.n, fixed_p, distance, estimate.spread)


def p_two_sided(estimate: Estimate, value: float = 0.0) -> float:
    """The two-sided t-test p-value that the mean differs from `value`, on the estimate's working scale; NaN
    where the interval is not a t-interval over seeds (one seed, zero spread, a design's)."""
    if not estimate.fixed_seed or estimate.spread == 0:  # zero spread: no test (p_beyond's 0 or 1 is one-sided)
        return math.nan
    return min(1.0, 2 * min(p_beyond(estimate, value, above=True), p_beyond(estimate, value, above=False)))


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
    if not estimate.fixed_seed:
        return math.nan
    bar = math.log(threshold) if estimate.ratio else threshold
    if estimate.spread == 0:
        return 0.0 if (estimate.center > bar) == above and estimate.center != bar else 1.0
    t = (estimate.center - bar) / (estimate.spread / math.sqrt(estimate.n))
    return float(stats.t.sf(t, estimate.n - 1) if above else stats.t.cdf(t, estimate.n - 1))


def side_text(value: float, on_side: bool | None, claim: str, what: str = "estimate") -> str:
    """An open verdict's lean, from its estimate against its threshold, one wording for every row: 'its
    estimate (142.3) lies against the claim (above 1e+05)'."""
    if not math.isfinite(value):
        return ""
    if on_side is None:
        return f"its {what} ({value:.4g}) sits on the claim's threshold ({claim})"
    return f"its {what} ({value:.4g}) lies {'on the side of' if on_side else 'against'} the claim ({claim})"


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

