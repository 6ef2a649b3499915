"""The training process's runtime: XLA's CPU thread pool, the compilation cache, and dying with its parent.

Set before JAX starts its backend, by both command lines that train.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import jax

from attnlab.training.cpu_slots import SLOTS_ENV, confine_to_free_cpus
from attnlab.training.files.folder_lock import release_locks

COMPILE_CACHE_ENV = "JAX_COMPILATION_CACHE_DIR"  # JAX's own variable for its persistent cache
# Turns off Eigen's multi-threaded kernels; XLA's intra-op pool is sized by POOL_ENV below.
SINGLE_THREAD_FLAG = "--xla_cpu_multi_thread_eigen=false"  # added once: XLA_FLAGS is part of every cache key
# XLA's CPU client sizes its intra-op thread pool from this variable when it is set, and otherwise from the
# CPUs the process may run on. How a matrix product's work is split over that pool decides the order of its
# sums, so an unset pool made a cell's numbers depend on the host (a 1000-step default yat_b cell: 1.9239 on two
# CPUs, 1.9146 on one); a pool of the declared size gives the same numbers on any number of CPUs.
POOL_ENV = "PJRT_NPROC"


class RuntimeStartedError(RuntimeError):
    """JAX's backend already exists, so the thread pool can no longer be set."""


def fix_cpu_pool(threads: int) -> None:
    """Give XLA's CPU client a pool of exactly `threads` threads, whatever the host; before JAX's backend starts."""
    from jax._src import xla_bridge

    wanted = str(int(threads))
    if xla_bridge.backends_are_initialized() and os.environ.get(POOL_ENV) != wanted:
        raise RuntimeStartedError(f"JAX's backend started before its CPU pool was set to {wanted} thread(s) "
                                  f"({POOL_ENV}={os.environ.get(POOL_ENV)!r}); set the pool before any JAX call")
    os.environ[POOL_ENV] = wanted


def settle_on_cpus(threads: int, log=print) -> None:
    """On a CPU backend, keep the job on `threads` CPUs no other job holds (attnlab.training.cpu_slots): faster
    beside other jobs, and the same numbers, since the pool is fixed. Call it once JAX's backend is up."""
    if jax.default_backend() != "cpu":
        return
    cpus = confine_to_free_cpus(threads)
    if cpus:
        log(f"training on CPU {', '.join(map(str, cpus))} (held for this job; {SLOTS_ENV}=off leaves jobs free)")


def cpu_pool() -> int | None:
    """The intra-op pool this process's XLA CPU client was given (None: unset, so as many as its CPUs)."""
    value = os.environ.get(POOL_ENV, "")
    return int(value) if value.isdigit() else None


def configure_runtime(threads: int, compile_cache: Path | None) -> None:
    """Set XLA's CPU pool (`threads` threads on any host) and the compilation cache before JAX starts.

    The cache (--compile-cache, else $JAX_COMPILATION_CACHE_DIR) is named by its
    resolved path. JAX writes the cache folder's name into every program's
    compile options, which are part of each entry's key, so one folder reached
    by two spellings (`results/jax-cache` from the workflow, an absolute path
    or a link from elsewhere) would otherwise hold two keys per program and
    never serve one process what another compiled.
    """
    fix_cpu_pool(threads)
    flags = os.environ.get("XLA_FLAGS", "")
    if threads == 1 and SINGLE_THREAD_FLAG not in flags.split():
        os.environ["XLA_FLAGS"] = f"{flags} {SINGLE_THREAD_FLAG}".strip()
    cache = compile_cache if compile_cache is not None else os.environ.get(COMPILE_CACHE_ENV)
    if cache:
        jax.config.update("jax_compilation_cache_dir", str(Path(cache).resolve()))
    if compile_cache is not None:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def exit_with_parent(pid: int, poll_s: float = 1.0) -> None:
    """Die with the Snakemake that started this job, so no orphan trainer writes a bundle later.

    A daemon thread polls the process; checkpoints already written stay for
    the rerun to resume from.
    """
    def watch():
        while True:
            time.sleep(poll_s)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                print(f"the parent process {pid} is gone; stopping this training job", file=sys.stderr, flush=True)
                release_locks()  # os._exit runs no `finally`
                os._exit(3)
            except PermissionError:
                pass  # alive, owned by someone else

    threading.Thread(target=watch, daemon=True, name="exit-with-parent").start()
