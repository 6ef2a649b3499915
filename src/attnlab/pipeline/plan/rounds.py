"""Seeds added until decided: which seeds each round of the contest trains, and what the rule compares.

A config with `contest.rounds: {max_seeds, round_size}` trains contest.seeds as round 0. After each round
the seed_round checkpoint (attnlab.pipeline.tables.rounds) reads the comparisons below over the seeds so far,
through an anytime-valid confidence sequence, and asks for the next round while one of them is undecided;
the plan then trains the next `round_size` seeds, the next integers after every seed the config's studies use
(the contest, the sweep and its own), up to `max_seeds` per variant. Pure data and arithmetic on the config,
so the Snakefile can read it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from attnlab.core.errors import ConfigError
from attnlab.pipeline.contract import BASELINE, KERNEL_GAP_BAND, ORDERS_OF_MAGNITUDE

STEP = "rounds"  # the step that writes the seed_rounds table (contract.written_by)
FILE_VERSION = 1  # of a round's decision file (results/rounds/round<r>.json)
# What a comparison compares, per contest cell (attnlab.pipeline.tables.rounds reads each from the bundle)
LOSS, LARGEST_SCORE, ENTROPY = "best validation loss", "largest score", "mean normalised entropy"


@dataclass(frozen=True)
class Comparison:
    """first − second (or first / second when `ratio`) of one quantity of the contest cells (the best validation
    loss, unless said), paired by seed; decided when its interval holds none of `thresholds` (on the reported
    scale)."""

    label: str
    first: str
    second: str
    ratio: bool
    thresholds: tuple[float, ...]
    claim: str
    quantity: str = LOSS


def comparisons(variants) -> list[Comparison]:
    """The ledger's thresholded comparisons over the contest seeds among these variants, with the ledger's own
    thresholds: the losses, and the kernel post's score scale and diffuseness."""
    have = set(variants)
    band = (1 + KERNEL_GAP_BAND[0], 1 + KERNEL_GAP_BAND[1])
    found = [Comparison(f"{kernel} / {BASELINE}", kernel, BASELINE, True, band,
                        f"quality: softmax ahead of {kernel} by about the table's 1.1%")
             for kernel in ("yat", "yat_b") if {kernel, BASELINE} <= have]
    if {"a3", BASELINE} <= have:
        found.append(Comparison(f"{BASELINE} − a3", BASELINE, "a3", False, (0.0,), "A3's gain over softmax"))
    if {"a3", "softmax_t"} <= have:
        found.append(Comparison("softmax_t − a3", "softmax_t", "a3", False, (0.0,),
                                "A3's gain beyond a per-head temperature"))
    if {"yat_b_exp", "yat_b"} <= have:
        found.append(Comparison("yat_b_exp − yat_b", "yat_b_exp", "yat_b", False, (0.0,),
                                "a softmax over the kernel trains better than its l1 normalisation"))
    if {"yat", BASELINE} <= have:
        found.append(Comparison(f"yat / {BASELINE} largest score", "yat", BASELINE, True, (ORDERS_OF_MAGNITUDE,),
                                "kernel scores are orders of magnitude larger than softmax logits", LARGEST_SCORE))
    if {"yat_b", BASELINE} <= have:
        found.append(Comparison(f"yat_b − {BASELINE} entropy", "yat_b", BASELINE, False, (0.0,),
                                "the kernel's attention rows are more diffuse than softmax's", ENTROPY))
    return found


def round_seeds(cfg: dict) -> list[tuple[int, ...]]:
    """The seeds each round trains, round 0 being contest.seeds (one round without contest.rounds)."""
    first = tuple(int(s) for s in cfg["contest"]["seeds"])
    rounds = cfg["contest"].get(STEP)
    if rounds is None:
        return [first]
    size, budget = int(rounds.get("round_size", 1)), int(rounds["max_seeds"])
    studied = tuple(s for entry in cfg.get("studies") or () for s in entry.get("seeds") or ())
    following = max(first + tuple(cfg["sweep"]["seeds"]) + studied) + 1  # a new seed is no other study's cell
    out, total = [first], len(first)
    while total < budget:
        k = min(size, budget - total)
        out.append(tuple(range(following, following + k)))
        following, total = following + k, total + k
    return out


def seeds_through(cfg: dict, last_round: int) -> list[int]:
    """Every seed of rounds 0..last_round, in the order trained."""
    return [seed for seeds in round_seeds(cfg)[:last_round + 1] for seed in seeds]


def with_contest_seeds(cfg: dict, seeds) -> dict:
    """The config with these contest seeds; the config's own studies keep the seeds they had (those that take
    the contest's get the first round's), so adding a round adds contest cells alone."""
    first = list(cfg["contest"]["seeds"])
    return {**cfg, "contest": {**cfg["contest"], "seeds": list(seeds)},
            "studies": [entry if entry.get("seeds") else {**entry, "seeds": first}
                        for entry in cfg.get("studies") or ()]}


def check_rounds(cfg: dict, source: str = "config") -> None:
    """What the schema cannot say: a budget with room for a round, and something for the rule to read."""
    rounds = cfg["contest"].get(STEP)
    if rounds is None:
        return
    if rounds["max_seeds"] <= len(cfg["contest"]["seeds"]):
        raise ConfigError(f"{source}: contest.rounds.max_seeds: {rounds['max_seeds']} leaves no room for a round "
                          f"after the {len(cfg['contest']['seeds'])} seeds of contest.seeds; raise it, or drop "
                          "contest.rounds to train those seeds alone")
    if not comparisons(cfg["variants"]):
        raise ConfigError(f"{source}: contest.rounds: these variants have no comparison the rule reads (softmax "
                          "with yat or yat_b, a3 with softmax or softmax_t, yat_b_exp with yat_b); drop "
                          "contest.rounds or add the variants")


def read_decision(path: Path) -> dict:
    """A round's decision as the seed_round checkpoint wrote it; one that does not read as one (cut short,
    edited into another shape, of another version) stops the build with one line saying what to do."""
    try:
        decision = json.loads(Path(path).read_text())
    except (OSError, ValueError) as err:
        raise ConfigError(f"{path}: not a round's decision ({err}); remove it and build again") from None
    fields = {"seeds": list, "next_seeds": list}
    if (not isinstance(decision, dict) or decision.get("version") != FILE_VERSION
            or not all(isinstance(decision.get(k), kind) for k, kind in fields.items())):
        raise ConfigError(f"{path}: not a round's decision of this version; remove it and build again")
    return decision


def read_choice(path: Path) -> float:
    """A variant's contest LR as its select_lr checkpoint wrote it, checked like a round's decision."""
    try:
        lr = json.loads(Path(path).read_text())["lr"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ConfigError(f"{path}: not a contest LR chosen by select_lr ({type(err).__name__}: {err}); remove it "
                          "and build again") from None
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not lr > 0:
        raise ConfigError(f"{path}: its LR {lr!r} is no positive number; remove it and build again")
    return float(lr)
