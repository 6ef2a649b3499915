"""Softmax attention: w = softmax(q.k / sqrt(d_h)) over the causal window, the baseline."""

from __future__ import annotations

import math

import jax.numpy as jnp
from flax import nnx

from attnlab.training.attention.base import BlockScorer, ScoreOutput, causal_mask, masked_softmax, pairwise_dots


class SoftmaxScore(nnx.Module):
    """No learned parameters: the score map is fixed."""

    def __init__(self, *, layers: int, heads: int, d_head: int, rngs: nnx.Rngs, **_):
        self.d_head = d_head

    def __call__(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> ScoreOutput:
        mask = causal_mask(q.shape[1])
        logits = pairwise_dots(q, k) / math.sqrt(self.d_head)
        return ScoreOutput(
            weights=masked_softmax(logits, mask),
            scores=jnp.where(mask, logits, -jnp.inf),
        )

    def blockwise(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> BlockScorer:
        return BlockScorer("softmax", lambda k_block: pairwise_dots(q, k_block) / math.sqrt(self.d_head))
