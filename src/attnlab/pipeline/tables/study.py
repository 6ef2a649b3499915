"""One study's tables: every cell of the study (its runs) and the best validation loss per point x variant x LR.

A study (config `studies:`) trains every variant at each point of its axes
(one combination of axis values). Its table has one row per point, variant
and LR: the best validation loss over the seeds, and two comparisons paired
by seed (attnlab.pipeline.ground.statistics) with their 95% intervals where the
study has several seeds: against the baseline variant at the same point and
LR choice, and against the same variant at the study's first point (what
moving along the axes did). The Snakemake rule hands over each cell's key
with the bundle that holds it (a cell shared with an earlier study lives in
that study's folder).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from attnlab.core.io import atomic_write_text
from attnlab.core.studies import point_text, value_text
from attnlab.pipeline.ground import intervals, statistics
from attnlab.pipeline.ground.contract import BASELINE, columns
from attnlab.core.cell_key import CellKey
from attnlab.pipeline.ground.paths import study_file
from attnlab.pipeline.ground.paths import study_runs as study_runs_path
from attnlab.pipeline.tables.display import write_table
from attnlab.pipeline.tables.runs import flatten, late_gain
from attnlab.pipeline.tables.study_cli import study_cli
from attnlab.pipeline.ground.contest_grid import ContestGrid

CELL_COLUMNS = ("variant", "lr", "seed")


def study_runs(cells: list[tuple[CellKey, dict]]) -> pd.DataFrame:
    """One row per cell of the study: study, its axis columns, variant, LR (text), seed, then every scalar of
    its bundle and whether it was still improving (as runs.csv has them), in the study's order."""
    rows = []
    for key, bundle in cells:
        scalars = flatten({k: v for k, v in bundle.items() if k not in ("files", *CELL_COLUMNS)})
        rows.append({"study": key.study, **key.axes, "variant": key.variant, "lr": key.lr, "seed": key.seed,
                     **scalars, **late_gain(bundle)})
    return pd.DataFrame(rows)


def built_in_study(runs: pd.DataFrame, grid: ContestGrid | dict) -> list[str]:
    """runs.csv's `study` column: the built-in studies each cell belongs to ('contest', 'sweep' or both,
    space-separated), from the grid's keys (attnlab.pipeline.ground.grid.grid)."""
    studies: dict[CellKey, list[str]] = {}
    for key in ContestGrid.of(grid).keys:
        studies.setdefault(CellKey.of(key.variant, key.lr, key.seed), []).append(key.study)
    return [" ".join(studies.get(CellKey.of(v, lr, s), ())) for v, lr, s in zip(runs.variant, runs.lr, runs.seed)]


def study_table(cells: list[tuple[CellKey, dict]], at_contest_lr: bool = False) -> pd.DataFrame:
    """Per point x variant x LR, in the study's order: seeds, best validation loss (mean, std ddof 0),
    divergences, parameters, and the comparisons paired by seed against the baseline at the same point
    (at its own contest LR when `at_contest_lr`, else at the same LR) and against the first point."""
    axes = list(cells[0][0].axes) if cells else []
    groups: dict[tuple, list[tuple[CellKey, dict]]] = {}
    for key, bundle in cells:
        groups.setdefault((key.point, key.variant, key.lr), []).append((key, bundle))
    first_point = cells[0][0].point if cells else ()

    def losses(point, variant, lr=None) -> dict[int, float]:
        """seed -> best validation loss of the cells that trained (a diverged cell enters no comparison)."""
        return {key.seed: float(b["best_val_loss"]) for (p, v, at), group in groups.items()
                if p == point and v == variant and (lr is None or at == lr) for key, b in group
                if not b.get("diverged")}

    rows = []
    for (point, variant, lr), group in groups.items():
        own = losses(point, variant, lr)
        versus_base = statistics.paired(own, losses(point, BASELINE, None if at_contest_lr else lr))
        versus_first = statistics.paired(own, losses(first_point, variant, lr))
        best = np.array([float(b["best_val_loss"]) for _, b in group if not b.get("diverged")] or [np.nan])
        key = group[0][0]
        rows.append({
            "study": key.study, **key.axes, "variant": variant, "lr": lr, "n_seeds": len(group),
            "seeds": " ".join(str(s) for s in sorted(k.seed for k, b in group if not b.get("diverged"))),
            "best_val_mean": best.mean(), "best_val_std": best.std(ddof=0),
            "n_diverged": sum(bool(b["diverged"]) for _, b in group), "n_params": int(group[0][1]["n_params"]),
            "delta_vs_softmax": versus_base.mean, "delta_ci_low": versus_base.low,
            "delta_ci_high": versus_base.high, "wins": versus_base.wins_text, "n_paired": versus_base.n,
            "delta_vs_first": versus_first.mean, "first_ci_low": versus_first.low,
            "first_ci_high": versus_first.high, "first_wins": versus_first.wins_text,
            "interval_note": versus_base.reason or versus_first.reason,
        })
    return pd.DataFrame(rows, columns=table_columns(axes))


