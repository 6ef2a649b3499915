"""A3, adaptive activation attention: w = softmax(S * G + B) with S = q.k / sqrt(d_h).

For head h of layer l the context of position i is
c_i = [prefix-mean q_{<=i}; prefix-mean k_{<=i}; e_{l,h}]. Prefix (causal)
means, because a mean over the whole window would show position i the future.
G_i = sigmoid(w_g . c_i + b_g) is one inverse temperature per query row;
B_ij = u . c_j is one bias per key (a per-row constant would cancel inside the
softmax). w_g, b_g and u are shared by every layer and head (the "two-matrix
change"); the learned embedding e_{l,h} lets one gate act differently per head.
At init (w_g = 0, u = 0, b_g = 3) this is softmax(sigmoid(3) * S): softmax at
temperature 1/sigmoid(3), not plain softmax.

With grouped-query or multi-query attention (model.kv_heads < heads) the keys
reach this module already shared: every query head of a group sees its group's
key head. So the key half of the context, prefix-mean k_{<=i}, is the prefix
mean of the shared key head, the same for every query head of the group; the
query half and the embedding e_{l,h} stay per query head, so the gate and bias
can still differ between heads that share keys.

The blockwise path (blockwise() below) computes the same context with
cumulative sums instead of the averaging matmul (no T x T matrix); the gate is
per query row and the bias per key, so both fit inside a key block of the
online softmax.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

from attnlab.core.constants import A3_GATE_BIAS_INIT
from attnlab.training.attention.base import BlockScorer, ScoreOutput, causal_mask, pairwise_dots
from attnlab.training.attention.normalisers import SOFTMAX

class A3Score(nnx.Module):
    normaliser = SOFTMAX

    def __init__(
        self, *, layers: int, heads: int, d_head: int, rngs: nnx.Rngs, a3_embed_dim: int | None = None, **_
    ):
        self.d_head = d_head
        embed_dim = a3_embed_dim or d_head
        context_dim = 2 * d_head + embed_dim
        self.embed = nnx.Param(0.02 * jax.random.normal(rngs.params(), (layers, heads, embed_dim)))
        shared = self.gate_shape(layers, heads)  # () here: one gate network for every layer and head
        self.w_g = nnx.Param(jnp.zeros(shared + (context_dim,)))
        # float32, not a weak type: otherwise the first update changes the dtype and retriggers compilation
        self.b_g = nnx.Param(jnp.full(shared, A3_GATE_BIAS_INIT, dtype=jnp.float32))
        self.u = nnx.Param(jnp.zeros(shared + (context_dim,)))

    @staticmethod
    def gate_shape(layers: int, heads: int) -> tuple[int, ...]:
        """Leading shape of w_g, b_g and u: shared by all layers and heads (a3_heads: one per layer x head)."""
        return ()

    def __call__(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> ScoreOutput:
        batch, length, heads, _ = q.shape
        mask = causal_mask(length)
        logits = pairwise_dots(q, k) / math.sqrt(self.d_head)
        gate, bias = self._gate_and_bias(self._context(q, k, layer), layer)
        shaped = logits * gate[..., :, None] + bias[..., None, :]
        return self.normaliser.dense(shaped, mask)._replace(gate=gate, bias=bias)

    def blockwise(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> BlockScorer:
        length = q.shape[1]
        counts = jnp.arange(1, length + 1, dtype=q.dtype)[None, :, None, None]
        q_mean = jnp.swapaxes(jnp.cumsum(q, axis=1) / counts, 1, 2)  # (B, H, T, D) prefix means, no T x T matrix
        k_mean = jnp.swapaxes(jnp.cumsum(k, axis=1) / counts, 1, 2)
        gate, bias = self._gate_and_bias(self._with_embed(q_mean, k_mean, layer), layer)
        bias = jnp.swapaxes(bias, 1, 2)  # (B, T, H): per key, key axis 1 for the blocks
        scale = math.sqrt(self.d_head)

        def scores(k_block, bias_block):
            logits = pairwise_dots(q, k_block) / scale
            return logits * gate[..., :, None] + jnp.swapaxes(bias_block, 1, 2)[..., None, :]

        return BlockScorer(self.normaliser, scores, keyed=(bias,))

    def _gate_and_bias(self, context: jnp.ndarray, layer: int) -> tuple[jnp.ndarray, jnp.ndarray]:
        """context (B, H, T, C) -> gate (B, H, T) per query row, bias (B, H, T) per key position.

        One w_g, b_g and u for every layer and head (a3_heads overrides this with one per head).
        """
        gate = jax.nn.sigmoid(context @ self.w_g[...] + self.b_g[...])
        return gate, context @ self.u[...]

    def _context(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> jnp.ndarray:
        # Prefix means as one matmul with a row-normalised lower-triangular matrix: on a CPU
        # this is much cheaper than a cumulative sum, which XLA lowers to a windowed reduction.
        length = q.shape[1]
        averaging = jnp.tril(jnp.ones((length, length), q.dtype)) / jnp.arange(1, length + 1, dtype=q.dtype)[:, None]
        q_mean = jnp.einsum("ts,bshd->bhtd", averaging, q)  # (B, H, T, D)
        k_mean = jnp.einsum("ts,bshd->bhtd", averaging, k)
        return self._with_embed(q_mean, k_mean, layer)

    def _with_embed(self, q_mean: jnp.ndarray, k_mean: jnp.ndarray, layer: int) -> jnp.ndarray:
        """[q_mean; k_mean; e_{l,h}] per (B, H, T): the context c_i."""
        embed = self.embed[...][layer].astype(q_mean.dtype)  # (H, E)
        embed = jnp.broadcast_to(embed[None, :, None, :], q_mean.shape[:3] + (embed.shape[-1],))
        return jnp.concatenate([q_mean, k_mean, embed], axis=-1)  # (B, H, T, C)
