"""`python benchmarks/cores.py`: how much two training jobs at once gain over one, on this machine.

A build runs one training job per core, each on one XLA thread. Whether two
jobs finish in the time of one depends on whether the cores share their
floating-point units or caches (virtual CPUs that are hyper-threads of one
host core do). This script measures it in one run, with fresh processes as a
build starts them, each pinned to one thread:

- a single-threaded fp32 matrix multiply (the shapes of the default model's
  MLP and a large square one), alone and with N copies at once;
- the project's training step at a config's model size (default: the default
  build's), one process alone and N at once.

For each it prints the rate per process and the *effective cores*: the
combined rate of N processes over one alone (N on N independent cores, about
1 where they share one core's arithmetic). A build's training time on this
machine is its cells' steps over (effective cores x the step rate alone).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SINGLE_THREAD = "--xla_cpu_multi_thread_eigen=false"  # as attnlab.training.runtime sets it for a 1-thread job
GEMM_SHAPES = ((2048, 64, 256), (2048, 256, 64), (1024, 1024, 1024))


def gemm_rates(repeats: int) -> dict[str, float]:
    """GFLOP/s of one thread on each shape; each product depends on the last, so none is hoisted or skipped."""
    import jax
    import jax.numpy as jnp

    rates = {}
    for m, k, n in GEMM_SHAPES:
        a, b = jnp.ones((m, k)) * 1e-3, jnp.ones((k, n)) * 1e-3
        loop = jax.jit(lambda a, b: jax.lax.fori_loop(0, 20, lambda i, c: c + ((a + c) @ b)[0, 0], 0.0))
        loop(a, b).block_until_ready()
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            loop(a, b).block_until_ready()
            best = min(best, time.perf_counter() - start)
        rates[f"gemm {m}x{k}x{n}"] = 2 * m * k * n * 20 / best / 1e9
    return rates


def step_rate(config: str, variant: str, steps: int, repeats: int) -> dict[str, float]:
    """Training steps per second of the project's loop at the config's model size."""
    import numpy as np

    from attnlab.core.config import load_config
    from attnlab.core.config_types import model_config
    from attnlab.core.constants import TINYSHAKESPEARE_VOCAB
    from benchmarks.train_step import ProjectLoop, best_time

    cfg = load_config(REPO / "config" / f"{config}.yaml")
    tokens = np.random.default_rng(0).integers(0, TINYSHAKESPEARE_VOCAB, 200_000, dtype=np.int32)
    loop = ProjectLoop(model_config(cfg, variant, TINYSHAKESPEARE_VOCAB), tokens, cfg["train"]["batch_size"],
                       max_steps=steps)
    return {f"{config} {variant} steps/s": steps / best_time(loop, steps, repeats)}


def worker(args) -> None:
    """One measuring process: waits for the shared start time, so N of them run side by side."""
    while time.time() < args.start_at:
        time.sleep(0.01)
    rates = gemm_rates(args.repeats)
    rates.update(step_rate(args.config, args.variant, args.steps, args.repeats))
    print(json.dumps(rates))


def run_side_by_side(n: int, args) -> list[dict[str, float]]:
    env = dict(os.environ, XLA_FLAGS=f"{os.environ.get('XLA_FLAGS', '')} {SINGLE_THREAD}".strip())
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    start_at = time.time() + 8.0  # every process imported and ready before any measures
    command = [sys.executable, __file__, "--worker", "--start-at", str(start_at), "--config", args.config,
               "--variant", args.variant, "--steps", str(args.steps), "--repeats", str(args.repeats)]
    procs = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True) for _ in range(n)]
    outputs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        raise SystemExit("a measuring process failed (its error is above)")
    return [json.loads(out.strip().splitlines()[-1]) for out in outputs]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1,
                        help="how many at once (default: this machine's CPUs)")
    parser.add_argument("--config", default="default", help="the model size of the timed step (a config name)")
    parser.add_argument("--variant", default="softmax")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--start-at", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    alone = run_side_by_side(1, args)[0]
    together = run_side_by_side(args.processes, args)
    print(f"{'measure':<34}{'alone':>10}{'each, ' + str(args.processes) + ' at once':>20}{'effective cores':>17}")
    for name, rate in alone.items():
        each = [t[name] for t in together]
        print(f"{name:<34}{rate:>10.1f}{sum(each) / len(each):>20.1f}{sum(each) / rate:>17.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
