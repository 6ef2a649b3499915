"""Every bundle into pandas tables: runs, contest, LR sweep, parameters (csv, md, tex).

Tables read bundles and never recompute what a bundle already holds. A
missing or corrupt bundle stops the collection with its path: no cell is
dropped silently. So does a stale one: given the grid's expectation (the
config slice and code fingerprint each cell must have been trained with, which
the Snakefile writes), a bundle trained by other code or another config (by
hand, or before Snakemake's records in .snakemake/ were lost) is named with
what differs and how to retrain it.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from attnlab.core.bundle_format import BundleError, format_lr
from attnlab.pipeline import statistics
from attnlab.pipeline.bundle_reader import read_arrays, read_bundle
from attnlab.core.io import atomic_write_json, atomic_write_text

SCALAR_TYPES = (int, float, bool, str, type(None))
BASELINE = "softmax"  # every paired comparison of the contest is against it

# contest, one row per variant at its contest LR (lr_choice: "auto" when the sweep chose it, else "given"):
#   best_val_mean, best_val_std: over the variant's contest seeds (std with ddof 0, as the posts report it);
#   delta_vs_softmax: mean over the seeds both have of (variant - softmax) best validation loss, in nats,
#     each at its own contest LR (0 for softmax); delta_ci_low, delta_ci_high: its 95% t-interval
#     (attnlab.pipeline.statistics; NaN with one shared seed); wins: seeds where the variant is below softmax,
#     "k/n"; n_paired: n;
#   gap_vs_softmax, gap_ci_low, gap_ci_high: variant / softmax - 1 through the mean per-seed log-ratio.
PAIRED_COLUMNS = ["delta_vs_softmax", "delta_ci_low", "delta_ci_high", "wins", "n_paired", "gap_vs_softmax",
                  "gap_ci_low", "gap_ci_high"]
CONTEST_COLUMNS = ["variant", "lr", "lr_choice", "n_seeds", "best_val_mean", "best_val_std", "bpc_mean",
                   "n_diverged", "n_params", "seeds"] + PAIRED_COLUMNS
# best_lr, one row per variant: the variant at its best sweep LR (lowest mean best validation loss over the
# sweep seeds, no seed diverged) against softmax at its own best sweep LR, paired over the sweep seeds, beside
# the same comparison in the contest (contest_*). interval_note says why a row has no interval.
BEST_LR_COLUMNS = (["variant", "best_lr", "n_sweep_seeds", "best_val_mean"] + PAIRED_COLUMNS + ["interval_note"]
                   + ["contest_lr", "contest_lr_choice", "contest_delta_vs_softmax", "contest_delta_ci_low",
                      "contest_delta_ci_high", "contest_gap_vs_softmax"])

# score_scale, one row per contest cell and layer:
#   mean_max_score: that layer's max score per held-out batch, averaged over the batches;
#   max_score: that layer's largest score over every held-out batch;
#   seed_mean_over_layers_of_max_score: for the cell's seed, the mean over layers of max_score
#     (the same value on each layer row of that seed). This is what the posts call the
#     "per-layer mean" (softmax 15-18, yat 17,000-68,000: the range across seeds).
SEED_MEAN_OVER_LAYERS = "seed_mean_over_layers_of_max_score"
SCORE_SCALE_COLUMNS = ["variant", "lr", "seed", "layer", "mean_max_score", "max_score", SEED_MEAN_OVER_LAYERS]
A3_GATE_INIT = float(1.0 / (1.0 + np.exp(-3.0)))  # sigmoid(b_g = 3): A3's gate before training
A3_VS_SOFTMAX_COLUMNS = ["layer", "a3_entropy", "softmax_entropy", "entropy_diff", "a3_gate_mean", "a3_gate_init",
                         "a3_bias_std", "a3_lr", "softmax_lr", "a3_seeds", "softmax_seeds"]
# normswap, one row per kernel-family cell (bundle field "normswap", attnlab.training.train):
#   native_loss: the final weights' validation loss under the normaliser they trained with;
#   swapped_loss: the same weights and batches with kappa normalised the other way (l1 <-> softmax),
#     which is what the twin variant swapped_to computes with them; difference = swapped - native.
NORMSWAP_COLUMNS = ["variant", "lr", "seed", "in_contest", "diverged", "native_normaliser", "native_loss",
                    "swapped_to", "swapped_normaliser", "swapped_loss", "difference"]
# a3_vs_temperature, one row per contest seed: each variant's best validation loss at its contest LR and
# its gain over softmax of the same seed (softmax - variant: > 0 is better than softmax);
# softmax_t_share_of_a3_gain = softmax_t_gain / a3_gain (1: a per-head temperature closes all of A3's gain).
TEMPERATURE_ARMS = ("a3", "softmax_t", "a3_heads")
A3_VS_TEMPERATURE_COLUMNS = (["seed", "softmax_best_val"] + [f"{v}_best_val" for v in TEMPERATURE_ARMS]
                             + [f"{v}_gain" for v in TEMPERATURE_ARMS] + ["softmax_t_share_of_a3_gain"]
                             + ["softmax_lr"] + [f"{v}_lr" for v in TEMPERATURE_ARMS])


def load_runs(bundle_dirs: list[Path]) -> tuple[pd.DataFrame, list[dict]]:
    """One row per cell with every scalar of its bundle (nested keys joined by '.').

    A bundle whose variant, LR or seed disagrees with its folder
    (<variant>/lr<lr>/seed<seed>), or two bundles of one cell, stop the collection.
    """
    bundles = [read_bundle(Path(d)) for d in bundle_dirs]
    _check_cells(bundles)
    rows = [flatten({k: v for k, v in b.items() if k not in ("files",)}) for b in bundles]
    runs = pd.DataFrame(rows)
    if not runs.empty:
        runs = runs.sort_values(["variant", "lr", "seed"]).reset_index(drop=True)
    return runs, bundles


def _check_cells(bundles: list[dict]) -> None:
    """Each bundle is the cell its folder names, and each cell is collected once."""
    seen = {}
    for b in bundles:
        folder = Path(b["path"])
        cell = (b["variant"], float(b["lr"]), int(b["seed"]))
        parts = folder.parts[-3:]
        if len(parts) == 3 and parts[1].startswith("lr") and parts[2].startswith("seed"):
            try:
                named = (parts[0], float(parts[1][2:]), int(parts[2][4:]))
            except ValueError:
                named = None
            if named != cell:
                raise BundleError(
                    f"bundle {folder} holds {cell[0]} lr={format_lr(cell[1])} seed={cell[2]}, not the cell its "
                    "folder names (a bundle copied or written into another cell's folder); delete it and rerun")
        if cell in seen:
            raise BundleError(f"bundles {seen[cell]} and {folder} are the same cell {cell[0]} "
                              f"lr={format_lr(cell[1])} seed={cell[2]}; keep one")
        seen[cell] = folder


def _check_in_grid(bundles: list[dict], grid: dict) -> None:
    """Only the grid's cells (the sweep and the contest) are collected."""
    cells = {(v, float(lr), int(s)) for v in grid["variants"] for lr in grid["sweep_lrs"] for s in _sweep_seeds(grid)}
    cells |= {(v, float(lr), int(s)) for v, lr in grid["contest_lr"].items() for s in grid["contest_seeds"]}
    for b in bundles:
        if (b["variant"], float(b["lr"]), int(b["seed"])) not in cells:
            raise BundleError(f"bundle {b['path']} is {b['variant']} lr={format_lr(b['lr'])} seed={b['seed']}, "
                              "which is not a cell of this config's grid; remove it from the inputs")


