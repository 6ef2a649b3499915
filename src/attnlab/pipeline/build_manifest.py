"""Which of the optional tables in a results folder belong to the build that last ran there.

A results folder outlives configs: after `--configfile config/ladder.yaml`, a
plain `snakemake --cores all` leaves the ladder's tables (and any study's) on
disk. The ledger and the writeup must not report them as this build's, so the
build writes the list of its own optional tables (the composability table, the
ladder's, each study's) to `results/tables/build.json`, rewritten whenever the
config's studies change, and every reader of optional tables asks this module.

A folder without the file (one assembled by hand, or by the tests) falls back
to the tables it holds.

`python -m attnlab.pipeline.build_manifest --out FILE [NAME ...]` writes the list.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from attnlab.core.io import atomic_write_text

MANIFEST = "build.json"  # beside the tables it lists


def write(path: Path, tables: list[str]) -> None:
    atomic_write_text(Path(path), json.dumps({"optional_tables": sorted(set(tables))}, indent=1) + "\n")


def optional_tables(folder: Path) -> set[str] | None:
    """The optional tables the build that wrote `folder` has, or None when the folder has no manifest."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return None
    return set(json.loads(path.read_text())["optional_tables"])


def has_table(folder: Path, name: str) -> bool:
    """Whether the build that wrote `folder` has the optional table `name` (and it is on disk)."""
    listed = optional_tables(folder)
    return (Path(folder) / f"{name}.csv").is_file() and (listed is None or name in listed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the list of a build's optional tables.")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("tables", nargs="*",
                        help="the optional tables' names (composability, ladder, study_<name>, ...)")
    args = parser.parse_args(argv)
    write(args.out, args.tables)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
