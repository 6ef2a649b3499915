"""Scalable-Softmax: w_ij = softmax_j((s_{l,h} · log n_i) · q_i.k_j / sqrt(d_h)), n_i = i + 1 keys visible.

From Nakanishi (2025), "Scalable-Softmax Is Superior for Attention"
(arXiv:2501.19399): as a row sees more keys, a plain softmax spreads thinner
(its largest weight falls like 1/n for scores of fixed size); multiplying the
logits by s · log n keeps a key that stands out by a fixed margin at a weight
that does not vanish as the context grows. n is the causal row length, so
query i (0-based) scales by log(i + 1); the first row, with one key, weighs it
1 whatever the scale.

s is a parameter per layer x head (layers x heads parameters in all). Its
initial value is this project's choice: 1 / log(block_size), so that at the
start the last row of a training window computes plain softmax and shorter
rows a softer one, and training starts near the baseline (as A3 and softmax_t
start near it). The paper's claim concerns contexts longer than the training
block, where log n then exceeds log(block_size).

Blockwise: queries stay whole, so each query's log n is known and scales its
scores before the online softmax; the output equals the dense one's.

Telemetry: the max score is the scaled logit; scalars() reports s per layer x
head (`length_scale`).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
from flax import nnx

from attnlab.training.attention.base import BlockScorer, ScoreOutput, causal_mask, pairwise_dots
from attnlab.training.attention.normalisers import SOFTMAX


class SSMaxScore(nnx.Module):
    normaliser = SOFTMAX

    def __init__(self, *, layers: int, heads: int, d_head: int, block_size: int, rngs: nnx.Rngs, **_):
        self.d_head = d_head
        # float32, not a weak type (see A3's b_g); block_size 1 has no log to divide by: start at 1
        start = 1.0 / math.log(block_size) if block_size > 1 else 1.0
        self.length_scale = nnx.Param(jnp.full((layers, heads), start, dtype=jnp.float32))

    def scalars(self) -> dict[str, jnp.ndarray]:
        """The learned s per layer x head, (layers, heads)."""
        return {"length_scale": self.length_scale[...]}

    def _logits(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> jnp.ndarray:
        """(B, H, T, S): each query row's logits times s_h · log(i + 1)."""
        log_n = jnp.log(jnp.arange(1, q.shape[1] + 1, dtype=q.dtype))  # (T,)
        scale = self.length_scale[...][layer][None, :, None, None] * log_n[None, None, :, None]
        return scale * (pairwise_dots(q, k) / math.sqrt(self.d_head))

    def __call__(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> ScoreOutput:
        return self.normaliser.dense(self._logits(q, k, layer), causal_mask(q.shape[1]))

    def blockwise(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> BlockScorer:
        return BlockScorer(self.normaliser, lambda k_block: self._logits(q, k_block, layer))
