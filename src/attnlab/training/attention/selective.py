"""Selective attention: w_ij = softmax_j(s_hij − F_ij), F_ij = Σ_{j<k<i} ReLU(s_0kj), s = q.k / sqrt(d_h).

From Leviathan, Kalman and Matias (2024), "Selective Attention Improves
Transformer" (arXiv:2410.02703): one head's logits (head 0 here, as in the
paper) say how much each query k selects away each earlier key j; the
selections of the queries between j and i accumulate into F_ij, which every
head of that layer subtracts from its logits, so a key that later tokens have
masked fades for the tokens after them. A token never masks itself, and the
first key is never masked (the paper spares its beginning-of-sequence token;
position 0 takes that role here). No parameters of its own: the selection
reuses head 0's logits, gradient included.

Blockwise: queries stay whole, so the selections of every query against one
key block are at hand; F for that block is their exclusive cumulative sum
over the query axis, and the online softmax runs over s − F. The key
positions travel with the keys (BlockScorer.keyed), so the block knows which
key is each query's own and which is the first.

Telemetry: the max score is the logit after selection, s − F; no row mass.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

from attnlab.training.attention.base import BlockScorer, ScoreOutput, causal_mask, pairwise_dots
from attnlab.training.attention.normalisers import SOFTMAX

SELECTING_HEAD = 0


def selection_penalty(logits: jnp.ndarray, key_pos: jnp.ndarray) -> jnp.ndarray:
    """F (B, 1, T, S) from the logits (B, H, T, S) of every query against keys at positions key_pos (S,):
    Σ over the queries k with j < k < i of ReLU(head 0's logit s_kj), never at the first key."""
    query_pos = jnp.arange(logits.shape[2])[:, None]
    selects = (key_pos[None, :] < query_pos) & (key_pos[None, :] > 0)  # (T, S): earlier keys, not the first
    chosen = jax.nn.relu(jnp.where(selects, logits[:, SELECTING_HEAD], 0.0))  # (B, T, S)
    return (jnp.cumsum(chosen, axis=1) - chosen)[:, None]  # the queries before i only


class SelectiveScore(nnx.Module):
    normaliser = SOFTMAX

    def __init__(self, *, layers: int, heads: int, d_head: int, rngs: nnx.Rngs, **_):
        self.d_head = d_head

    def _logits(self, q: jnp.ndarray, k: jnp.ndarray, key_pos: jnp.ndarray) -> jnp.ndarray:
        logits = pairwise_dots(q, k) / math.sqrt(self.d_head)
        return logits - selection_penalty(logits, key_pos)

    def __call__(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> ScoreOutput:
        return self.normaliser.dense(self._logits(q, k, jnp.arange(k.shape[1])), causal_mask(q.shape[1]))

    def blockwise(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> BlockScorer:
        positions = jnp.broadcast_to(jnp.arange(k.shape[1]), k.shape[:2])  # (B, S), cut into blocks with k
        return BlockScorer(self.normaliser, lambda k_block, pos_block: self._logits(q, k_block, pos_block[0]),
                           keyed=(positions,))
