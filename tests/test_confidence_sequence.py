"""The anytime-valid interval the build reads (statistics.paired inside intervals.sequential): its closed form is
the martingale's. Its error rate under the build's own rule is tests/test_designs.py's."""

import math

import numpy as np
import pytest
from scipy import stats

from attnlab.pipeline.ground import confidence_sequence as cs
from attnlab.pipeline.ground import intervals, statistics
from attnlab.pipeline.ground.intervals import CONFIDENCE

ALPHA = 1 - CONFIDENCE


def interval(values, precision):
    """The build's interval of a mean difference inside the sequence (±inf while unbounded)."""
    with intervals.sequential(precision):
        estimate = statistics.paired(dict(enumerate(values)), dict.fromkeys(range(len(values)), 0.0))
    return ((estimate.low, estimate.high) if estimate.has_interval else (-math.inf, math.inf))


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
    low, high = interval(values, precision)
    assert math.isfinite(low) and math.isfinite(high) and low < values.mean() < high
    eps = 1e-6 * (high - low)
    for inside, outside in ((low + eps, low - eps), (high - eps, high + eps)):
        assert mixture_martingale(values, inside, precision) < 1 / ALPHA <= mixture_martingale(values, outside,
                                                                                               precision)


def test_too_few_seeds_bound_nothing_and_the_interval_is_wider_than_a_t_interval():
    """At 3 seeds and a budget of 30 it is the whole line; where it is finite it is wider than the t-interval
    of the same values (the price of reading it after every round) and it narrows as seeds are added."""
    precision = cs.tuned_precision(30)
    assert interval([0.01, 0.02, 0.04], precision) == (-math.inf, math.inf)
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


def test_the_width_benchmark_prints_where_the_interval_starts_and_what_it_costs(capsys):
    from benchmarks import sequential_width

    assert sequential_width.main(["--budgets", "12", "40"]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    for line, budget in zip(lines, (12, 40), strict=True):
        _, precision, first, ratio = line.split()
        assert np.isinf(cs.half_width_factor(int(first) - 1, float(precision)))
        assert np.isfinite(cs.half_width_factor(int(first), float(precision)))
        assert float(ratio) > 1  # never narrower than the fixed-n interval
