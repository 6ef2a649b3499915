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


def plateau_gain(evaluations, patience: int) -> float | None:
    """How much the best validation loss improved over the last `patience` steps, relative to the best before
    them: (best up to last − patience − best up to last) / best up to last − patience. None before a whole window.

    `evaluations` are (step, validation loss) pairs in step order. The window compares running minima, so one
    evaluation that happens to read low early can only shorten the window's gain by its own error: if every
    evaluation is within ±δ of the true loss, the gain read is within 2δ / loss of the true gain.
    """
    if not evaluations:
        return None
    last = evaluations[-1][0]
    before = [val for step, val in evaluations if step <= last - patience and math.isfinite(val)]
    every = [val for _, val in evaluations if math.isfinite(val)]
    if last < patience or not before:
        return None
    earlier = min(before)
    return (earlier - min(every)) / earlier


def plateaued(evaluations, patience: int, tolerance: float) -> bool:
    """The plateau rule: a whole patience window has passed and it lowered the best loss by at most tolerance."""
    gain = plateau_gain(evaluations, patience)
    return gain is not None and gain <= tolerance
