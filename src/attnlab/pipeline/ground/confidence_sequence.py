"""An interval of a mean that stays valid when the number of seeds depends on the data seen.

A t-interval is valid for a number of seeds fixed in advance. A rule that adds
seeds while a comparison is undecided and stops once its interval clears the
claim's threshold looks at the interval many times, and a t-interval read that
way covers the true mean far less often than 95% (the tests measure it). A
confidence sequence is an interval at every number of seeds that covers the
true mean at all of them at once with 95% probability, so stopping at any
moment the data choose leaves its coverage intact.

The one used here is Lai's (1976) confidence sequence for the mean of Gaussian
values of unknown spread, the sequential analogue of the t-interval (T. L.
Lai, "On confidence sequences", Annals of Statistics 4(2), 265–280, 1976;
restated with its proof as the scale-invariant mixture test in H. Wang and
A. Ramdas, "Anytime-valid t-tests and confidence sequences for Gaussian means
with unknown variance", Sequential Analysis, 2024, arXiv:2310.03722). For the
n values x_i and a candidate mean m, with S = Σ(x_i − m) and V = Σ(x_i − m)²,

    M_n(m) = sqrt(c / (n + c)) · (1 − S² / ((n + c) V))^(−n/2)

is a nonnegative martingale under mean m whatever the spread (a normal mixture
over the standardised effect, of precision c, integrated against the scale's
invariant measure), so by Ville's inequality M_n(m) ≥ 1/α at some n has
probability at most α. The interval at n is every m with M_n(m) < 1/α: with
r = (α² c / (n + c))^(1/n), k = (1 − r)(n + c) and s² the mean squared
deviation from the sample mean, it is x̄ ± sqrt(k s² / (n − k)) when n > k,
and the whole line before that (too few seeds to say anything at this level).

It is wider than a t-interval at the same n: the price of looking after every
round. The mixture precision c sets the number of seeds where it is tightest;
`tuned_precision` picks the c that makes it narrowest at the rule's budget,
which is fixed before any seed is seen (so the choice spends no coverage).
The build reads it where a config's budget is open-ended (contest.rounds
without looks: attnlab.pipeline.ground.design); with looks planned in advance, a
group-sequential design is much narrower (attnlab.pipeline.ground.group_sequential).
Like the t-interval, it rests on the per-seed differences being Gaussian.
"""

from __future__ import annotations

import math

from scipy import optimize

# the formula below, kept with the intervals
from attnlab.pipeline.ground.intervals import CONFIDENCE, half_width_factor

METHOD = ("Lai's (1976) anytime-valid confidence sequence for a Gaussian mean of unknown spread "
          "(Wang & Ramdas 2024, arXiv:2310.03722)")


def tuned_precision(seeds: int, alpha: float = 1 - CONFIDENCE) -> float:
    """The mixture precision c that makes the interval narrowest at `seeds` values (fixed before any seed is
    seen: it depends on the budget only)."""
    if seeds < 2:
        raise ValueError(f"a confidence sequence needs a budget of at least 2 seeds, not {seeds}")
    found = optimize.minimize_scalar(lambda log_c: float(half_width_factor(seeds, math.exp(log_c), alpha)),
                                     bounds=(-12.0, 6.0), method="bounded")
    return float(math.exp(found.x))
