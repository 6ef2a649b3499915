"""The blockwise (FlashAttention-style) path: keys visited in blocks with a running normaliser.

For every variant the attention output sum_j w_ij v_j is computed without
building the T x T weights: a jax.lax.scan over key blocks of width Kb keeps,
per query row, the running statistics of the variant's normaliser
(attention.base.Normaliser) and the running sum of w v. For example:
- softmax (softmax, A3): the running max m of the scores, the running sum l of
  exp(s - m) and the running sum of exp(s - m) v, rescaled by
  exp(m_old - m_new) whenever the max grows (the online softmax);
- the l1 kernel (yat, yat_b): the running sum of kappa and of kappa v; the
  output is sum(kappa v) / (sum kappa + 1e-9), the dense path's
  kappa / (mass + 1e-9) (attention.base.kernel_weights) applied to v;
- sigmoid: no statistics at all, the weights need no normalising.
What each variant scores and how it normalises is its own blockwise() method
(attention.base.BlockScorer); this module names no normaliser.

Queries stay whole, so every block is scored against all T queries and the
causal mask is applied per block (about twice the score FLOPs of a
causality-skipping kernel). A key block size that does not divide T is
allowed: the keys are zero-padded to a whole number of blocks and the padding
is never visible (key j >= T > i). The softmax's running max is held out of
autodiff (the output does not depend on it), and the block body is
rematerialised in the backward pass (jax.checkpoint), so autodiff through the
scan keeps only the per-block carries (B, H, T, D), never a block's weights.

Dropout drops the same elements of the same weights as the dense path: the
mask of each block is the matching column slice of the dense path's
(B, H, T, T) mask, drawn from the same key (masks.random_uint16_columns),
so training with dropout is the dense training up to float rounding.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from attnlab.training.attention.base import BlockScorer
from attnlab.training.masks import bits16_keep, random_uint16_columns


def blockwise_attention(q: jnp.ndarray, k: jnp.ndarray, v: jnp.ndarray, scorer: BlockScorer, block: int, *,
                        dropout_rate: float = 0.0, dropout_key: jax.Array | None = None) -> jnp.ndarray:
    """q and k (B,T,H,D), v (B,T,H,E) -> (B,T,H,E): sum_j w_ij v_j for the scorer's weights w (E is D unless a
    score function hands wider values: attention.base.head_outputs).

    dropout_key None (evaluation) or dropout_rate 0 means no dropout.
    """
    batch, length, heads, _ = q.shape
    block = min(block, length)
    n_blocks = -(-length // block)
    padded = n_blocks * block

    def blocks(x: jnp.ndarray) -> jnp.ndarray:
        """(B, S, ...) -> (n_blocks, B, block, ...), zero-padded to whole blocks."""
        x = jnp.pad(x, [(0, 0), (0, padded - x.shape[1])] + [(0, 0)] * (x.ndim - 2))
        return jnp.moveaxis(x.reshape(x.shape[0], n_blocks, block, *x.shape[2:]), 1, 0)

    dropping = dropout_key is not None and dropout_rate > 0.0
    threshold, keep_scale = bits16_keep(dropout_rate) if dropping else (0, 1.0)
    normaliser = scorer.normaliser
    query_pos = jnp.arange(length)

    @jax.checkpoint
    def body(carry, xs):
        stats, acc = carry
        index, k_blk, v_blk, keyed = xs
        start = index * block
        visible = (start + jnp.arange(block))[None, :] <= query_pos[:, None]  # (T, Kb)
        stats, weights, rescale = normaliser.block(stats, scorer.scores(k_blk, *keyed), visible)  # (B, H, T, Kb)
        if rescale is not None:
            acc = acc * rescale[..., None]
        if dropping:
            bits = random_uint16_columns(dropout_key, (batch, heads, length, length), start, block)
            weights = jnp.where(bits >= threshold, weights * keep_scale, 0.0)
        acc = acc + jnp.einsum("bhtk,bkhd->bhtd", weights, v_blk)
        return (stats, acc), None

    init = (normaliser.start((batch, heads, length), q.dtype), jnp.zeros((batch, heads, length, v.shape[-1]), q.dtype))
    xs = (jnp.arange(n_blocks), blocks(k), blocks(v), tuple(blocks(a) for a in scorer.keyed))
    (stats, acc), _ = jax.lax.scan(body, init, xs)
    return jnp.swapaxes(normaliser.finish(stats, acc), 1, 2)
