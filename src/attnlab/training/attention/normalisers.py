"""The two normalisers of the kernel family, and the crossover that swaps one for the other.

The yat family computes one score map, kappa >= 0, and normalises it over the
causal window in one of two ways:
- "kernel" (yat, yat_b): w = kappa / (sum kappa + 1e-9), the seed's l1 normaliser
  (attention.base.kernel_weights); the row mass sum kappa is telemetry;
- "softmax" (yat_exp, yat_b_exp): w = softmax(kappa) over the visible keys
  (window_softmax below); no row mass enters the weights, so none is reported.

The normaliser crossover (attnlab.training.train, bundle field "normswap")
evaluates a trained kernel cell a second time with the other normaliser over the
very same kappa. Renormalised wraps a cell's own score module and re-normalises
its kappa, so a yat cell crossed to "softmax" computes exactly what yat_exp
computes with the same weights, and the crossover depends on no other variant's
module. A score module's `scores` are its kappa with -inf on masked keys
(attention.base.ScoreOutput), which is what the wrapper re-normalises, through
the same normalised_output the kernel modules use; the blockwise path gets the
same kappa with the other normaliser named.
"""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp
from flax import nnx

from attnlab.training.attention.base import BlockScorer, ScoreOutput, causal_mask, kernel_weights

Normaliser = Literal["kernel", "softmax"]
NORMALISERS = ("kernel", "softmax")


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


def normalised_output(kappa: jnp.ndarray, normaliser: Normaliser) -> ScoreOutput:
    """Mask kappa and normalise it over the causal window by `normaliser`; masked keys are excluded.

    "kernel" reports the row mass sum kappa; "softmax" reports none (it does not
    enter the weights). Either way the max score is kappa's. Masked entries of
    kappa may hold anything (-inf included): they never reach the weights.
    """
    mask = causal_mask(kappa.shape[-1])
    scores = jnp.where(mask, kappa, -jnp.inf)
    if normaliser == "kernel":
        weights, mass = kernel_weights(kappa, mask)
        return ScoreOutput(weights=weights, scores=scores, mass=mass)
    if normaliser == "softmax":
        return ScoreOutput(weights=window_softmax(kappa, mask), scores=scores)
    raise ValueError(f"unknown normaliser {normaliser!r}; expected one of {', '.join(NORMALISERS)}")


class Renormalised(nnx.Module):
    """A kernel-family score module whose kappa is normalised by `normaliser` instead of its own.

    Holds no parameters of its own: the inner module's are used as trained.
    """

    def __init__(self, inner: nnx.Module, normaliser: Normaliser):
        if normaliser not in NORMALISERS:
            raise ValueError(f"unknown normaliser {normaliser!r}; expected one of {', '.join(NORMALISERS)}")
        self.inner = inner
        self.normaliser = normaliser

    def __call__(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> ScoreOutput:
        return normalised_output(self.inner(q, k, layer).scores, self.normaliser)

    def blockwise(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> BlockScorer:
        scorer = self.inner.blockwise(q, k, layer)
        return BlockScorer(self.normaliser, scorer.scores, scorer.keyed)
