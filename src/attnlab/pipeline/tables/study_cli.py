"""The one command line of every step that reads a study's cells: a study's tables, the ladder's, its claims.

`--study JSON --expect FILE --out DIR`: --study is {"name", "at_contest_lr":
bool, "cells": [[cell key, bundle folder], ...]} (attnlab.pipeline.plan.rules
builds it); every bundle is checked against --expect, the grid's expectation
of each folder, before anything is written. A bundle that fails its checks is
an error naming it (exit 2), not a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from attnlab.core.bundle_format import BundleError
from attnlab.core.cell_key import CellKey
from attnlab.pipeline.tables.checks import check_bundles, read_expected


def read_cells(spec: dict, expect: Path) -> list[tuple[CellKey, dict]]:
    """The study spec's cells, each with its checked bundle."""
    folders = list(dict.fromkeys(folder for _, folder in spec["cells"]))
    bundles = dict(zip(folders, check_bundles([Path(f) for f in folders], read_expected(expect))))
    return [(CellKey.from_json(key), bundles[folder]) for key, folder in spec["cells"]]


def study_cli(description: str, build, argv: list[str] | None = None) -> int:
    """Read the study's checked cells, then build(cells, tables folder, spec) writes the step's tables and returns
    the one to print."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--study", required=True, help="JSON: the study's name and cells")
    parser.add_argument("--expect", required=True, type=Path, help="the grid's expectation of every bundle")
    parser.add_argument("--out", required=True, type=Path, help="the tables folder")
    args = parser.parse_args(argv)
    spec = json.loads(args.study)
    try:  # building reads each cell's curve too (whether it was still improving)
        table = build(read_cells(spec, args.expect), args.out, spec)
    except BundleError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    with pd.option_context("display.width", 250, "display.max_columns", 40, "display.max_colwidth", 60):
        print(table.to_string(index=False))
    return 0
