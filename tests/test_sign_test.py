"""The median with an exact sign-test interval (attnlab.pipeline.ground.sign_test): its coverage, its exactness, and
why the score-scale ratio is read by it rather than by the mean log-ratio's t-interval."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from attnlab.pipeline.ground import sign_test as st
from attnlab.pipeline.ground import statistics, verdicts
from attnlab.pipeline.ground.statistics import NO_SEED
from attnlab.pipeline.ground.verdicts import CONTRADICTED, HOLDS, INCONCLUSIVE

# The kernel post's score-scale ratio as this project's contest seeds have read it: per seed, yat's largest
# trained score over softmax's.
SEEN = (83.0, 1459.0, 365.0, 442.0, 450.0, 382.0, 72524.0, 5461.0)


def brute_force(n: int, confidence: float) -> tuple[int, Fraction]:
    """The largest k with 1 − 2·P(Binom(n, 1/2) ≤ k − 1) ≥ confidence, counted exactly (0 where none)."""
    best, achieved = 0, Fraction(1)
    for k in range(1, n // 2 + 1):
        tail = Fraction(sum(math.comb(n, j) for j in range(k)), 2 ** n)
        if 1 - 2 * tail >= Fraction(confidence):
            best, achieved = k, 1 - 2 * tail
    return best, achieved


# ---- the interval


@pytest.mark.parametrize("confidence", [0.95, 0.9, 0.99, 0.9375, 0.8])
def test_the_interval_is_the_exact_order_statistic_interval(confidence):
    rng = np.random.default_rng(1)
    for n in range(1, 61):
        x = rng.standard_cauchy(n)
        low, high, achieved = st.median_interval(x, confidence)
        k, exact = brute_force(n, confidence)
        if k == 0:
            assert (low, high, achieved) == (-math.inf, math.inf, 1.0), n
            continue
        ordered = np.sort(x)
        assert (low, high) == (ordered[k - 1], ordered[n - k]), (n, confidence)
        assert achieved == pytest.approx(float(exact), abs=1e-12) and achieved >= confidence - 1e-12


def test_six_seeds_are_the_fewest_that_bound_the_median_at_95_percent():
    # five seeds reach at most 1 − 2/32 = 93.75%, under 95%; six reach 1 − 2/64 = 96.9%
    assert st.median_interval([1, 2, 3, 4, 5]) == (-math.inf, math.inf, 1.0)
    assert st.median_interval([1, 2, 3, 4, 5], confidence=0.9375)[:2] == (1.0, 5.0)
    low, high, achieved = st.median_interval([6, 1, 5, 2, 4, 3])
    assert (low, high, achieved) == (1.0, 6.0, 0.96875)
    assert st.seeds_to_bound(0.95) == 6 and st.seeds_to_bound(0.99) == 8


def test_empty_input_has_no_median_and_no_interval():
    low, high, achieved = st.median_interval([])
    assert math.isnan(low) and math.isnan(high) and math.isnan(achieved)
    empty = st.paired_median({}, {1: 2.0})
    assert empty.n == 0 and math.isnan(empty.median) and not empty.has_interval and empty.reason == NO_SEED
    assert st.verdict(empty, 100).word == INCONCLUSIVE and st.verdict(empty, 100).reason == NO_SEED
    assert st.sign_counts([], 1.0) == (0, 0, 0) and math.isnan(st.p_above([], 1.0))


@pytest.mark.parametrize("draw", ["lognormal", "cauchy"])
@pytest.mark.parametrize("n", [6, 8, 10, 20])
def test_the_interval_covers_the_median_at_least_as_often_as_it_says(draw, n):
    """4,000 samples of n values of a known median (lognormal: 1, Cauchy: 0, no mean at all): the share of
    intervals covering it is the exact coverage within Monte-Carlo error, and at least the confidence."""
    rng = np.random.default_rng(20240611 + n)
    draws, truth = 4000, (1.0 if draw == "lognormal" else 0.0)
    samples = rng.lognormal(0.0, 2.0, (draws, n)) if draw == "lognormal" else rng.standard_cauchy((draws, n))
    covered = []
    for x in samples:
        low, high, achieved = st.median_interval(x)
        covered.append(low <= truth <= high)
    share = float(np.mean(covered))
    error = math.sqrt(achieved * (1 - achieved) / draws)
    assert achieved >= 0.95
    assert share >= 0.95 - 3 * error, (share, achieved)
    assert abs(share - achieved) <= 4 * error + 1 / draws, (share, achieved)


def test_the_coverage_check_fails_a_narrower_interval():
    """The check above can fail: the next order statistics in, [x_(k+1), x_(n−k)], cover under 95% (at 20
    seeds 1 − 2·P(Binom(20, ½) ≤ 6) = 88.5%), and the simulation sees it."""
    rng = np.random.default_rng(3)
    n, draws = 20, 4000
    k = st.order_rank(n) + 1
    samples = np.sort(rng.standard_cauchy((draws, n)), axis=1)
    share = float(np.mean((samples[:, k - 1] <= 0) & (0 <= samples[:, n - k])))
    assert share < 0.95 - 3 * math.sqrt(0.95 * 0.05 / draws)
    assert share == pytest.approx(st.coverage(n, k), abs=4 * math.sqrt(0.885 * 0.115 / draws))


# ---- counts and p-values


def test_ties_at_the_threshold_are_dropped_from_the_sign_test():
    values = [100.0, 100.0, 150.0, 200.0, 50.0, 300.0]
    assert st.sign_counts(values, 100.0) == (3, 1, 4)
    assert st.p_above(values, 100.0) == pytest.approx(5 / 16)  # P(Binom(4, ½) ≥ 3)
    assert st.p_below(values, 100.0) == pytest.approx(15 / 16)  # P(Binom(4, ½) ≤ 3)
    assert math.isnan(st.p_above([1.0, 1.0], 1.0))


def test_a_tie_counts_against_the_side_it_does_not_clear():
    # eight seeds, all above 100× but one exactly at it: x_(1) = 100 is not above 100, so it does not hold
    e = st.median_of(dict(enumerate([100.0, 150, 160, 170, 180, 190, 200, 210])), threshold=100.0)
    assert e.above == 7 and e.low == 100.0
    assert st.verdict(e, 100.0).word == INCONCLUSIVE
    # as many at the threshold as on either side: neither a majority, so no number of seeds resolves it
    ties = st.median_of(dict(enumerate([100.0] * 4 + [50.0, 200.0] * 2)), threshold=100.0)
    assert st.verdict(ties, 100.0).seeds_to_resolve == math.inf


# ---- the paired median


def test_paired_median_reads_ratios_or_differences_over_the_shared_seeds():
    first = {0: 10.0, 1: 40.0, 2: 90.0, 3: 1.0}
    second = {0: 1.0, 1: 2.0, 2: 3.0, 9: 5.0}
    ratios = st.paired_median(first, second, ratio=True, threshold=15.0)
    assert ratios.seeds == (0, 1, 2) and ratios.values == (10.0, 20.0, 30.0) and ratios.median == 20.0
    assert ratios.above == 2 and ratios.count_above(5.0) == 3
    diffs = st.paired_median(first, second, ratio=False)
    assert diffs.values == (9.0, 38.0, 87.0) and diffs.above == 3 and diffs.threshold == 0.0
    # the order statistics are the same on the ratio's scale and its log's
    x = {s: float(v) for s, v in enumerate(SEEN)}
    on_ratio = st.paired_median(x, dict.fromkeys(x, 1.0))
    on_log = st.paired_median({s: math.log(v) for s, v in x.items()}, dict.fromkeys(x, 0.0), ratio=False)
    assert (math.log(on_ratio.low), math.log(on_ratio.high)) == pytest.approx((on_log.low, on_log.high))


def test_one_seed_says_which_side_it_falls_on_and_that_six_would_settle_it():
    e = st.paired_median({0: 5000.0}, {0: 10.0})
    assert e.n == 1 and e.median == 500.0 and not e.has_interval and "too few" in e.reason and "6" in e.reason
    v = st.verdict(e, 100.0)
    assert v.word == INCONCLUSIVE and v.side == "the one seed falls on the claim's side" and v.seeds_to_resolve == 6
    assert st.verdict(e, 1e5).side == "the one seed falls against the claim's side"


# ---- the seen values


def test_the_seen_values_at_eight_seeds_leave_100x_open_and_a_ninth_above_decides_it():
    """7 of 8 seeds above 100×: at 8 seeds the 95% interval must use k = 1 (k = 2 covers only 92.97%), so it is
    [83×, 72,524×] (99.2%) and crosses 100×; 9 seeds at the same share would settle it. A ninth seed above 100×
    makes it 8 of 9: k = 2 (96.1%), [x_(2), x_(8)] lies above 100× and the claim holds; a ninth below leaves
    it open."""
    eight = st.median_of(dict(enumerate(SEEN)), threshold=100.0)
    assert (eight.median, eight.low, eight.high) == (446.0, 83.0, 72524.0)
    assert eight.achieved == pytest.approx(1 - 2 / 256) and eight.above == 7
    v = st.verdict(eight, 100.0)
    assert v.word == INCONCLUSIVE and v.seeds_to_resolve == 9
    assert v.p == pytest.approx(2 * st.p_above(SEEN, 100.0)) == pytest.approx(18 / 256)  # 2 P(Binom(8, ½) ≥ 7)
    nine = st.median_of(dict(enumerate(SEEN + (200.0,))), threshold=100.0)
    assert (nine.median, nine.low, nine.high) == (442.0, 200.0, 5461.0)
    assert nine.achieved == pytest.approx(1 - 2 * 10 / 512) and nine.above == 8
    holds = st.verdict(nine, 100.0)
    assert holds.word == HOLDS and holds.p == pytest.approx(20 / 512)  # two-sided: 2 P(Binom(9, ½) ≥ 8)
    assert st.fragility(nine, 100.0) == 1  # one more seed under 100× would reopen it
    below = st.median_of(dict(enumerate(SEEN + (50.0,))), threshold=100.0)
    assert (below.low, below.high) == (83.0, 5461.0) and st.verdict(below, 100.0).word == INCONCLUSIVE
    # five orders: no seed reaches 100,000×, and the 8-seed interval lies wholly under it
    five = st.verdict(eight, 1e5)
    assert five.word == CONTRADICTED and five.p == pytest.approx(2 / 256)


def test_a_seed_in_the_claims_favour_lowers_the_t_interval_but_never_the_median_interval():
    """The seventh seen seed (72,524×) is far in the claim's favour, yet it lowers the mean log-ratio's lower
    edge (148× to 112×): it widens the spread more than it moves the mean. The order statistics only count it
    as one more seed above."""
    six, seven = SEEN[:6], SEEN[:7]
    t6, t7 = statistics.mean_interval(six, ratio=True), statistics.mean_interval(seven, ratio=True)
    assert t7.low < t6.low and t6.low == pytest.approx(148.3, abs=0.1) and t7.low == pytest.approx(112.2, abs=0.1)
    lows = [st.median_interval(list(six) + [1e6] * extra)[0] for extra in range(0, 30)]
    assert all(b >= a for a, b in zip(lows, lows[1:]))


def test_a_heavy_tail_leaves_the_t_interval_open_where_the_median_holds():
    """Eight seeds at 150×–220× and a ninth at 10⁹×: every seed is above 100×, the mean log-ratio's t-interval
    reaches down to 19× (one seed's log dominates the spread) and is inconclusive, the median's [160×, 220×]
    holds. Without the ninth seed the t-interval held: a seed for the claim turned it inconclusive."""
    values = (150.0, 160.0, 170.0, 180.0, 190.0, 200.0, 210.0, 220.0, 1e9)
    t = statistics.mean_interval(values, ratio=True)
    assert verdicts.one_sided(t, 100.0, above=True).word == INCONCLUSIVE and t.low < 100.0
    assert verdicts.one_sided(statistics.mean_interval(values[:-1], ratio=True), 100.0, above=True).word == HOLDS
    e = st.median_of(dict(enumerate(values)), threshold=100.0)
    assert (e.low, e.high) == (160.0, 220.0) and st.verdict(e, 100.0).word == HOLDS
    # a tail against the claim: 15 of 20 seeds at 150×–290×, 5 at 10⁻³⁰⁰×. Their logs drag the mean log-ratio
    # to −169 and the t-interval wholly under 1×: contradicted. The median's [x_(6), x_(15)] = [150×, 240×]
    # (95.9%) holds: three quarters of the seeds are above.
    against = tuple(150.0 + 10 * i for i in range(15)) + (1e-300,) * 5
    assert verdicts.one_sided(statistics.mean_interval(against, ratio=True), 1.0, above=True).word == CONTRADICTED
    e = st.median_of(dict(enumerate(against)), threshold=1.0)
    assert (e.low, e.high) == (150.0, 240.0) and st.verdict(e, 1.0).word == HOLDS


def test_below_claims_and_p_values_mirror_above_ones():
    values = dict(enumerate([0.01, 0.02, 0.03, 0.04, 0.05, 0.06]))
    e = st.median_of(values, threshold=1.0)
    assert st.verdict(e, 1.0, above=False).word == HOLDS and st.verdict(e, 1.0, above=True).word == CONTRADICTED
    assert st.verdict(e, 1.0, above=False).p == pytest.approx(2 / 64) == st.verdict(e, 1.0, above=True).p
    open_ = st.verdict(st.median_of(dict(enumerate([1, 2, 3, 4, 5, 6, 7, 8.0]))), 4.5)
    assert open_.word == INCONCLUSIVE and open_.seeds_to_resolve == math.inf
    assert open_.p == 1.0  # 4 above and 4 below: twice a tail of one half, capped


def test_method_names_the_reading():
    assert st.METHOD == "median of the per-seed values with an exact sign-test (order-statistic) interval"
