"""Differential attention: the difference of two softmax maps, each head's output normalised (the DIFF Transformer).

From Ye, Dong, Xia, Sun, Zhu, Huang and Wei (2024), "Differential Transformer" (arXiv:2410.05258; ICLR 2025).
A differential head i has two query and key halves (q₁, k₁), (q₂, k₂) of width d and values of width 2d:

    DiffAttn_i = (softmax(q₁k₁ᵀ/√d) − λ softmax(q₂k₂ᵀ/√d)) V_i
    λ = exp(λ_q1·λ_k1) − exp(λ_q2·λ_k2) + λ_init,    λ_init = 0.8 − 0.6 exp(−0.3 l)   (l = 0, 1, … the layer)
    head_i = (1 − λ_init) · RMSNorm(DiffAttn_i)      (over the head's 2d values; eps 1e-5, a learned scale)

Matched in parameters as the paper matches them: with the model's H heads of width d = d_model / H, the
projections stay softmax's, and the H query and key heads are read as H/2 differential heads' halves (heads 2i
and 2i+1), whose values (those two heads' values side by side, 2d wide) the pair shares. Beyond softmax each
layer learns the four λ vectors (d each, drawn from N(0, 0.1²) as the paper's code draws them) and the
normalisation's scale (2d, starting at 1): layers × 6d parameters. H must be even (HEADS_MULTIPLE).

How this build differs, on purpose: the seed's dropout on the attention weights drops entries of each of the
two softmax maps (the paper's code drops none); the model's learned position embedding stands where the paper
uses rotary embeddings; with model.kv_heads, a pair's values are its two query heads' key/value heads' values
side by side (where the paper gives each key/value head 2d-wide values).

The score step returns the H softmax maps (weights, whose rows sum to 1, and their logits as scores): what the
telemetry reads per map, and what the blockwise path computes key block by key block. head_outputs then
takes their difference and normalises each head, on the dense and the blockwise path alike
(attention.base.head_outputs). The learned scalar `lambda` is λ per layer.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

from attnlab.training.attention.normalisers import SOFTMAX
from attnlab.training.attention.plain_logits import PlainLogitsScore

HEADS_MULTIPLE = 2  # the model's heads pair up into differential heads
LAMBDA_STD = 0.1  # the λ vectors' initial spread
NORM_EPS = 1e-5  # the per-head RMSNorm's epsilon


def lambda_init(layer: int) -> float:
    """λ_init of a layer counted from 0: 0.8 − 0.6 exp(−0.3 l), 0.2 at the first layer, rising towards 0.8."""
    return 0.8 - 0.6 * math.exp(-0.3 * layer)


class DifferentialScore(PlainLogitsScore):
    """Four λ vectors and a normalisation scale per layer; the model's heads read as pairs. The maps are softmax's
    over its logits (PlainLogitsScore)."""

    normaliser = SOFTMAX

    def __init__(self, *, layers: int, heads: int, d_head: int, rngs: nnx.Rngs, **_):
        if heads % HEADS_MULTIPLE:
            raise ValueError(f"differential attention pairs the model's heads: heads {heads} is odd")
        super().__init__(layers=layers, heads=heads, d_head=d_head, rngs=rngs)
        self.lambda_vectors = nnx.Param(LAMBDA_STD * jax.random.normal(rngs.params(), (layers, 4, d_head),
                                                                        jnp.float32))
        self.norm_scale = nnx.Param(jnp.ones((layers, 2 * d_head), jnp.float32))
        self.lambda_inits = tuple(lambda_init(layer) for layer in range(layers))  # static: floats

    def differential_lambda(self, layer: int) -> jnp.ndarray:
        """λ of one layer, a scalar: exp(λ_q1·λ_k1) − exp(λ_q2·λ_k2) + λ_init."""
        q1, k1, q2, k2 = self.lambda_vectors[...][layer]
        return jnp.exp(q1 @ k1) - jnp.exp(q2 @ k2) + self.lambda_inits[layer]

    def scalars(self) -> dict[str, jnp.ndarray]:
        """λ per layer, (layers,)."""
        return {"lambda": jnp.stack([self.differential_lambda(layer) for layer in range(len(self.lambda_inits))])}

    def head_outputs(self, attend, v: jnp.ndarray, layer: int) -> jnp.ndarray:
        """(1 − λ_init) RMSNorm(A₁V − λ A₂V) per differential head, laid out as the model's H heads (B,T,H,d).

        Each of the pair's two maps attends the pair's 2d-wide values; the head's output is the first map's
        result less λ times the second's."""
        batch, length, heads, width = v.shape
        pair_values = jnp.repeat(v.reshape(batch, length, heads // 2, 2 * width), 2, axis=2)  # (B,S,H,2d)
        mixed = attend(pair_values)  # (B,T,H,2d)
        difference = mixed[:, :, 0::2] - self.differential_lambda(layer) * mixed[:, :, 1::2]  # (B,T,H/2,2d)
        normed = difference * jax.lax.rsqrt((difference**2).mean(-1, keepdims=True) + NORM_EPS)
        scaled = normed * self.norm_scale[...][layer] * (1.0 - self.lambda_inits[layer])
        return scaled.reshape(batch, difference.shape[1], heads, width)

