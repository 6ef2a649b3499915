"""Forgetting attention: w_ij = softmax_j(s_ij + c_i − c_j), c_t = Σ_{l≤t} log f_l, s = q.k / sqrt(d_h).

From Lin, Nikishin, He and Courville (2025), "Forgetting Transformer: Softmax
Attention with a Forget Gate" (ICLR 2025, arXiv:2503.02130): each head has a
data-dependent forget gate f_t = σ(w_h · x_t + b_h) in (0, 1), and query i
down-weights key j by the product of the gates after it, ∏_{j<l≤i} f_l, added
to the logit in log space as D_ij = Σ_{l=j+1}^{i} log f_l = c_i − c_j. A
token's own key is never forgotten (D_ii = 0). The paper trains without a
position embedding, the gates telling positions apart; this build's cells
keep the model's learned one, as every variant's do, and config/length.yaml
trains the variant without it.

Where this differs from the paper, on purpose: a score function here sees
the queries and keys, not the layer's input, so the gate reads the token's
keys of every head, concatenated (k̄_t = W_k x_t, d_model wide): w_h · k̄_t
is a linear function of x_t, as the paper's w_h · x_t is. The weights start
as a linear layer's usually do (normal, standard deviation 1/sqrt(d_model))
and the bias at 0, so each gate starts near 1/2, as the paper's reference
starts its gate with a default linear layer. This is the basic FoX, without
the "Pro" block's output gate, QK-norm and token shift.

Parameters: per layer and head, w_h (d_model) and b_h: layers x heads x
(d_model + 1) beyond softmax.

Blockwise: c is computed once over the whole sequence (a cumulative sum, of
size T per head); each key block's scores add c_i of the query and subtract
c_j of its keys (BlockScorer.keyed), and the online softmax runs over them.

Telemetry: the max score is the logit with its forget bias, s + D; the
forget bias b is reported as the learned scalar `forget_bias`, layer x head;
no row mass.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

from attnlab.training.attention.base import BlockScorer, ScoreOutput, causal_mask, pairwise_dots
from attnlab.training.attention.normalisers import SOFTMAX


def forget_sums(k: jnp.ndarray, weight: jnp.ndarray, bias: jnp.ndarray) -> jnp.ndarray:
    """c (B, T, H): the cumulative log forget gate, Σ_{l≤t} log σ(w_h · k̄_l + b_h), from keys k (B, T, H, D),
    weight (H·D, H) and bias (H,)."""
    batch, length = k.shape[:2]
    gate = k.reshape(batch, length, -1) @ weight + bias
    return jnp.cumsum(jax.nn.log_sigmoid(gate), axis=1)


class ForgettingScore(nnx.Module):
    """A forget gate per layer and head, reading the keys of every head; softmax over the biased logits."""

    normaliser = SOFTMAX

    def __init__(self, *, layers: int, heads: int, d_head: int, rngs: nnx.Rngs, **_):
        self.d_head = d_head
        width = heads * d_head
        self.forget_weight = nnx.Param(jax.random.normal(rngs.params(), (layers, width, heads), jnp.float32)
                                       / math.sqrt(width))
        self.forget_bias = nnx.Param(jnp.zeros((layers, heads), dtype=jnp.float32))

    def scalars(self) -> dict[str, jnp.ndarray]:
        """The forget gate's bias b, (layers, heads)."""
        return {"forget_bias": self.forget_bias[...]}

    def _sums(self, k: jnp.ndarray, layer: int) -> jnp.ndarray:
        return forget_sums(k, self.forget_weight[...][layer], self.forget_bias[...][layer])

    def _logits(self, q: jnp.ndarray, k: jnp.ndarray, query_sums: jnp.ndarray, key_sums: jnp.ndarray):
        """s + c_i − c_j, (B, H, T, S), from the sums (B, T, H) of the queries' and the keys' positions."""
        bias = jnp.transpose(query_sums, (0, 2, 1))[..., :, None] - jnp.transpose(key_sums, (0, 2, 1))[..., None, :]
        return pairwise_dots(q, k) / math.sqrt(self.d_head) + bias

    def __call__(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> ScoreOutput:
        sums = self._sums(k, layer)
        return self.normaliser.dense(self._logits(q, k, sums, sums), causal_mask(q.shape[1]))

    def blockwise(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> BlockScorer:
        sums = self._sums(k, layer)
        return BlockScorer(self.normaliser, lambda k_block, sums_block: self._logits(q, k_block, sums, sums_block),
                           keyed=(sums,))
