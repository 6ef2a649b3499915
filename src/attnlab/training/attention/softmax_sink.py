"""Softmax with a learned sink: w_ij = exp(s_ij) / (exp(b_h) + sum_{j' <= i} exp(s_ij')), s = q.k / sqrt(d_h).

The off-by-one softmax (E. Miller, "Attention is off by one", 2023) adds 1 to
the denominator, so a head may put less than all of its weight on the keys:
an implicit extra key with logit 0 and a zero value. Here that logit is a
parameter b per layer x head (layers x heads parameters in all), as in the
learned attention sinks of gpt-oss (OpenAI, 2025) and of Xiao et al.'s
"Efficient Streaming Language Models with Attention Sinks" (ICLR 2024,
arXiv:2309.17453), whose paper reports that a sink takes up the attention
mass that otherwise piles on the first tokens. b starts at 0, which is
exactly the off-by-one softmax: training starts from the published fixed form
and may move each head's sink from there.

Rows sum to less than 1 (the rest is the sink's). Blockwise, this is the
online softmax started as if the sink were a key already seen: running max b
and running sum exp(b - b) = 1 with an empty value sum, so the output equals
the dense one's and nothing of size T x T is built.

Telemetry: the max score is the logit s (the sink's b is reported as the
learned scalar `sink_logit`, layer x head); the row entropy is of each row
renormalised over the keys (ScoreOutput.distribution), which is softmax(s);
no row mass.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

from attnlab.training.attention.base import BlockScorer, ScoreOutput, causal_mask, masked_softmax, pairwise_dots
from attnlab.training.attention.normalisers import Softmax


class SinkSoftmax(Softmax):
    """w = exp(s) / (exp(b) + sum exp(s)) over the visible keys, b (H,) one sink logit per head."""

    name = "sink_softmax"

    def __init__(self, sink: jnp.ndarray):
        super().__init__(masked_softmax)
        self.sink = sink

    def dense(self, scores: jnp.ndarray, mask: jnp.ndarray) -> ScoreOutput:
        logits = jnp.where(mask, scores, -jnp.inf)
        sink = jnp.broadcast_to(self.sink[None, :, None, None], (*scores.shape[:-1], 1)).astype(scores.dtype)
        # a softmax over [b, s_i1 .. s_iT] whose first column is dropped: stable for any b and s
        weights = jax.nn.softmax(jnp.concatenate([sink, logits], axis=-1), axis=-1)[..., 1:]
        return ScoreOutput(weights=jnp.where(mask, weights, 0.0), scores=logits,
                           distribution=masked_softmax(scores, mask))

    def start(self, shape, dtype):
        """The sink as a key already seen: running max b, running sum exp(b - b) = 1."""
        return jnp.broadcast_to(self.sink[None, :, None], shape).astype(dtype), jnp.ones(shape, dtype)


class SoftmaxSinkScore(nnx.Module):
    """One learned sink logit per layer x head, starting at 0 (the off-by-one softmax)."""

    def __init__(self, *, layers: int, heads: int, d_head: int, rngs: nnx.Rngs, **_):
        self.d_head = d_head
        self.sink_logit = nnx.Param(jnp.zeros((layers, heads), dtype=jnp.float32))

    def scalars(self) -> dict[str, jnp.ndarray]:
        """The learned sink logit b, (layers, heads)."""
        return {"sink_logit": self.sink_logit[...]}

    def _logits(self, q: jnp.ndarray, k: jnp.ndarray) -> jnp.ndarray:
        return pairwise_dots(q, k) / math.sqrt(self.d_head)

    def __call__(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> ScoreOutput:
        return SinkSoftmax(self.sink_logit[...][layer]).dense(self._logits(q, k), causal_mask(q.shape[1]))

    def blockwise(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> BlockScorer:
        return BlockScorer(SinkSoftmax(self.sink_logit[...][layer]), lambda k_block: self._logits(q, k_block))
