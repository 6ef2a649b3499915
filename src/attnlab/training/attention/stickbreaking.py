"""Stick-breaking attention: w_ij = β_ij ∏_{j<k<i} (1 − β_ik) for keys j < i, β = σ(s), s = q.k / sqrt(d_h).

From Tan et al. (2024), "Scaling Stick-Breaking Attention: An Efficient
Implementation and In-depth Study" (arXiv:2410.17980): query i breaks a stick
of length 1 from its most recent key backwards, each key j taking the share
β_ij of what the keys between it and i left. The weights are not
renormalised: a row sums to 1 − ∏_{j<i}(1 − β_ij), at most 1, and row 0,
which has no earlier key, attends to nothing. The recency order is in the
weights themselves, which is why the paper trains without position
embeddings; this build's cells keep the model's learned position embedding,
as every variant's do, so only the score function differs from softmax.
Keys are strictly earlier ones (the paper's default, no attention to the
current token). No parameters of its own.

Computed in log space: log w_ij = log σ(s_ij) − Σ_{j<k<i} softplus(s_ik),
since log(1 − σ(s)) = −softplus(s); the sum over the keys between j and i
is a reversed, exclusive cumulative sum along the row.

Blockwise, key blocks in order: the running sum P_i of softplus over the
earlier blocks' keys. A block adds its own sum b_i; its weights are
σ(s_ij) exp(−Σ_{k>j in the block, k<i} softplus(s_ik)), and the running
weighted values are multiplied by exp(−b_i) first, so each earlier key's
weight picks up the keys after it. Every exponent is at most 0.

Telemetry: the max score is the logit s (over the causal window, the current
key included, as for softmax); the row entropy is of each row over its sum
(ScoreOutput.distribution), row 0 counting as entropy 0; no row mass.
"""

from __future__ import annotations


import jax
import jax.numpy as jnp

from attnlab.training.attention.base import Normaliser, ScoreOutput
from attnlab.training.attention.plain_logits import PlainLogitsScore


def strictly_earlier(visible: jnp.ndarray) -> jnp.ndarray:
    """The keys before each query from the keys up to it: (T, K) rows shifted down one (query i sees what
    query i − 1 saw with its own key included), so row 0 sees nothing."""
    return jnp.concatenate([jnp.zeros_like(visible[:1]), visible[:-1]], axis=0)


def _after_within(z: jnp.ndarray) -> jnp.ndarray:
    """Σ_{k>j} z_k along the last axis (reversed, exclusive cumulative sum)."""
    return jnp.flip(jnp.cumsum(jnp.flip(z, -1), -1), -1) - z


def _stick_weights(scores: jnp.ndarray, earlier: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """(weights, Σ softplus over the earlier keys) of one span of keys, every later key in it breaking the stick
    first; zero off `earlier`."""
    safe = jnp.where(earlier, scores, 0.0)
    z = jnp.where(earlier, jax.nn.softplus(safe), 0.0)  # −log(1 − β)
    log_w = jax.nn.log_sigmoid(safe) - _after_within(z)
    return jnp.where(earlier, jnp.exp(log_w), 0.0), z.sum(-1)


class StickBreaking(Normaliser):
    """w_ij = σ(s_ij) ∏_{j<k<i} (1 − σ(s_ik)) over the keys before i."""

    name = "stickbreaking"
    may_pick_nothing = True  # row 0 has no earlier key; other rows sum to less than 1

    def dense(self, scores: jnp.ndarray, mask: jnp.ndarray) -> ScoreOutput:
        earlier = jnp.broadcast_to(strictly_earlier(mask), scores.shape)
        weights, _ = _stick_weights(scores, earlier)
        total = weights.sum(-1, keepdims=True)
        distribution = weights / jnp.where(total > 0, total, 1.0)
        return ScoreOutput(weights=weights, scores=jnp.where(mask, scores, -jnp.inf), distribution=distribution)

    def start(self, shape, dtype):
        """The running Σ softplus(s) over the earlier blocks' keys (kept for the record; the weights need only
        each block's own sum)."""
        return jnp.zeros(shape, dtype)

    def block(self, stats, scores, visible):
        earlier = jnp.broadcast_to(strictly_earlier(visible), scores.shape)
        weights, block_sum = _stick_weights(scores, earlier)
        return stats + block_sum, weights, jnp.exp(-block_sum)

    def finish(self, stats, acc):
        return acc


class StickBreakingScore(PlainLogitsScore):
    """No learned parameters: the score map is softmax's, only the normaliser differs."""

    normaliser = StickBreaking()
