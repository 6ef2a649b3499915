"""Softpick: w_ij = ReLU(e^{s_ij} - 1) / (sum_{j' <= i} |e^{s_ij'} - 1| + eps), s = q.k / sqrt(d_h).

From Zuhri et al. (2025), "Softpick: No Attention Sink, No Massive
Activations with Rectified Softmax" (arXiv:2504.20966): a key whose score is
at or below 0 gets weight exactly 0, and the denominator counts every visible
key's distance from 0, so the weights of a row sum to at most 1 and a row may
attend to nothing at all. Without a sum-to-one constraint, a head has no need
to park its weight on a sink token. eps is 1e-6 (SOFTPICK_EPS). No parameters
of its own, so the variant has exactly softmax's count.

Computed stably: with m_i = max(0, max_j s_ij), every term e^{s} - 1 is
e^{m} (e^{s - m} - e^{-m}), and e^{m} cancels between numerator and
denominator, leaving eps · e^{-m} in the denominator; no exponential exceeds 1,
and expm1 keeps scores near 0 (most of them, early in training) exact.
Only visible keys enter the sum. m carries no gradient: the weights do not
depend on it.

Blockwise: the running m (starting at 0, not -inf) and the running sum of
|e^{s - m} - e^{-m}|; when m grows to m', both that sum and the running
weighted values are scaled by e^{m - m'}, exactly as the online softmax
rescales, because e^{s - m} - e^{-m} = e^{-m} (e^{s} - 1).

Telemetry: the max score is the logit s; the row entropy is of each row
divided by its sum (ScoreOutput.distribution). A row with no positive score
picks nothing: its distribution is all zeros, which the row-entropy telemetry
counts as entropy 0, so a softpick head's mean entropy is of its rows as
computed, not of the rows that attend. No row mass.
"""

from __future__ import annotations


import jax
import jax.numpy as jnp

from attnlab.training.attention.base import Normaliser, ScoreOutput
from attnlab.training.attention.plain_logits import PlainLogitsScore

SOFTPICK_EPS = 1e-6  # the paper's epsilon in the denominator


def _peak(scores: jnp.ndarray, visible: jnp.ndarray, floor: jnp.ndarray) -> jnp.ndarray:
    """max(floor, the largest visible score) per row, without a gradient (the weights do not depend on it)."""
    return jax.lax.stop_gradient(jnp.maximum(floor, jnp.where(visible, scores, -jnp.inf).max(-1)))


def _shifted_terms(scores: jnp.ndarray, visible: jnp.ndarray, peak: jnp.ndarray) -> jnp.ndarray:
    """e^{s - m} - e^{-m} on visible keys, exactly 0 elsewhere.

    Through expm1, so a score near 0 loses nothing to cancellation: e^{-m} expm1(s) for s < 0 and
    -e^{s - m} expm1(-s) for s >= 0, each factor at most 1 in size; each form sees only the scores it is
    used for, so neither overflows, nor does its gradient."""
    peak = peak[..., None]
    below = jnp.where(visible & (scores < 0), scores, 0.0)  # masked keys never reach exp as -inf
    above = jnp.where(visible & (scores >= 0), scores, 0.0)
    terms = jnp.where(scores < 0, jnp.exp(-peak) * jnp.expm1(below), -jnp.exp(above - peak) * jnp.expm1(-above))
    return jnp.where(visible, terms, 0.0)


class Softpick(Normaliser):
    """w = ReLU(e^{s} - 1) / (sum |e^{s} - 1| + eps) over the visible keys."""

    name = "softpick"
    may_pick_nothing = True  # a row whose every visible score is <= 0 has all-zero weights

    def dense(self, scores: jnp.ndarray, mask: jnp.ndarray) -> ScoreOutput:
        visible = jnp.broadcast_to(mask, scores.shape)
        peak = _peak(scores, visible, jnp.zeros(scores.shape[:-1], scores.dtype))
        terms = _shifted_terms(scores, visible, peak)
        total = jnp.abs(terms).sum(-1) + SOFTPICK_EPS * jnp.exp(-peak)
        weights = jax.nn.relu(terms) / total[..., None]
        picked = weights.sum(-1, keepdims=True)
        distribution = weights / jnp.where(picked > 0, picked, 1.0)
        return ScoreOutput(weights=weights, scores=jnp.where(mask, scores, -jnp.inf), distribution=distribution)

    def start(self, shape, dtype):
        """(running m, running sum of |e^{s - m} - e^{-m}|): m starts at 0, the floor of its max."""
        return jnp.zeros(shape, dtype), jnp.zeros(shape, dtype)

    def block(self, stats, scores, visible):
        peak, total = stats
        visible = jnp.broadcast_to(visible, scores.shape)
        new_peak = _peak(scores, visible, peak)
        rescale = jnp.exp(peak - new_peak)
        terms = _shifted_terms(scores, visible, new_peak)
        total = total * rescale + jnp.abs(terms).sum(-1)
        return (new_peak, total), jax.nn.relu(terms), rescale

    def finish(self, stats, acc):
        peak, total = stats
        return acc / (total + SOFTPICK_EPS * jnp.exp(-peak))[..., None]


class SoftpickScore(PlainLogitsScore):
    """No learned parameters: the score map is softmax's, only the normaliser differs."""

    normaliser = Softpick()
