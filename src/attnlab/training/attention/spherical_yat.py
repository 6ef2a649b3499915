"""The spherical Yat kernel, κ = (q̂·k̂)² / (‖q̂ − k̂‖² + ε), normalised by its row mass.

q̂ and k̂ are the unit query and key, so ‖q̂ − k̂‖² = 2 − 2x with x = q̂·k̂ and the
kernel is a function of the cosine alone, κ = x² / (2 + ε − 2x), bounded by 1/ε
(at x = 1). It is the exact kernel that SLAY (Luna, Bouhsine and Choromanski,
2026, arXiv 2602.04915) approximates in linear time (attention.slay). ε = 1e-3,
the value of the paper's reference language-model configuration; the
denominator is floored at ε against rounding, as the reference does. Weights
κ / Σκ over the causal window: yat's normaliser.
"""

from __future__ import annotations

import jax.numpy as jnp
from flax import nnx

from attnlab.training.attention.base import BlockScorer, Normaliser, ScoreOutput, causal_mask, pairwise_dots
from attnlab.training.attention.normalisers import KERNEL

SPHERICAL_EPS = 1e-3
UNIT_FLOOR = 1e-6  # a query or key shorter than this is divided by it instead of its length


def unit(x: jnp.ndarray) -> jnp.ndarray:
    """x / ‖x‖ along the head dimension (the last axis)."""
    return x / jnp.maximum(jnp.linalg.norm(x, axis=-1, keepdims=True), UNIT_FLOOR)


def cosine_kernel(q_unit: jnp.ndarray, k_unit: jnp.ndarray, eps: float = SPHERICAL_EPS) -> jnp.ndarray:
    """κ = x² / (2 + ε − 2x) of unit queries (B,T,H,D) and keys (B,S,H,D) -> (B,H,T,S)."""
    x = pairwise_dots(q_unit, k_unit)
    return x ** 2 / jnp.maximum(2.0 + eps - 2.0 * x, eps)


class SphericalYatScore(nnx.Module):
    """No learned parameter: softmax's parameter count."""

    normaliser: Normaliser = KERNEL

    def __init__(self, *, layers: int, heads: int, d_head: int, rngs: nnx.Rngs, **_):
        pass

    def __call__(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> ScoreOutput:
        return self.normaliser.dense(cosine_kernel(unit(q), unit(k)), causal_mask(q.shape[1]))

    def blockwise(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> BlockScorer:
        q_unit = unit(q)
        return BlockScorer(self.normaliser, lambda k_block: cosine_kernel(q_unit, unit(k_block)))
