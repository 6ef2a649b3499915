"""`python -m attnlab.pipeline.tables collect | check | select-lr | extend-sweep`: the commands the rules run."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from attnlab.core.bundle_format import BundleError, format_lr
from attnlab.pipeline.ground.sealed_files import write_sealed
from attnlab.pipeline.tables.checks import check_bundles, read_expected
from attnlab.pipeline.tables.collect import collect
from attnlab.pipeline.tables.select_lr import best_lr, sweep_step
from attnlab.pipeline.tables.sweep import CHOSEN_ON


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Collect bundles into tables, or pick a sweep's best LR.")
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--grid", required=True, help="JSON grid (attnlab.pipeline.ground.grid.grid)")
    c.add_argument("--out", required=True, type=Path)
    c.add_argument("--expect", type=Path, default=None,
                   help="JSON file of the config slice and code fingerprints each cell must have (the Snakefile's)")
    c.add_argument("bundles", nargs="+", type=Path)
    k = sub.add_parser("check", help="only check that every bundle is whole and what --expect says it must be")
    k.add_argument("--expect", required=True, type=Path)
    k.add_argument("bundles", nargs="+", type=Path)
    s = sub.add_parser("select-lr")
    s.add_argument("--out", required=True, type=Path)
    s.add_argument("bundles", nargs="+", type=Path)
    e = sub.add_parser("extend-sweep", help="whether a variant's sweep needs one more LR beyond its grid")
    e.add_argument("--grid", required=True, help='JSON {"lrs": the variant\'s grid as given, "limit": sweep.extend}')
    e.add_argument("--step", required=True, type=int)
    e.add_argument("--out", required=True, type=Path)
    e.add_argument("bundles", nargs="+", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "collect":
            expected = read_expected(args.expect) if args.expect is not None else None
            tables = collect(args.bundles, json.loads(args.grid), args.out, expected)
            print(tables["contest"].to_string(index=False))
        elif args.command == "check":
            bundles = check_bundles(args.bundles, read_expected(args.expect))
            print(f"{len(bundles)} bundle(s) were trained with the code and config this grid expects")
        elif args.command == "extend-sweep":
            given = json.loads(args.grid)
            step = sweep_step(args.bundles, given["lrs"], int(given["limit"]), args.step)
            write_sealed(args.out, step)
            following = "no further LR" if step["next"] is None else f"one more LR, {format_lr(step['next'])}"
            print(f"{step['variant']}: best {format_lr(step['best'])} of {len(step['lrs'])} LRs ({step['where']}): "
                  f"{following}")
        else:
            choice = best_lr(args.bundles)
            write_sealed(args.out, choice)  # sealed: an edited choice stops the planner (ground.sealed_files)
            print(f"{choice['variant']}: best sweep LR {format_lr(choice['lr'])} (select half "
                  f"{choice[CHOSEN_ON]:.4f}, all windows {choice['best_val_loss']:.4f})")
    except BundleError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0