RERUN_COMMAND_ENV = "ATTNLAB_SNAKEMAKE_COMMAND"  # the Snakemake command line of this build, for the fix
CELL_KEYS = ("variant", "lr", "seed")  # what bundle.json's config adds to the slice the cell was trained with
SHOWN_STALE = 5  # stale cells described one by one; the rest are counted


def check_expected(bundles: list[dict], expected: dict) -> None:
    """Each bundle was trained with the config slice and the code fingerprint the grid expects for its cell.

    `expected` is {"code": {variant: fingerprint}, "slices": {folder: config slice}, "rule": name}: the
    slice of the cells under each folder (results/runs, or one composability folder), the code of each
    variant (attnlab.core.fingerprint.training_fingerprint) and the rule that trains them (for the fix;
    train_cell when absent). A stale bundle stops the collection.
    """
    code, slices = expected.get("code", {}), {_place(root): s for root, s in expected.get("slices", {}).items()}
    stale = []
    for b in bundles:
        folder = Path(b["path"])
        above = folder.absolute().parents
        root = _place(above[2]) if len(above) > 2 else None  # <root>/<variant>/lr<lr>/seed<seed>
        if root not in slices:
            raise BundleError(f"bundle {folder} is not in a folder this grid trains into "
                              f"({', '.join(sorted(expected.get('slices', {})))}); remove it from the inputs")
        if b["variant"] not in code:
            raise BundleError(f"bundle {folder} is of variant {b['variant']!r}, which this grid does not train; "
                              "remove it from the inputs")
        differences = []
        recorded = b.get("provenance", {}).get("code_fingerprint") if isinstance(b.get("provenance"), dict) else None
        if recorded != code[b["variant"]]:
            differences.append(f"code fingerprint {recorded} in the bundle, {code[b['variant']]} expected")
        config = b["config"] if isinstance(b["config"], dict) else {}
        differences += _slice_differences({k: v for k, v in config.items() if k not in CELL_KEYS},
                                          _jsonable(slices[root]))
        if differences:
            stale.append((folder, b, differences))
    if stale:
        raise BundleError(_stale_message(stale, expected.get("rule") or "train_cell"))


def check_bundles(bundle_dirs: list[Path], expected: dict) -> list[dict]:
    """Read and check bundles that may span several grids of folders (the composability runs, one grid
    per kv<k>-<impl>): each is whole, is the cell its folder names, appears once in its grid and is
    what `expected` says. Returns the bundles."""
    bundles = [read_bundle(Path(d)) for d in bundle_dirs]
    by_root: dict[Path, list[dict]] = {}
    for b in bundles:
        by_root.setdefault(_place(Path(b["path"]).absolute().parent.parent.parent), []).append(b)
    for same_grid in by_root.values():
        _check_cells(same_grid)
    check_expected(bundles, expected)
    return bundles


def _place(path) -> Path:
    """A folder as one spelling, whatever the path it was named by (relative, through links)."""
    return Path(path).resolve()


def _jsonable(obj):
    """The value as the trainer received it: through JSON (tuples become lists, keys strings)."""
    return json.loads(json.dumps(obj))


def _slice_differences(found: dict, wanted: dict, prefix: str = "") -> list[str]:
    """'train.steps 40 in the bundle, 20 expected' for every key whose value differs (dotted names)."""
    differences = []
    for key in sorted(set(found) | set(wanted), key=str):
        name = f"{prefix}{key}"
        have, want = found.get(key, _ABSENT), wanted.get(key, _ABSENT)
        if isinstance(have, dict) and isinstance(want, dict):
            differences += _slice_differences(have, want, f"{name}.")
        elif have != want or isinstance(have, bool) != isinstance(want, bool):
            differences.append(f"{name} {_shown(have)} in the bundle, {_shown(want)} expected")
    return differences


