"""The score map of a variant that differs from softmax only in its normaliser: s = q.k / sqrt(d_h), no
parameters of its own (cog, softpick, stickbreaking), so its parameter count is softmax's."""

from __future__ import annotations

import math

import jax.numpy as jnp
from flax import nnx

from attnlab.training.attention.base import BlockScorer, Normaliser, ScoreOutput, causal_mask, pairwise_dots


class PlainLogitsScore(nnx.Module):
    """A subclass names its `normaliser`; the logits are softmax's."""

    normaliser: Normaliser

    def __init__(self, *, layers: int, heads: int, d_head: int, rngs: nnx.Rngs, **_):
        self.d_head = d_head

    def _logits(self, q: jnp.ndarray, k: jnp.ndarray) -> jnp.ndarray:
        return pairwise_dots(q, k) / math.sqrt(self.d_head)

    def __call__(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> ScoreOutput:
        return self.normaliser.dense(self._logits(q, k), causal_mask(q.shape[1]))

    def blockwise(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> BlockScorer:
        return BlockScorer(self.normaliser, lambda k_block: self._logits(q, k_block))
