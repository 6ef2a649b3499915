"""Sigmoid attention: w_ij = sigmoid(q_i.k_j / sqrt(d_h) + b) on the causal window, each weight on its own.

As in Ramapuram et al. (2024), "Theory, Analysis, and Best Practices for
Sigmoid Self-Attention": no row normalisation, and the bias b = -log(n) so
that at the start, with q.k near 0, each weight is about 1/(n + 1) and a full
row sums to about 1 instead of n/2. The paper's n is the sequence length; here
it is the model's context length, n = block_size, a fixed constant and not a
learned parameter, so the variant has exactly softmax's parameters. Future
keys get weight exactly 0. Keys and values reach the module already shared
under grouped-query or multi-query attention (model.kv_heads), as for every
variant.

With no normaliser there are no running statistics: the blockwise path sums
sigmoid(s) v block by block, and its output equals the dense one's.

Telemetry:
- max score: the largest pre-sigmoid logit q.k / sqrt(d_h) + b, so
  sigmoid(max score) is the largest weight (q.k / sqrt(d_h) alone is
  max score + log n);
- row entropy: rows do not sum to 1, so the entropy is of each row
  renormalised, w_ij / sum_j w_ij: how the row spreads its weight over the
  keys, whatever its total (ScoreOutput.distribution);
- no row mass. The row sum sum_j w_ij is well defined (it scales the row's
  output), but it is not the kernel's mass, which the weights divide out; the
  mass channel feeds the kernel-mass AUROC, so sigmoid reports none rather
  than set a different quantity beside it under the same name.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

from attnlab.training.attention.base import BlockScorer, Normaliser, ScoreOutput, causal_mask, masked_softmax, \
    pairwise_dots


class Sigmoid(Normaliser):
    """w = sigmoid(s) on the visible keys, 0 elsewhere; rows are not normalised."""

    name = "sigmoid"

    def dense(self, scores: jnp.ndarray, mask: jnp.ndarray) -> ScoreOutput:
        # w / sum w as a softmax over log sigmoid(s): the same ratio, and still a distribution where every
        # weight of a row underflows to 0 (visible logits below about -88 in float32)
        return ScoreOutput(weights=jnp.where(mask, jax.nn.sigmoid(scores), 0.0),
                           scores=jnp.where(mask, scores, -jnp.inf),
                           distribution=masked_softmax(jax.nn.log_sigmoid(scores), mask))

    def start(self, shape, dtype):
        return ()

    def block(self, stats, scores, visible):
        return stats, jnp.where(visible, jax.nn.sigmoid(scores), 0.0), None

    def finish(self, stats, acc):
        return acc


class SigmoidScore(nnx.Module):
    """No learned parameters: b = -log(block_size) is a constant of the model's shape."""

    normaliser = Sigmoid()

    def __init__(self, *, layers: int, heads: int, d_head: int, block_size: int, rngs: nnx.Rngs, **_):
        self.d_head = d_head
        self.logit_bias = -math.log(block_size)

    def _logits(self, q: jnp.ndarray, k: jnp.ndarray) -> jnp.ndarray:
        return pairwise_dots(q, k) / math.sqrt(self.d_head) + self.logit_bias

    def __call__(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> ScoreOutput:
        return self.normaliser.dense(self._logits(q, k), causal_mask(q.shape[1]))

    def blockwise(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> BlockScorer:
        return BlockScorer(self.normaliser, lambda k_block: self._logits(q, k_block))