class _Absent:
    def __repr__(self):
        return "absent"


_ABSENT = _Absent()


def _shown(value) -> str:
    return "absent" if value is _ABSENT else json.dumps(value)


def _stale_message(stale: list, rule: str) -> str:
    described = []
    for folder, b, differences in stale[:SHOWN_STALE]:
        shown = differences[:3] + ([f"{len(differences) - 3} more keys differ"] if len(differences) > 3 else [])
        described.append(f"{folder} ({b['variant']} lr={format_lr(b['lr'])} seed={b['seed']}): {', '.join(shown)}")
    more = f"; and {len(stale) - SHOWN_STALE} more" if len(stale) > SHOWN_STALE else ""
    folders = " ".join(shlex.quote(str(folder)) for folder, _, _ in stale)
    command = os.environ.get(RERUN_COMMAND_ENV)
    retrain_all = (f"`{command} --forcerun {rule}`" if command
                   else f"your snakemake command with `--forcerun {rule}` added")
    return (f"{len(stale)} bundle(s) were not trained with the code and config this grid expects: "
            f"{'; '.join(described)}{more}. They are stale (trained by other code or another config, by hand, or "
            f"before Snakemake's records in .snakemake/ were lost). Delete them and run snakemake again, which "
            f"retrains exactly those cells (rm -rf {folders}), or retrain every cell with {retrain_all}")


def flatten(obj: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in obj.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, SCALAR_TYPES):
            flat[name] = value
    return flat


def contest_cells(runs: pd.DataFrame, grid: dict, variant: str) -> pd.DataFrame:
    """The rows of one variant's contest: its contest LR, the contest seeds."""
    lr = grid["contest_lr"].get(variant)
    if lr is None:
        return runs.iloc[0:0]
    return runs[(runs.variant == variant) & np.isclose(runs.lr, lr) & runs.seed.isin(grid["contest_seeds"])]


def contest_table(runs: pd.DataFrame, grid: dict) -> pd.DataFrame:
    """Per variant at its contest LR: seeds, best validation loss mean and std (ddof 0), bits/char, and the
    paired comparison with softmax over the seeds both have (see CONTEST_COLUMNS)."""
    rows = []
    base = losses_by_seed(contest_cells(runs, grid, BASELINE)) if not runs.empty else {}
    for variant in grid["variants"]:
        lr = grid["contest_lr"].get(variant)
        cells = contest_cells(runs, grid, variant)
        if cells.empty:
            continue
        best = cells.best_val_loss.to_numpy(dtype=float)
        rows.append({
            "variant": variant,
            "lr": format_lr(lr),
            "lr_choice": "auto" if variant in grid.get("auto", ()) else "given",
            "n_seeds": len(cells),
            "best_val_mean": best.mean(),
            "best_val_std": best.std(ddof=0),
            "bpc_mean": best.mean() / np.log(2),
            "n_diverged": int(cells.diverged.sum()),
            "n_params": int(cells.n_params.iloc[0]),
            "seeds": " ".join(str(s) for s in sorted(cells.seed)),
            **paired_columns(losses_by_seed(cells), base),
        })
    return pd.DataFrame(rows, columns=CONTEST_COLUMNS)


def losses_by_seed(cells: pd.DataFrame) -> dict[int, float]:
    """seed -> best validation loss of one variant's cells at one LR."""
    return {int(s): float(v) for s, v in zip(cells.seed, cells.best_val_loss)}


def paired_columns(losses: dict[int, float], base: dict[int, float]) -> dict:
    """The PAIRED_COLUMNS of one variant against the baseline, over the seeds both have."""
    delta = statistics.paired(losses, base)
    gap = statistics.paired(losses, base, ratio=True)
    return {"delta_vs_softmax": delta.mean, "delta_ci_low": delta.low, "delta_ci_high": delta.high,
            "wins": delta.wins_text, "n_paired": delta.n, "gap_vs_softmax": gap.mean - 1,
            "gap_ci_low": gap.low - 1, "gap_ci_high": gap.high - 1}


def best_lr_table(runs: pd.DataFrame, grid: dict, contest: pd.DataFrame) -> pd.DataFrame:
    """Each variant at its best sweep LR against softmax at its own, beside the contest (see BEST_LR_COLUMNS)."""
    sweep = sweep_table(runs, grid) if not runs.empty else pd.DataFrame()
    if sweep.empty:
        return pd.DataFrame(columns=BEST_LR_COLUMNS)
    best = {}
    for variant in grid["variants"]:
        cells = sweep[sweep.variant == variant]
        choice = best_sweep_lr(cells) if len(cells) else None
        if choice is not None:
            at_lr = cells[np.isclose(cells.lr.astype(float), choice["lr"])]
            best[variant] = (choice["lr"], losses_by_seed(at_lr))
    base = best.get(BASELINE, (None, {}))[1]
    in_contest = contest.set_index("variant") if not contest.empty else pd.DataFrame()
    rows = []
    for variant, (lr, losses) in best.items():
        paired = paired_columns(losses, base)
        estimate = statistics.paired(losses, base)
        row = {"variant": variant, "best_lr": lr, "n_sweep_seeds": len(losses),
               "best_val_mean": float(np.mean(list(losses.values()))), **paired,
               "interval_note": estimate.reason}
        if variant in in_contest.index:
            c = in_contest.loc[variant]
            row.update({"contest_lr": float(c.lr), "contest_lr_choice": c.lr_choice,
                        "contest_delta_vs_softmax": c.delta_vs_softmax, "contest_delta_ci_low": c.delta_ci_low,
                        "contest_delta_ci_high": c.delta_ci_high, "contest_gap_vs_softmax": c.gap_vs_softmax})
        rows.append(row)
    return pd.DataFrame(rows, columns=BEST_LR_COLUMNS)


