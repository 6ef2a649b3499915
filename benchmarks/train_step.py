"""`python benchmarks/train_step.py`: how fast one training step runs, against a plain research-script loop.

For each config (smoke, default, paper model) and variant it times the
project's loop (many steps per jitted call, batches sliced on the device,
donated buffers) and a plain loop of the same model (numpy batches built on
the host, one jitted step per Python iteration, the loss read back each step
for logging), counts the matmul FLOPs of a step (forward and backward,
attention included) and sets the achieved rate against this machine's fp32
matrix-multiply rate measured in the same run. Both loops run on a build job's runtime, XLA's CPU pool fixed to one
thread, so the comparison is one core against one core. It also times the host's share
of the project loop, drawing the seed's batch offsets (numpy `default_rng` per
step), and prints it as a fraction of the step.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
import time
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from flax import nnx

from attnlab.core.config import load_config
from attnlab.core.config_types import ModelConfig, model_config
from attnlab.core.constants import TINYSHAKESPEARE_VOCAB
from attnlab.core.variants import BASELINE, VARIANTS
from attnlab.training.flops import matmul_rate, step_flops
from attnlab.training.batches import TRAIN_STREAM, stream_offsets, train_offsets
from attnlab.training import model as model_module
from attnlab.training.model import GPT
from attnlab.training.runtime import configure_runtime
from attnlab.training.steps import dropout_key, make_optimizer, train_chunk, train_step

REPO = Path(__file__).resolve().parents[1]  # benchmarks/train_step.py -> the checkout
CONFIGS = ("smoke", "default", "paper")
TIMED_STEPS = {"smoke": (200, 3), "default": (50, 3), "paper": (3, 2)}  # (steps, repeats)
QUICK_STEPS = {"smoke": (100, 2), "default": (20, 2), "paper": (1, 2)}
VOCAB = TINYSHAKESPEARE_VOCAB


@contextlib.contextmanager
def autodiff_linears():
    """Models built inside use nnx.Linear's own gradients, as a research script's do, not the project's Dense
    (attnlab.training.dense): the same parameters and numbers, the backward products laid out by XLA."""
    saved = model_module.Dense
    model_module.Dense = nnx.Linear
    try:
        yield
    finally:
        model_module.Dense = saved


def setup(mcfg: ModelConfig, lr: float = 1e-3, seed: int = 0):
    model = GPT(mcfg, rngs=nnx.Rngs(params=seed))
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    optimizer = make_optimizer(lr, 0.01)
    return graphdef, rest, optimizer, params, optimizer.init(params)


def plain_batch(tokens: np.ndarray, seed: int, step: int, block: int, batch: int):
    """A batch built on the host with numpy, at the same offsets the project loop uses."""
    offsets = stream_offsets(seed * TRAIN_STREAM + step, len(tokens), block, batch)
    windows = np.stack([tokens[o: o + block + 1] for o in offsets])
    return windows[:, :-1], windows[:, 1:]


class PlainLoop:
    """The research-script loop: host batches, one jitted step per iteration, loss read back each step.

    Its model draws dropout masks the usual way (float uniforms) and differentiates its Linear layers
    automatically: the fast mask draw and the Dense layers' backward products are two of the project loop's
    levers.
    """

    def __init__(self, mcfg: ModelConfig, tokens: np.ndarray, batch: int, seed: int = 0):
        self.mcfg = dataclasses.replace(mcfg, dropout_masks="bernoulli")
        self.tokens, self.batch, self.seed = tokens, batch, seed
        with autodiff_linears():
            graphdef, rest, optimizer, self.params, self.opt_state = setup(self.mcfg, seed=seed)
        self.step_fn = jax.jit(partial(train_step, graphdef, rest, optimizer))
        start = time.perf_counter()
        x, y = plain_batch(tokens, seed, 0, self.mcfg.block_size, batch)
        self.step_fn.lower(self.params, self.opt_state, x, y, dropout_key(seed, 0)).compile()
        self.compile_s = time.perf_counter() - start
        self.step = 0

    def run(self, n_steps: int) -> tuple[np.ndarray, float]:
        losses = []
        start = time.perf_counter()
        for _ in range(n_steps):
            x, y = plain_batch(self.tokens, self.seed, self.step, self.mcfg.block_size, self.batch)
            self.params, self.opt_state, loss = self.step_fn(
                self.params, self.opt_state, x, y, dropout_key(self.seed, self.step))
            losses.append(float(loss))
            self.step += 1
        return np.asarray(losses), time.perf_counter() - start


class ProjectLoop:
    """attnlab's loop: n steps per jitted call, batch offsets from the host, windows sliced on the device."""

    def __init__(self, mcfg: ModelConfig, tokens: np.ndarray, batch: int, max_steps: int, seed: int = 0):
        self.mcfg, self.batch, self.max_steps, self.n_tokens, self.seed_int = mcfg, batch, max_steps, len(tokens), seed
        graphdef, self.rest, optimizer, self.params, self.opt_state = setup(mcfg, seed=seed)
        self.tokens = jnp.asarray(tokens)
        self.seed = jnp.asarray(seed, dtype=jnp.uint32)
        start = time.perf_counter()
        self.chunk = train_chunk.lower(graphdef, self.rest, optimizer, self.params, self.opt_state, self.tokens,
                                       jnp.asarray(self.offsets(0, 1)), self.seed, 0, max_steps,
                                       block_size=mcfg.block_size).compile()
        self.compile_s = time.perf_counter() - start
        self.step = 0

    def offsets(self, start: int, n_steps: int) -> np.ndarray:
        return train_offsets(self.seed_int, start, n_steps, self.n_tokens, self.mcfg.block_size, self.batch,
                             pad_to=self.max_steps)

    def run(self, n_steps: int) -> tuple[np.ndarray, float]:
        start = time.perf_counter()
        offsets = jnp.asarray(self.offsets(self.step, n_steps))  # timed: the host work is part of the loop
        self.params, self.opt_state, losses = self.chunk(
            self.rest, self.params, self.opt_state, self.tokens, offsets, self.seed, self.step, n_steps)
        losses = np.asarray(losses)[:n_steps]
        self.step += n_steps
        return losses, time.perf_counter() - start


