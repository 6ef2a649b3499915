"""Cog attention: w_ij = sign(s_ij) exp(|s_ij|) / sum_j' exp(|s_ij'|), signed weights whose magnitudes sum to 1.

- the weights are that formula (float64 reference), exactly 0 on future keys, some negative, |w| summing to 1;
- the blockwise path equals the dense one and the reference, outputs and gradients, with shared key heads, at
  key blocks below, at and above the window; gradients stay finite on huge scores;
- its telemetry: the signed logit as score, the entropy of |w|; softmax's parameter count; a smoke cell trains.
"""

from __future__ import annotations

import numpy as np
import pytest
from flax import nnx

from attnlab.training.attention import score_class
from score_reference import (assert_blockwise_equals_dense_and_reference,
                             BLOCK_CASES, DHEAD, HEADS, LAYERS, LENGTH, inputs, logits64,
                             assert_finite_through_both_paths, parameters_beyond_softmax, train_smoke_cell)

VISIBLE = np.tril(np.ones((LENGTH, LENGTH), dtype=bool))


def make_score():
    return score_class("cog")(layers=LAYERS, heads=HEADS, d_head=DHEAD, block_size=16, rngs=nnx.Rngs(0))


def naive_weights(q, k):
    """The formula row by row in float64."""
    s = logits64(q, k)
    w = np.zeros_like(s)
    for i in range(s.shape[2]):
        row = s[:, :, i, : i + 1]
        e = np.exp(np.abs(row) - np.abs(row).max(-1, keepdims=True))
        w[:, :, i, : i + 1] = np.sign(row) * e / e.sum(-1, keepdims=True)
    return w


@pytest.mark.parametrize("scale", [0.3, 1.0, 4.0])
def test_weights_are_the_formula_signed_with_magnitudes_summing_to_one(scale):
    q, k, _ = inputs(scale=scale)
    out = make_score()(q, k, layer=0)
    weights = np.asarray(out.weights, np.float64)
    np.testing.assert_allclose(weights, naive_weights(q, k), rtol=2e-5, atol=1e-7)
    assert np.all(weights[..., ~VISIBLE] == 0.0) and np.any(weights < 0), "signed, and nothing on future keys"
    np.testing.assert_allclose(np.abs(weights).sum(-1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("kv_heads,block", BLOCK_CASES)
def test_blockwise_output_and_gradients_equal_dense_and_the_reference(kv_heads, block):
    assert_blockwise_equals_dense_and_reference(make_score(), naive_weights, kv_heads, block)


@pytest.mark.parametrize("scale", [1e-3, 30.0])
def test_gradients_are_finite_on_tiny_and_huge_scores(scale):
    q, k, v = inputs(2, scale=scale, seed=3)
    assert_finite_through_both_paths(make_score(), q, k, v)


def test_telemetry_is_the_signed_logit_and_the_entropy_of_the_magnitudes():
    q, k, _ = inputs(scale=2.0)
    out = make_score()(q, k, layer=0)
    assert out.mass is None and out.gate is None
    np.testing.assert_allclose(np.asarray(out.distribution), np.abs(np.asarray(out.weights)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(out.scores)[..., VISIBLE], logits64(q, k)[..., VISIBLE], rtol=1e-5,
                               atol=1e-5)
    assert not nnx.state(make_score(), nnx.Param), "no parameters of its own"


def test_cog_has_softmaxs_parameter_count_at_the_default_config():
    assert parameters_beyond_softmax("cog")[0] == 0


def test_a_smoke_sized_cog_cell_trains(tiny_cfg, corpus_path, tmp_path):
    bundle = train_smoke_cell(tiny_cfg, corpus_path, tmp_path, "cog")
    assert "learned" not in bundle and "mass_auroc" not in bundle["telemetry"]