def best_sweep_lr(cells: pd.DataFrame) -> dict | None:
    """The LR of one variant's sweep cells with the lowest mean best validation loss over its seeds, among
    the LRs where no seed diverged; None when every LR had a divergence. Also each LR's mean (candidates)."""
    lrs = cells.lr.astype(float)
    means = cells.groupby(lrs).best_val_loss.mean()
    failed = cells[["diverged", "best_val_loss"]].groupby(lrs).apply(
        lambda c: bool(c.diverged.astype(bool).any() or not np.isfinite(c.best_val_loss.astype(float)).all()))
    healthy = means[~failed.reindex(means.index).astype(bool)]
    if healthy.empty:
        return None
    lr = float(healthy.idxmin())
    return {"lr": lr, "best_val_loss": float(healthy[lr]), "candidates": {format_lr(k): float(v) for k, v in means.items()}}


def _sweep_seeds(grid: dict) -> list[int]:
    return [int(s) for s in grid.get("sweep_seeds") or [grid["sweep_seed"]]]


def sweep_table(runs: pd.DataFrame, grid: dict) -> pd.DataFrame:
    """Long form: variant, lr, seed, best validation loss, diverged flag and step, at the sweep seed(s)."""
    cells = runs[runs.seed.isin(_sweep_seeds(grid))]
    cells = cells[cells.lr.apply(lambda lr: any(np.isclose(lr, grid["sweep_lrs"])))]
    columns = ["variant", "lr", "seed", "best_val_loss", "final_val_loss", "diverged", "diverged_step"]
    return cells[columns].sort_values(["variant", "lr", "seed"]).reset_index(drop=True)


def sweep_display(sweep: pd.DataFrame) -> pd.DataFrame:
    """LR rows x variant columns, the mean over the sweep seeds; a cell with a diverged seed reads
    'diverged @ step' (one seed) or 'diverged on k/n seeds', never as a number."""
    def cell(group):
        diverged = group[group.diverged.astype(bool)]
        if len(diverged) and len(group) == 1:
            step = diverged.diverged_step.iloc[0]
            return f"diverged @ {int(step)}" if pd.notna(step) else "diverged"
        if len(diverged):
            return f"diverged on {len(diverged)}/{len(group)} seeds"
        return f"{group.best_val_loss.astype(float).mean():.4f}"
    values = (sweep.groupby(["lr", "variant"])[["diverged", "diverged_step", "best_val_loss"]].apply(cell)
              .rename("value").reset_index())
    wide = values.pivot(index="lr", columns="variant", values="value").sort_index()  # numeric LR order
    wide.index = wide.index.map(format_lr)
    return wide.reset_index()


def best_lr_display(table: pd.DataFrame) -> pd.DataFrame:
    """Per variant: its best sweep LR and contest LR, and the paired difference with softmax at each."""
    def at(mean, low, high, note=""):
        estimate_text = f"{mean:+.4f}" if np.isfinite(mean) else "–"
        if np.isfinite(low) and np.isfinite(high):
            return f"{estimate_text} [{low:+.4f}, {high:+.4f}]"
        return f"{estimate_text} ({note})" if note else estimate_text
    level = f"{statistics.CONFIDENCE:.0%}"
    return pd.DataFrame({
        "variant": table.variant,
        "best sweep LR": table.best_lr.map(format_lr),
        "sweep seeds": table.n_sweep_seeds,
        f"Δ vs {BASELINE} at best LRs [{level} CI]": [
            "baseline" if r.variant == BASELINE else at(r.delta_vs_softmax, r.delta_ci_low, r.delta_ci_high,
                                                         r.interval_note) for r in table.itertuples()],
        "contest LR": [_lr_text(lr, choice) for lr, choice in zip(table.contest_lr, table.contest_lr_choice)],
        f"Δ vs {BASELINE} in the contest [{level} CI]": [
            "baseline" if r.variant == BASELINE else at(r.contest_delta_vs_softmax, r.contest_delta_ci_low,
                                                         r.contest_delta_ci_high, statistics.ONE_SEED)
            for r in table.itertuples()],
    })


def _lr_text(lr, choice) -> str:
    """An LR as a table shows it, '0.01 (auto)' when the sweep chose it."""
    if lr is None or (isinstance(lr, float) and not np.isfinite(lr)):
        return "–"
    return format_lr(float(lr)) + (" (auto)" if choice == "auto" else "")


def contest_display(contest: pd.DataFrame) -> pd.DataFrame:
    level = f"{statistics.CONFIDENCE:.0%}"

    def delta(r):
        if r.variant == BASELINE:
            return "baseline"
        if not np.isfinite(r.delta_vs_softmax):
            return "–"
        if np.isfinite(r.delta_ci_low) and np.isfinite(r.delta_ci_high):
            return f"{r.delta_vs_softmax:+.4f} [{r.delta_ci_low:+.4f}, {r.delta_ci_high:+.4f}]"
        return f"{r.delta_vs_softmax:+.4f} ({statistics.ONE_SEED})"

    return pd.DataFrame({
        "variant": contest.variant,
        "LR": [_lr_text(lr, choice) for lr, choice in zip(contest.lr, contest.lr_choice)],
        "seeds": contest.n_seeds,
        "best-val (nats/char)": [f"{m:.4f} ± {s:.4f}" for m, s in zip(contest.best_val_mean, contest.best_val_std)],
        "bits/char": contest.bpc_mean.map(lambda x: f"{x:.3f}"),
        f"Δ vs {BASELINE} (nats) [{level} CI]": [delta(r) for r in contest.itertuples()],
        f"wins vs {BASELINE}": ["–" if v == BASELINE else w for v, w in zip(contest.variant, contest.wins)],
        "diverged": contest.n_diverged,
    })


