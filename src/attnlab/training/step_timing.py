"""What a variant's training step costs against the baseline's, timed in one process, interleaved.

Training logs time whole cells on a shared machine: two identical softmax
cells can run 15% apart, and more seeds do not remove that noise. Here every
variant's step (the trainer's own chunked loop, attnlab.training.steps) is
compiled in one process and timed in rounds, the variants taking turns, the
order reversed every other round, so whatever the machine does during a round
falls on all of them. A round's ratio to the baseline is one paired
replicate; the ledger's compute-overhead row reads these rounds.

The tokens are random: a step's cost depends on its shapes, not on the text.

`python -m attnlab.training.step_timing --cell-config JSON --variants softmax a3 --out FILE.csv`
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pandas as pd
from flax import nnx

from attnlab.core.config_types import model_config, train_config
from attnlab.core.constants import TINYSHAKESPEARE_VOCAB
from attnlab.core.io import atomic_write_text
from attnlab.training.batches import train_offsets
from attnlab.training.model import GPT
from attnlab.training.runtime import configure_runtime, settle_on_cpus
from attnlab.training.steps import make_optimizer, train_chunk

ROUNDS = 8  # paired replicates of every variant's step time
STEPS = 10  # steps per timed call (one jitted chunk, as the trainer runs them)
TOKENS = 100_000
COLUMNS = ("variant", "round", "seconds_per_step", "steps", "d_model", "layers", "heads", "block_size",
           "batch_size")


class TimedLoop:
    """One variant's training steps as the trainer runs them: n steps per jitted call, batches from the seed's
    offsets, sliced on the device."""

    def __init__(self, cfg: dict, variant: str, tokens, steps: int, seed: int = 0):
        self.mcfg = model_config(cfg, variant, TINYSHAKESPEARE_VOCAB)
        self.tcfg = train_config(cfg)
        self.steps, self.seed_int, self.n_tokens = steps, seed, len(tokens)
        model = GPT(self.mcfg, rngs=nnx.Rngs(params=seed))
        graphdef, self.params, self.rest = nnx.split(model, nnx.Param, ...)
        optimizer = make_optimizer(1e-3, self.tcfg.weight_decay)
        self.opt_state = optimizer.init(self.params)
        self.tokens, self.seed = jnp.asarray(tokens), jnp.asarray(seed, dtype=jnp.uint32)
        self.chunk = train_chunk.lower(graphdef, self.rest, optimizer, self.params, self.opt_state, self.tokens,
                                       jnp.asarray(self.offsets(0)), self.seed, 0, steps,
                                       block_size=self.mcfg.block_size).compile()
        self.step = 0

    def offsets(self, start: int) -> np.ndarray:
        return train_offsets(self.seed_int, start, self.steps, self.n_tokens, self.mcfg.block_size,
                             self.tcfg.batch_size, pad_to=self.steps)

    def seconds_per_step(self) -> float:
        start = time.perf_counter()
        offsets = jnp.asarray(self.offsets(self.step))
        self.params, self.opt_state, losses = self.chunk(self.rest, self.params, self.opt_state, self.tokens,
                                                         offsets, self.seed, self.step, self.steps)
        np.asarray(losses)  # wait for the device
        self.step += self.steps
        return (time.perf_counter() - start) / self.steps


def interleaved_times(cfg: dict, variants: list[str], rounds: int = ROUNDS, steps: int = STEPS) -> pd.DataFrame:
    """Every variant's seconds per step in each round, the variants taking turns (reversed every other round)."""
    tokens = np.random.default_rng(0).integers(0, TINYSHAKESPEARE_VOCAB, size=TOKENS, dtype=np.int32)
    loops = {v: TimedLoop(cfg, v, tokens, steps) for v in variants}
    for loop in loops.values():  # warm up: the first call of a compiled program pays for its buffers
        loop.seconds_per_step()
    m, t = cfg["model"], cfg["train"]
    shape = {"d_model": m["d_model"], "layers": m["layers"], "heads": m["heads"], "block_size": m["block_size"],
             "batch_size": t["batch_size"]}
    rows = []
    for r in range(rounds):
        for v in (variants if r % 2 == 0 else list(reversed(variants))):
            rows.append({"variant": v, "round": r, "seconds_per_step": loops[v].seconds_per_step(), "steps": steps,
                         **shape})
    return pd.DataFrame(rows, columns=list(COLUMNS))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cell-config", required=True, help="the resolved config slice (JSON), as a training job's")
    parser.add_argument("--variants", nargs="+", required=True)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    configure_runtime(args.threads, None)  # the training jobs' runtime: the same fixed pool
    settle_on_cpus(args.threads)
    table = interleaved_times(json.loads(args.cell_config), args.variants, args.rounds, args.steps)
    atomic_write_text(args.out, table.to_csv(index=False))
    print(table.groupby("variant", sort=False).seconds_per_step.median().map(lambda s: f"{s * 1e3:.2f} ms")
          .to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
