"""The normalisers the score modules share, and the crossover that swaps one for another.

- SOFTMAX: a softmax over logits (softmax, softmax_t, A3, a3_heads); blockwise,
  the online softmax (running max and running sum of exponentials).
- KERNEL: the seed's l1 normaliser of a kernel kappa >= 0, w = kappa / (sum kappa + 1e-9)
  (attention.base.kernel_weights; yat, yat_b); the row mass sum kappa is telemetry.
- KAPPA_SOFTMAX: a softmax over kappa (yat_exp, yat_b_exp), through
  window_softmax below; no row mass enters the weights, so none is reported.
  SOFTMAX and KAPPA_SOFTMAX are one function by two sets of ops (masked_softmax,
  window_softmax): each variant keeps the one it is defined with, so its
  numbers do not depend on the other family's.

A normaliser that only one variant uses lives in that variant's module
(attention.sigmoid), not here. What every normaliser provides is
attention.base.Normaliser.

The normaliser crossover (bundle field "normswap") evaluates a trained kernel
cell a second time with the other normaliser over the very same kappa.
Renormalised wraps a cell's own score module and re-normalises its kappa, so a
yat cell crossed to "softmax" computes exactly what yat_exp computes with the
same weights, and the crossover depends on no other variant's module. A score
module's `scores` are its kappa with -inf on masked keys
(attention.base.ScoreOutput), which is what the wrapper re-normalises; the
blockwise path gets the same kappa with the other normaliser. CROSSOVER maps
the names the variant registry gives (attnlab.core.variants.NORMALISERS) to
these normalisers.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
from flax import nnx

from attnlab.core.constants import KERNEL_NORMALISER_EPS
from attnlab.training.attention.base import BlockScorer, Normaliser, ScoreOutput, causal_mask, head_outputs, \
    kernel_weights, masked_softmax


def window_softmax(scores: jnp.ndarray, mask: jnp.ndarray) -> jnp.ndarray:
    """Softmax of scores over the visible keys (mask True); masked keys get exactly 0.

    Safe where attention.base.masked_softmax is not: a row with no visible key
    gets all-zero weights, and neither its value nor its gradient is NaN (a
    causal row always sees itself, so this guards the helper, not the model).
    """
    visible = jnp.broadcast_to(mask, scores.shape)
    peak = jnp.max(jnp.where(visible, scores, -jnp.inf), axis=-1, keepdims=True)
    peak = jax.lax.stop_gradient(jnp.where(jnp.isfinite(peak), peak, 0.0))
    shifted = jnp.where(visible, scores - peak, 0.0)  # masked entries never reach exp as -inf - (-inf)
    exps = jnp.where(visible, jnp.exp(shifted), 0.0)
    total = exps.sum(-1, keepdims=True)
    return exps / jnp.where(total > 0, total, 1.0)


class Softmax(Normaliser):
    """w = softmax(s) over the visible keys; blockwise, the online softmax.

    `weights(scores, mask)` is the dense softmax (masked_softmax or window_softmax).
    """

    name = "softmax"

    def __init__(self, weights: Callable[[jnp.ndarray, jnp.ndarray], jnp.ndarray]):
        self.weights = weights

    def dense(self, scores: jnp.ndarray, mask: jnp.ndarray) -> ScoreOutput:
        return ScoreOutput(weights=self.weights(scores, mask), scores=jnp.where(mask, scores, -jnp.inf))

    def start(self, shape, dtype):
        """(running max, running sum of exp(s - max))."""
        return jnp.full(shape, -jnp.inf, dtype), jnp.zeros(shape, dtype)

    def block(self, stats, scores, visible):
        peak, total = stats
        scores = jnp.where(visible, scores, -jnp.inf)
        new_peak = jnp.maximum(peak, jax.lax.stop_gradient(scores.max(-1)))  # the output does not depend on it
        rescale = jnp.exp(peak - new_peak)  # 0 at the first block (peak -inf), where acc and total are 0
        weights = jnp.exp(scores - new_peak[..., None])
        total = total * rescale + weights.sum(-1)
        return (new_peak, total), weights, rescale

    def finish(self, stats, acc):
        return acc / stats[1][..., None]


class Kernel(Normaliser):
    """w = kappa / (sum kappa + 1e-9) over the visible keys; the row mass sum kappa is reported.

    Blockwise: the running sum of kappa; the output is sum(kappa v) / (sum kappa + 1e-9).
    """

    name = "kernel"

    def dense(self, scores: jnp.ndarray, mask: jnp.ndarray) -> ScoreOutput:
        masked = jnp.where(mask, scores, -jnp.inf)
        weights, mass = kernel_weights(scores, mask)
        return ScoreOutput(weights=weights, scores=masked, mass=mass)

    def start(self, shape, dtype):
        return jnp.zeros(shape, dtype)

    def block(self, stats, scores, visible):
        weights = jnp.where(visible, scores, 0.0)
        return stats + weights.sum(-1), weights, None

    def finish(self, stats, acc):
        return acc / (stats + KERNEL_NORMALISER_EPS)[..., None]


SOFTMAX = Softmax(masked_softmax)
KAPPA_SOFTMAX = Softmax(window_softmax)
KERNEL = Kernel()
CROSSOVER: dict[str, Normaliser] = {"kernel": KERNEL, "softmax": KAPPA_SOFTMAX}


class Renormalised(nnx.Module):
    """A kernel-family score module whose kappa is normalised by `normaliser` (a CROSSOVER name) instead of its own.

    Holds no parameters of its own: the inner module's are used as trained.
    """

    def __init__(self, inner: nnx.Module, normaliser: str):
        if normaliser not in CROSSOVER:
            raise ValueError(f"unknown normaliser {normaliser!r}; expected one of {', '.join(CROSSOVER)}")
        self.inner = inner
        self.normaliser = CROSSOVER[normaliser]

    def __call__(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> ScoreOutput:
        scores = self.inner(q, k, layer).scores
        return self.normaliser.dense(scores, causal_mask(scores.shape[-1]))

    def blockwise(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> BlockScorer:
        return self.inner.blockwise(q, k, layer)._replace(normaliser=self.normaliser)

    def head_outputs(self, attend, v: jnp.ndarray, layer: int) -> jnp.ndarray:
        """The inner module's step after its weights (attention.base.head_outputs): only the normaliser swaps."""
        return head_outputs(self.inner, attend, v, layer)
