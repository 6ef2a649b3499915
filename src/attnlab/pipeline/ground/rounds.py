"""Seeds added under a declared design: which seeds each round of the contest trains, and what the rule compares.

A config with `contest.rounds` trains contest.seeds as round 0, the design's first look
(attnlab.pipeline.ground.design). After each round the seed_round checkpoint (attnlab.pipeline.tables.rounds) reads
the comparisons below over the seeds so far, through the design's interval, and asks for the next round while
one of them is undecided; the plan then trains the seeds of the next look (`looks`) or the next `round_size`
seeds (`max_seeds`), the next integers after every seed the config's studies use (the contest, the sweep and
its own). Pure data and arithmetic on the config, so the Snakefile can read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from attnlab.core.errors import ConfigError
from attnlab.pipeline.ground import design, sealed_files
from attnlab.pipeline.ground.contract import BASELINE, ORDERS_OF_MAGNITUDE

STEP = "rounds"  # the step that writes the seed_rounds table (contract.written_by)
FILE_VERSION = 2  # of a round's decision file (results/rounds/round<r>.json)
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
    name: str = ""  # the config's name for it (contest.rounds.compare)
    median: bool = False  # heavy-tailed: read by the median with an exact sign-test interval, not the mean


def catalog() -> list[Comparison]:
    """Every comparison the rule can read, with the ledger's own thresholds: the losses, and the kernel post's
    score scale and diffuseness."""
    from attnlab.pipeline.ground.published import quality_band  # the post's interval: scipy, read at decision time

    found = [Comparison(f"{kernel} / {BASELINE}", kernel, BASELINE, True,
                        tuple(1 + edge for edge in quality_band(kernel)),
                        f"quality: softmax ahead of {kernel}, by less than the post's own interval allows",
                        name=f"{kernel}_gap") for kernel in ("yat", "yat_b")]
    return found + [
        Comparison(f"{BASELINE} − a3", BASELINE, "a3", False, (0.0,), "A3's gain over softmax", name="a3_gain"),
        Comparison("softmax_t − a3", "softmax_t", "a3", False, (0.0,), "A3's gain beyond a per-head temperature",
                   name="a3_beyond_temperature"),
        Comparison("yat_b_exp − yat_b", "yat_b_exp", "yat_b", False, (0.0,),
                   "a softmax over the kernel trains better than its l1 normalisation", name="exp_normaliser"),
        Comparison(f"yat / {BASELINE} largest score", "yat", BASELINE, True, (ORDERS_OF_MAGNITUDE,),
                   "kernel scores are orders of magnitude larger than softmax logits", LARGEST_SCORE,
                   name="score_ratio", median=True),
        Comparison(f"yat_b − {BASELINE} entropy", "yat_b", BASELINE, False, (0.0,),
                   "the kernel's attention rows are more diffuse than softmax's", ENTROPY, name="entropy_gap")]


# What each comparison compares (first, second), by its config name: the planner checks a config against it without
# the thresholds (a test holds it to catalog()).
PAIRS = {"yat_gap": ("yat", BASELINE), "yat_b_gap": ("yat_b", BASELINE), "a3_gain": (BASELINE, "a3"),
         "a3_beyond_temperature": ("softmax_t", "a3"), "exp_normaliser": ("yat_b_exp", "yat_b"),
         "score_ratio": ("yat", BASELINE), "entropy_gap": ("yat_b", BASELINE)}
NAMES = tuple(PAIRS)


def comparisons(variants, names=None) -> list[Comparison]:
    """The comparisons among these variants (those named, when `names` is given: contest.rounds.compare)."""
    have = set(variants)
    return [c for c in catalog() if {c.first, c.second} <= have and (names is None or c.name in names)]


def decided_by(cfg: dict) -> list[Comparison]:
    """The comparisons whose open state asks for another look (contest.rounds.compare, else all)."""
    return comparisons(cfg["variants"], (cfg["contest"].get(STEP) or {}).get("compare"))


def round_seeds(cfg: dict) -> list[tuple[int, ...]]:
    """The seeds each round trains, round 0 being contest.seeds (one round without contest.rounds): the next
    integers after the contest's and the sweep's seeds, skipping any seed a study of the config trains (a new
    seed is no other study's cell), so adding a study moves no round's seeds unless it takes one of them."""
    first = tuple(int(s) for s in cfg["contest"]["seeds"])
    if cfg["contest"].get(STEP) is None:
        return [first]
    looks = design.design_of(cfg).looks
    own = set(first) | {int(s) for s in cfg["sweep"].get("seeds") or [cfg["sweep"].get("seed", 0)]}
    taken = own | {int(s) for entry in cfg.get("studies") or () for s in entry.get("seeds") or ()}
    following = max(own) + 1
    out = [first]
    for before, after in zip(looks, looks[1:]):
        seeds = []
        while len(seeds) < after - before:
            if following not in taken:
                seeds.append(following)
            following += 1
        out.append(tuple(seeds))
    return out


def round_variants(cfg: dict, decisions: list[dict]) -> list[tuple[str, ...]]:
    """The variants each round trains: all of them in round 0; in a later round, those the decision before it
    named (the variants of the comparisons still open: a round trains nothing the open comparisons do not read)."""
    return [tuple(cfg["variants"])] + [tuple(d["next_variants"]) for d in decisions]


def left_out(cfg: dict, decisions: list[dict]) -> frozenset[tuple[str, int]]:
    """The (variant, seed) contest cells the rounds decided so far do not train: a later round's seeds for the
    variants no open comparison read."""
    pairs = zip(round_seeds(cfg), round_variants(cfg, decisions))
    return frozenset((v, s) for seeds, trained in pairs for s in seeds for v in cfg["variants"] if v not in trained)


def trained_keys(keys, untrained: frozenset[tuple[str, int]]) -> list:
    """The cell keys a build trains, those of `left_out` dropped (a later round's seeds are no sweep's or study's,
    so only contest cells can be among them)."""
    return [key for key in keys if (key.variant, key.seed) not in untrained]


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
    """What the schema cannot say, refused before any compute: looks that start at contest.seeds and rise, a
    budget with room for a round, the error rate the tables read, and comparisons the variants allow."""
    rounds = cfg["contest"].get(STEP)
    if rounds is None:
        return
    seeds, where = len(cfg["contest"]["seeds"]), f"{source}: contest.rounds"
    looks = rounds.get("looks")
    if looks:
        if looks[0] != seeds:
            raise ConfigError(f"{where}.looks: the first look is contest.seeds, {seeds} seeds, not {looks[0]}; "
                              f"start looks at {seeds} or list {looks[0]} seeds in contest.seeds")
        if any(b <= a for a, b in zip(looks, looks[1:])):
            raise ConfigError(f"{where}.looks: {looks} does not rise; each look holds more seeds than the last")
        if rounds.get("max_seeds") not in (None, looks[-1]):
            raise ConfigError(f"{where}: max_seeds {rounds['max_seeds']} and looks {looks} disagree; with looks "
                              "the last look is the budget: drop max_seeds")
    elif rounds.get("max_seeds") is None:
        raise ConfigError(f"{where}: no design; give looks (seeds per variant at each look, e.g. [{seeds}, "
                          f"{2 * seeds}]) or max_seeds (an open-ended budget), or drop contest.rounds")
    elif rounds["max_seeds"] <= seeds:
        raise ConfigError(f"{where}.max_seeds: {rounds['max_seeds']} leaves no room for a round "
                          f"after the {seeds} seeds of contest.seeds; raise it, or drop "
                          "contest.rounds to train those seeds alone")
    if float(rounds.get("alpha", design.ALPHA)) != design.ALPHA:
        raise ConfigError(f"{where}.alpha: {rounds['alpha']}: the tables and the ledger read every interval at "
                          f"{1 - design.ALPHA:.0%}; set it to {design.ALPHA:g} or drop the key")
    named = rounds.get("compare")
    if named:
        unknown = [n for n in named if n not in NAMES]
        if unknown:
            raise ConfigError(f"{where}.compare: {', '.join(map(repr, unknown))} is no comparison the rule "
                              f"reads; pick from {', '.join(NAMES)}")
        for name in named:
            first, second = PAIRS[name]
            missing = sorted({first, second} - set(cfg["variants"]))
            if missing:
                raise ConfigError(f"{where}.compare: {name} compares {first} with {second}, and variants has no "
                                  f"{', '.join(missing)}; add it to variants or drop the comparison")
    if not any(set(pair) <= set(cfg["variants"]) for name, pair in PAIRS.items() if not named or name in named):
        raise ConfigError(f"{where}: these variants have no comparison the rule reads (softmax "
                          "with yat or yat_b, a3 with softmax or softmax_t, yat_b_exp with yat_b); drop "
                          "contest.rounds or add the variants")


def read_decision(path: Path) -> dict:
    """A round's decision as the seed_round checkpoint wrote it, sealed like a bundle (its content checksum,
    bundle_format.sealed); one that does not read as one (cut short, edited by hand, of another version) stops
    the build with one line saying what to do."""
    decision = sealed_files.read_sealed(path, "a round's decision", "seed_round")
    fields = {"seeds": list, "next_seeds": list, "next_variants": list}
    if decision.get("version") != FILE_VERSION or not all(isinstance(decision.get(k), kind)
                                                         for k, kind in fields.items()):
        raise sealed_files.refusal(path, "not a round's decision of this version")
    return decision
