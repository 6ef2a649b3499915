"""`python benchmarks/attention.py`: memory and time of one attention call, dense against blockwise.

For each variant and sequence length it compiles one attention call (the
score function, its normalisation and the weighted sum of values, as in the
model, without dropout) both ways and reports the compiled executable's
scratch memory (compiled.memory_analysis().temp_size_in_bytes: what XLA
allocates besides inputs and outputs, the T x T tensors of the dense path
included) and the best wall time of a few calls. "fwd" is the call alone;
"train" is the call with the gradient of a loss on its output w.r.t. q, k, v
and the variant's parameters (what a training step does with it).
"""

from __future__ import annotations

import argparse
import sys
import time

import jax
import jax.numpy as jnp
import pandas as pd
from flax import nnx

from attnlab.core.cell import kv_heads_problem
from attnlab.core.variants import VARIANTS
from attnlab.training.attention import score_class
from attnlab.training.model import attention_heads

LENGTHS = (128, 256, 512, 1024, 2048)
MIB = 2**20


def attention_fn(variant: str, impl: str, heads: int, d_head: int, block: int, grad: bool, length: int):
    """(graphdef, params, fn): fn(params, q, k, v) is one attention call, or its loss and gradients."""
    score = score_class(variant)(layers=1, heads=heads, d_head=d_head, block_size=length, rngs=nnx.Rngs(0))
    graphdef, params, rest = nnx.split(score, nnx.Param, ...)  # gradients for the parameters alone, as in training

    def attend(params, q, k, v):
        module = nnx.merge(graphdef, params, rest)
        if impl == "linear":  # a score with a path linear in the context (slay)
            return module.linear(q, k, v, 0)
        return attention_heads(module, q, k, v, 0, block=None if impl == "dense" else block)[0]  # the model's step

    if not grad:
        return params, attend
    return params, jax.value_and_grad(lambda p, q, k, v: (attend(p, q, k, v) ** 2).mean(), argnums=(0, 1, 2, 3))


def measure(variant: str, impl: str, length: int, batch: int, heads: int, kv_heads: int, d_head: int,
            block: int, grad: bool, repeats: int) -> tuple[float, float]:
    """(scratch MiB, best ms) of one compiled call."""
    params, fn = attention_fn(variant, impl, heads, d_head, block, grad, length)
    keys = jax.random.split(jax.random.key(length), 3)
    q = jax.random.normal(keys[0], (batch, length, heads, d_head))
    k, v = (jnp.repeat(jax.random.normal(key, (batch, length, kv_heads, d_head)), heads // kv_heads, axis=2)
            for key in keys[1:])
    compiled = jax.jit(fn).lower(params, q, k, v).compile()
    scratch = compiled.memory_analysis().temp_size_in_bytes / MIB
    jax.block_until_ready(compiled(params, q, k, v))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(compiled(params, q, k, v))
        best = min(best, time.perf_counter() - start)
    return scratch, 1000 * best


def run(variants, lengths, batch: int, heads: int, kv_heads: int, d_head: int, block: int, repeats: int,
        train: bool = True, log=print) -> pd.DataFrame:
    rows = []
    modes = ("fwd", "train") if train else ("fwd",)
    for variant in variants:
        for length in lengths:
            row = {"variant": variant, "T": length}
            for mode in modes:
                for impl in ("dense", "blockwise"):
                    mib, ms = measure(variant, impl, length, batch, heads, kv_heads, d_head, block,
                                      mode == "train", repeats)
                    row[f"{mode} {impl} MiB"], row[f"{mode} {impl} ms"] = mib, ms
                row[f"{mode} MiB ratio"] = row[f"{mode} blockwise MiB"] / max(row[f"{mode} dense MiB"], 1e-9)
            rows.append(row)
            log(f"  {variant:10s} T={length:5d}  " + "  ".join(
                f"{mode}: {row[f'{mode} dense MiB']:.1f} -> {row[f'{mode} blockwise MiB']:.1f} MiB, "
                f"{row[f'{mode} dense ms']:.1f} -> {row[f'{mode} blockwise ms']:.1f} ms" for mode in modes),
                flush=True)
    return pd.DataFrame(rows)


def display(table: pd.DataFrame) -> pd.DataFrame:
    """The README's form: one 'dense / blockwise' cell per measure."""
    shown = table[["variant", "T"]].copy()
    modes = [m for m in ("fwd", "train") if f"{m} dense MiB" in table]
    for mode in modes:
        for unit, fmt in (("MiB", "{:,.2f}"), ("ms", "{:,.1f}")):
            shown[f"{mode} {unit} dense / blockwise"] = [
                f"{fmt.format(d)} / {fmt.format(b)}" for d, b in zip(table[f"{mode} dense {unit}"],
                                                                     table[f"{mode} blockwise {unit}"])]
    return shown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/attention.py", description=__doc__)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--lengths", nargs="+", type=int, default=list(LENGTHS))
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--kv-heads", type=int, default=None, help="key/value heads (default: heads)")
    parser.add_argument("--d-head", type=int, default=48)
    parser.add_argument("--block", type=int, default=64, help="key block size of the blockwise path")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls after one warm-up; the best counts")
    parser.add_argument("--fwd-only", action="store_true", help="skip the forward+backward measurement")
    parser.add_argument("--csv", default=None, help="also write the table here")
    args = parser.parse_args(argv)
    kv_heads = args.kv_heads or args.heads
    if problem := kv_heads_problem(kv_heads, args.heads):
        parser.error(f"--kv-heads: {problem}")
    device = jax.devices()[0]
    print(f"device: {device.platform} {device.device_kind}; jax {jax.__version__}; batch {args.batch}, "
          f"{args.heads} heads ({kv_heads} key/value) of {args.d_head}, key block {args.block}, float32")
    table = run(args.variants, args.lengths, args.batch, args.heads, kv_heads, args.d_head, args.block,
                args.repeats, train=not args.fwd_only)
    print()
    print(display(table).to_markdown(index=False))
    if args.csv:
        table.to_csv(args.csv, index=False)
    for mode in [m for m in ("fwd", "train") if f"{m} MiB ratio" in table]:
        pays = table[table[f"{mode} MiB ratio"] < 0.5].groupby("variant").T.min()
        for variant in table.variant.unique():
            where = f"from T = {pays[variant]}" if variant in pays else "at none of these lengths"
            print(f"{mode} {variant}: blockwise needs under half the dense path's scratch memory {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
