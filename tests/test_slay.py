"""What SLAY's formula alone does (attnlab.training.attention.slay): each random-feature factor estimates its
term of the spherical Yat kernel, the quadrature converges to the Laplace integral, the features are frozen and
the same for every cell, and the linear path gives the dense path's output and gradients.

What every catalogued function must do (blockwise = dense = the float64 reference, finite gradients, the
parameter count, a smoke cell) is tests/test_catalog_scores.py's, for slay and spherical_yat alike.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from attnlab.training.attention import slay
from attnlab.training.attention.spherical_yat import SPHERICAL_EPS
from score_catalog import make
from score_reference import inputs

D = 8


def unit_rows(seed: int = 0) -> np.ndarray:
    """Seven unit vectors whose cosines cover [-1, 1]: a random set, one its opposite, one at cosine 0.8."""
    rng = np.random.default_rng(seed)
    u = rng.normal(size=(7, D))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    other = rng.normal(size=D)
    other -= (other @ u[0]) * u[0]
    u[1], u[2] = -u[0], 0.8 * u[0] + 0.6 * other / np.linalg.norm(other)
    return u


def tokens(u: np.ndarray) -> jnp.ndarray:
    return jnp.asarray(u, jnp.float32)[None, :, None, :]  # (B=1, T, H=1, d)


def test_the_quadrature_converges_to_the_laplace_integral_of_the_denominator():
    x = np.linspace(-1.0, 0.9, 20)
    target = 1.0 / (2.0 + SPHERICAL_EPS - 2.0 * x)
    errors = {}
    for nodes in (2, 8, 30):
        s, w = slay.laguerre_rule(nodes)
        assert np.all(s > 0) and np.all(w > 0), "positive nodes and weights: every feature stays non-negative"
        errors[nodes] = np.abs((w * np.exp(2.0 * np.outer(x, s))).sum(1) / target - 1).max()
    assert errors[30] < 0.01 < errors[8] < errors[2], errors


def test_the_anchor_factor_estimates_its_expectation():
    """E[(a·q̂)²(a·k̂)²] = (1 + 2x²)/(d(d + 2)) for unit anchors drawn uniformly: x² up to scale and a constant."""
    u = unit_rows()
    x = u @ u.T
    anchors, _ = slay.feature_arrays(1, 1, D, nodes=1, anchors=20000, features=1, seed=5)
    a = np.asarray(slay.anchor_features(tokens(u), anchors[0])[0, :, 0], np.float64)
    assert np.abs((a @ a.T) / ((1 + 2 * x ** 2) / (D * (D + 2))) - 1).max() < 0.1


def test_the_exponential_factor_estimates_its_node_of_the_integral_and_a_naive_scale_does_not():
    """E[e^{√(2s)ω·q̂ − s} e^{√(2s)ω·k̂ − s}] = e^{2sx}; with √s in place of √(2s) the same draws miss it."""
    u = unit_rows()
    x = u @ u.T
    _, omega = slay.feature_arrays(1, 1, D, nodes=1, anchors=1, features=20000, seed=5)
    s, w = slay.laguerre_rule(1)
    e = np.asarray(slay.exponential_features(tokens(u), omega[0], tuple(s), tuple(w))[0, :, 0, 0], np.float64)
    target = w[0] * np.exp(2 * s[0] * x)
    assert np.abs((e @ e.T) / target - 1).max() < 0.25
    proj = np.einsum("td,dm->tm", u, np.asarray(omega[0, 0, 0], np.float64))
    naive = np.exp(np.sqrt(s[0]) * proj - s[0]) * np.sqrt(w[0] / proj.shape[1])
    assert np.abs((naive @ naive.T) / target - 1).max() > 0.25


def test_the_feature_map_is_the_tensor_product_of_its_factors_and_never_negative():
    u = tokens(unit_rows())
    anchors, omega = slay.feature_arrays(1, 1, D)
    s, w = slay.laguerre_rule(slay.QUADRATURE_NODES)
    phi = np.asarray(slay.feature_map(3.0 * u, anchors[0], omega[0], tuple(s), tuple(w))[0, :, 0], np.float64)
    a = np.asarray(slay.anchor_features(u, anchors[0])[0, :, 0], np.float64)
    e = np.asarray(slay.exponential_features(u, omega[0], tuple(s), tuple(w))[0, :, 0], np.float64)  # (T, R, M)
    assert phi.shape[1] == slay.QUADRATURE_NODES * slay.ANCHORS * slay.RANDOM_FEATURES and np.all(phi >= 0)
    product = (a @ a.T) * np.einsum("trm,srm->ts", e, e)
    np.testing.assert_allclose(phi @ phi.T, product, rtol=1e-4)


def test_the_features_are_frozen_state_the_same_for_every_cell():
    first, second = make("slay"), slay.SlayScore(layers=2, heads=4, d_head=8, rngs=nnx.Rngs(99))
    assert not nnx.state(first, nnx.Param), "no parameter: the optimiser never sees the features"
    frozen = nnx.state(first, slay.FrozenFeatures)
    assert {path[0] for path, _ in nnx.to_flat_state(frozen)} == {"anchors", "omega"}
    np.testing.assert_array_equal(first.omega[...], second.omega[...])
    np.testing.assert_allclose(np.linalg.norm(first.anchors[...], axis=-1), 1.0, rtol=1e-6)


@pytest.mark.parametrize("length,chunk", [(12, 4), (12, 5), (12, 12), (12, 64), (37, 8)])
def test_the_linear_path_gives_the_dense_output_and_gradients(length, chunk):
    score = make("slay")
    q, k, v = inputs(scale=2.0, seed=1, length=length)
    probe = jax.random.normal(jax.random.key(5), v.shape)

    def dense(q, k, v):
        return (jnp.einsum("bhts,bshd->bthd", score(q, k, 1).weights, v) * probe).sum()

    def linear(q, k, v):
        out = slay.causal_linear_attention(score.features(q, 1), score.features(k, 1), v, chunk=chunk)
        return (out * probe).sum()

    want = jax.grad(dense, argnums=(0, 1, 2))(q, k, v)
    got = jax.grad(linear, argnums=(0, 1, 2))(q, k, v)
    np.testing.assert_allclose(float(linear(q, k, v)), float(dense(q, k, v)), rtol=1e-5)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5 * float(np.abs(b).max()))
    np.testing.assert_allclose(np.asarray(score.linear(q, k, v, 1)),
                               np.asarray(jnp.einsum("bhts,bshd->bthd", score(q, k, 1).weights, v)), rtol=1e-4,
                               atol=1e-5)
