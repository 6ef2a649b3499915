"""Seeds added under a declared design: after each look, is another needed? And the seed_rounds table.

`python -m attnlab.pipeline.tables.rounds decide` is the seed_round checkpoint's command
(workflow/rules/rounds.smk): it reads the contest's checked bundles of rounds 0..r and computes, for every
comparison attnlab.pipeline.ground.rounds lists (the ledger's thresholded comparisons over the contest seeds: of
best validation loss, the kernels' gap to softmax, A³'s gain over softmax and over a per-head temperature, a
softmax over the kernel against its l1 normaliser; of the telemetry, the kernel's largest score against
softmax's and its rows' entropy against softmax's), paired by contest seed, the interval of the config's design
at this look (attnlab.pipeline.ground.design: a group-sequential design's repeated t-interval, or the anytime-valid
confidence sequence of an open-ended budget); the heavy-tailed score ratio by its median, with the exact
sign-test interval at the same confidence (attnlab.pipeline.ground.sign_test). A comparison is decided once its
interval holds none of its thresholds; while one the design decides (contest.rounds.compare) is not, and the
budget allows, the decision names the next look's seeds.

A comparison the budget cannot reach does not ask for seeds: one that, at its observed mean and spread, would need
more than `reach` times `max_seeds` to clear its thresholds (or sits on one) is *out of reach* and stays
undecided, said so with the seeds it would need, while the others decide whether a round is trained. The
default factor of 2 leaves room for the spread read off a few seeds (the seeds needed grow with its square).
Giving up early costs no coverage: the confidence sequence holds at any number of seeds, whatever rule chose it.

The tables and the ledger compute every interval of such a build through the same design
(attnlab.pipeline.ground.design.Design.reading), which stays valid at the look the data stopped at.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from attnlab.core.bundle_format import BundleError, sealed
from attnlab.core.errors import ConfigError
from attnlab.core.io import atomic_write_json, atomic_write_text
from attnlab.pipeline.ground import contract, design, intervals, sign_test, statistics
from attnlab.pipeline.ground.rounds import (ENTROPY, FILE_VERSION, LARGEST_SCORE, LOSS, Comparison, comparisons,
                                            decided_by, read_decision, round_seeds, seeds_through)
from attnlab.pipeline.ground.bundle_reader import read_bundle
from attnlab.pipeline.tables.checks import check_bundles, read_expected

REACH = 2  # contest.rounds.reach's default: needing more than this many times the budget's seeds is out of reach
DECIDED, UNDECIDED, OUT_OF_REACH = "decided", "undecided", "out of reach"


def decide(losses: dict[str, dict[int, float]], cfg: dict, round_index: int,
           telemetry: dict[str, dict[str, dict[int, float]]] | None = None) -> dict:
    """After round `round_index`: each comparison's interval under the config's design and its state, and the
    next round's seeds (none once every comparison the design decides is decided, or the budget is spent) and
    the variants it trains (those of the comparisons still open).
    `losses`: variant -> seed -> best validation loss of the contest cells that did not diverge; `telemetry`:
    the same for each other quantity a comparison reads (plan.rounds.LARGEST_SCORE, ENTROPY). A comparison
    without values on either side is not read."""
    values = {LOSS: losses, **(telemetry or {})}
    plan = design.design_of(cfg)
    budget = plan.looks[-1]
    reach = cfg["contest"]["rounds"].get("reach", REACH)
    limit = math.inf if reach is None else reach * budget
    seeds = seeds_through(cfg, round_index)
    deciding = {c.name for c in decided_by(cfg)}
    rows = []
    with plan.reading():
        confidence = intervals.nominal_confidence(len(seeds)) if plan.kind == design.GROUP_SEQUENTIAL else math.nan
        for comparison in comparisons(cfg["variants"]):
            of = values.get(comparison.quantity, {})
            if not of.get(comparison.first) or not of.get(comparison.second):
                continue
            row = _read(comparison, of[comparison.first], of[comparison.second], limit)
            rows.append(dict(asdict(comparison), thresholds=list(comparison.thresholds), **row,
                             decides=comparison.name in deciding))
    later = round_seeds(cfg)[round_index + 1:]
    open_rows = [row for row in rows if row["state"] == UNDECIDED and row["decides"]]
    go_on = bool(open_rows) and bool(later)
    needed = {v for row in open_rows for v in (row["first"], row["second"])}
    states = {row["state"] for row in rows if row["decides"]}
    outcome = ("another round" if go_on else DECIDED if states <= {DECIDED}
               else "budget spent" if UNDECIDED in states or not later else OUT_OF_REACH)
    return {"version": FILE_VERSION, "round": round_index, "seeds": seeds, "max_seeds": budget,
            "precision": plan.precision if plan.kind == design.CONFIDENCE_SEQUENCE else None,
            "confidence": _number(confidence), "design": plan.to_json(), "method": plan.text(),
            "comparisons": rows, "next_seeds": list(later[0]) if go_on else [],
            "next_variants": [v for v in cfg["variants"] if v in needed] if go_on else [], "outcome": outcome}


def _read(comparison: Comparison, first: dict, second: dict, limit: float) -> dict:
    """One comparison's estimate, interval and state at this look (inside the design's reading): by the mean, or
    for a heavy-tailed quantity by the median; either is decided once its interval holds no threshold."""
    if comparison.median:
        found = sign_test.paired_median(first, second, ratio=comparison.ratio,
                                        confidence=intervals.median_confidence(len(set(first) & set(second))))
        n, mean, low, high, level = found.n, found.median, found.low, found.high, found.confidence
        spread_known = True  # the sign test reads no spread: only the count of seeds on each side
    else:
        estimate = statistics.paired(first, second, ratio=comparison.ratio)
        n, mean, low, high = estimate.n, estimate.mean, estimate.low, estimate.high
        level = intervals.nominal_confidence(n) if intervals.interval_kind() == "RCI" else math.nan
        spread_known = math.isfinite(estimate.spread)
    decided = n >= 2 and math.isfinite(low) and math.isfinite(high) and not any(
        low <= t <= high for t in comparison.thresholds)
    needed = (None if decided
              else _median_seeds(found, comparison.thresholds) if comparison.median
              else statistics.seeds_to_resolve(estimate, *comparison.thresholds))
    state = DECIDED if decided else _open_state(n, spread_known, needed, limit)
    return dict(n=n, mean=_number(mean), low=_number(low), high=_number(high), state=state, level=_number(level),
                seeds_needed=None if needed is None or math.isinf(needed) else int(needed))


def _median_seeds(found: sign_test.MedianEstimate, thresholds) -> float | None:
    """The seeds a median's exact interval needs to hold none of the thresholds: the most any one edge needs (at
    the design's level, sign_test.verdict reading it inside the design), None where one is out of any count."""
    needed = [sign_test.verdict(found, t).seeds_to_resolve for t in thresholds
              if not found.has_interval or found.low <= t <= found.high]
    if any(n is None for n in needed):
        return None
    return max(needed, default=None)


