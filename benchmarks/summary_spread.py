"""`python benchmarks/summary_spread.py [workspace] [--last 4]`: does a cell's summary other than its best
validation loss narrow the paired spread between variants?

Each contest cell's best validation loss is the minimum over its evaluations, a selection that adds noise of its
own. For every variant against softmax, paired by contest seed, this prints the mean and the standard deviation
of the per-seed log-ratio of three summaries read from the cells' curves (results/runs/.../curve.csv): the best
validation loss (the posts' measure and the build's), the mean of the last K evaluations (where a plateau-stopped
cell sits), and the last evaluation. A summary whose spread is smaller decides a comparison with fewer seeds (the
seeds needed grow with the spread's square). Reads a built workspace, or one still training (each variant's
chosen LR and its finished cells); trains nothing.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.ground.contract import BASELINE, seeds_of

SUMMARIES = ("best", "last_k_mean", "last")


def summaries(curve: pd.DataFrame, last: int) -> dict[str, float]:
    """A cell's three summaries of its validation loss over its evaluations."""
    losses = curve.val_loss.dropna().to_numpy(dtype=float)
    return {"best": float(losses.min()), "last_k_mean": float(losses[-last:].mean()), "last": float(losses[-1])}


def contest_cells(workspace: Path, skip: set[int]) -> list[tuple[str, float, list[int]]]:
    """(variant, contest LR, seeds) from the contest table; in a build still training, from each select_lr choice
    and the finished cells at that LR (those with a bundle.json), leaving out the seeds in `skip` (the sweep's)."""
    table = workspace / "results" / "tables" / "contest.csv"
    if table.is_file():
        return [(row.variant, row.lr, seeds_of(row.seeds)) for row in pd.read_csv(table).itertuples()]
    found = []
    for choice in sorted((workspace / "results" / "selected_lr").glob("*.json")):
        lr = json.loads(choice.read_text())["lr"]
        folder = workspace / "results" / "runs" / choice.stem / f"lr{format_lr(lr)}"
        seeds = sorted(int(p.parent.name[4:]) for p in folder.glob("seed*/bundle.json"))
        found.append((choice.stem, lr, [s for s in seeds if s not in skip]))
    return found


def cells(workspace: Path, last: int, skip: set[int] = frozenset()) -> pd.DataFrame:
    """One row per contest cell: variant, seed and each summary (the contest table names the LR and seeds)."""
    rows = []
    for variant, lr, seeds in contest_cells(workspace, skip):
        row = argparse.Namespace(variant=variant, lr=lr)
        for seed in seeds:
            path = workspace / "results" / "runs" / row.variant / f"lr{format_lr(row.lr)}" / f"seed{seed}" / "curve.csv"
            if path.is_file():
                rows.append({"variant": row.variant, "seed": seed, **summaries(pd.read_csv(path), last)})
    return pd.DataFrame(rows)


def spreads(table: pd.DataFrame) -> pd.DataFrame:
    """Per variant against softmax: paired seeds, and per summary the mean and sd (ddof 1) of the log-ratio."""
    base = table[table.variant == BASELINE].set_index("seed")
    out = []
    for variant, own in table[table.variant != BASELINE].groupby("variant", sort=False):
        own = own.set_index("seed")
        shared = own.index.intersection(base.index)
        row = {"variant": variant, "seeds": len(shared)}
        for name in SUMMARIES:
            logs = np.log(own.loc[shared, name].to_numpy()) - np.log(base.loc[shared, name].to_numpy())
            row[f"{name}_mean"] = float(logs.mean()) if len(logs) else math.nan
            row[f"{name}_sd"] = float(logs.std(ddof=1)) if len(logs) > 1 else math.nan
        out.append(row)
    return pd.DataFrame(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workspace", nargs="?", default=".", type=Path)
    parser.add_argument("--last", type=int, default=4, help="K: the evaluations the last-K mean reads")
    parser.add_argument("--skip-seeds", type=int, nargs="*", default=[],
                        help="seeds left out where no contest table is made yet (the sweep's, which chose the LR)")
    args = parser.parse_args(argv)
    table = spreads(cells(args.workspace, args.last, set(args.skip_seeds)))
    print(f"paired log-ratio against {BASELINE}, per contest seed: mean and sd of each summary "
          f"(last_k_mean: the last {args.last} evaluations)")
    print(f"{'variant':10s} {'seeds':>5s} " + " ".join(f"{name + ' mean':>16s} {name + ' sd':>14s}"
                                                        for name in SUMMARIES) + "   sd ratio (last-K / best)")
    for row in table.itertuples():
        parts = " ".join(f"{getattr(row, name + '_mean'):+16.4%} {getattr(row, name + '_sd'):14.4%}"
                         for name in SUMMARIES)
        print(f"{row.variant:10s} {row.seeds:5d} {parts}   {row.last_k_mean_sd / row.best_sd:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
