"""Softmax with a learned sink: w_ij = exp(s_ij) / (exp(b_h) + sum_j' exp(s_ij')), one b per layer x head.

- the weights are that formula (computed here in float64), exactly 0 on future keys, rows summing to
  1 / (1 + exp(b) / sum exp(s)) < 1; b = 0 at init, the off-by-one softmax;
- gradients stay finite on huge sinks of either sign;
- its telemetry: the logit as score, the learned sink per layer x head, the entropy of softmax(s).

What every catalogued function must do (blockwise against dense and the reference, finite gradients, the
parameter count, a smoke cell, plain telemetry) is tests/test_catalog_scores.py; its reference formula is in
tests/score_catalog.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from score_catalog import SINKS, make, sink_weights
from score_reference import (DHEAD, HEADS, LAYERS, LENGTH, inputs, logits64,
                             assert_finite_through_both_paths)


def make_sink(sinks=None):
    return make("softmax_sink", sink_logit=sinks)


@pytest.mark.parametrize("layer", [0, 1])
@pytest.mark.parametrize("scale", [0.3, 1.0, 4.0])
def test_weights_are_the_formula(layer, scale):
    q, k, _ = inputs(scale=scale)
    out = make_sink(SINKS)(q, k, layer=layer)
    expected = sink_weights(q, k, SINKS[layer])
    np.testing.assert_allclose(np.asarray(out.weights, np.float64), expected, rtol=2e-5, atol=1e-7)
    future = ~np.tril(np.ones((LENGTH, LENGTH), dtype=bool))
    assert np.all(np.asarray(out.weights)[..., future] == 0.0)
    # what the row leaves for the sink: exp(b) / (exp(b) + sum exp(s)), in (0, 1) in exact arithmetic
    logits = np.where(np.tril(np.ones((LENGTH, LENGTH), dtype=bool)), logits64(q, k), -np.inf)
    b = np.asarray(SINKS[layer], np.float64)[None, :, None]
    sink_share = 1.0 / (1.0 + np.exp(logits - b[..., None]).sum(-1))
    assert np.all(sink_share > 0.0)
    np.testing.assert_allclose(1.0 - np.asarray(out.weights, np.float64).sum(-1), sink_share, atol=1e-6)


def test_at_init_it_is_the_off_by_one_softmax():
    """b = 0: the first row, which sees only itself, weighs it e^s / (1 + e^s)."""
    q, k, _ = inputs()
    score = make_sink()
    np.testing.assert_array_equal(np.asarray(score.sink_logit[...]), np.zeros((LAYERS, HEADS)))
    out = np.asarray(score(q, k, layer=0).weights, np.float64)
    s00 = np.einsum("bhd,bhd->bh", np.asarray(q)[:, 0], np.asarray(k)[:, 0]) / math.sqrt(DHEAD)
    np.testing.assert_allclose(out[:, :, 0, 0], 1.0 / (1.0 + np.exp(-s00)), rtol=1e-5)


@pytest.mark.parametrize("scale,sink", [(30.0, 0.0), (1.0, 80.0), (1.0, -80.0)])
def test_gradients_are_finite_on_huge_scores_and_sinks(scale, sink):
    score = make_sink(np.full((LAYERS, HEADS), sink))
    q, k, v = inputs(2, scale=scale, seed=3)
    assert_finite_through_both_paths(score, q, k, v)


def test_telemetry_is_the_logit_the_sink_and_the_renormalised_rows():
    q, k, _ = inputs(scale=2.0)
    score = make_sink(SINKS)
    out = score(q, k, layer=0)
    assert out.mass is None and out.gate is None and out.bias is None
    rows = np.asarray(out.distribution, np.float64)
    weights = np.asarray(out.weights, np.float64)
    np.testing.assert_allclose(rows, weights / weights.sum(-1, keepdims=True), rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(np.asarray(score.scalars()["sink_logit"]), SINKS)