def _open_state(n: int, spread_known: bool, needed: float | None, limit: float) -> str:
    """An undecided comparison: worth another round, or out of the budget's reach at its observed spread (it
    sits on a threshold, or needs more than `limit` seeds). Too few seeds to read a spread from is never out of
    reach; an infinite limit never is."""
    if n < 2 or not spread_known or math.isinf(limit):
        return UNDECIDED
    return UNDECIDED if needed is not None and needed <= limit else OUT_OF_REACH


def _number(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def contest_values(bundles: list[Path], cfg: dict, round_index: int) -> dict[str, dict[str, dict[int, float]]]:
    """quantity -> variant -> seed -> value (best validation loss; largest score over layers; mean normalised
    entropy: what the ledger's score_scale and entropy tables hold), from the checked bundles of the rounds so
    far (diverged cells enter no comparison, as in the contest and telemetry tables)."""
    wanted = set(seeds_through(cfg, round_index))
    values: dict[str, dict[str, dict[int, float]]] = {LOSS: {}, LARGEST_SCORE: {}, ENTROPY: {}}
    for folder in bundles:
        summary = read_bundle(Path(folder))
        if summary["seed"] not in wanted:
            raise ConfigError(f"{folder}: seed {summary['seed']} is not a seed of rounds 0–{round_index} "
                              f"({sorted(wanted)}); the rule reads the contest's own cells only")
        if summary["diverged"] or not math.isfinite(summary["best_val_loss"]):
            continue
        seed, variant, telemetry = int(summary["seed"]), summary["variant"], summary.get("telemetry", {})
        values[LOSS].setdefault(variant, {})[seed] = float(summary["best_val_loss"])
        if telemetry.get("max_score_per_layer"):
            values[LARGEST_SCORE].setdefault(variant, {})[seed] = float(max(telemetry["max_score_per_layer"]))
        if "mean" in telemetry.get("entropy", {}):
            values[ENTROPY].setdefault(variant, {})[seed] = float(telemetry["entropy"]["mean"])
    return values


def table(decisions: list[dict]) -> pd.DataFrame:
    """The seed_rounds table (contract.TABLES["seed_rounds"]): one row per round and comparison."""
    rows = []
    for decision in sorted(decisions, key=lambda d: d["round"]):
        for row in decision["comparisons"]:
            rows.append({"round": decision["round"], "n_seeds": len(decision["seeds"]),
                         "seeds": " ".join(map(str, decision["seeds"])), "comparison": row["label"],
                         "first": row["first"], "second": row["second"], "ratio": row["ratio"],
                         "thresholds": " ".join(f"{t:g}" for t in row["thresholds"]), "n_paired": row["n"],
                         "mean": row["mean"], "low": row["low"], "high": row["high"], "state": row["state"],
                         "seeds_needed": row["seeds_needed"], "outcome": decision["outcome"],
                         "next_seeds": " ".join(map(str, decision["next_seeds"])),
                         "next_variants": " ".join(decision["next_variants"]),
                         "max_seeds": decision["max_seeds"], "precision": decision["precision"],
                         "confidence": row["level"], "decides": row["decides"],
                         "design": json.dumps(decision["design"], sort_keys=True),
                         "method": decision["method"], "quantity": row.get("quantity", LOSS),
                         "reading": sign_test.METHOD if row.get("median") else "mean"})
    return pd.DataFrame(rows, columns=contract.columns("seed_rounds")).astype({"seeds_needed": "Int64"})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Seeds added until decided: one round's decision, or the table.")
    commands = parser.add_subparsers(dest="command", required=True)
    decide_cmd = commands.add_parser("decide", help="decide whether the contest needs another round of seeds")
    decide_cmd.add_argument("--config-json", required=True, help="the build's variants, contest and sweep")
    decide_cmd.add_argument("--round", type=int, required=True)
    decide_cmd.add_argument("--out", type=Path, required=True)
    decide_cmd.add_argument("--expect", type=Path, default=None,
                            help="the grid's expectation: a bundle of another config or code stops the rule, as "
                                 "it stops collection, before any decision is written")
    decide_cmd.add_argument("bundles", nargs="*", type=Path, help="the contest's bundles of this round and earlier")
    table_cmd = commands.add_parser("table", help="write the seed_rounds table from every round's decision")
    table_cmd.add_argument("--out", type=Path, required=True, help="the table's CSV file")
    table_cmd.add_argument("decisions", nargs="+", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "table":
            rows = table([read_decision(path) for path in args.decisions])
            atomic_write_text(args.out, rows.to_csv(index=False))
            print(rows[["round", "comparison", "n_paired", "low", "high", "state"]].to_string(index=False))
            return 0
        cfg = json.loads(args.config_json)
        if args.expect is not None:
            check_bundles(args.bundles, read_expected(args.expect))
        values = contest_values(args.bundles, cfg, args.round)
        decision = decide(values.pop(LOSS), cfg, args.round, values)
    except (ConfigError, BundleError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    atomic_write_json(args.out, sealed(decision))  # sealed: a hand edit stops the planner (plan.rounds)
    for row in decision["comparisons"]:
        print(f"round {args.round}: {row['label']} over {row['n']} seeds: [{row['low']}, {row['high']}] "
              f"{row['state']}" + (f" (about {row['seeds_needed']} seeds)" if row["seeds_needed"] else ""))
    print(f"round {args.round}: {decision['outcome']}"
          + (f", seeds {decision['next_seeds']}" if decision["next_seeds"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
