"""The anytime-valid interval: its closed form is the martingale's, and it keeps its coverage when seeds are
added by the rule, where a t-interval read the same way does not."""

import math

import numpy as np
import pytest
from scipy import stats

from attnlab.pipeline import confidence_sequence as cs
from attnlab.pipeline.statistics import CONFIDENCE

ALPHA = 1 - CONFIDENCE


def mixture_martingale(values, m, precision):
    """Lai's scale-invariant mixture likelihood ratio at candidate mean m, written out directly."""
    y = np.asarray(values, dtype=float) - m
    n, s, v = y.size, y.sum(), (y ** 2).sum()
    return math.sqrt(precision / (n + precision)) * (1 - s ** 2 / ((n + precision) * v)) ** (-n / 2)


@pytest.mark.parametrize("n", [7, 8, 20, 60])
def test_the_interval_is_where_the_martingale_stays_below_one_over_alpha(n):
    """Just inside each end, M_n < 1/α; just outside, M_n ≥ 1/α: the closed form inverts the test."""
    rng = np.random.default_rng(n)
    values = rng.normal(0.03, 0.02, n)
    precision = cs.tuned_precision(30)
    low, high = cs.interval(values, precision)
    assert math.isfinite(low) and math.isfinite(high) and low < values.mean() < high
    eps = 1e-6 * (high - low)
    for inside, outside in ((low + eps, low - eps), (high - eps, high + eps)):
        assert mixture_martingale(values, inside, precision) < 1 / ALPHA <= mixture_martingale(values, outside,
                                                                                               precision)


def test_too_few_seeds_bound_nothing_and_the_interval_is_wider_than_a_t_interval():
    """At 3 seeds and a budget of 30 it is the whole line; where it is finite it is wider than the t-interval
    of the same values (the price of reading it after every round) and it narrows as seeds are added."""
    precision = cs.tuned_precision(30)
    assert cs.interval([0.01, 0.02, 0.04], precision) == (-math.inf, math.inf)
    assert not np.isfinite(cs.half_width_factor(6, precision))  # a budget of 30 bounds the mean from 7 seeds
    factors = cs.half_width_factor(np.arange(7, 61), precision)
    assert np.all(np.isfinite(factors)) and np.all(np.diff(factors) < 0)
    for n in (8, 30, 60):
        t_half = stats.t.ppf(0.5 + CONFIDENCE / 2, n - 1) * math.sqrt(n / (n - 1)) / math.sqrt(n)
        assert cs.half_width_factor(n, precision) > t_half


def test_the_tuned_precision_is_narrowest_at_its_budget():
    for budget in (10, 30, 100):
        best = cs.tuned_precision(budget)
        at = float(cs.half_width_factor(budget, best))
        assert at <= float(cs.half_width_factor(budget, best * 3)) and at <= float(cs.half_width_factor(budget,
                                                                                                        best / 3))


def run_rule(rng, effect, spread, threshold, first, max_seeds, read):
    """Seeds added one at a time from `first` until `read(values)` clears the threshold or the budget is spent;
    returns the interval it stopped with and the seeds used."""
    values = list(rng.normal(effect, spread, first))
    while True:
        low, high = read(values)
        if high < threshold or low > threshold or len(values) >= max_seeds:
            return (low, high), len(values)
        values.append(rng.normal(effect, spread))


def t_interval(values):
    n = len(values)
    return stats.t.interval(CONFIDENCE, n - 1, loc=np.mean(values), scale=np.std(values, ddof=1) / math.sqrt(n))


# A known effect at and near the threshold: where optional stopping hurts most.
@pytest.mark.parametrize("effect", [0.0, 0.01])
def test_the_interval_keeps_its_coverage_when_seeds_are_added_until_decided(effect):
    """Many repetitions of the rule (3 seeds, then one more per round up to 30) with a known effect: the
    interval it stops with covers the effect in at least 95% of them, within the Monte Carlo error; a
    t-interval read by the same rule does not."""
    repetitions, spread, threshold, budget = 2000, 0.03, 0.0, 30
    precision = cs.tuned_precision(budget)
    rng = np.random.default_rng(7)
    covered, used = 0, []
    for _ in range(repetitions):
        (low, high), n = run_rule(rng, effect, spread, threshold, 3, budget, lambda v: cs.interval(v, precision))
        covered += low <= effect <= high
        used.append(n)
    coverage = covered / repetitions
    monte_carlo = 3 * math.sqrt(CONFIDENCE * ALPHA / repetitions)
    assert coverage >= CONFIDENCE - monte_carlo, coverage
    naive = sum(low <= effect <= high for (low, high), _ in
                (run_rule(rng, effect, spread, threshold, 3, budget, t_interval) for _ in range(repetitions)))
    assert naive / repetitions < CONFIDENCE - monte_carlo, naive / repetitions
    assert min(used) >= 3 and max(used) <= budget


def test_the_rule_decides_a_clear_effect_and_says_when_the_budget_is_spent():
    rng = np.random.default_rng(3)
    clear = list(rng.normal(0.1, 0.01, 8))
    assert cs.next_round(clear, 0.0, 30) == (cs.DECIDED_ABOVE, 0)
    assert cs.next_round([-v for v in clear], 0.0, 30) == (cs.DECIDED_BELOW, 0)
    unclear = list(rng.normal(0.0, 0.05, 8))
    assert cs.next_round(unclear, 0.0, 30, round_size=4) == (cs.UNDECIDED, 4)
    assert cs.next_round(unclear, 0.0, 10, round_size=4) == (cs.UNDECIDED, 2)  # never past the budget
    assert cs.next_round(unclear + [0.0, 0.01], 0.0, 10) == (cs.BUDGET_SPENT, 0)


def test_seeds_to_clear_is_the_first_count_whose_interval_clears_at_the_observed_spread():
    values = [0.02, 0.05, 0.01, 0.04, 0.03]
    precision = cs.tuned_precision(30)
    needed = cs.seeds_to_clear(values, 0.0, precision)
    spread = float(np.std(values))
    assert float(cs.half_width_factor(needed, precision)) * spread < np.mean(values)
    assert float(cs.half_width_factor(needed - 1, precision)) * spread >= np.mean(values)
    assert cs.seeds_to_clear(values, float(np.mean(values)), precision) is None  # on the threshold
    assert cs.seeds_to_clear([0.03], 0.0, precision) is None  # no spread to go by


def test_the_width_benchmark_prints_where_the_interval_starts_and_what_it_costs(capsys):
    from benchmarks import sequential_width

    assert sequential_width.main(["--budgets", "12", "40"]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    for line, budget in zip(lines, (12, 40), strict=True):
        _, precision, first, ratio = line.split()
        assert np.isinf(cs.half_width_factor(int(first) - 1, float(precision)))
        assert np.isfinite(cs.half_width_factor(int(first), float(precision)))
        assert float(ratio) > 1  # never narrower than the fixed-n interval