def table_columns(axes: list[str]) -> list[str]:
    """The contract's study columns with the study's axis columns after `study`."""
    named = columns("study")
    return named[:1] + list(axes) + named[1:]


def study_display(table: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    """The table as the .md and .tex show it: axis values as their text, mean ± std, and each comparison as
    'delta [interval]' (the baseline's own rows and the first point's say so instead)."""
    level = f"{intervals.CONFIDENCE:.0%}"
    first = tuple(table[axes].iloc[0]) if len(table) and axes else ()

    def compared(mean, low, high, itself: str | None):
        if itself:
            return itself
        if not np.isfinite(mean):
            return "–"
        if np.isfinite(low) and np.isfinite(high):
            return f"{mean:+.4f} [{low:+.4f}, {high:+.4f}]"
        return f"{mean:+.4f} ({statistics.ONE_SEED})"

    rows = list(table.itertuples(index=False))
    at_first = [tuple(getattr(r, a) for a in axes) == first for r in rows]
    shown = pd.DataFrame({"study": table.study, **{a: table[a].map(value_text) for a in axes},
                          "variant": table.variant, "LR": table.lr, "seeds": table.n_seeds})
    shown["best-val (nats/char)"] = [f"{r.best_val_mean:.4f} ± {r.best_val_std:.4f}" for r in rows]
    shown[f"Δ vs {BASELINE} (nats) [{level} CI]"] = [
        compared(r.delta_vs_softmax, r.delta_ci_low, r.delta_ci_high, "baseline" if r.variant == BASELINE else None)
        for r in rows]
    shown[f"wins vs {BASELINE}"] = ["–" if r.variant == BASELINE else r.wins for r in rows]
    shown[f"Δ vs first point (nats) [{level} CI]"] = [
        compared(r.delta_vs_first, r.first_ci_low, r.first_ci_high, "first point" if first_row else None)
        for r, first_row in zip(rows, at_first)]
    shown["diverged"] = table.n_diverged
    return shown


def write_study(cells: list[tuple[CellKey, dict]], out_dir: Path, study: str,
                at_contest_lr: bool = False) -> pd.DataFrame:
    """runs_<name>.csv and study_<name>.csv/.md/.tex under out_dir; returns the table."""
    table = study_table(cells, at_contest_lr)
    axes = list(cells[0][0].axes) if cells else []
    atomic_write_text(Path(out_dir) / study_runs_path(study).name, study_runs(cells).to_csv(index=False))
    write_table(table, Path(out_dir) / study_file(study), study_display(table, axes))
    return table


def main(argv: list[str] | None = None) -> int:
    """`python -m attnlab.pipeline.tables.study --study JSON --expect FILE --out DIR`: one study's tables
    (attnlab.pipeline.tables.study_cli)."""
    return study_cli("One study's tables: study_<name> and runs_<name>.", _write, argv)


def _write(cells, out: Path, spec: dict) -> pd.DataFrame:
    table = write_study(cells, out, spec["name"], bool(spec.get("at_contest_lr")))
    points = dict.fromkeys(point_text(key.point) for key, _ in cells)
    print(f"study {spec['name']}: {len(cells)} cells at {', '.join(points)}")
    return table


if __name__ == "__main__":
    raise SystemExit(main())
