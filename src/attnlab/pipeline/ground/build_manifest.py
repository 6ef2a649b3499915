"""Which of the optional tables in a results folder belong to the build that last ran there.

A results folder outlives configs: after `--configfile config/ladder.yaml`, a
plain `snakemake --cores all` leaves the ladder's tables (and any study's) on
disk. The ledger and the writeup must not report them as this build's, so the
build writes the list of its own optional tables (the composability table, the
ladder's, each study's) to `results/tables/build.json`, rewritten whenever the
config's studies change, and every reader of optional tables asks this module.

A folder without the file (one assembled by hand, or by the tests) falls back
to the tables it holds. A file that is there but is not a manifest (a folder of
that name, a truncated or hand-edited file) is refused, naming it and the fix:
the writeup checks it first and never guesses.

`python -m attnlab.pipeline.ground.build_manifest --out FILE [NAME ...]` writes the list;
`--check FILE` reads it back strictly and says in one line what is wrong.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from attnlab.core.bundle_format import BundleError
from attnlab.core.io import atomic_write_text

MANIFEST = "build.json"  # beside the tables it lists
KEY = "optional_tables"


def write(path: Path, tables: list[str]) -> None:
    atomic_write_text(Path(path), json.dumps({"optional_tables": sorted(set(tables))}, indent=1) + "\n")


def optional_tables(folder: Path) -> set[str] | None:
    """The optional tables the build that wrote `folder` has, or None when the folder has no manifest."""
    path = Path(folder) / MANIFEST
    if not path.exists() and not path.is_symlink():
        return None
    return read(path)


def read(path: Path) -> set[str]:
    """A manifest's table names, read strictly: anything but {"optional_tables": [name, ...]} is refused."""
    fix = "remove it and run snakemake again, which writes it"
    if not path.is_file():
        raise BundleError(f"{path} is not a file; {fix}")
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise BundleError(f"{path} is not a build manifest ({type(err).__name__}: {err}); {fix}") from None
    names = data.get(KEY) if isinstance(data, dict) else None
    if not (isinstance(data, dict) and set(data) == {KEY} and isinstance(names, list)
            and all(isinstance(n, str) and n for n in names)):
        raise BundleError(f"{path} is not a build manifest (a JSON object with one key, {KEY!r}, listing table "
                          f"names); {fix}")
    return set(names)


def has_table(folder: Path, name: str) -> bool:
    """Whether the build that wrote `folder` has the optional table `name` (and it is on disk)."""
    listed = optional_tables(folder)
    return (Path(folder) / f"{name}.csv").is_file() and (listed is None or name in listed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write (or check) the list of a build's optional tables.")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--out", type=Path, help="write the list here")
    action.add_argument("--check", type=Path, help="read this manifest strictly; exit 2 naming what is wrong")
    parser.add_argument("tables", nargs="*",
                        help="the optional tables' names (composability, ladder, study_<name>, ...)")
    args = parser.parse_args(argv)
    if args.check is not None:
        try:
            read(args.check)
        except BundleError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        return 0
    write(args.out, args.tables)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
