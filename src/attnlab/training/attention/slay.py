"""SLAY (Luna, Bouhsine and Choromanski, 2026, arXiv 2602.04915): the spherical Yat kernel through non-negative
random features.

The kernel is attention.spherical_yat's, κ(x) = x² / (C − 2x) with C = 2 + ε and
x = q̂·k̂. Three approximations, each non-negative:

- 1/(C − 2x) = ∫₀^∞ e^{−sC} e^{2sx} ds, by Gauss–Laguerre quadrature over R
  nodes: with t = Cs, nodes s_r = t_r / C and weights w_r = α_r / C, where t_r,
  α_r are the R-point Laguerre rule's (numpy.polynomial.laguerre.laggauss).
  A few nodes follow the integral well away from x = 1 and lose its peak
  there: with R = 2 the sum is 2.3 at x = 0.9 (the integral 5.0), 2.9 at
  x = 0.99 (47.6) and 3.0 at x = 1 (1/ε = 1000);
- e^{2sx} = E_ω[e^{√(2s) ω·q̂ − s} e^{√(2s) ω·k̂ − s}], ω ~ N(0, I_d), by M
  positive random features per node and head (unit vectors make FAVOR+'s
  −‖u‖²/2 the constant −s); the exponent is clipped to ±10, as the paper's
  reference implementation (azettaai/slay, slay_jax/) clips it;
- x² by P unit anchor directions a_p per layer: (1/P) Σ_p (a_p·q̂)² (a_p·k̂)².
  For uniformly drawn anchors its expectation is (1 + 2x²)/(d(d + 2)), not x²
  up to scale: at x = 0 it is not 0 (the reference implementation's estimator
  has the same expectation). With fewer anchors than head dimensions (P = 8,
  d_head 16 at the default model) a unit vector orthogonal to every anchor
  has no features at all; such a query's row is all zeros, as yat's zero
  query's.

φ(u) is the product of the three over (r, p, m), √w_r · (a_p·û)²/√P ·
e^{√(2s_r) ω_rm·û − s_r}/√M, so F = R·P·M features, all ≥ 0, and the kernel is
κ̃(q, k) = φ(q)·φ(k). The weights are κ̃ / Σκ̃ over the causal window, yat's
normaliser. The random arrays (anchors per layer; ω per layer, node and head)
are drawn once from FEATURE_SEED by numpy's PCG64 generator, so they are the
same for every cell and every JAX version, and never trained: they are state
of the model outside its parameters, which the optimiser does not see, made
again from the seed wherever the model is built. R = 2, P = 8, M = 8 (F = 128)
are the reference implementation's profiling defaults; the paper does not
state the sizes of its language-model run. A config sets them, and the seed,
per build or per study (model.variant_options.slay: SETTINGS below).

The model's dense and blockwise paths compute these weights as every kernel
variant's (quadratic in the window, which at a block of 128 is the cheaper
order, and where dropout on the weights applies); `causal_linear_attention`
computes the same output without dropout in time and memory linear in the
context, by chunked prefix sums of φ(k)vᵀ and φ(k), never forming a T × T
array. tests/test_slay.py holds the two equal; benchmarks/slay.py times both
against exact softmax and exact spherical Yat.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from attnlab.core.constants import KERNEL_NORMALISER_EPS
from attnlab.training.attention.base import BlockScorer, Normaliser, ScoreOutput, causal_mask, pairwise_dots
from attnlab.training.attention.normalisers import KERNEL
from attnlab.training.attention.spherical_yat import SPHERICAL_EPS, unit

# The variant's settings (model.variant_options.slay in a config): their valid values, checked before any compute
# (attnlab.core.variants.declared_settings reads this literal without importing JAX), and their defaults.
SETTINGS = {
    "nodes": {"type": "integer", "minimum": 1, "maximum": 16, "default": 2,
              "description": "R, Gauss-Laguerre quadrature nodes of the 1/(C - 2x) factor"},
    "anchors": {"type": "integer", "minimum": 1, "maximum": 256, "default": 8,
                "description": "P, unit anchor directions of the x^2 factor"},
    "features": {"type": "integer", "minimum": 1, "maximum": 1024, "default": 8,
                 "description": "M, positive random features per node and head of the exponential factor"},
    "seed": {"type": "integer", "minimum": 0, "maximum": 4294967295, "default": 2026,
             "description": "the seed the anchors and the random features are drawn from (the same for every cell)"},
}
QUADRATURE_NODES = SETTINGS["nodes"]["default"]  # R
ANCHORS = SETTINGS["anchors"]["default"]  # P
RANDOM_FEATURES = SETTINGS["features"]["default"]  # M
FEATURE_SEED = SETTINGS["seed"]["default"]  # every cell draws the same anchors and ω
EXPONENT_CLIP = 10.0
LINEAR_CHUNK = 64  # queries per step of the linear path's scan


class FrozenFeatures(nnx.Variable):
    """Random arrays of the feature map: model state that no optimiser updates."""


def laguerre_rule(nodes: int, eps: float = SPHERICAL_EPS) -> tuple[np.ndarray, np.ndarray]:
    """(s_r, w_r): Σ_r w_r e^{2 s_r x} ≈ 1 / (2 + ε − 2x), the Laplace integral by Gauss–Laguerre quadrature."""
    t, alpha = np.polynomial.laguerre.laggauss(nodes)
    rate = 2.0 + eps
    return t / rate, alpha / rate


def feature_arrays(layers: int, heads: int, d_head: int, nodes: int = QUADRATURE_NODES, anchors: int = ANCHORS,
                   features: int = RANDOM_FEATURES, seed: int = FEATURE_SEED) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Unit anchors (layers, P, d) and Gaussian ω (layers, R, H, d, M), drawn from `seed` by numpy's PCG64 (the
    same arrays whatever the JAX version or its PRNG settings), in float32."""
    draw = np.random.default_rng(seed)
    a = draw.standard_normal((layers, anchors, d_head))
    omega = draw.standard_normal((layers, nodes, heads, d_head, features))
    return (jnp.asarray(a / np.linalg.norm(a, axis=-1, keepdims=True), jnp.float32),
            jnp.asarray(omega, jnp.float32))


