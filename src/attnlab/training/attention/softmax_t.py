"""Softmax with a learned inverse temperature per layer and head: w = softmax(beta_{l,h} * q.k / sqrt(d_h)).

beta = softplus(raw), one raw parameter per layer x head (layers x heads
parameters in all), with raw initialised so that beta = sigmoid(3): where A3's
gate starts, so softmax_t and A3 compute the same function at step 0. The
control A3's story needs: A3's gate is an inverse temperature per head *and per
token*; this one is per head only. If it closes most of A3's gain over softmax,
the per-token part is not what helps.

Telemetry: the max score is the tempered logit beta * S (A3's gated logit is
the analogue); scalars() reports beta per layer x head.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

from attnlab.core.constants import SOFTMAX_T_RAW_INIT
from attnlab.training.attention.base import BlockScorer, ScoreOutput, causal_mask, pairwise_dots
from attnlab.training.attention.normalisers import SOFTMAX


class SoftmaxTemperatureScore(nnx.Module):
    normaliser = SOFTMAX

    def __init__(self, *, layers: int, heads: int, d_head: int, rngs: nnx.Rngs, **_):
        self.d_head = d_head
        # float32, not a weak type (see A3's b_g)
        self.temperature_raw = nnx.Param(jnp.full((layers, heads), SOFTMAX_T_RAW_INIT, dtype=jnp.float32))

    def scalars(self) -> dict[str, jnp.ndarray]:
        """The learned inverse temperature beta = softplus(raw), (layers, heads)."""
        return {"inverse_temperature": jax.nn.softplus(self.temperature_raw[...])}

    def _logits(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> jnp.ndarray:
        beta = self.scalars()["inverse_temperature"][layer][None, :, None, None]  # (1, H, 1, 1)
        return beta * (pairwise_dots(q, k) / math.sqrt(self.d_head))

    def __call__(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> ScoreOutput:
        return self.normaliser.dense(self._logits(q, k, layer), causal_mask(q.shape[1]))

    def blockwise(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> BlockScorer:
        return BlockScorer(self.normaliser, lambda k_block: self._logits(q, k_block, layer))
