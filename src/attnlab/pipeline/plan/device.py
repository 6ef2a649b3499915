"""The GPU this machine offers training jobs, as the planning sees it without JAX: nvidia-smi, or a stated list.

Training jobs on a GPU claim Snakemake's `gpu` resource, and the build allows
execution.jobs_per_gpu of them at once, each preallocating its share of the
card (XLA_PYTHON_CLIENT_MEM_FRACTION); by default every JAX process would take
75% of it and the second would fail. Only the first GPU is shared out: JAX
trains on the first device it sees, so on a machine with several GPUs run one
build per GPU (CUDA_VISIBLE_DEVICES=i) or use a cluster profile.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import lru_cache

from attnlab.core.errors import ConfigError

GPUS_ENV = "ATTNLAB_GPUS"  # the GPUs' memory in MiB, comma-separated ("" or "0": none): overrides detection
MEM_FRACTION_ENV = "XLA_PYTHON_CLIENT_MEM_FRACTION"  # JAX's share of the GPU's memory it preallocates
MAX_GPU_MIB = 1 << 24  # 16 TiB: far beyond any card, so a larger figure is a typing slip
SHARED = 0.9  # the share of the card the jobs split between them (the rest: the driver, other processes)


def parse_gpus(text: str) -> tuple[int, ...]:
    """'81559, 81559' -> (81559, 81559): each GPU's memory in MiB; '' or '0' -> no GPU."""
    values = [part.strip() for part in text.split(",") if part.strip()]
    if values in ([], ["0"]):
        return ()
    # ASCII digits only: int() would also take '1_000' and other scripts' digits
    if not all(v.isascii() and v.isdigit() for v in values):
        raise ConfigError(f"{GPUS_ENV}={text!r}: give each GPU's memory in MiB, comma-separated (e.g. 81559), or 0 "
                          "for none")
    memory = tuple(int(v) for v in values)
    if any(m <= 0 or m > MAX_GPU_MIB for m in memory):
        raise ConfigError(f"{GPUS_ENV}={text!r}: a GPU's memory is a positive number of MiB, at most "
                          f"{MAX_GPU_MIB:,} (16 TiB)")
    return memory


@lru_cache(maxsize=1)
def detected_gpus() -> tuple[int, ...]:
    """Each visible GPU's memory in MiB, from nvidia-smi (none when it is absent or CUDA_VISIBLE_DEVICES is '')."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") == "" or shutil.which("nvidia-smi") is None:
        return ()
    try:
        result = subprocess.run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                                capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return ()
    if result.returncode != 0:
        return ()
    try:
        return parse_gpus(",".join(result.stdout.split()))
    except ConfigError:
        return ()


def gpus() -> tuple[int, ...]:
    """The GPUs training may use: ATTNLAB_GPUS when set (to simulate a machine or to override), else detected."""
    stated = os.environ.get(GPUS_ENV)
    return parse_gpus(stated) if stated is not None else detected_gpus()


def memory_fraction(jobs_per_gpu: int) -> float:
    """The share of the GPU's memory each of jobs_per_gpu jobs preallocates."""
    return round(SHARED / jobs_per_gpu, 4)
