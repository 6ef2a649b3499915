"""Every check of the ledger at each point of the scale ladder: does a claim hold at this size?

Each point of the ladder (a rung at one training length) is a small contest
of its own: every variant at its ladder LR, the ladder's seeds. Its cells go
through the same collect step as a build's contest (attnlab.pipeline.tables.collect)
and every check of the ledger runs on those tables, so a verdict at a rung
means exactly what it means in the ledger. A check the ladder cannot express
(an LR sweep, the composability study) is not testable at any rung.

`python -m attnlab.pipeline.claims.ladder_points --study JSON --expect FILE --out DIR` writes ladder_claims.csv (.md,
.tex); --study is the ladder study's spec (attnlab.pipeline.tables.ladder).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pandas as pd

from attnlab.pipeline.ground import contract
from attnlab.pipeline.claims.common import published
from attnlab.pipeline.claims.ledger import CHECKS
from attnlab.core.cell_key import CellKey
from attnlab.pipeline.tables.collect import build_tables
from attnlab.pipeline.tables.ladder import (LADDER_PROTOCOL, STEPS, axis_columns, cell_frame, length_text,
                                            params_text)
from attnlab.pipeline.tables.study_cli import study_cli
from attnlab.pipeline.tables.runs import flatten, late_gain
from attnlab.pipeline.tables.display import write_table


def rung_protocol(protocol: str, rung: int, n_params: int, length: str) -> str:
    """'ladder (scale ladder rung 4: 818 k parameters, 1,000 steps)': what a verdict at one point was measured at
    (length: attnlab.pipeline.tables.ladder.length_text of the point's cells)."""
    return f"{protocol} ({LADDER_PROTOCOL} rung {rung}: {params_text(n_params)} parameters, {length})"


def point_grid(cells: list[tuple[CellKey, dict]], protocol: str) -> dict:
    """The collect step's grid of one point: a contest of every variant at its LR over the point's seeds, no
    sweep."""
    variants = list(dict.fromkeys(cell.variant for cell, _ in cells))
    return {"cells": sorted({(c.variant, c.lr_value, c.seed) for c, _ in cells}),
            "contest_lr": {c.variant: c.lr_value for c, _ in cells}, "auto": [],
            "contest_seeds": sorted({c.seed for c, _ in cells}), "sweep_lrs": [], "sweep_seed": None,
            "sweep_seeds": [], "variants": variants, "protocol": protocol}


def point_tables(cells: list[tuple[CellKey, dict]], protocol: str) -> dict[str, pd.DataFrame]:
    """Every collected table of one point's cells, as the ledger reads a build's (runs.csv's `study` column
    names the ladder)."""
    bundles = [bundle for _, bundle in cells]
    rows = [{"study": cell.study, **flatten({k: v for k, v in b.items() if k != "files"}), **late_gain(b)}
            for cell, b in cells]
    runs = pd.DataFrame(rows).sort_values(["variant", "lr", "seed"]).reset_index(drop=True)
    return build_tables(runs, bundles, point_grid(cells, protocol))


def rung_claims(cells: list[tuple[CellKey, dict]], protocol: str, pub: dict | None = None) -> pd.DataFrame:
    """ladder_claims: per point of the ladder (its rung, axis values, length and the baseline's parameter count)
    and check of the ledger, that check's verdict on the point's cells alone."""
    pub = pub or published()
    frame = cell_frame(cells)
    if frame.empty:
        return pd.DataFrame(columns=claims_columns([]))
    axes = [c for c in axis_columns(cells) if c != STEPS]
    rows = []
    for _, at_point in frame.groupby(["rung", STEPS], sort=True):
        where = at_point.iloc[0]
        base = at_point[at_point.variant == contract.BASELINE]
        n_params = int((base if len(base) else at_point).n_params.min())
        at = rung_protocol(protocol, int(where.rung), n_params, length_text(at_point))
        tables = point_tables([cells[i] for i in at_point.index], at)
        for check in CHECKS:
            claim = check(tables, pub, at)
            rows.append({"rung": int(where.rung), **{a: where[a] for a in axes}, STEPS: int(where[STEPS]),
                         "n_params": n_params, "series": where.series, "check": check.__name__,
                         **{k: v for k, v in asdict(claim).items() if k in (
                             "source", "claim", "quote", "verdict", "measured", "interval", "seeds", "lean",
                             "outcome", "off_protocol", "lean_side")},
                         "protocol": at})
    table = pd.DataFrame(rows, columns=claims_columns(axes))
    order = {check.__name__: i for i, check in enumerate(CHECKS)}
    return (table.assign(_c=table.check.map(order)).sort_values(["rung", STEPS, "_c"], kind="stable")
            .drop(columns="_c").reset_index(drop=True))


def claims_columns(axes: list[str]) -> list[str]:
    """The contract's ladder_claims columns with the ladder's axis columns after `rung`."""
    named = contract.columns("ladder_claims")
    return named[:1] + [a for a in axes if a not in named] + named[1:]


def claims_display(table: pd.DataFrame) -> pd.DataFrame:
    """For reading: one row per check, one column per point (its verdict word; the protocol is the column's)."""
    if table.empty:
        return pd.DataFrame(columns=["claim"])
    label = table.apply(lambda r: f"rung {r.rung} ({params_text(r.n_params)}, {r[STEPS]:,} steps)", axis=1)
    words = table.outcome
    wide = table.assign(point=label, word=words).pivot_table(index=["check", "claim"], columns="point",
                                                             values="word", aggfunc="first", sort=False)
    points = list(dict.fromkeys(label))
    return wide.reset_index()[["claim", *points]]


def write_rung_claims(cells: list[tuple[CellKey, dict]], out_dir: Path) -> pd.DataFrame:
    """ladder_claims.csv/.md/.tex under out_dir; returns the table as it reads."""
    protocol = str(cells[0][1]["config"].get("name", "")) if cells else ""
    table = rung_claims(cells, protocol)
    shown = claims_display(table)
    write_table(table, out_dir / "ladder_claims", shown)
    return shown


def main(argv: list[str] | None = None) -> int:
    return study_cli("Every check of the ledger at each point of the scale ladder.",
                     lambda cells, out, _spec: write_rung_claims(cells, out), argv)


if __name__ == "__main__":
    raise SystemExit(main())
