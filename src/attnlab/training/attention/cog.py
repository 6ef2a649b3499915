"""Cog attention: w_ij = sign(s_ij) · exp(|s_ij|) / sum_{j' <= i} exp(|s_ij'|), s = q.k / sqrt(d_h).

From Lv et al. (2024), "More Expressive Attention with Negative Weights"
(arXiv:2411.07176): the softmax is taken of |s|, and each weight keeps the
sign of its score, so a head can subtract a value as well as add it. The
absolute weights sum to 1 on every row; the signed ones sum to anything in
[-1, 1]. No parameters of its own, so the variant has exactly softmax's count.
(The paper also changes other parts of its models; here only the score
function differs from softmax, as for every variant.)

Blockwise: the online softmax of |s| (running max and running sum of
exp(|s| - max)), each block's weights signed before they meet the values.

Telemetry: the max score is the signed logit s; the row entropy is of the
absolute weights |w| = softmax(|s|) (ScoreOutput.distribution), how the row
spreads its magnitude; no row mass. The attention-map figures draw weights on
one [0, 1] scale for every variant, where a negative weight shows as 0.
"""

from __future__ import annotations


import jax.numpy as jnp

from attnlab.training.attention.base import ScoreOutput, masked_softmax
from attnlab.training.attention.normalisers import Softmax
from attnlab.training.attention.plain_logits import PlainLogitsScore


class SignedSoftmax(Softmax):
    """w = sign(s) · softmax(|s|) over the visible keys."""

    name = "signed_softmax"

    def __init__(self):
        super().__init__(masked_softmax)

    def dense(self, scores: jnp.ndarray, mask: jnp.ndarray) -> ScoreOutput:
        magnitude = masked_softmax(jnp.abs(scores), mask)
        return ScoreOutput(weights=jnp.sign(scores) * magnitude, scores=jnp.where(mask, scores, -jnp.inf),
                           distribution=magnitude)

    def block(self, stats, scores, visible):
        stats, weights, rescale = super().block(stats, jnp.abs(scores), visible)
        return stats, jnp.sign(scores) * weights, rescale


class CogScore(PlainLogitsScore):
    """No learned parameters: the score map is softmax's, only the normaliser differs."""

    normaliser = SignedSoftmax()
