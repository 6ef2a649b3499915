"""Softpick: w_ij = ReLU(e^{s_ij} - 1) / (sum_j' |e^{s_ij'} - 1| + eps), rows summing to at most 1.

- the weights are that formula (float64 reference), exactly 0 on future keys and on keys scoring at or below 0,
  a row of non-positive scores attending to nothing, no row summing above 1;
- the blockwise path equals the dense one and the reference, outputs and gradients, with shared key heads, at
  key blocks below, at and above the window; gradients stay finite on huge scores, where e^{s} overflows;
- its telemetry: the logit as score, the entropy of each row over its sum; softmax's parameter count; a smoke
  cell trains.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from attnlab.training.attention import score_class
from attnlab.training.attention.softpick import SOFTPICK_EPS
from score_reference import (assert_blockwise_equals_dense_and_reference,
                             BLOCK_CASES, DHEAD, HEADS, LAYERS, LENGTH, inputs, logits64,
                             assert_finite_through_both_paths, parameters_beyond_softmax, train_smoke_cell)

VISIBLE = np.tril(np.ones((LENGTH, LENGTH), dtype=bool))


def make_score():
    return score_class("softpick")(layers=LAYERS, heads=HEADS, d_head=DHEAD, block_size=16, rngs=nnx.Rngs(0))


def naive_weights(q, k):
    """The formula row by row in float64, as the paper writes it (no shift: float64 holds these scores)."""
    s = logits64(q, k)
    w = np.zeros_like(s)
    for i in range(s.shape[2]):
        e = np.exp(s[:, :, i, : i + 1]) - 1.0
        w[:, :, i, : i + 1] = np.maximum(e, 0.0) / (np.abs(e).sum(-1, keepdims=True) + SOFTPICK_EPS)
    return w


@pytest.mark.parametrize("scale", [0.3, 1.0, 3.0])
def test_weights_are_the_formula_zero_at_non_positive_scores_and_rows_at_most_one(scale):
    q, k, _ = inputs(scale=scale)
    out = make_score()(q, k, layer=0)
    weights = np.asarray(out.weights, np.float64)
    np.testing.assert_allclose(weights, naive_weights(q, k), rtol=2e-5, atol=1e-7)
    s = logits64(q, k)
    assert np.all(weights[..., ~VISIBLE] == 0.0), "nothing on future keys"
    assert np.all(weights[(s <= 0) & VISIBLE] == 0.0) and np.any((s <= 0) & VISIBLE), "a non-positive score picks 0"
    assert np.all(weights.sum(-1) <= 1.0 + 1e-6) and np.any(weights.sum(-1) < 0.99), "rows sum to at most 1"


def test_a_row_of_non_positive_scores_attends_to_nothing():
    q, k, _ = inputs(scale=1.0)
    # a zero query scores 0 against every key: its row of weights is all zero, with no NaN
    out = make_score()(jnp.zeros_like(q), k, layer=0)
    assert np.all(np.asarray(out.weights) == 0.0)
    assert np.all(np.isfinite(np.asarray(out.distribution))) and np.all(np.asarray(out.distribution) == 0.0)


@pytest.mark.parametrize("kv_heads,block", BLOCK_CASES)
def test_blockwise_output_and_gradients_equal_dense_and_the_reference(kv_heads, block):
    assert_blockwise_equals_dense_and_reference(make_score(), naive_weights, kv_heads, block)


@pytest.mark.parametrize("scale", [1e-3, 30.0])
def test_gradients_are_finite_on_tiny_and_huge_scores(scale):
    q, k, v = inputs(2, scale=scale, seed=3)
    assert_finite_through_both_paths(make_score(), q, k, v)


def test_huge_scores_pick_the_largest_key_as_the_formula_does():
    """At scores where e^{s} overflows float32, the shifted form still gives the formula's limit."""
    q, k, _ = inputs(scale=30.0, seed=3)
    weights = np.asarray(make_score()(q, k, layer=0).weights, np.float64)
    assert np.all(np.isfinite(weights))
    s = logits64(q, k)
    rows = np.where(VISIBLE, s, -np.inf)
    top = rows.argmax(-1)
    picked = np.take_along_axis(weights, top[..., None], -1)[..., 0]
    dominant = np.sort(rows, -1)[..., -1] - np.sort(rows, -1)[..., -2] > 5.0
    dominant &= rows.max(-1) > 5.0
    assert dominant.any()
    np.testing.assert_allclose(picked[dominant], 1.0, atol=1e-2)


def test_telemetry_is_the_logit_and_the_entropy_of_each_row_over_its_sum():
    q, k, _ = inputs(scale=2.0)
    out = make_score()(q, k, layer=0)
    assert out.mass is None and out.gate is None
    weights = np.asarray(out.weights, np.float64)
    sums = weights.sum(-1, keepdims=True)
    np.testing.assert_allclose(np.asarray(out.distribution), weights / np.where(sums > 0, sums, 1.0), rtol=1e-5,
                               atol=1e-7)
    np.testing.assert_allclose(np.asarray(out.scores)[..., VISIBLE], logits64(q, k)[..., VISIBLE], rtol=1e-5,
                               atol=1e-5)
    assert not nnx.state(make_score(), nnx.Param), "no parameters of its own"


def test_softpick_has_softmaxs_parameter_count_at_the_default_config():
    assert parameters_beyond_softmax("softpick")[0] == 0


def test_a_smoke_sized_softpick_cell_trains(tiny_cfg, corpus_path, tmp_path):
    bundle = train_smoke_cell(tiny_cfg, corpus_path, tmp_path, "softpick")
    assert "learned" not in bundle and "mass_auroc" not in bundle["telemetry"]
