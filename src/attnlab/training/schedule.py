"""Where a cell's training loop stops: evaluations, attention snapshots and checkpoints.

Pure arithmetic on step counts, so the seed's schedule is testable without a model.
"""

from __future__ import annotations

import math
from fractions import Fraction

def snapshot_steps(steps: int, fractions) -> list[int]:
    """The seed's snapshot schedule: after 0 updates, floor(f * steps) + 1 updates, and all of them."""
    chosen = {0}
    for f in fractions:
        exact = Fraction(str(f))
        chosen.add(0 if exact == 0 else steps if exact == 1 else min(steps, math.floor(exact * steps) + 1))
    return sorted(chosen)


def schedule(steps: int, eval_every: int, checkpoint_every: int, fractions) -> dict[str, list[int]]:
    """The steps at which the loop stops to evaluate, snapshot attention or checkpoint."""
    return {
        "eval": sorted({0, steps, *range(eval_every, steps + 1, eval_every)}),
        "snapshot": snapshot_steps(steps, fractions),
        "checkpoint": list(range(checkpoint_every, steps, checkpoint_every)),
    }
