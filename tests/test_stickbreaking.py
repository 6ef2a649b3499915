"""Stick-breaking attention: w_ij = σ(s_ij) ∏_{j<k<i} (1 − σ(s_ik)) over the keys before i, not renormalised.

- the weights are that formula (float64 reference, the product taken directly), exactly 0 on the current and
  future keys, each row summing to 1 − ∏(1 − β) and row 0 to nothing;
- the blockwise path equals the dense one and the reference, outputs and gradients, with shared key heads, at
  key blocks below, at and above the window; gradients stay finite on tiny and huge scores;
- its telemetry: the logit as score, the entropy of each row over its sum; softmax's parameter count; a smoke
  cell trains.
"""

from __future__ import annotations

import numpy as np
import pytest
from flax import nnx

from attnlab.training.attention import score_class
from score_reference import (assert_blockwise_equals_dense_and_reference,
                             BLOCK_CASES, DHEAD, HEADS, LAYERS, LENGTH, inputs, logits64,
                             assert_finite_through_both_paths, parameters_beyond_softmax, train_smoke_cell)

EARLIER = np.tril(np.ones((LENGTH, LENGTH), dtype=bool), k=-1)


def make_score():
    return score_class("stickbreaking")(layers=LAYERS, heads=HEADS, d_head=DHEAD, block_size=16,
                                        rngs=nnx.Rngs(0))


def naive_weights(q, k):
    """The formula key by key in float64: each key's β times what the keys between it and the query left."""
    beta = 1.0 / (1.0 + np.exp(-logits64(q, k)))
    w = np.zeros_like(beta)
    for i in range(beta.shape[2]):
        left = np.ones(beta.shape[:2])
        for j in range(i - 1, -1, -1):  # the most recent key breaks the stick first
            w[:, :, i, j] = beta[:, :, i, j] * left
            left = left * (1.0 - beta[:, :, i, j])
    return w


@pytest.mark.parametrize("scale", [0.3, 1.0, 3.0])
def test_weights_are_the_formula_on_earlier_keys_with_rows_short_of_one(scale):
    q, k, _ = inputs(scale=scale)
    out = make_score()(q, k, layer=0)
    weights = np.asarray(out.weights, np.float64)
    np.testing.assert_allclose(weights, naive_weights(q, k), rtol=2e-5, atol=1e-7)
    assert np.all(weights[..., ~EARLIER] == 0.0), "nothing on the current or a future key"
    assert np.all(weights[..., 0, :] == 0.0), "row 0 has no earlier key"
    beta = 1.0 / (1.0 + np.exp(-logits64(q, k)))
    left = np.prod(np.where(EARLIER, 1.0 - beta, 1.0), axis=-1)
    np.testing.assert_allclose(weights.sum(-1), 1.0 - left, rtol=2e-5, atol=1e-7)


@pytest.mark.parametrize("kv_heads,block", BLOCK_CASES)
def test_blockwise_output_and_gradients_equal_dense_and_the_reference(kv_heads, block):
    assert_blockwise_equals_dense_and_reference(make_score(), naive_weights, kv_heads, block)


@pytest.mark.parametrize("scale", [1e-3, 30.0])
def test_gradients_are_finite_on_tiny_and_huge_scores(scale):
    q, k, v = inputs(2, scale=scale, seed=3)
    assert_finite_through_both_paths(make_score(), q, k, v)


def test_telemetry_is_the_logit_and_the_entropy_of_each_row_over_its_sum():
    q, k, _ = inputs(scale=2.0)
    out = make_score()(q, k, layer=0)
    assert out.mass is None and out.gate is None
    weights = np.asarray(out.weights, np.float64)
    sums = weights.sum(-1, keepdims=True)
    np.testing.assert_allclose(np.asarray(out.distribution), weights / np.where(sums > 0, sums, 1.0), rtol=1e-5,
                               atol=1e-7)
    causal = np.tril(np.ones((LENGTH, LENGTH), dtype=bool))
    np.testing.assert_allclose(np.asarray(out.scores)[..., causal], logits64(q, k)[..., causal], rtol=1e-5,
                               atol=1e-5)
    assert not nnx.state(make_score(), nnx.Param), "no parameters of its own"


def test_stickbreaking_has_softmaxs_parameter_count_at_the_default_config():
    assert parameters_beyond_softmax("stickbreaking")[0] == 0


def test_a_smoke_sized_stickbreaking_cell_trains(tiny_cfg, corpus_path, tmp_path):
    bundle = train_smoke_cell(tiny_cfg, corpus_path, tmp_path, "stickbreaking")
    assert "learned" not in bundle and "mass_auroc" not in bundle["telemetry"]
