"""The Yat kernel, kappa = (q.k)^2 / (||q-k||^2 + 1), normalised by its row mass.

No exponential anywhere: masked keys get kappa = 0 rather than -inf, and the
row mass sum_j kappa_ij is kept as telemetry.
"""

from __future__ import annotations

import jax.numpy as jnp
from flax import nnx

from attnlab.core.constants import YAT_FROZEN_EPS
from attnlab.training.attention.base import BlockScorer, Normaliser, ScoreOutput, causal_mask, pairwise_dots, \
    squared_distance
from attnlab.training.attention.normalisers import KERNEL


def yat_kernel(q, k, b, eps) -> tuple[jnp.ndarray, jnp.ndarray]:
    """kappa = (q.k + b)^2 / (||q-k||^2 + eps); b, eps broadcast per head as (1,H,1,1)."""
    dots = pairwise_dots(q, k)
    kappa = (dots + b) ** 2 / (squared_distance(q, k, dots) + eps)
    return kappa, dots


class YatScore(nnx.Module):
    """b = 0 and eps = 1 frozen: the ablation without learned scalars.

    `normaliser` is the one thing yat_exp changes (attention.normalisers)."""

    normaliser: Normaliser = KERNEL

    def __init__(self, *, layers: int, heads: int, d_head: int, rngs: nnx.Rngs, **_):
        pass

    def __call__(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> ScoreOutput:
        kappa, _ = yat_kernel(q, k, 0.0, YAT_FROZEN_EPS)
        return self.normaliser.dense(kappa, causal_mask(q.shape[1]))

    def blockwise(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> BlockScorer:
        return BlockScorer(self.normaliser, lambda k_block: yat_kernel(q, k_block, 0.0, YAT_FROZEN_EPS)[0])