def anchor_features(u_unit: jnp.ndarray, anchors: jnp.ndarray) -> jnp.ndarray:
    """(a_p·û)² / √P (B,T,H,P) of unit vectors û (B,T,H,d), anchors (P,d): their dot estimates x² (biased)."""
    return jnp.einsum("bthd,pd->bthp", u_unit, anchors) ** 2 / np.sqrt(anchors.shape[0])


def exponential_features(u_unit: jnp.ndarray, omega: jnp.ndarray, nodes, weights) -> jnp.ndarray:
    """√w_r · e^{√(2s_r) ω_rm·û − s_r} / √M (B,T,H,R,M) of unit vectors û (B,T,H,d), ω (R,H,d,M): for each node r
    their dot estimates w_r e^{2 s_r x}."""
    proj = jnp.einsum("bthd,rhdm->bthrm", u_unit, omega)
    s = jnp.asarray(nodes, u_unit.dtype)[:, None]
    exponent = jnp.clip(jnp.sqrt(2.0 * s) * proj - s, -EXPONENT_CLIP, EXPONENT_CLIP)
    return jnp.exp(exponent) * (jnp.sqrt(jnp.asarray(weights, u_unit.dtype))[:, None] / np.sqrt(omega.shape[-1]))


def feature_map(u: jnp.ndarray, anchors: jnp.ndarray, omega: jnp.ndarray, nodes, weights) -> jnp.ndarray:
    """φ(u) (B,T,H,R·P·M) ≥ 0 of queries or keys u (B,T,H,d) at one layer: anchors (P,d), ω (R,H,d,M). The
    tensor product of the two factors per node, so φ(q)·φ(k) = Σ_r (anchor dot)(node r's exponential dot)."""
    u = unit(u)
    fused = jnp.einsum("bthp,bthrm->bthrpm", anchor_features(u, anchors), exponential_features(u, omega, nodes,
                                                                                               weights))
    return fused.reshape(*u.shape[:3], -1)


