"""The one command line of every figure: `python -m attnlab.pipeline.figures.<name> --table NAME=PATH ... --out PATH`.

A figure module is two functions, load(tables, style) -> data and
draw(data, style) -> a matplotlib figure or an Animation; figure_main reads the
arguments, the tables and the style, and writes what draw returns (atomically).
Which tables each figure reads is the catalog's business
(attnlab.pipeline.ground.figure_catalog), so this module does not import it: adding
a figure to the catalog redraws no other figure.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from attnlab.core.bundle_format import BundleError
from attnlab.pipeline.figures.cells import read_table
from attnlab.pipeline.figures.gif import Animation, save_gif
from attnlab.pipeline.figures.save import save_figure
from attnlab.pipeline.figures.style import parse_style


class MissingTable(KeyError):
    """load() asked for a table the command line did not give."""

    def __str__(self) -> str:
        name = self.args[0]
        return f"this figure reads the {name} table: pass --table {name}=results/tables/{name}.csv"


class Tables(Mapping):
    """Table name -> DataFrame, each read from its path the first time a figure asks for it."""

    def __init__(self, paths: dict[str, Path]):
        self.paths, self._read = dict(paths), {}

    def __getitem__(self, name: str) -> pd.DataFrame:
        if name not in self.paths:
            raise MissingTable(name)
        if name not in self._read:
            self._read[name] = read_table(name, self.paths[name])
        return self._read[name]

    def __iter__(self):
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)


def _table_argument(text: str) -> tuple[str, Path]:
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=PATH (e.g. runs=results/tables/runs.csv)")
    return name, Path(path)


def figure_main(load, draw, argv: list[str] | None = None) -> int:
    """Parse the figure's command line, load its data, draw it and write the file (and an animation's poster)."""
    module = sys.modules.get(load.__module__)
    summary = ((module.__doc__ or "").strip().splitlines() or [""])[0] if module else ""
    parser = argparse.ArgumentParser(description=summary)
    parser.add_argument("--table", action="append", default=[], type=_table_argument, metavar="NAME=PATH",
                        help="a table this figure reads (repeat for each)")
    parser.add_argument("--style", default="{}", help="JSON of the config's `figures` section")
    parser.add_argument("--out", required=True, type=Path, help="the figure: .png, or .gif when animated")
    parser.add_argument("--poster", type=Path, help="an animation's still: a PNG of its last frame")
    args = parser.parse_args(argv)
    style = parse_style(args.style)
    try:
        drawn = draw(load(Tables(dict(args.table)), style), style)
    except MissingTable as missing:
        parser.error(str(missing))
    except BundleError as err:  # a bundle that is not what collection checked: one line, no figure
        print(f"error: {err}", file=sys.stderr)
        return 2
    if isinstance(drawn, Animation):
        if args.out.suffix != ".gif":
            parser.error(f"this figure is animated: --out {args.out} should end in .gif")
        save_gif(drawn, args.out, poster=args.poster, poster_dpi=style["dpi"])
    else:
        if args.poster is not None:
            parser.error("this figure is a still: it has no --poster")
        save_figure(drawn, args.out, style["dpi"])
    print(f"wrote {args.out}" + (f" and {args.poster}" if args.poster else ""))
    return 0