def offsets_time(loop: ProjectLoop, n_steps: int, repeats: int) -> float:
    """Host seconds to draw n_steps of the seed's batch offsets (inside the project loop's timing too)."""
    best = float("inf")
    for _ in range(repeats + 1):
        start = time.perf_counter()
        loop.offsets(0, n_steps)
        best = min(best, time.perf_counter() - start)
    return best


def best_time(loop, n_steps: int, repeats: int) -> float:
    """Warm the loop up once, then the fastest of `repeats` timed runs (machines are noisy)."""
    loop.run(n_steps)
    return min(loop.run(n_steps)[1] for _ in range(repeats))


def bench_cell(name: str, cfg: dict, variant: str, tokens: np.ndarray, n_steps: int, repeats: int,
               rate: float) -> dict:
    mcfg = model_config(cfg, variant, VOCAB)
    batch = cfg["train"]["batch_size"]
    project = ProjectLoop(mcfg, tokens, batch, n_steps)
    project_s = best_time(project, n_steps, repeats)
    host_offsets_s = offsets_time(project, n_steps, repeats)
    plain = PlainLoop(mcfg, tokens, batch)
    plain_s = best_time(plain, n_steps, repeats)
    flops = step_flops(mcfg, batch)
    tokens_per_step = batch * mcfg.block_size
    gflops = flops * n_steps / project_s / 1e9
    return {
        "config": name, "variant": variant, "steps": n_steps,
        "ms_per_step": 1000 * project_s / n_steps,
        "tokens_per_s": tokens_per_step * n_steps / project_s,
        "gflop_per_step": flops / 1e9,
        "gflop_per_s": gflops,
        "matmul_fraction": gflops / rate,
        "plain_ms_per_step": 1000 * plain_s / n_steps,
        "plain_tokens_per_s": tokens_per_step * n_steps / plain_s,
        "plain_matmul_fraction": flops * n_steps / plain_s / 1e9 / rate,
        "speedup": plain_s / project_s,
        "offsets_ms_per_step": 1000 * host_offsets_s / n_steps,
        "offsets_fraction": host_offsets_s / project_s,
        "compile_s": project.compile_s,
        "plain_compile_s": plain.compile_s,
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog="python benchmarks/train_step.py", description=__doc__)
    parser.add_argument("--quick", action="store_true",
                        help="fewer timed steps (minutes, not the full run's quarter hour)")
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=CONFIGS)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--corpus", type=Path, default=None, help="token source (default: random tokens)")
    parser.add_argument("--csv", type=Path, default=None, help="also write the table here")
    args = parser.parse_args(argv)
    configure_runtime(1, None)  # both loops on a build job's runtime: one thread, whatever the host

    rng = np.random.default_rng(0)
    tokens = rng.integers(0, VOCAB, size=200_000, dtype=np.int32)  # the step's cost does not depend on the text
    rate = matmul_rate()
    device = jax.devices()[0]
    print(f"device: {device.platform} {device.device_kind}; jax {jax.__version__}; "
          f"measured fp32 matmul rate: {rate:.1f} GFLOP/s")
    rows = []
    for name in args.configs:
        cfg = load_config(REPO / "config" / f"{name}.yaml")
        n_steps, repeats = (QUICK_STEPS if args.quick else TIMED_STEPS)[name]
        for variant in args.variants:
            row = bench_cell(name, cfg, variant, tokens, n_steps, repeats, rate)
            rows.append(row)
            print(f"  {name:8s} {variant:8s} {row['ms_per_step']:9.2f} ms/step  plain {row['plain_ms_per_step']:9.2f}"
                  f"  speedup {row['speedup']:.2f}x", flush=True)
    table = pd.DataFrame(rows)
    softmax_ms = table[table.variant == BASELINE].set_index("config").ms_per_step
    table["vs_softmax"] = [r.ms_per_step / softmax_ms.get(r.config, np.nan) for r in table.itertuples()]
    shown = table[["config", "variant", "ms_per_step", "tokens_per_s", "gflop_per_s", "matmul_fraction",
                   "plain_ms_per_step", "plain_matmul_fraction", "speedup", "vs_softmax", "offsets_fraction",
                   "compile_s", "plain_compile_s"]]
    print()
    print(shown.to_markdown(index=False, floatfmt=".3g"))
    print()
    for row in table.itertuples():
        print(f"speedup {row.config}/{row.variant}: {row.speedup:.2f}x (project loop over plain loop)")
    if args.csv:
        table.to_csv(args.csv, index=False)
    print(f"min speedup: {table.speedup.min():.2f}")
    print(f"max share of a project step spent drawing batch offsets on the host: {table.offsets_fraction.max():.2%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
