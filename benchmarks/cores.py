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
(CPU seconds over wall seconds of the timed loop, per job): the median of
`--repeats` timed runs, every job's runs taken while all the others train. The confined
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
    env = dict(os.environ, XLA_FLAGS=f"{os.environ.get('XLA_FLAGS', '')} {SINGLE_THREAD}".strip())
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    command = [sys.executable, __file__, "--worker", "--config", args.config, "--variant", args.variant,
               "--steps", str(args.steps), "--repeats", str(args.repeats)]
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
