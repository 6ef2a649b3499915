"""The collect step: every bundle of the grid into every table of the contract, as .csv, .md and .tex.

Tables read bundles and never recompute what a bundle already holds. Nothing
is written until every bundle passed the checks (attnlab.pipeline.tables.checks),
and every table is written with exactly the columns the table contract names
(attnlab.pipeline.ground.contract).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pandas as pd

from attnlab.core.io import atomic_write_text
from attnlab.pipeline.ground import contract, intervals
from attnlab.pipeline.ground.design import Design
from attnlab.pipeline.tables.arms import a3_vs_temperature_table, normswap_table, params_table
from attnlab.pipeline.tables.catalog import catalog_table
from attnlab.pipeline.tables.checks import check_expected, check_in_grid
from attnlab.pipeline.tables.contest import best_lr_table, contest_table
from attnlab.pipeline.tables.display import display, write_table
from attnlab.pipeline.tables.runs import load_runs
from attnlab.pipeline.tables.study import built_in_study
from attnlab.pipeline.tables.sweep import sweep_table
from attnlab.pipeline.tables.telemetry import telemetry_tables
from attnlab.pipeline.ground.contest_grid import ContestGrid


def collect(bundle_dirs: list[Path], grid: ContestGrid | dict, out_dir: Path,
            expected: dict | None = None) -> dict[str, pd.DataFrame]:
    """Every table from the grid's bundles (`grid` is attnlab.pipeline.ground.grid.grid's); with `expected` (see
    checks.check_expected), stale bundles stop it first. Returns {name: table} in the contract's order."""
    grid = ContestGrid.of(grid)
    runs, bundles = load_runs(bundle_dirs)
    check_in_grid(bundles, grid)
    runs.insert(0, "study", built_in_study(runs, grid))
    if expected is not None:
        check_expected(bundles, expected)
    tables = build_tables(runs, bundles, grid)
    out_dir = Path(out_dir)
    atomic_write_text(out_dir / "runs.csv", runs.to_csv(index=False))
    with intervals_of(grid):  # a display that computes an interval computes the same kind
        for name, table in tables.items():
            if name != "runs":
                write_table(table, out_dir / name, display(name, table))
    return tables


def intervals_of(grid: ContestGrid):
    """The context every interval of these tables is computed in: where seeds were added under a design, the
    interval the rule read at the look the contest reached (attnlab.pipeline.ground.design); else the t-interval."""
    if grid.rounds_design:
        return Design.from_json(grid.rounds_design).reading()
    return contextlib.nullcontext()


def best_lr_over_sweep_seeds(runs, grid, contest):
    """The best_lr table: its comparisons pair the sweep's seeds, which no look of a contest design added, so
    they keep fixed-seed t-intervals (its contest_* columns come from the contest table, read under the design)."""
    with intervals.fixed():
        return best_lr_table(runs, grid, contest)


def build_tables(runs: pd.DataFrame, bundles: list[dict], grid: ContestGrid | dict) -> dict[str, pd.DataFrame]:
    """Every collected table of the contract, each checked against its contract columns."""
    grid = ContestGrid.of(grid)
    with intervals_of(grid):
        contest = contest_table(runs, grid)
        built = {"runs": runs, "contest": contest, "lr_sweep": sweep_table(runs, grid),
                 "best_lr": best_lr_over_sweep_seeds(runs, grid, contest), "params": params_table(runs, grid),
                 "normswap": normswap_table(runs, grid), "a3_vs_temperature": a3_vs_temperature_table(runs, grid),
                 "catalog": catalog_table(runs, grid), **telemetry_tables(runs, grid, {b["path"]: b for b in bundles})}
    for name, table in built.items():
        conforms(name, table)
    return {name: built[name] for name in contract.COLLECTED}


def conforms(name: str, table: pd.DataFrame) -> None:
    """A table has the columns its contract names, in order (an open table: at least those)."""
    spec = contract.TABLES[name]
    found = list(table.columns)
    missing = [c for c in spec.columns if c not in found]
    if (spec.open and missing and not table.empty) or (not spec.open and found != list(spec.columns)):
        raise ValueError(f"table {name} has the columns {found}, but the table contract "
                         f"(attnlab.pipeline.ground.contract) names {list(spec.columns)}; change both together")