def normswap_table(runs: pd.DataFrame, grid: dict) -> pd.DataFrame:
    """Every cell whose bundle holds a normaliser crossover: native and swapped loss of its final weights."""
    needed = {"normswap.native_loss", "normswap.swapped_loss"}
    if runs.empty or not needed <= set(runs.columns):
        return pd.DataFrame(columns=NORMSWAP_COLUMNS)
    cells = runs[runs["normswap.native_loss"].notna()]
    contest = set()
    for variant in grid["variants"]:
        contest |= set(contest_cells(runs, grid, variant).index)
    table = pd.DataFrame({
        "variant": cells.variant, "lr": cells.lr.astype(float), "seed": cells.seed.astype(int),
        "in_contest": [i in contest for i in cells.index], "diverged": cells.diverged.astype(bool),
        "native_normaliser": cells["normswap.native_normaliser"], "native_loss": cells["normswap.native_loss"],
        "swapped_to": cells["normswap.swapped_to"], "swapped_normaliser": cells["normswap.swapped_normaliser"],
        "swapped_loss": cells["normswap.swapped_loss"],
        "difference": cells["normswap.swapped_loss"] - cells["normswap.native_loss"],
    }, columns=NORMSWAP_COLUMNS)
    order = {v: i for i, v in enumerate(grid["variants"])}
    return (table.assign(_order=table.variant.map(order)).sort_values(["_order", "lr", "seed"])
            .drop(columns="_order").reset_index(drop=True))


def normswap_display(table: pd.DataFrame) -> pd.DataFrame:
    """The contest cells: per variant and seed, native loss, swapped loss and their difference."""
    shown = table[table.in_contest.astype(bool)] if not table.empty else table
    return pd.DataFrame({
        "variant": shown.variant, "LR": shown.lr.map(format_lr), "seed": shown.seed,
        "trained with": shown.native_normaliser, "native loss": shown.native_loss,
        "swapped to": [f"{n} (= {t})" for n, t in zip(shown.swapped_normaliser, shown.swapped_to)],
        "swapped loss": shown.swapped_loss, "swapped − native": shown.difference.map(lambda x: f"{x:+.4f}"),
    }, columns=["variant", "LR", "seed", "trained with", "native loss", "swapped to", "swapped loss",
                "swapped − native"])


def a3_vs_temperature_table(runs: pd.DataFrame, grid: dict) -> pd.DataFrame:
    """Per contest seed: A3's gain over softmax beside softmax_t's (and a3_heads'), each at its contest LR."""
    best = {}
    for variant in ("softmax",) + TEMPERATURE_ARMS:
        cells = contest_cells(runs, grid, variant) if not runs.empty else runs
        best[variant] = dict(zip(cells.seed.astype(int), cells.best_val_loss.astype(float))) if len(cells) else {}
    if not best["softmax"] or not any(best[v] for v in TEMPERATURE_ARMS):
        return pd.DataFrame(columns=A3_VS_TEMPERATURE_COLUMNS)
    rows = []
    for seed in sorted(best["softmax"]):
        soft = best["softmax"][seed]
        row = {"seed": seed, "softmax_best_val": soft, "softmax_lr": _contest_lr_text(grid, "softmax")}
        for variant in TEMPERATURE_ARMS:
            value = best[variant].get(seed, np.nan)
            row[f"{variant}_best_val"] = value
            row[f"{variant}_gain"] = soft - value
            row[f"{variant}_lr"] = _contest_lr_text(grid, variant)
        row["softmax_t_share_of_a3_gain"] = _share(row["softmax_t_gain"], row["a3_gain"])
        rows.append(row)
    return pd.DataFrame(rows, columns=A3_VS_TEMPERATURE_COLUMNS)


def _contest_lr_text(grid: dict, variant: str) -> str:
    lr = grid["contest_lr"].get(variant)
    return format_lr(lr) if lr is not None else "–"


def a3_vs_temperature_display(table: pd.DataFrame) -> pd.DataFrame:
    """Per seed and the mean over seeds: each arm's best-val (its LR in the header) and gain over softmax."""
    arms = ("softmax",) + TEMPERATURE_ARMS
    if table.empty:
        return pd.DataFrame(columns=["seed", *arms, *(f"{v} gain" for v in TEMPERATURE_ARMS), "softmax_t / a3 gain"])
    headers = {v: f"{v} (LR {table[f'{v}_lr'].iloc[0]})" for v in arms}
    mean = table.drop(columns=[c for c in table.columns if c.endswith("_lr")]).mean(numeric_only=True)

    def line(seed, r, share):
        row = {"seed": seed, **{headers[v]: r[f"{v}_best_val"] for v in arms}}
        row.update({f"{v} gain": _signed(r[f"{v}_gain"]) for v in TEMPERATURE_ARMS})
        row["softmax_t / a3 gain"] = share
        return row

    rows = [line(str(int(r.seed)), r, r.softmax_t_share_of_a3_gain) for _, r in table.iterrows()]
    rows.append(line("mean", mean, _share(mean["softmax_t_gain"], mean["a3_gain"])))
    return pd.DataFrame(rows)


