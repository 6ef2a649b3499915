"""`python benchmarks/sequential_width.py`: what reading the interval after every round costs in width.

For each seed budget, the anytime-valid confidence sequence tuned to it
(attnlab.pipeline.ground.confidence_sequence): the first number of seeds at which it
bounds the mean at all, and its half-width at the budget over the fixed-n
t-interval's, both per unit of the seeds' root mean squared deviation. No
timing: the figures are exact functions of the budget.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy import stats

from attnlab.pipeline.ground import confidence_sequence as cs
from attnlab.pipeline.ground.intervals import CONFIDENCE


def rows(budgets: list[int]) -> list[tuple[int, float, int, float]]:
    """(budget, tuned precision, first bounded seed count, width at the budget over the t-interval's)."""
    out = []
    for budget in budgets:
        precision = cs.tuned_precision(budget)
        n = np.arange(2, budget + 1)
        factors = cs.half_width_factor(n, precision)
        t_factor = stats.t.ppf(0.5 + CONFIDENCE / 2, budget - 1) / math.sqrt(budget - 1)
        out.append((budget, precision, int(n[np.isfinite(factors)][0]), float(factors[-1]) / t_factor))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", type=int, nargs="+", default=[10, 20, 30, 60])
    args = parser.parse_args(argv)
    if min(args.budgets) < 3:
        parser.error("every budget must be at least 3 seeds (a t-interval of the budget needs two)")
    print("budget  precision  bounded_from  width_over_t")
    for budget, precision, first, ratio in rows(args.budgets):
        print(f"{budget:6d}  {precision:9.4f}  {first:12d}  {ratio:12.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
