"""`python benchmarks/build_time.py [WORKSPACE]`: where a finished build's wall time went.

Reads what the build left behind and measures nothing anew: Snakemake's own
log of the run (.snakemake/log/, the newest that ran a job unless --log names
one) gives each job's start and end to the second, and the training logs
under results/logs/train give each cell's phases as its trainer timed them
(start-up, set-up, compile, training, evaluation, telemetry, writing). It
prints

- the run's span, from Snakemake's start to its last job's end, and how much
  of it came before the first job (reading the Snakefile, building the DAG);
- the busy core-seconds of each kind of job and the idle ones, in job slots:
  every job is counted as the one core it declares to Snakemake (a training
  job's XLA pool in fact spreads over every usable CPU, so a lone job uses
  more than one: benchmarks/cores.py measures that; here "idle" means a slot
  with no job, not a CPU doing nothing);
- the busy cores over time, in equal slices of the span, so a stretch where
  one core waits for the other (a sweep, then its checkpoint, then the
  contest) shows as a run of ones;
- the training jobs' core-seconds split into their cells' phases, and what
  the phases do not cover (the job's own process start and imports).

Run it after `/usr/bin/time snakemake --cores all` in the same workspace.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
HEADER_DATE = re.compile(r"^\s*Date: (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")
CORES = re.compile(r"^Provided cores: (\d+)")
STARTED = re.compile(r"^(?:local)?[Jj]ob (\d+): ")
FINISHED = re.compile(r"^Finished jobid: (\d+) \(Rule: (\S+)\)")
PHASES_LINE = re.compile(r"^done .*?: best val \S+; (.*)$")
PHASE = re.compile(r"(\w+) ([\d.]+)s")


@dataclass
class Job:
    rule: str = "?"
    start: float | None = None
    end: float | None = None


def kind(rule: str) -> str:
    """A rule's kind, as the breakdown groups them."""
    if rule.startswith("train_pack") or rule == "train_cell":
        return "training"
    if rule.startswith("figure_"):
        return "figures"
    if rule.startswith(("study_", "ladder", "composability", "rungs")):
        return "studies"
    return rule


def read_log(path: Path) -> tuple[float, int, dict[str, Job]]:
    """Snakemake's start (seconds since the epoch), its cores, and every job it ran."""
    began, cores, now, jobs = None, 1, None, defaultdict(Job)
    for line in path.read_text(errors="replace").splitlines():
        if (m := HEADER_DATE.match(line)) and began is None:
            began = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").timestamp()
        elif m := CORES.match(line):
            cores = int(m.group(1))
        elif m := STAMP.match(line.strip()):
            now = datetime.strptime(" ".join(m.group(1).split()), "%a %b %d %H:%M:%S %Y").timestamp()
        elif (m := STARTED.match(line)) and now is not None:
            jobs[m.group(1)].start = now
        elif (m := FINISHED.match(line)) and now is not None:
            jobs[m.group(1)].end, jobs[m.group(1)].rule = now, m.group(2)
    if began is None:
        raise SystemExit(f"{path} is not a Snakemake run log (no 'Date:' line in its header)")
    return began, cores, {k: j for k, j in jobs.items() if j.start is not None and j.end is not None}


def phases(train_logs: Path, since: float) -> dict[str, float]:
    """Each phase's seconds over every cell whose training log was written during this run."""
    total = defaultdict(float)
    for log in sorted(train_logs.glob("**/*.log")):
        if log.stat().st_mtime < since:
            continue
        for line in log.read_text(errors="replace").splitlines():
            if m := PHASES_LINE.match(line):
                for name, seconds in PHASE.findall(m.group(1)):
                    total[name] += float(seconds)
    return dict(total)


def timeline(jobs: list[Job], start: float, end: float, slices: int) -> list[float]:
    """The mean number of busy cores in each of `slices` equal slices of [start, end]."""
    width = max(end - start, 1e-9) / slices
    busy = [0.0] * slices
    for job in jobs:
        for i in range(slices):
            lo, hi = start + i * width, start + (i + 1) * width
            busy[i] += max(0.0, min(hi, job.end) - max(lo, job.start)) / width
    return busy


def newest_build_log(workspace: Path) -> Path:
    """The newest of the workspace's Snakemake logs that records a finished job: a later dry run, `--summary` or
    a build with nothing to do leaves a log too (sometimes an empty one), and is not the build to break down."""
    logs = sorted((workspace / ".snakemake" / "log").glob("*.snakemake.log"), reverse=True)
    for log in logs:
        if log.stat().st_size and "Finished jobid:" in log.read_text(errors="replace"):
            return log
    raise SystemExit(f"{workspace} has no Snakemake log of a build that ran a job under .snakemake/log: "
                     "run the build there first")


def report(workspace: Path, log: Path | None, slices: int) -> str:
    if log is None:
        log = newest_build_log(workspace)
    began, cores, jobs = read_log(log)
    if not jobs:
        raise SystemExit(f"{log} records no finished job: nothing to break down")
    done = list(jobs.values())
    first, last = min(j.start for j in done), max(j.end for j in done)
    span = last - began
    by_kind = defaultdict(float)
    counts = defaultdict(int)
    for job in done:
        by_kind[kind(job.rule)] += job.end - job.start
        counts[kind(job.rule)] += 1
    busy = sum(by_kind.values())
    lines = [f"run log: {log}",
             f"span: {span:.0f} s on {cores} cores ({cores * span:.0f} core-s); before the first job: "
             f"{first - began:.0f} s",
             "", f"{'jobs':<16}{'count':>6}{'core-s':>9}{'share':>8}"]
    for name, seconds in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        lines.append(f"{name:<16}{counts[name]:>6}{seconds:>9.0f}{seconds / (cores * span):>8.1%}")
    idle = max(cores * span - busy, 0.0)
    lines.append(f"{'idle':<16}{'':>6}{idle:>9.0f}{idle / (cores * span):>8.1%}")
    cells = phases(workspace / "results" / "logs" / "train", began - 1)
    if cells:
        lines += ["", "training jobs' core-seconds by phase (as each cell's trainer timed it):"]
        for name, seconds in sorted(cells.items(), key=lambda kv: -kv[1]):
            lines.append(f"  {name:<14}{seconds:>9.0f}")
        outside = by_kind.get("training", 0.0) - sum(cells.values())
        lines.append(f"  {'outside cells':<14}{outside:>9.0f}  (process start, imports, the pack's own set-up)")
    lines += ["", f"busy cores in {slices} equal slices of the span ({span / slices:.0f} s each):",
              "  " + " ".join(f"{b:.1f}" for b in timeline(done, began, last, slices))]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workspace", nargs="?", type=Path, default=Path("."))
    parser.add_argument("--log", type=Path,
                        help="a Snakemake run log (default: the workspace's newest that ran a job)")
    parser.add_argument("--slices", type=int, default=20)
    args = parser.parse_args(argv)
    print(report(args.workspace, args.log, max(args.slices, 1)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
