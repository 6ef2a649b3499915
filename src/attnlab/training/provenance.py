"""Where a trained cell came from: git commit, packages, platform, device, scheduler job (asks JAX for the device)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

from attnlab.core.packages import installed_versions
from attnlab.training.runtime import cpu_pool

PACKAGES = ("jax", "jaxlib", "flax", "optax", "orbax-checkpoint", "numpy", "pandas", "snakemake")


def git_state(start: Path | None = None) -> dict:
    where = Path(start or Path(__file__).resolve().parent)
    def git(*args):
        return subprocess.run(["git", *args], cwd=where, capture_output=True, text=True, timeout=10)
    try:
        head = git("rev-parse", "HEAD")
        if head.returncode != 0:
            return {"commit": None, "dirty": None}
        dirty = git("status", "--porcelain", "--untracked-files=no")
        return {"commit": head.stdout.strip(), "dirty": bool(dirty.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def package_versions() -> dict:
    """{name: version} of PACKAGES, None for one that is not installed."""
    found = installed_versions(PACKAGES)
    return {name: found.get(name) for name in PACKAGES}


def usable_cpus() -> int:
    """The CPUs this process may run on. With the pool fixed (`cpu_pool`) they set only the speed, not the
    numbers; without it XLA's pool spreads over all of them and yat_b's numbers moved with their count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows: no affinity call; every CPU is usable
        return os.cpu_count() or 1


def collect() -> dict:
    import jax

    device = jax.devices()[0]
    return {
        "git": git_state(),
        "packages": package_versions(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "hostname": platform.node(),
        "device": {"platform": device.platform, "kind": device.device_kind, "count": jax.device_count(),
                   "host_cpus": usable_cpus(), "cpu_pool": cpu_pool()},
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "gpu_memory_fraction": os.environ.get("XLA_PYTHON_CLIENT_MEM_FRACTION"),  # None: JAX's default share
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
    }
