"""`python benchmarks/throughput.py`: where one cell's wall time goes, what packs of cells gain, and how long
config/paper.yaml's whole grid would take on this device.

Three tables, each measured in fresh processes (as Snakemake runs cells):
1. one cell's wall time split into start-up (imports, runtime set-up), set-up (corpus, model and batches),
   compile, training, evaluation, telemetry and writing, at each size asked for;
2. packs of 1, 2, 4, ... cells (seeds of one variant trained by one process, attnlab.training.pack: one after
   another on a CPU, vmapped on an accelerator; --mode chooses): wall time per cell, tokens/s and model FLOPs
   utilisation (the step's matmul FLOPs, attnlab.training.flops, over this device's fp32 GEMM rate measured in
   the same run);
3. the projected wall time of the paper grid: its distinct cells (attnlab.pipeline.plan), each costing a
   paper-size cell's fixed phases plus 12,000 training steps and its evaluations at the per-step and
   per-evaluation times measured here (a few paper-size steps), run as many at once as this machine would
   (its cores on a CPU, execution.jobs_per_gpu on a GPU), one cell per process or in packs.
On a CPU the default sizes are smoke and default; on a GPU, paper. Numbers vary with the machine's load:
compare the ratios of one run, not milliseconds across runs.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PHASES = ("start_up", "set_up", "compile", "training", "evaluation", "telemetry", "writing")
VARIANT, LR = "softmax", 3e-3
MODE_TEXT = {"sequential": "cells trained one after another in one process",
             "vmap": "cells trained at once by one vmapped program"}
SCRATCH_PREFIX = "attnlab-throughput-"  # the run's scratch folder: bundles and the compilation cache


def size_slice(size: str, steps: int | None, corpus_sha: str | None) -> dict:
    """The contest's config slice of config/<size>.yaml, optionally at fewer steps (evaluated at its end)."""
    from attnlab.core.config import cell_slice, load_config

    sliced = copy.deepcopy(cell_slice(load_config(REPO / "config" / f"{size}.yaml")))
    if steps is not None:
        sliced["train"].update(steps=steps, eval_every=min(steps, sliced["train"].get("eval_every", steps)))
    if corpus_sha is not None:
        sliced["data"]["sha256"] = corpus_sha
    return sliced


def timed_process(args: list) -> tuple[float, subprocess.CompletedProcess]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]))
    started = time.perf_counter()
    result = subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"benchmark process failed:\n{result.stderr[-3000:]}")
    return wall, result


def cache(folder: Path) -> Path:
    """The benchmark's persistent compilation cache, beside every folder it trains into (one per run), shared by
    all its processes as a build's cells share results/jax-cache."""
    return next(p for p in folder.parents if p.name.startswith(SCRATCH_PREFIX)) / "jax-cache"


def one_cell(sliced: dict, corpus: Path, folder: Path) -> dict:
    """A fresh trainer process for one cell: its wall time and the phases its bundle records."""
    out = folder / "cell"
    wall, _ = timed_process(["-m", "attnlab.training.pack", "--cell-config", json.dumps(sliced), "--variant",
                             VARIANT, "--cell", f"{LR},0", "--corpus", corpus, "--out", out,
                             "--code-fingerprint", "benchmark", "--compile-cache", cache(folder)])
    timings = json.loads((out / "bundle.json").read_text())["timings"]
    timings["writing"] = max(wall - sum(timings.values()), 0.0)  # what the bundle cannot know of itself
    return {"wall_s": wall, **{phase: timings.get(phase, math.nan) for phase in PHASES}}


def pack(sliced: dict, corpus: Path, folder: Path, size: int, mode: str) -> float:
    """The wall time of one process training `size` seeds of one cell as one pack (mode: attnlab.training.pack)."""
    cells = [arg for seed in range(size) for arg in ("--cell", f"{LR},{seed}")]
    wall, _ = timed_process(["-m", "attnlab.training.pack", "--cell-config", json.dumps(sliced), "--variant",
                             VARIANT, *cells, "--corpus", corpus, "--out-root", folder / f"pack{size}-{mode}",
                             "--code-fingerprint", "benchmark", "--compile-cache", cache(folder), "--mode", mode])
    return wall


def step_cost(sliced: dict) -> tuple[float, int]:
    """Model FLOPs of one training step of the slice, and the tokens it trains on."""
    from attnlab.core.config_types import model_config
    from attnlab.core.constants import TINYSHAKESPEARE_VOCAB
    from attnlab.training.flops import step_flops

    batch = sliced["train"]["batch_size"]
    mcfg = model_config(sliced, VARIANT, TINYSHAKESPEARE_VOCAB)
    return step_flops(mcfg, batch), batch * mcfg.block_size


def paper_cells() -> int:
    """The distinct cells config/paper.yaml trains, once every 'auto' contest LR is chosen (as its first sweep LR:
    the count does not depend on which)."""
    from attnlab.core.config import AUTO, load_config
    from attnlab.core.studies import sweep_lrs
    from attnlab.pipeline.ground.grid import Grid

    cfg = load_config(REPO / "config" / "paper.yaml")
    chosen = {v: sweep_lrs(cfg)[v][0] for v in cfg["variants"] if cfg["contest"]["lr"][v] == AUTO}
    return len(Grid(cfg, chosen).trained())


