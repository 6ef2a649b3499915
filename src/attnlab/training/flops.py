"""The model FLOPs of one training step, and this device's measured fp32 GEMM rate: model FLOPs utilisation.

Matmuls only (projections, MLP, attention scores and weighted values, the
head): elementwise work is a small share at these widths and is not counted.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp

from attnlab.core.config_types import ModelConfig


def step_flops(cfg: ModelConfig, batch: int) -> float:
    """Matmul FLOPs of one training step: forward x 3 (backward costs two forwards)."""
    tokens = batch * cfg.block_size
    d, f, t = cfg.d_model, cfg.d_ff, cfg.block_size
    kv = 2 * cfg.kv_head_count * cfg.d_head  # key and value widths (2d without grouped-query attention)
    per_layer = 2 * tokens * d * (d + kv + d + 2 * f)  # q, k and v, output projection, MLP in and out
    per_layer += 2 * 2 * batch * cfg.heads * t * t * cfg.d_head  # scores and weights @ values
    forward = cfg.layers * per_layer + 2 * tokens * d * cfg.vocab_size  # head
    return 3.0 * forward


def matmul_rate(n: int = 1024, repeats: int = 10) -> float:
    """Measured fp32 GEMM rate of this device, GFLOP/s: the best of `repeats` timed n x n products."""
    a = jax.random.normal(jax.random.key(0), (n, n), jnp.float32)
    b = jax.random.normal(jax.random.key(1), (n, n), jnp.float32)
    mm = jax.jit(lambda a, b: a @ b)
    mm(a, b).block_until_ready()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        mm(a, b).block_until_ready()
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best / 1e9