def _share(part: float, whole: float) -> float:
    """part / whole, NaN where whole is 0 or missing."""
    return float(part / whole) if np.isfinite(whole) and whole != 0 and np.isfinite(part) else np.nan


def _signed(value: float) -> str:
    return f"{value:+.4f}" if np.isfinite(value) else "–"


def params_table(runs: pd.DataFrame, variants: list[str]) -> pd.DataFrame:
    counts = runs.groupby("variant").n_params.first().reindex([v for v in variants if v in set(runs.variant)])
    base = counts.get("softmax", np.nan)
    return pd.DataFrame({"variant": counts.index, "n_params": counts.values,
                         "vs_softmax": counts.values - base})


def write_table(df: pd.DataFrame, stem: Path, display: pd.DataFrame | None = None) -> None:
    """stem.csv holds the numbers; stem.md and stem.tex the human form."""
    stem = Path(stem)
    shown = (df if display is None else display).map(_human)
    atomic_write_text(stem.with_suffix(".csv"), df.to_csv(index=False))
    atomic_write_text(stem.with_suffix(".md"), shown.to_markdown(index=False, disable_numparse=True) + "\n")
    atomic_write_text(stem.with_suffix(".tex"), shown.to_latex(index=False, escape=True))


def telemetry_tables(runs: pd.DataFrame, grid: dict, bundles: dict[str, dict]) -> dict:
    """score_scale, mass_auroc, entropy, scalars, a3_gates, a3_vs_softmax_entropy: (numbers, display).

    All from the contest cells' bundle.json; arrays are read only for what no
    bundle summary holds: the A3-at-init comparison (two bundles side by side)
    and the mean kernel mass of correct and of wrong predictions.
    """
    contest = {v: [bundles[p] for p in contest_cells(runs, grid, v).path] for v in grid["variants"]}
    score_rows, auroc_rows, entropy_rows, scalar_rows, gate_rows = [], [], [], [], []
    for variant, cells in contest.items():
        for b in cells:
            tel = b["telemetry"]
            per_layer_max = tel["max_score_per_layer"]
            seed_mean = float(np.mean(per_layer_max))  # the published "per-layer mean" (see SCORE_SCALE_COLUMNS)
            for layer, (mean_max, top) in enumerate(zip(tel["mean_max_score_per_layer"], per_layer_max)):
                score_rows.append({"variant": variant, "lr": float(b["lr"]), "seed": b["seed"], "layer": layer,
                                   "mean_max_score": mean_max, "max_score": top,
                                   SEED_MEAN_OVER_LAYERS: seed_mean})
            if "mass_auroc" in tel:
                correct_mean, wrong_mean = mass_by_correctness(Path(b["path"]))
                auroc_rows.append({"variant": variant, "lr": float(b["lr"]), "seed": b["seed"],
                                   "mass_auroc": tel["mass_auroc"],
                                   "mass_correct_mean": correct_mean, "mass_wrong_mean": wrong_mean})
            ent = tel["entropy"]
            entropy_rows.append({"variant": variant, "lr": float(b["lr"]), "seed": b["seed"], "mean": ent["mean"],
                                 "share_below_0.3": ent["share_sharp"], "share_above_0.8": ent["share_diffuse"]})
            for layer, per_head in enumerate(ent["mean_per_layer_head"]):
                for head, value in enumerate(per_head):
                    gate_rows.append({"variant": variant, "seed": b["seed"], "layer": layer, "head": head,
                                      "entropy": value,
                                      "gate_mean": _at(tel.get("a3_gate_mean"), layer, head),
                                      "gate_std": _at(tel.get("a3_gate_std"), layer, head),
                                      "bias_mean": _at(tel.get("a3_bias_mean"), layer, head),
                                      "bias_std": _at(tel.get("a3_bias_std"), layer, head)})
            for name, values in b.get("learned", {}).items():
                for layer, per_head in enumerate(values):
                    for head, value in enumerate(per_head):
                        scalar_rows.append({"variant": variant, "seed": b["seed"], "layer": layer,
                                            "head": head, "scalar": name, "value": value})
    score = pd.DataFrame(score_rows, columns=SCORE_SCALE_COLUMNS)
    auroc = pd.DataFrame(auroc_rows, columns=["variant", "lr", "seed", "mass_auroc", "mass_correct_mean",
                                              "mass_wrong_mean"])
    entropy = pd.DataFrame(entropy_rows, columns=["variant", "lr", "seed", "mean", "share_below_0.3",
                                                  "share_above_0.8"])
    scalars = pd.DataFrame(scalar_rows, columns=["variant", "seed", "layer", "head", "scalar", "value"])
    gates = pd.DataFrame(gate_rows, columns=["variant", "seed", "layer", "head", "entropy", "gate_mean",
                                             "gate_std", "bias_mean", "bias_std"])
    init = a3_init_table(contest)
    a3_vs_softmax = a3_vs_softmax_table(contest)
    return {
        "a3_init": (init, None),
        "a3_vs_softmax_entropy": (a3_vs_softmax, None),
        "score_scale": (score, _score_display(score)),
        "mass_auroc": (auroc, _auroc_display(auroc)),
        "entropy": (entropy, _mean_by_variant(entropy, ["mean", "share_below_0.3", "share_above_0.8"])),
        "scalars": (scalars, _scalars_display(scalars)),
        "a3_gates": (gates[gates.variant.isin(["a3", "a3_heads", "softmax"])], _gates_display(gates)),
    }


