"""The training process's runtime: XLA's CPU threads, the compilation cache, and dying with its parent.

Set before JAX compiles anything, by both command lines that train.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import jax

from attnlab.training.folder_lock import release_locks

COMPILE_CACHE_ENV = "JAX_COMPILATION_CACHE_DIR"  # JAX's own variable for its persistent cache
# Turns off Eigen's multi-threaded kernels; XLA's intra-op pool still spans every CPU the process may use.
SINGLE_THREAD_FLAG = "--xla_cpu_multi_thread_eigen=false"  # added once: XLA_FLAGS is part of every cache key


def configure_runtime(threads: int, compile_cache: Path | None) -> None:
    """Set XLA's CPU threading and the compilation cache before JAX starts.

    The cache (--compile-cache, else $JAX_COMPILATION_CACHE_DIR) is named by its
    resolved path. JAX writes the cache folder's name into every program's
    compile options, which are part of each entry's key, so one folder reached
    by two spellings (`results/jax-cache` from the workflow, an absolute path
    or a link from elsewhere) would otherwise hold two keys per program and
    never serve one process what another compiled.
    """
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
