"""Every bundle into pandas tables: runs, contest, LR sweep, parameters (csv, md, tex).

Tables read bundles and never recompute what a bundle already holds. A
missing or corrupt bundle stops the collection with its path: no cell is
dropped silently.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from attnlab.bundle import BundleError, format_lr, read_bundle
from attnlab.io import atomic_write_json, atomic_write_text

SCALAR_TYPES = (int, float, bool, str, type(None))


def load_runs(bundle_dirs: list[Path]) -> tuple[pd.DataFrame, list[dict]]:
    """One row per cell with every scalar of its bundle (nested keys joined by '.')."""
    bundles = [read_bundle(Path(d)) for d in bundle_dirs]
    rows = [flatten({k: v for k, v in b.items() if k not in ("files",)}) for b in bundles]
    runs = pd.DataFrame(rows)
    if not runs.empty:
        runs = runs.sort_values(["variant", "lr", "seed"]).reset_index(drop=True)
    return runs, bundles


def flatten(obj: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in obj.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, SCALAR_TYPES):
            flat[name] = value
    return flat


def contest_table(runs: pd.DataFrame, grid: dict) -> pd.DataFrame:
    """Per variant at its contest LR: seeds, best validation loss mean and std (ddof 0), bits/char."""
    rows = []
    for variant in grid["variants"]:
        lr = grid["contest_lr"].get(variant)
        cells = runs[(runs.variant == variant) & np.isclose(runs.lr, lr if lr else -1)
                     & runs.seed.isin(grid["contest_seeds"])]
        if cells.empty:
            continue
        best = cells.best_val_loss.to_numpy(dtype=float)
        rows.append({
            "variant": variant,
            "lr": format_lr(lr),
            "n_seeds": len(cells),
            "best_val_mean": best.mean(),
            "best_val_std": best.std(ddof=0),
            "bpc_mean": best.mean() / np.log(2),
            "n_diverged": int(cells.diverged.sum()),
            "n_params": int(cells.n_params.iloc[0]),
        })
    return pd.DataFrame(rows)


def sweep_table(runs: pd.DataFrame, grid: dict) -> pd.DataFrame:
    """Long form: variant, lr, best validation loss, diverged flag and step, at the sweep seed."""
    cells = runs[runs.seed == grid["sweep_seed"]]
    cells = cells[cells.lr.apply(lambda lr: any(np.isclose(lr, grid["sweep_lrs"])))]
    columns = ["variant", "lr", "best_val_loss", "final_val_loss", "diverged", "diverged_step"]
    return cells[columns].sort_values(["variant", "lr"]).reset_index(drop=True)


def sweep_display(sweep: pd.DataFrame) -> pd.DataFrame:
    """LR rows x variant columns; a diverged cell reads 'diverged @ step', not as a number."""
    def cell(row):
        if row.diverged:
            return f"diverged @ {int(row.diverged_step)}"
        return f"{row.best_val_loss:.4f}"
    shown = sweep.assign(value=sweep.apply(cell, axis=1), lr=sweep.lr.map(format_lr))
    return shown.pivot(index="lr", columns="variant", values="value").reset_index()


def contest_display(contest: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "variant": contest.variant,
        "LR": contest.lr,
        "seeds": contest.n_seeds,
        "best-val (nats/char)": [f"{m:.4f} ± {s:.4f}" for m, s in zip(contest.best_val_mean, contest.best_val_std)],
        "bits/char": contest.bpc_mean.map(lambda x: f"{x:.3f}"),
        "diverged": contest.n_diverged,
    })


def params_table(runs: pd.DataFrame, variants: list[str]) -> pd.DataFrame:
    counts = runs.groupby("variant").n_params.first().reindex([v for v in variants if v in set(runs.variant)])
    base = counts.get("softmax", np.nan)
    return pd.DataFrame({"variant": counts.index, "n_params": counts.values,
                         "vs_softmax": counts.values - base})


def write_table(df: pd.DataFrame, stem: Path, display: pd.DataFrame | None = None) -> None:
    """stem.csv holds the numbers; stem.md and stem.tex the human form."""
    stem = Path(stem)
    shown = df if display is None else display
    atomic_write_text(stem.with_suffix(".csv"), df.to_csv(index=False))
    atomic_write_text(stem.with_suffix(".md"), shown.to_markdown(index=False, floatfmt=".4f", disable_numparse=display is not None) + "\n")
    atomic_write_text(stem.with_suffix(".tex"), shown.to_latex(index=False, float_format="%.4f"))


def best_lr(bundle_dirs: list[Path]) -> dict:
    """The sweep LR with the lowest best validation loss among cells that did not diverge."""
    runs, _ = load_runs(bundle_dirs)
    healthy = runs[~runs.diverged.astype(bool)] if not runs.empty else runs
    if healthy.empty:
        raise BundleError("every sweep cell diverged; no learning rate to select (lower the sweep LRs)")
    best = healthy.loc[healthy.best_val_loss.idxmin()]
    return {"variant": best.variant, "lr": float(best.lr), "best_val_loss": float(best.best_val_loss),
            "candidates": {format_lr(r.lr): r.best_val_loss for r in runs.itertuples()}}


def collect(bundle_dirs: list[Path], grid: dict, out_dir: Path) -> dict[str, pd.DataFrame]:
    runs, _ = load_runs(bundle_dirs)
    out_dir = Path(out_dir)
    atomic_write_text(out_dir / "runs.csv", runs.to_csv(index=False))
    contest = contest_table(runs, grid)
    sweep = sweep_table(runs, grid)
    params = params_table(runs, grid["variants"])
    write_table(contest, out_dir / "contest", contest_display(contest))
    write_table(sweep, out_dir / "lr_sweep", sweep_display(sweep))
    write_table(params, out_dir / "params")
    return {"runs": runs, "contest": contest, "lr_sweep": sweep, "params": params}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Collect bundles into tables, or pick a sweep's best LR.")
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--grid", required=True, help="JSON grid (attnlab.config.grid)")
    c.add_argument("--out", required=True, type=Path)
    c.add_argument("bundles", nargs="+", type=Path)
    s = sub.add_parser("select-lr")
    s.add_argument("--out", required=True, type=Path)
    s.add_argument("bundles", nargs="+", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "collect":
            tables = collect(args.bundles, json.loads(args.grid), args.out)
            print(tables["contest"].to_string(index=False))
        else:
            choice = best_lr(args.bundles)
            atomic_write_json(args.out, choice)
            print(f"{choice['variant']}: best sweep LR {format_lr(choice['lr'])} ({choice['best_val_loss']:.4f})")
    except BundleError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