def a3_init_table(contest: dict[str, list[dict]]) -> pd.DataFrame:
    """A3 at step 0 against softmax at step 0 of the same seed, first layer.

    Both models start from identical skeleton weights, so their first layer sees
    the same scores S (deeper layers see inputs that already differ). From
    softmax's weights w = softmax(S), softmax(sigmoid(3) * log w) is softmax at
    temperature 1/sigmoid(3) of the same S: A3 at init should match that, not w.
    Also A3's worst row-sum error over all snapshots and layers.
    """
    columns = ["seed", "max_diff_vs_softmax", "max_diff_vs_tempered_softmax", "max_row_sum_error"]
    soft = {b["seed"]: b for b in contest.get("softmax", [])}
    rows = []
    for b in contest.get("a3", []):
        if b["seed"] not in soft:
            continue
        a3 = read_arrays(Path(b["path"]), "attention.npz")["weights"].astype(np.float64)
        sm = read_arrays(Path(soft[b["seed"]]["path"]), "attention.npz")["weights"].astype(np.float64)
        a3_first, sm_first = a3[0, 0], sm[0, 0]  # step 0, layer 0: (heads, T, T)
        mask = np.tril(np.ones(sm.shape[-2:], dtype=bool))
        logits = np.where(mask, np.log(np.where(mask, np.maximum(sm_first, 1e-30), 1.0)), -np.inf)
        tempered = logits * (1.0 / (1.0 + np.exp(-3.0)))
        tempered = np.exp(tempered - tempered.max(-1, keepdims=True))
        tempered /= tempered.sum(-1, keepdims=True)
        rows.append({"seed": b["seed"], "max_diff_vs_softmax": float(np.abs(a3_first - sm_first).max()),
                     "max_diff_vs_tempered_softmax": float(np.abs(a3_first - tempered).max()),
                     "max_row_sum_error": float(np.abs(a3.sum(-1) - 1.0).max())})
    return pd.DataFrame(rows, columns=columns)


def a3_vs_softmax_table(contest: dict[str, list[dict]]) -> pd.DataFrame:
    """Per layer, A3 against softmax at their contest cells (each variant's mean over its seeds).

    a3_entropy, softmax_entropy: mean normalised row entropy of the layer (bundle
    telemetry entropy.mean_per_layer); entropy_diff = a3 - softmax (> 0: A3 softer).
    a3_gate_mean: A3's mean gate G over tokens and heads; below a3_gate_init
    (sigmoid(3)) the gate has cooled the logits (softer). a3_bias_std: the spread
    of A3's per-key bias B (std over keys, mean over heads); a larger spread sharpens.
    """
    a3, soft = contest.get("a3", []), contest.get("softmax", [])
    if not a3 or not soft:
        return pd.DataFrame(columns=A3_VS_SOFTMAX_COLUMNS)

    def per_layer(cells, key):
        return np.mean([np.asarray(b["telemetry"]["entropy"][key], dtype=float) for b in cells], axis=0)

    a3_entropy, soft_entropy = per_layer(a3, "mean_per_layer"), per_layer(soft, "mean_per_layer")
    layers = min(len(a3_entropy), len(soft_entropy))

    def head_mean(name):
        grids = [np.asarray(b["telemetry"][name], dtype=float) for b in a3 if name in b["telemetry"]]
        return np.mean(grids, axis=(0, 2)) if grids else np.full(layers, np.nan)

    gate, bias_std = head_mean("a3_gate_mean"), head_mean("a3_bias_std")
    rows = [{"layer": layer, "a3_entropy": a3_entropy[layer], "softmax_entropy": soft_entropy[layer],
             "entropy_diff": a3_entropy[layer] - soft_entropy[layer], "a3_gate_mean": gate[layer],
             "a3_gate_init": A3_GATE_INIT, "a3_bias_std": bias_std[layer],
             "a3_lr": format_lr(a3[0]["lr"]), "softmax_lr": format_lr(soft[0]["lr"]),
             "a3_seeds": " ".join(str(b["seed"]) for b in a3),
             "softmax_seeds": " ".join(str(b["seed"]) for b in soft)} for layer in range(layers)]
    return pd.DataFrame(rows, columns=A3_VS_SOFTMAX_COLUMNS)


def mass_by_correctness(folder: Path) -> tuple[float, float]:
    """Mean kernel row mass (over layers and heads, as the AUROC ranks it) of correct and of wrong tokens."""
    arrays = read_arrays(folder, "telemetry.npz")
    mass = np.asarray(arrays["mass"], dtype=float).ravel()
    correct = np.asarray(arrays["correct"]).astype(bool).ravel()
    return (float(mass[correct].mean()) if correct.any() else float("nan"),
            float(mass[~correct].mean()) if (~correct).any() else float("nan"))


def _at(grid_values, layer, head):
    return float(grid_values[layer][head]) if grid_values is not None else np.nan


SEED_MEAN_LABEL = "mean over layers of max score, per seed (range over seeds)"


