"""Softmax attention: w = softmax(q.k / sqrt(d_h)) over the causal window, the baseline."""

from __future__ import annotations

import math

import jax.numpy as jnp
from flax import nnx

from attnlab.training.attention.base import BlockScorer, ScoreOutput, causal_mask, pairwise_dots
from attnlab.training.attention.normalisers import SOFTMAX


class SoftmaxScore(nnx.Module):
    """No learned parameters: the score map is fixed."""

    normaliser = SOFTMAX

    def __init__(self, *, layers: int, heads: int, d_head: int, rngs: nnx.Rngs, **_):
        self.d_head = d_head

    def __call__(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> ScoreOutput:
        return self.normaliser.dense(pairwise_dots(q, k) / math.sqrt(self.d_head), causal_mask(q.shape[1]))

    def blockwise(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> BlockScorer:
        return BlockScorer(self.normaliser, lambda k_block: pairwise_dots(q, k_block) / math.sqrt(self.d_head))
