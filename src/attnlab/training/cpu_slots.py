"""A training job on CPUs no other job holds: two one-thread jobs each kept to its own CPU train about 5%
faster together than two the kernel moves between CPUs (benchmarks/cores.py).

Snakemake gives a local job a number of cores, not which ones, so a job takes free ones itself: a CPU is held
by an exclusive lock on its own file in a folder of this user's, which the kernel releases when the process
ends, however it ends, so no slot outlives its job. A job that finds too few free CPUs, or that is already
kept to its threads' worth (a SLURM allocation, taskset), runs where it was started. Where a job runs never
changes its numbers: XLA's pool is fixed (attnlab.training.runtime). Only CPU training is confined; on an
accelerator the host's threads feed the device and compile, and are left free.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path

SLOTS_ENV = "ATTNLAB_CPU_SLOTS"  # the folder of the CPUs' lock files; "off" leaves every job unconfined
_held: list[int] = []  # file descriptors of the held locks, open for the life of the process


def slots_folder() -> Path | None:
    """Where the CPUs' lock files are: $ATTNLAB_CPU_SLOTS, else a folder of this user's in the temp folder."""
    given = os.environ.get(SLOTS_ENV)
    if given == "off":
        return None
    if given:
        return Path(given)
    return Path(tempfile.gettempdir()) / f"attnlab-cpu-slots-{os.getuid()}"


def _take(folder: Path, cpu: int) -> int | None:
    """The descriptor of `cpu`'s lock, held; None if another process holds it."""
    descriptor = os.open(folder / f"cpu{cpu}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        return None
    return descriptor


def _confine_every_thread(cpus: list[int]) -> None:
    """Every thread of this process on `cpus`: XLA's pool and the job's own threads already exist by now."""
    for task in Path("/proc/self/task").iterdir():
        try:
            os.sched_setaffinity(int(task.name), cpus)
        except (ProcessLookupError, ValueError):  # a thread that ended meanwhile
            continue


def confine_to_free_cpus(threads: int) -> list[int]:
    """Keep this process and all its threads on `threads` CPUs that no other job holds; returns them, or []
    where it stays as it was (too few free, already kept to as few, no affinity on this platform)."""
    if _held or not hasattr(os, "sched_setaffinity") or not Path("/proc/self/task").is_dir():
        return []
    usable = sorted(os.sched_getaffinity(0))
    folder = slots_folder()
    if folder is None or len(usable) <= threads:
        return []
    taken: list[tuple[int, int]] = []
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        for cpu in usable:
            descriptor = _take(folder, cpu)
            if descriptor is not None:
                taken.append((cpu, descriptor))
                if len(taken) == threads:
                    break
    except OSError:  # a folder it cannot write: run unconfined, as before
        pass
    if len(taken) < threads:
        for _, descriptor in taken:
            os.close(descriptor)
        return []
    cpus = [cpu for cpu, _ in taken]
    _confine_every_thread(cpus)
    _held.extend(descriptor for _, descriptor in taken)
    return cpus
