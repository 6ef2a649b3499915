"""Where a training process's wall time goes: start-up, set-up, compile, training, evaluation, telemetry, writing.

Recorded in bundle.json (`timings`, seconds) so that a cell's fixed cost can be
read off any bundle and the throughput benchmark can print it; never part of a
number the tables compare.
"""

from __future__ import annotations

import contextlib
import os
import time

PHASES = ("start_up", "set_up", "compile", "training", "evaluation", "telemetry", "writing")


def process_age() -> float | None:
    """Seconds since this process started (Linux /proc), or None where the system does not say."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            started_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
            return float(uptime.read().split()[0]) - started_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class Phases:
    """Seconds spent in each phase; `with phases("evaluation"): ...` adds the block's wall time to it."""

    def __init__(self, start_up: float | None = None):
        """`start_up`: the seconds before this cell began (default: this process's age, its imports and runtime
        set-up; a later cell of the same process has none)."""
        self.seconds = dict.fromkeys(PHASES, 0.0)
        age = process_age() if start_up is None else start_up
        self.seconds["start_up"] = age if age is not None else float("nan")

    @contextlib.contextmanager
    def __call__(self, phase: str):
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[phase] += time.perf_counter() - started

    def add(self, phase: str, seconds: float) -> None:
        self.seconds[phase] += seconds
