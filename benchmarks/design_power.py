"""`python benchmarks/design_power.py [config] [--planning DATE]`: the power of a config's contest design.

For each comparison the design decides, the probability that its interval clears every threshold at some look
(attnlab.pipeline.ground.group_sequential.power for a mean, a binomial simulation of the sign test for a median), at
planning values: the per-seed mean and spread (or share of seeds above the threshold) a settle build measured
(CHANGELOG, "The settle build with seeds added until decided", 2026-12-05, 8 seeds), fixed before this
config's seeds are trained. Beside it, a fixed design
of the last look's seeds. No timing: every figure is a fixed-seed simulation of the stated values.

`--planning 2026-12-06` takes instead what the next settle build measured (its per-seed values: 8 seeds for
the comparisons its first look closed, 20 for the others), the planning values for a design sized after it.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from attnlab.core.config import load_config
from attnlab.pipeline.ground import design, group_sequential, sign_test
from attnlab.pipeline.ground import rounds

# What a settle build measured after 8 seeds, its rule's 95% confidence sequence (budget 8) per comparison, on the
# scale the rule reads (a loss ratio as its log, a difference in nats); the mean and spread are read back from it.
MEASURED = {
    "yat_b_gap": (math.log(1 - 0.0100), math.log(1 + 0.0277), "yat_b / softmax, CS [-1.00%, +2.77%]"),
    "a3_gain": (0.0139, 0.0401, "softmax − A3, CS [+0.0139, +0.0401]"),
    "a3_beyond_temperature": (0.0125, 0.0436, "softmax_t − A3, CS [+0.0125, +0.0436]"),
    "entropy_gap": (0.159, 0.253, "yat_b − softmax entropy, CS [+0.159, +0.253]"),
}
SEEDS, BUDGET = 8, 8
SCORE_SHARE = (7 / 8, "yat / softmax largest score: 7 of 8 seeds above 100x")
# What the settle build of 2026-12-06 measured, per seed (runs.csv of its contest): mean and sample spread on the
# rule's scale, and the share of seeds above 100x for the score ratio ((k + 1) / (n + 2): 20 of 20 is no certainty).
LATER = "2026-12-06"
MEASURED_LATER = {
    "yat_b_gap": (0.01851, 0.01474, "yat_b / softmax, 8 seeds: mean log-ratio +0.0185, sd 0.0147"),
    "a3_gain": (0.01699, 0.02207, "softmax − A3, 20 seeds: mean +0.0170, sd 0.0221"),
    "a3_beyond_temperature": (0.01672, 0.01740, "softmax_t − A3, 20 seeds: mean +0.0167, sd 0.0174"),
    "entropy_gap": (0.20020, 0.05400, "yat_b − softmax entropy, 8 seeds: mean +0.200, sd 0.054"),
}
SCORE_SHARE_LATER = (21 / 22, "yat / softmax largest score: 20 of 20 seeds above 100x, planned at 21/22")


def planning(name: str) -> tuple[float, float, str]:
    """(mean, sample spread, source) of one comparison: the centre of the measured sequence and the spread that
    gives its half-width at 8 seeds (the sequence's half-width over its ddof-0 spread, statistics'
    half_width_factor)."""
    from attnlab.pipeline.ground.confidence_sequence import tuned_precision
    from attnlab.pipeline.ground.intervals import half_width_factor

    low, high, source = MEASURED[name]
    factor = float(half_width_factor(SEEDS, tuned_precision(BUDGET)))
    spread = (high - low) / 2 / factor * math.sqrt(SEEDS / (SEEDS - 1))
    return (low + high) / 2, spread, f"{source}: mean {(low + high) / 2:+.4g}, spread {spread:.3g}"


DRAWS = 20000


def sign_power(looks, confidences, share: float, draws: int = DRAWS, seed: int = 0) -> float:
    """The probability that the median's exact interval clears the threshold upward at some look when each seed
    lies above it with probability `share` (seeds accrue: every look reads the same draws' first values)."""
    above = np.random.default_rng(seed).random((draws, looks[-1])) < share
    decided = np.zeros(draws, dtype=bool)
    for n, level in zip(looks, confidences):
        k = sign_test.order_rank(n, level)
        below = n - above[:, :n].sum(axis=1)
        decided |= (k > 0) & (below < k)  # the k-th smallest value lies above the threshold
    return float(decided.mean())


def planned(comparison: rounds.Comparison, later: bool) -> tuple:
    """A comparison's planning values, their source last: (share, source) for a median, (mean, spread, source)
    for a mean; `later`, what the settle build of 2026-12-06 measured."""
    if comparison.median:
        return SCORE_SHARE_LATER if later else SCORE_SHARE
    return MEASURED_LATER[comparison.name] if later else planning(comparison.name)


def power(comparison: rounds.Comparison, plan: design.Design, values: tuple) -> float:
    """The design's power at the planning values `planned` gives."""
    if comparison.median:
        return sign_power(plan.looks, plan.confidences, values[0])
    mean, spread, _ = values
    marks = [math.log(t) if comparison.ratio else t for t in comparison.thresholds]
    return group_sequential.power(plan.looks, plan.confidences, mean, spread, marks, draws=DRAWS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", nargs="?", default="config/settle.yaml", type=Path)
    parser.add_argument("--planning", choices=("2026-12-05", LATER), default="2026-12-05",
                        help="whose measurements plan the power: the build the design was sized at (default), or "
                             "the settle build after it")
    args = parser.parse_args(argv)
    cfg = load_config(args.config)
    plan = design.design_of(cfg)
    if plan.kind == design.CONFIDENCE_SEQUENCE:
        print(f"{args.config}: {plan.text()}: this benchmark simulates fixed and group-sequential designs only")
        return 0
    fixed = design.Design(design.FIXED, (plan.looks[-1],))
    print(f"{args.config}: {plan.text()}")
    print(f"planning values: what the settle build of {args.planning} measured")
    print(f"{'comparison':24s} {'power':>7s} {'fixed ' + str(fixed.looks[0]):>9s}  planning values")
    for comparison in rounds.decided_by(cfg):
        if comparison.name not in MEASURED and not comparison.median:
            continue
        values = planned(comparison, args.planning == LATER)
        print(f"{comparison.name:24s} {power(comparison, plan, values):7.1%} {power(comparison, fixed, values):9.1%}  "
              f"{values[-1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