def causal_linear_attention(phi_q: jnp.ndarray, phi_k: jnp.ndarray, v: jnp.ndarray,
                            chunk: int = LINEAR_CHUNK) -> jnp.ndarray:
    """Row i: Σ_{j≤i} (φ_q,i·φ_k,j) v_j / (Σ_{j≤i} φ_q,i·φ_k,j + 1e-9), for φ (B,T,H,F) ≥ 0 and v (B,T,H,D).

    A scan over chunks of `chunk` positions carries the prefix sums S = Σ φ_k vᵀ (B,H,F,D) and z = Σ φ_k (B,H,F);
    inside a chunk the pairs are a (chunk × chunk) product. Time O(T·F·(chunk + D)), memory O(T·F) forward and
    O(T·F·D / chunk) more for the carries the backward pass keeps. No dropout: the model's dense path is where
    dropout on the weights applies.
    """
    batch, length, heads, width = phi_q.shape
    pad = -length % chunk
    if pad:
        phi_q, phi_k, v = (jnp.pad(x, ((0, 0), (0, pad), (0, 0), (0, 0))) for x in (phi_q, phi_k, v))
    blocks = (length + pad) // chunk

    def split(x):
        return x.reshape(batch, blocks, chunk, heads, x.shape[-1]).swapaxes(0, 1)

    inside = jnp.tril(jnp.ones((chunk, chunk), dtype=bool))

    def step(carry, block):
        total, mass = carry
        fq, fk, vv = block
        pairs = jnp.where(inside, jnp.einsum("bchf,bdhf->bhcd", fq, fk), 0.0)
        numerator = jnp.einsum("bhcd,bdhe->bche", pairs, vv) + jnp.einsum("bchf,bhfe->bche", fq, total)
        denominator = pairs.sum(-1).swapaxes(1, 2) + jnp.einsum("bchf,bhf->bch", fq, mass)
        out = numerator / (denominator[..., None] + KERNEL_NORMALISER_EPS)
        total = total + jnp.einsum("bchf,bche->bhfe", fk, vv).astype(total.dtype)
        return (total, mass + fk.sum(1).astype(mass.dtype)), out

    dtype = jnp.promote_types(phi_q.dtype, v.dtype)  # the carried sums in the wider of the two
    start = (jnp.zeros((batch, heads, width, v.shape[-1]), dtype), jnp.zeros((batch, heads, width), dtype))
    _, outs = jax.lax.scan(step, start, (split(phi_q), split(phi_k), split(v)))
    return outs.swapaxes(0, 1).reshape(batch, blocks * chunk, heads, v.shape[-1])[:, :length]


class SlayScore(nnx.Module):
    """No learned parameter: softmax's parameter count; the feature arrays are FrozenFeatures."""

    normaliser: Normaliser = KERNEL

    def __init__(self, *, layers: int, heads: int, d_head: int, rngs: nnx.Rngs, nodes: int = QUADRATURE_NODES,
                 anchors: int = ANCHORS, features: int = RANDOM_FEATURES, seed: int = FEATURE_SEED, **_):
        anchor_array, omega = feature_arrays(layers, heads, d_head, nodes, anchors, features, seed)
        self.anchors = FrozenFeatures(anchor_array)
        self.omega = FrozenFeatures(omega)
        nodes, weights = laguerre_rule(nodes)
        self.nodes, self.node_weights = tuple(map(float, nodes)), tuple(map(float, weights))  # static: hashable

    def features(self, u: jnp.ndarray, layer: int) -> jnp.ndarray:
        """φ(u) at `layer` (B,T,H,F)."""
        return feature_map(u, self.anchors[...][layer], self.omega[...][layer], self.nodes, self.node_weights)

    def __call__(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> ScoreOutput:
        kappa = pairwise_dots(self.features(q, layer), self.features(k, layer))
        return self.normaliser.dense(kappa, causal_mask(q.shape[1]))

    def blockwise(self, q: jnp.ndarray, k: jnp.ndarray, layer: int) -> BlockScorer:
        phi_q = self.features(q, layer)
        return BlockScorer(self.normaliser, lambda k_block: pairwise_dots(phi_q, self.features(k_block, layer)))

    def linear(self, q: jnp.ndarray, k: jnp.ndarray, v: jnp.ndarray, layer: int) -> jnp.ndarray:
        """The attention output (B,T,H,D) in time and memory linear in T: what the dense weights give times v."""
        return causal_linear_attention(self.features(q, layer), self.features(k, layer), v)
