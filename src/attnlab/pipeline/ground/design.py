"""The contest's statistical design, declared in the config before any seed is trained, and the interval it reads.

Three designs, each with its error rate stated in advance (contest.rounds; docs/statistics.md):

- fixed: contest.seeds, read once, with 95% t-intervals (no contest.rounds);
- group sequential: K looks planned as seed counts (contest.rounds.looks), with Lan–DeMets alpha spending
  (contest.rounds.spending, contest.rounds.alpha). Look k reads a repeated t-interval at that look's nominal
  confidence (attnlab.pipeline.ground.group_sequential), and the intervals of every look cover together with
  probability 1 − α, so a comparison may stop at whichever look decides it;
- confidence sequence: rounds of round_size seeds up to max_seeds with no looks fixed in advance, read through
  Lai's anytime-valid confidence sequence (attnlab.pipeline.ground.confidence_sequence): valid at any number of seeds,
  and wider for it.

A design is config arithmetic, which the Snakefile reads without the numeric libraries (they load only when an
interval is read); `Design.reading()` is the context (attnlab.pipeline.ground.intervals) every interval of a
build is computed in, so the rule that adds seeds, the tables and the ledger read one interval.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from functools import cache

FIXED, GROUP_SEQUENTIAL, CONFIDENCE_SEQUENCE = "fixed", "group sequential", "confidence sequence"
SPENDING_NAMES = {"obrien_fleming": "O'Brien–Fleming-type", "pocock": "Pocock-type"}
ALPHA = 0.05  # the error rate of every interval the build prints (1 − intervals.CONFIDENCE)


@dataclass(frozen=True)
class Design:
    """`looks`: the seeds per variant at each look (a fixed design's one look is contest.seeds; a confidence
    sequence's are its rounds' ends, its budget last)."""

    kind: str
    looks: tuple[int, ...]
    alpha: float = ALPHA
    spending: str = ""

    @property
    def confidences(self) -> tuple[float, ...]:
        """Each look's nominal confidence (group sequential; the fixed design's one look is 1 − α)."""
        if self.kind == GROUP_SEQUENTIAL:
            return _nominal(self.looks, self.alpha, self.spending)
        return (1 - self.alpha,) * len(self.looks)

    @property
    def precision(self) -> float:
        """The confidence sequence's mixture precision, tuned to the budget before any seed is seen."""
        return _precision(self.looks[-1], self.alpha)

    def reading(self):
        """The context every interval over the contest's seeds is computed in: each over n seeds at the level
        of the look n seeds reached."""
        from attnlab.pipeline.ground import intervals  # numpy and scipy load only here: the Snakefile reads designs

        if self.kind == CONFIDENCE_SEQUENCE:  # a median's exact interval: α shared over the planned rounds
            return intervals.sequential(self.precision, median=1 - self.alpha / len(self.looks))
        if self.kind == GROUP_SEQUENTIAL:
            return intervals.repeated(self.looks, self.confidences,
                                      at_alpha=lambda alpha: _nominal(self.looks, alpha, self.spending))
        return contextlib.nullcontext()

    def text(self) -> str:
        """The design in words, with its error rate: what the ledger and the methods name."""
        looks = ", ".join(map(str, self.looks))
        if self.kind == GROUP_SEQUENTIAL:
            levels = ", ".join(f"{c:.2%}" for c in self.confidences)
            return (f"group sequential, {len(self.looks)} looks at {looks} seeds per variant, "
                    f"{SPENDING_NAMES[self.spending]} alpha spending (Lan–DeMets), two-sided α = {self.alpha:g} "
                    f"over all looks (repeated t-intervals at nominal {levels})")
        if self.kind == CONFIDENCE_SEQUENCE:
            from attnlab.pipeline.ground.confidence_sequence import METHOD

            return (f"seeds added until decided, up to {self.looks[-1]} per variant, read through "
                    f"{METHOD}, α = {self.alpha:g} at any number of seeds")
        return f"fixed, {self.looks[0]} seeds per variant, {1 - self.alpha:.0%} t-intervals"

    def to_json(self) -> dict:
        return {"kind": self.kind, "looks": list(self.looks), "alpha": self.alpha, "spending": self.spending}

    @classmethod
    def from_json(cls, data: dict) -> "Design":
        return cls(str(data["kind"]), tuple(int(n) for n in data["looks"]), float(data["alpha"]),
                   str(data.get("spending") or ""))


@cache
def _nominal(looks: tuple[int, ...], alpha: float, spending: str) -> tuple[float, ...]:
    from attnlab.pipeline.ground import group_sequential

    return group_sequential.nominal_confidences(group_sequential.fractions_of(looks), alpha, spending)


@cache
def _precision(budget: int, alpha: float) -> float:
    from attnlab.pipeline.ground import confidence_sequence

    return confidence_sequence.tuned_precision(budget, alpha)


def design_of(cfg: dict) -> Design:
    """The design a config declares (checked by attnlab.pipeline.ground.rounds.check_rounds)."""
    seeds = len(cfg["contest"]["seeds"])
    rounds = cfg["contest"].get("rounds")
    if rounds is None:
        return Design(FIXED, (seeds,))
    alpha = float(rounds.get("alpha", ALPHA))
    if rounds.get("looks"):
        return Design(GROUP_SEQUENTIAL, tuple(int(n) for n in rounds["looks"]), alpha,
                      str(rounds.get("spending") or "obrien_fleming"))
    size, budget = int(rounds.get("round_size", 1)), int(rounds["max_seeds"])
    return Design(CONFIDENCE_SEQUENCE, tuple(range(seeds, budget, size)) + (budget,), alpha)
