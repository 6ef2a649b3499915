"""`python benchmarks/cores.py`: where a build's training jobs run on this machine's CPUs, and what that costs.

A build declares one core per training job, and each job gives XLA's CPU
client a pool of one thread (attnlab.training.runtime: `PJRT_NPROC`, and
`--xla_cpu_multi_thread_eigen=false`), so a cell's numbers do not depend on
how many CPUs the job may use. Whether a job is also confined to one CPU sets
only its speed.

This script times the project's training step (the default build's model
unless told otherwise) in fresh processes, started as a build starts them, four
ways:

- `alone`: one job, every CPU usable (a lone job in a build);
- `alone, 1 CPU`: one job confined to one CPU before JAX starts;
- `N at once`: N jobs, every CPU usable by each (a build's steady state);
- `N at once, own CPU`: N jobs, each confined to its own CPU (a SLURM job on a
  cluster that confines its tasks).

For each it prints steps per second per job, combined, and the busy threads
(CPU seconds over wall seconds of the timed loop, per job): the median of
`--repeats` timed runs, every job's runs taken while all the others train.
`--unfixed-pool` leaves the pool unset, as builds before the fixed pool ran:
XLA then sizes it by the CPUs the process may use, a lone job keeps more than
one CPU busy, and yat_b's numbers move with the CPU count (docs/running.md).
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


def prepared_loop(config: str, variant: str, steps: int):
    """The project's training loop for `config`'s model, compiled and run once (the warm-up)."""
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
    return loop


def worker(args) -> None:
    """One measuring process. It confines itself if told (before JAX starts, so XLA's pool sees that CPU
    alone), compiles and warms up, says so and waits for the parent's go, so that N processes time their
    steps side by side and never beside another's compilation. It prints the median of its timed runs and
    then keeps training until the parent stops it, so every process is timed under the same contention
    however fast each finishes."""
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    from attnlab.training.runtime import fix_cpu_pool

    if not args.unfixed_pool:
        fix_cpu_pool(1)  # as a one-thread training job does
    loop = prepared_loop(args.config, args.variant, args.steps)
    print("ready", flush=True)
    sys.stdin.readline()
    runs = []  # (wall seconds, busy threads) of each timed run
    for _ in range(args.repeats):
        cpu = time.process_time()
        _, wall = loop.run(args.steps)
        runs.append((wall, (time.process_time() - cpu) / wall))
    wall, busy = sorted(runs)[len(runs) // 2]  # the median run by wall time
    print(json.dumps({"steps/s": args.steps / wall, "busy threads": busy}), flush=True)
    while True:  # load for the others until stopped
        loop.run(args.steps)


def side_by_side(cpus: list[int | None], args) -> list[dict[str, float]]:
    """One fresh process per entry of `cpus` (None: every CPU usable), all timed at once."""
    from attnlab.training.runtime import POOL_ENV, SINGLE_THREAD_FLAG

    env = dict(os.environ, XLA_FLAGS=f"{os.environ.get('XLA_FLAGS', '')} {SINGLE_THREAD_FLAG}".strip())
    env.pop(POOL_ENV, None)  # the worker sets the pool itself, or (--unfixed-pool) leaves it to XLA
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    command = [sys.executable, __file__, "--worker", "--config", args.config, "--variant", args.variant,
               "--steps", str(args.steps), "--repeats", str(args.repeats)] + (["--unfixed-pool"] if args.unfixed_pool
                                                                             else [])
    procs = [subprocess.Popen(command + ([] if cpu is None else ["--cpu", str(cpu)]), env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for cpu in cpus]
    try:
        for proc in procs:
            if proc.stdout.readline().strip() != "ready":
                raise SystemExit("a measuring process failed before timing (its error is above)")
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        lines = [proc.stdout.readline() for proc in procs]
        if not all(lines):
            raise SystemExit("a measuring process failed while timing (its error is above)")
        return [json.loads(line) for line in lines]
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def configurations(n: int, usable: list[int]) -> dict[str, list[int | None]]:
    """The four ways to start jobs, by name: for each job, the CPU it is confined to (None: not confined)."""
    pinned = f"{n} at once, own CPU" if n <= len(usable) else f"{n} at once, pinned over {len(usable)} CPUs"
    return {"alone": [None], "alone, 1 CPU": [usable[0]], f"{n} at once": [None] * n,
            pinned: [usable[i % len(usable)] for i in range(n)]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    usable = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    parser.add_argument("--processes", type=int, default=len(usable) or 1,
                        help="how many jobs at once (default: the CPUs this process may use)")
    parser.add_argument("--config", default="default", help="the model size of the timed step (a config name)")
    parser.add_argument("--variant", default="softmax")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--unfixed-pool", action="store_true",
                        help="leave XLA's CPU pool unset (sized by the usable CPUs), as builds did before it was fixed")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cpu", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    if not usable:
        raise SystemExit("this platform cannot confine a process to a CPU (no os.sched_setaffinity); "
                         "run this benchmark on Linux")
    if args.processes < 1:
        raise SystemExit(f"--processes {args.processes}: give 1 or more")
    pool = "unset (XLA sizes it by the usable CPUs)" if args.unfixed_pool else "1 thread"
    print(f"{args.config} {args.variant}, {args.steps} steps a run, {len(usable)} usable CPUs, pool {pool}")
    print(f"{'jobs':<22}{'steps/s each':>14}{'combined':>10}{'busy threads each':>19}")
    for name, cpus in configurations(args.processes, usable).items():
        rates = side_by_side(cpus, args)
        each = sum(r["steps/s"] for r in rates) / len(rates)
        busy = sum(r["busy threads"] for r in rates) / len(rates)
        print(f"{name:<22}{each:>14.1f}{each * len(rates):>10.1f}{busy:>19.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
