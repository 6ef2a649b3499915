"""`python -m attnlab.pipeline.plan.write_expected`: write one expectation file (attnlab.pipeline.plan.expectation).

The content is worked out again from the config file, exactly as the plan that
named the file worked it out, and written only when its digest is the one in
the file's name: a config or code edited while the build ran is refused, with
the fix, instead of being recorded under the old name.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from attnlab.core.errors import ConfigError
from attnlab.core.io import atomic_write_text
from attnlab.core.studies import CONTEST, SWEEP
from attnlab.pipeline.plan import expectation
from attnlab.pipeline.plan.rules import Plan

SRC = Path(__file__).resolve().parents[3]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, type=Path, help="the config file the build reads")
    parser.add_argument("--out", required=True, type=Path, help="the expectation file to write")
    args = parser.parse_args(argv)
    name, _, wanted = args.out.stem.rpartition("-")
    try:
        plan = Plan(args.config, SRC)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    studies = (CONTEST, SWEEP) if name == expectation.RUNS else (name,)
    content = plan.expectation_content(*studies)
    if expectation.digest(content) != wanted:
        print(f"error: {args.config} or the code changed while this build ran ({args.out.name} no longer matches "
              "them); run snakemake again", file=sys.stderr)
        return 2
    atomic_write_text(args.out, content)
    return 0


if __name__ == "__main__":
    sys.exit(main())
