"""Every score function yields distributions over the causal window, even on extreme inputs.

Sigmoid attention does not normalise its rows: for it the distributions checked
are its rows renormalised (ScoreOutput.distribution, what the row entropy is
taken of); its own weights are checked in tests/test_sigmoid.py. Softpick's
and stick-breaking's rows may attend to nothing (all weights 0, their
normaliser's may_pick_nothing): such rows are allowed to sum to 0, every other
row's distribution to 1 (tests/test_softpick.py and tests/test_stickbreaking.py
check their weights).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from attnlab.core.variants import VARIANTS, UnknownVariantError
from attnlab.training.attention import score_class
from attnlab.training.probe import row_distribution

LAYERS, HEADS, DHEAD, BLOCK = 2, 4, 8, 16  # an even head count: differential attention pairs heads


def make_score(variant):
    return score_class(variant)(layers=LAYERS, heads=HEADS, d_head=DHEAD, block_size=BLOCK, rngs=nnx.Rngs(0))


def assert_causal_distribution(weights, mass=None, may_pick_nothing=False):
    """Rows sum to 1 over the visible keys; a kernel's rows to mass / (mass + 1e-9), the seed's normaliser; with
    `may_pick_nothing`, a row of zeros too."""
    w = np.asarray(weights, dtype=np.float64)
    length = w.shape[-1]
    assert np.all(np.isfinite(w)), "weights contain NaN or inf"
    assert np.all(w >= 0)
    expected = 1.0 if mass is None else np.asarray(mass, np.float64) / (np.asarray(mass, np.float64) + 1e-9)
    if may_pick_nothing:
        expected = np.where(w.sum(-1) == 0.0, 0.0, expected)
    np.testing.assert_allclose(w.sum(-1), expected, atol=1e-5)
    future = ~np.tril(np.ones((length, length), dtype=bool))
    assert np.all(w[..., future] == 0.0), "weight on a masked (future) key"


def picks_nothing(score) -> bool:
    return getattr(getattr(score, "normaliser", None), "may_pick_nothing", False)


def qk(scale, length=7, seed=0):
    kq, kk = jax.random.split(jax.random.key(seed))
    shape = (2, length, HEADS, DHEAD)
    return scale * jax.random.normal(kq, shape), scale * jax.random.normal(kk, shape)


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("scale", [0.1, 1.0, 30.0])
def test_weights_are_causal_distributions(variant, scale):
    q, k = qk(scale)
    score = make_score(variant)
    out = score(q, k, layer=1)
    assert_causal_distribution(row_distribution(out), out.mass, picks_nothing(score))


UNIT_VECTORS = ("spherical_yat", "slay")  # score functions of the unit query and key alone


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_huge_scores_stay_finite(variant):
    # scores of order 1e5: softmax logits ~ 1e5, the kernel's numerators ~ 1e10
    q, k = qk(1.0)
    q = q / jnp.linalg.norm(q, axis=-1, keepdims=True) * 1e3
    k = k / jnp.linalg.norm(k, axis=-1, keepdims=True) * 1e3
    score = make_score(variant)
    out = score(q, k, layer=0)
    assert_causal_distribution(row_distribution(out), may_pick_nothing=picks_nothing(score))
    assert np.all(np.isfinite(np.asarray(out.weights)))
    if variant in UNIT_VECTORS:  # a kernel of unit queries and keys: the same scores at any input scale
        unscaled = make_score(variant)(q / 1e3, k / 1e3, layer=0)
        np.testing.assert_allclose(np.asarray(out.scores), np.asarray(unscaled.scores), rtol=1e-4)
    else:
        assert float(jnp.max(out.scores)) > 1e4


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v not in ("yat", *UNIT_VECTORS)])
def test_zero_queries_give_distributions(variant):
    """Not yat's: a zero query scores every key 0, and its row is all zeros, as the seed's (nor the kernels of
    unit vectors, whose zero query is yat's)."""
    _, k = qk(1.0)
    score = make_score(variant)
    out = score(jnp.zeros_like(k), k, layer=0)
    assert_causal_distribution(row_distribution(out), may_pick_nothing=picks_nothing(score))


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_single_visible_key_gets_all_the_weight(variant):
    q, k = qk(1.0, length=1)
    score = make_score(variant)
    w = np.asarray(row_distribution(score(q, k, layer=0)))
    if picks_nothing(score):  # all of the weight or none of it (softpick: none at a score <= 0; stick-breaking:
        # none ever, row 0 having no earlier key)
        assert np.all((w == 0.0) | (np.abs(w - 1.0) < 1e-3))
        return
    np.testing.assert_allclose(w, 1.0, rtol=1e-6)  # kernels: kappa / (kappa + 1e-9)


def test_zero_mass_kernel_row_gets_zero_weights_as_in_the_seed():
    # yat with q = 0 and b = 0: every kappa is 0; the seed's kappa / (mass + 1e-9) gives a zero row.
    _, k = qk(1.0, length=5)
    out = make_score("yat")(jnp.zeros_like(k), k, layer=0)
    assert np.all(np.asarray(out.mass) == 0.0)
    assert np.all(np.asarray(out.weights) == 0.0)


def test_zero_mass_rows_have_finite_gradients():
    _, k = qk(1.0, length=5)
    score = make_score("yat")
    grad = jax.grad(lambda q: score(q, k, layer=0).weights.sum())(jnp.zeros_like(k))
    assert np.all(np.isfinite(np.asarray(grad)))


def test_yat_kernel_matches_its_formula():
    q, k = qk(0.5, length=4)
    out = make_score("yat")(q, k, layer=0)
    qn, kn = np.asarray(q, np.float64), np.asarray(k, np.float64)
    b, i, j, h = 1, 3, 2, 2
    dot = qn[b, i, h] @ kn[b, j, h]
    kappa = dot**2 / (np.sum((qn[b, i, h] - kn[b, j, h]) ** 2) + 1.0)
    np.testing.assert_allclose(float(out.scores[b, h, i, j]), kappa, rtol=1e-4)
    row = np.array([(qn[b, i, h] @ kn[b, m, h]) ** 2 / (np.sum((qn[b, i, h] - kn[b, m, h]) ** 2) + 1.0)
                    for m in range(i + 1)])
    np.testing.assert_allclose(float(out.weights[b, h, i, j]), kappa / (row.sum() + 1e-9), rtol=1e-4)
    np.testing.assert_allclose(float(out.mass[b, h, i]), row.sum(), rtol=1e-4)


def test_yat_b_scalars_start_at_log_2():
    scalars = make_score("yat_b").scalars()
    for value in scalars.values():
        assert value.shape == (LAYERS, HEADS)
        np.testing.assert_allclose(np.asarray(value), np.log(2.0), rtol=1e-6)


def test_a3_at_init_is_softmax_at_temperature_one_over_sigmoid_3():
    q, k = qk(2.0)
    a3 = make_score("a3")(q, k, layer=1).weights
    logits = np.einsum("bthd,bshd->bhts", np.asarray(q), np.asarray(k)) / np.sqrt(DHEAD)
    mask = np.tril(np.ones(logits.shape[-2:], dtype=bool))

    def softmax(x):
        x = np.where(mask, x, -np.inf)
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    gate = 1.0 / (1.0 + np.exp(-3.0))
    np.testing.assert_allclose(np.asarray(a3), softmax(gate * logits), atol=1e-6)
    assert np.max(np.abs(np.asarray(a3) - softmax(logits))) > 1e-3, "A3 at init should not be plain softmax"


def test_a3_gate_is_causal():
    # the context of row i uses prefix means: changing key/query t must not move gates of rows < t
    q, k = qk(1.0, length=6)
    score = make_score("a3")
    score.w_g[...] = jnp.linspace(-1, 1, score.w_g.shape[0])
    score.u[...] = jnp.linspace(1, -1, score.u.shape[0])
    before = score(q, k, layer=0)
    q2, k2 = q.at[:, 4:].add(3.0), k.at[:, 4:].add(-3.0)
    after = score(q2, k2, layer=0)
    np.testing.assert_allclose(np.asarray(before.gate[..., :4]), np.asarray(after.gate[..., :4]), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(before.weights[..., :4, :]), np.asarray(after.weights[..., :4, :]),
                               rtol=1e-5, atol=1e-7)


def test_unknown_variant_lists_the_valid_ones():
    with pytest.raises(UnknownVariantError, match="softmax, yat, yat_b, a3"):
        score_class("cosine")