def device() -> tuple[str, float]:
    """This device's platform and its fp32 GEMM rate (FLOP/s), measured now (a larger product on an accelerator)."""
    import jax

    from attnlab.training.flops import matmul_rate

    platform = jax.devices()[0].platform
    return platform, 1e9 * matmul_rate(n=2048 if platform != "cpu" else 1024)


def table(rows: list[dict], columns: list[str]) -> str:
    def cell(value):
        return f"{value:,.2f}" if isinstance(value, float) else str(value)
    widths = {c: max(len(c), *(len(cell(r[c])) for r in rows)) for c in columns}
    lines = ["  ".join(c.rjust(widths[c]) for c in columns)]
    lines += ["  ".join(cell(r[c]).rjust(widths[c]) for c in columns) for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/throughput.py", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", choices=("smoke", "default", "paper"), default=None,
                        help="model sizes (config/<size>.yaml); default: smoke and default on a CPU, paper on a GPU")
    parser.add_argument("--packs", nargs="+", type=int, default=[1, 2, 4, 8, 16], help="pack sizes to time")
    parser.add_argument("--steps", type=int, default=None, help="train each cell this many steps instead")
    parser.add_argument("--paper-steps", type=int, default=2, help="paper-size steps timed for the projection")
    parser.add_argument("--mode", choices=("auto", "sequential", "vmap"), default="auto",
                        help="how a pack trains its cells (default: vmap on an accelerator, sequential on a CPU)")
    parser.add_argument("--corpus", type=Path,
                        default=Path(os.environ.get("ATTNLAB_CORPUS", "results/data/corpus.txt")))
    args = parser.parse_args(argv)
    if not args.corpus.is_file():
        parser.error(f"--corpus {args.corpus}: no such file; point it (or ATTNLAB_CORPUS) at tinyshakespeare.txt")
    from attnlab.core.corpus import sha256_of_file

    corpus_sha = sha256_of_file(args.corpus)
    platform, gemm = device()
    sizes = args.sizes or (["smoke", "default"] if platform == "cpu" else ["paper"])
    from attnlab.training.pack import resolved_mode

    mode = resolved_mode(args.mode)
    cores = os.cpu_count() or 1
    print(f"device: {platform}, fp32 GEMM {gemm / 1e9:,.1f} GFLOP/s; {cores} cores")
    with tempfile.TemporaryDirectory(prefix=SCRATCH_PREFIX) as scratch:
        scratch = Path(scratch)
        for size in sizes:
            sliced = size_slice(size, args.steps, corpus_sha)
            steps = sliced["train"]["steps"]
            shape = f"batch {sliced['train']['batch_size']} x {sliced['model']['block_size']}"
            print(f"\n== {size}: {steps} steps, {shape}")
            cold = one_cell(sliced, args.corpus, scratch / size / "cold")
            split = one_cell(sliced, args.corpus, scratch / size / "warm")
            print(f"one cell, a fresh process with the compilation cache warm, as most cells of a build run "
                  f"(seconds; the first, cold: {cold['wall_s']:.1f} s):")
            print(table([split], ["wall_s", *PHASES]))
            flops, tokens = step_cost(sliced)
            rows = []
            for n in args.packs:
                wall = pack(sliced, args.corpus, scratch / size, n, mode)
                rows.append({"cells": n, "wall_s": wall, "s_per_cell": wall / n,
                             "tokens_per_s": n * steps * tokens / wall,
                             "mfu": f"{n * steps * flops / wall / gemm:.2%}",
                             "vs_one_per_process": split["wall_s"] * n / wall})
            print(f"packs ({mode}: {MODE_TEXT[mode]}):")
            print(table(rows, ["cells", "wall_s", "s_per_cell", "tokens_per_s", "mfu", "vs_one_per_process"]))
        print("\n== projection: config/paper.yaml's whole grid on this device")
        sliced = size_slice("paper", args.paper_steps, corpus_sha)
        sliced["train"]["eval_batches"] = size_slice("paper", None, None)["train"]["eval_batches"]
        one_cell(sliced, args.corpus, scratch / "paper-probe" / "cold")
        measured = one_cell(sliced, args.corpus, scratch / "paper-probe" / "warm")
        full = size_slice("paper", None, None)["train"]
        evaluations = full["steps"] // full["eval_every"] + 2  # the stops' evaluations, the first and last included
        per_eval = measured["evaluation"] / (args.paper_steps // sliced["train"]["eval_every"] + 2)
        fixed = sum(measured[p] for p in ("start_up", "set_up", "compile", "telemetry", "writing"))
        running = full["steps"] * measured["training"] / args.paper_steps + evaluations * per_eval
        cells = paper_cells()
        at_once = cores if platform == "cpu" else 4  # execution.jobs_per_gpu's default
        alone = cells * (fixed + running) / at_once
        packed = cells * (running + measured["telemetry"] + measured["writing"]) / at_once + fixed
        print(f"{cells} distinct cells; one paper-size cell: fixed {fixed:,.1f} s, {full['steps']:,} steps and "
              f"{evaluations} evaluations {running / 3600:,.2f} h (from {args.paper_steps} timed steps)")
        print(f"projected: {alone / 3600:,.1f} h one cell per process, {packed / 3600:,.1f} h in packs, "
              f"{at_once} at once")
    return 0


if __name__ == "__main__":
    sys.exit(main())
