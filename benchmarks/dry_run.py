"""`python benchmarks/dry_run.py`: how long a no-op `snakemake -n` takes, beside Snakemake's own floor.

A no-op dry run is what a user waits for after every edit, so its cost is a
target (at most 2 s). Snakemake alone needs time to start and build
any DAG, so the script also times `snakemake --version` and a one-rule
workflow whose output exists, interleaved run by run with the project's so
machine noise hits all three alike, and prints the medians.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from attnlab.core.cell import at_least_one

FLOOR_SNAKEFILE = """rule all:
    input: "out.txt"

rule make:
    output: "out.txt"
    params: code="fingerprint"
    shell: "echo done > {output}"
"""


def snakemake_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", *args]


def timed(cmd: list[str], cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"`{' '.join(cmd)}` failed in {cwd}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return elapsed, done.stdout + done.stderr


def floor_workflow(folder: Path) -> Path:
    """A one-rule workflow, already built: Snakemake's own cost of saying 'nothing to be done'."""
    (folder / "Snakefile").write_text(FLOOR_SNAKEFILE)
    timed(snakemake_cmd("--cores", "1", "-q"), folder)
    return folder


def check_built(workdir: Path, extra: list[str]) -> None:
    _, out = timed(snakemake_cmd("-n", *extra), workdir)
    if "Nothing to be done" not in out:
        raise SystemExit(f"{workdir} is not a built workspace (its dry run plans jobs); run "
                         f"`snakemake --cores all {' '.join(extra)}` there first, then time its no-op dry run")


def config_args(configfile: Path | None, parser: argparse.ArgumentParser) -> list[str]:
    """The config as the workflow takes it safely: `--config file=F`, which attnlab's strict loader reads. Never
    `--configfile F`: Snakemake would parse that file itself first (a YTE template in it runs as code)."""
    if configfile is None:
        return []
    if not configfile.is_file():
        parser.error(f"--configfile {configfile}: no such file; give the config the workspace was built with")
    return ["--config", f"file={configfile.resolve()}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/dry_run.py", description=__doc__)
    parser.add_argument("--dry-run", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, default=Path("."), help="a built workspace (default: here)")
    parser.add_argument("--configfile", type=Path, default=None, help="the config it was built with")
    parser.add_argument("--runs", type=at_least_one("runs", 7), default=7,
                        help="timed runs of each command (at least 1)")
    args = parser.parse_args(argv)
    if not args.workdir.is_dir():
        parser.error(f"--workdir {args.workdir}: no such folder; give a built workspace")
    extra = config_args(args.configfile, parser)
    check_built(args.workdir, extra)
    times = {"project": [], "floor": [], "version": []}
    with tempfile.TemporaryDirectory(prefix="attnlab-dry-run-floor-") as tmp:
        floor = floor_workflow(Path(tmp))
        for _ in range(args.runs):
            times["project"].append(timed(snakemake_cmd("-n", "-q", *extra), args.workdir)[0])
            times["floor"].append(timed(snakemake_cmd("-n", "-q"), floor)[0])
            times["version"].append(timed(snakemake_cmd("--version"), floor)[0])
    labels = {"project": f"no-op `snakemake -n` in {args.workdir.resolve()}",
              "floor": "no-op `snakemake -n`, one-rule workflow (Snakemake's floor)",
              "version": "`snakemake --version` (start-up only)"}
    for key, label in labels.items():
        values = times[key]
        print(f"{label}: median {statistics.median(values):.2f} s, min {min(values):.2f} s, "
              f"max {max(values):.2f} s over {len(values)} runs")
    over = statistics.median(times["project"]) - statistics.median(times["floor"])
    print(f"project over floor: {over:+.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
