"""`python benchmarks/cores.py`: where a build's training jobs run on this machine's CPUs, and what that costs.

A build declares one core per training job, and each job asks XLA for one
thread (`--xla_cpu_multi_thread_eigen=false`). That flag does not make the job
single-threaded: XLA's CPU client still runs an intra-op pool over every CPU the
process may use, and a lone job keeps more than one of them busy. So a build
with N jobs at once on N CPUs has N pools competing for the same CPUs.

This script times the project's training step (the default build's model
unless told otherwise) in fresh processes, started as a build starts them, four
ways:

- `alone`: one job, every CPU usable (a lone job in a build);
- `alone, 1 CPU`: one job confined to one CPU before JAX starts;
- `N at once`: N jobs, every CPU usable by each (a build's steady state);
- `N at once, own CPU`: N jobs, each confined to its own CPU.

For each it prints steps per second per job, combined, and the busy threads
(CPU seconds over wall seconds of the timed loop, per job). The confined
configurations can be faster under contention, but a build does not use them:
the CPUs XLA's threads run on change how its reductions split, and yat and
yat_b amplify the difference (see docs/performance.md), so confining jobs would
move their training numbers away from the unconfined runs they are compared with.
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


def timed_steps(config: str, variant: str, steps: int, repeats: int) -> dict[str, float]:
    """Steps per second and busy threads of the project's loop: the fastest of `repeats` runs after a warm-up."""
    import numpy as np

    from attnlab.core.config import load_config
    from attnlab.core.config_types import model_config
    from attnlab.core.constants import TINYSHAKESPEARE_VOCAB
    from benchmarks.train_step import ProjectLoop

    cfg = load_config(REPO / "config" / f"{config}.yaml")
    tokens = np.random.default_rng(0).integers(0, TINYSHAKESPEARE_VOCAB, 200_000, dtype=np.int32)
    loop = ProjectLoop(model_config(cfg, variant, TINYSHAKESPEARE_VOCAB), tokens, cfg["train"]["batch_size"],
                       max_steps=steps)
    loop.run(steps)
    best_wall, best_cpu = float("inf"), 0.0
    for _ in range(repeats):
        cpu = time.process_time()
        _, wall = loop.run(steps)
        if wall < best_wall:
            best_wall, best_cpu = wall, time.process_time() - cpu
    return {"steps/s": steps / best_wall, "busy threads": best_cpu / best_wall}


def worker(args) -> None:
    """One measuring process: confines itself if told, then waits for the shared start so N run side by side."""
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})  # before JAX starts: its pool then sees one CPU
    import jax  # noqa: F401  (started before the shared start time, as a build's job is before it trains)

    while time.time() < args.start_at:
        time.sleep(0.01)
    print(json.dumps(timed_steps(args.config, args.variant, args.steps, args.repeats)))


def side_by_side(cpus: list[int | None], args) -> list[dict[str, float]]:
    """One fresh process per entry of `cpus` (None: every CPU usable), all timed at once."""
    env = dict(os.environ, XLA_FLAGS=f"{os.environ.get('XLA_FLAGS', '')} {SINGLE_THREAD}".strip())
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    start_at = time.time() + 10.0  # every process imported and ready before any measures
    command = [sys.executable, __file__, "--worker", "--start-at", str(start_at), "--config", args.config,
               "--variant", args.variant, "--steps", str(args.steps), "--repeats", str(args.repeats)]
    procs = [subprocess.Popen(command + ([] if cpu is None else ["--cpu", str(cpu)]), env=env,
                              stdout=subprocess.PIPE, text=True) for cpu in cpus]
    outputs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        raise SystemExit("a measuring process failed (its error is above)")
    return [json.loads(out.strip().splitlines()[-1]) for out in outputs]


def configurations(n: int, usable: list[int]) -> dict[str, list[int | None]]:
    """The four ways to start jobs, by name: for each job, the CPU it is confined to (None: not confined)."""
    return {"alone": [None], "alone, 1 CPU": [usable[0]], f"{n} at once": [None] * n,
            f"{n} at once, own CPU": [usable[i % len(usable)] for i in range(n)]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    usable = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    parser.add_argument("--processes", type=int, default=len(usable) or 1,
                        help="how many jobs at once (default: the CPUs this process may use)")
    parser.add_argument("--config", default="default", help="the model size of the timed step (a config name)")
    parser.add_argument("--variant", default="softmax")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cpu", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--start-at", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    if not usable:
        raise SystemExit("this platform cannot confine a process to a CPU (no os.sched_setaffinity); "
                         "run this benchmark on Linux")
    if args.processes < 1:
        raise SystemExit(f"--processes {args.processes}: give 1 or more")
    print(f"{args.config} {args.variant}, {args.steps} steps a run, {len(usable)} usable CPUs")
    print(f"{'jobs':<22}{'steps/s each':>14}{'combined':>10}{'busy threads each':>19}")
    for name, cpus in configurations(args.processes, usable).items():
        rates = side_by_side(cpus, args)
        each = sum(r["steps/s"] for r in rates) / len(rates)
        busy = sum(r["busy threads"] for r in rates) / len(rates)
        print(f"{name:<22}{each:>14.1f}{each * len(rates):>10.1f}{busy:>19.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
