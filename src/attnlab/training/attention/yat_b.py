"""Yat kernel with b and eps learned per layer and head, kept positive by softplus."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from attnlab.training.attention.base import BlockScorer, Normaliser, ScoreOutput, causal_mask
from attnlab.training.attention.normalisers import KERNEL
from attnlab.training.attention.yat import yat_kernel


class YatBiasScore(nnx.Module):
    """Stores b and eps raw (init 0, so both start at softplus(0) = log 2).

    Admissibility (b, eps > 0) is structural rather than clipped. Exactly
    2 x layers x heads parameters. `normaliser` is the one thing yat_b_exp changes.
    """

    normaliser: Normaliser = KERNEL

    def __init__(self, *, layers: int, heads: int, d_head: int, rngs: nnx.Rngs, **_):
        self.b_raw = nnx.Param(jnp.zeros((layers, heads)))
        self.eps_raw = nnx.Param(jnp.zeros((layers, heads)))

    def scalars(self) -> dict[str, jnp.ndarray]:
        """The effective (softplus-ed) b and eps, each (layers, heads)."""
        return {"b": jax.nn.softplus(self.b_raw[...]), "eps": jax.nn.softplus(self.eps_raw[...])}

    def _head_scalars(self, layer: int) -> tuple[jnp.ndarray, jnp.ndarray]:
        """This layer's b and eps, each (1, H, 1, 1) to broadcast over (B, H, T, S)."""
        scalars = self.scalars()
        return scalars["b"][layer][None, :, None, None], scalars["eps"][layer][None, :, None, None]

    def __call__(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> ScoreOutput:
        b, eps = self._head_scalars(layer)
        kappa, _ = yat_kernel(q, k, b, eps)
        return self.normaliser.dense(kappa, causal_mask(q.shape[1]))

    def blockwise(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> BlockScorer:
        b, eps = self._head_scalars(layer)
        return BlockScorer(self.normaliser, lambda k_block: yat_kernel(q, k_block, b, eps)[0])