def _score_display(score: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for variant, cells in score.groupby("variant", sort=False):
        per_seed = cells.groupby("seed")[SEED_MEAN_OVER_LAYERS].first()
        rows.append({"variant": variant, "LR": format_lr(cells.lr.iloc[0]),
                     SEED_MEAN_LABEL: f"{per_seed.min():,.4g} – {per_seed.max():,.4g}",
                     "max score": f"{cells.max_score.max():,.6g}"})
    return pd.DataFrame(rows, columns=["variant", "LR", SEED_MEAN_LABEL, "max score"])


def _auroc_display(auroc: pd.DataFrame) -> pd.DataFrame:
    rows = [{"variant": v, "LR": format_lr(cells.lr.iloc[0]),
             "AUROC per seed": ", ".join(f"{x:.3f}" for x in cells.mass_auroc),
             "AUROC mean": f"{cells.mass_auroc.mean():.3f}",
             "mass, correct (per seed)": ", ".join(f"{x:,.4g}" for x in cells.mass_correct_mean),
             "mass, wrong (per seed)": ", ".join(f"{x:,.4g}" for x in cells.mass_wrong_mean)}
            for v, cells in auroc.groupby("variant", sort=False)]
    return pd.DataFrame(rows, columns=["variant", "LR", "AUROC per seed", "AUROC mean", "mass, correct (per seed)",
                                       "mass, wrong (per seed)"])


def _mean_by_variant(df: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    return df.groupby("variant", sort=False)[columns].mean().reset_index()


def _scalars_display(scalars: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (variant, name), cells in scalars.groupby(["variant", "scalar"], sort=False):
        mean = cells.groupby(["layer", "head"]).value.mean()
        rows.append({"variant": variant, "scalar": name, "min": mean.min(), "max": mean.max(),
                     "per layer x head (seed mean)": "; ".join(
                         " ".join(f"{mean[(layer, h)]:.2f}" for h in sorted(mean[layer].index))
                         for layer in sorted(mean.index.get_level_values(0).unique()))})
    return pd.DataFrame(rows, columns=["variant", "scalar", "min", "max", "per layer x head (seed mean)"])


def _gates_display(gates: pd.DataFrame) -> pd.DataFrame:
    a3 = gates[gates.variant == "a3"]
    soft = gates[gates.variant == "softmax"].groupby("layer").entropy.mean()
    rows = []
    for layer, cells in a3.groupby("layer"):
        rows.append({"layer": layer, "gate mean": cells.gate_mean.mean(),
                     "gate spread over heads": cells.groupby("head").gate_mean.mean().std(ddof=0),
                     "gate std over tokens": cells.gate_std.mean(),
                     "a3 entropy": cells.entropy.mean(), "softmax entropy": soft.get(layer, np.nan)})
    return pd.DataFrame(rows, columns=["layer", "gate mean", "gate spread over heads", "gate std over tokens",
                                       "a3 entropy", "softmax entropy"])


def _human(value):
    """Readable text for a table cell: 4 decimals, thousands separators for large values."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (float, np.floating)):
        return value
    if not np.isfinite(value):
        return "–" if np.isnan(value) else str(value)
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if value == 0 or abs(value) >= 0.01:
        return f"{value:.4f}"
    return f"{value:.3g}"


def best_lr(bundle_dirs: list[Path]) -> dict:
    """The sweep LR with the lowest mean best validation loss over the sweep seeds, among the LRs where no
    seed diverged (best_sweep_lr)."""
    runs, _ = load_runs(bundle_dirs)
    choice = best_sweep_lr(runs) if not runs.empty else None
    if choice is None:
        raise BundleError("every sweep LR had a diverged cell; no learning rate to select (lower the sweep LRs)")
    return {"variant": runs.variant.iloc[0], **choice}


def collect(bundle_dirs: list[Path], grid: dict, out_dir: Path, expected: dict | None = None) -> dict[str, pd.DataFrame]:
    """Every table from the grid's bundles; with `expected` (see check_expected), stale bundles stop it first."""
    runs, bundles = load_runs(bundle_dirs)
    _check_in_grid(bundles, grid)
    if expected is not None:
        check_expected(bundles, expected)
    out_dir = Path(out_dir)
    atomic_write_text(out_dir / "runs.csv", runs.to_csv(index=False))
    contest = contest_table(runs, grid)
    sweep = sweep_table(runs, grid)
    params = params_table(runs, grid["variants"])
    write_table(contest, out_dir / "contest", contest_display(contest))
    write_table(sweep, out_dir / "lr_sweep", sweep_display(sweep))
    best = best_lr_table(runs, grid, contest)
    write_table(best, out_dir / "best_lr", best_lr_display(best))
    write_table(params, out_dir / "params")
    normswap = normswap_table(runs, grid)
    write_table(normswap, out_dir / "normswap", normswap_display(normswap))
    temperature = a3_vs_temperature_table(runs, grid)
    write_table(temperature, out_dir / "a3_vs_temperature", a3_vs_temperature_display(temperature))
    tables = {"runs": runs, "contest": contest, "lr_sweep": sweep, "params": params, "normswap": normswap,
              "a3_vs_temperature": temperature, "best_lr": best}
    by_path = {b["path"]: b for b in bundles}
    telemetry = telemetry_tables(runs, grid, by_path)
    for name, (table, display) in telemetry.items():
        write_table(table, out_dir / name, display)
        tables[name] = table
    return tables


def read_expected(path: Path) -> dict:
    """The expectation file the Snakefile writes (see check_expected)."""
    try:
        expected = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise BundleError(f"cannot read the grid's expectation {path} ({err}); run snakemake again, "
                          "which writes it") from None
    if not (isinstance(expected, dict) and isinstance(expected.get("code"), dict)
            and isinstance(expected.get("slices"), dict)):
        raise BundleError(f"{path} is not a grid expectation (a JSON object with 'code' and 'slices'); "
                          "run snakemake again, which writes it")
    return expected


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Collect bundles into tables, or pick a sweep's best LR.")
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--grid", required=True, help="JSON grid (attnlab.core.config.grid)")
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
    args = parser.parse_args(argv)
    try:
        if args.command == "collect":
            expected = read_expected(args.expect) if args.expect is not None else None
            tables = collect(args.bundles, json.loads(args.grid), args.out, expected)
            print(tables["contest"].to_string(index=False))
        elif args.command == "check":
            bundles = check_bundles(args.bundles, read_expected(args.expect))
            print(f"{len(bundles)} bundle(s) were trained with the code and config this grid expects")
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
