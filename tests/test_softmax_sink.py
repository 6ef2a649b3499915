"""Softmax with a learned sink: w_ij = exp(s_ij) / (exp(b_h) + sum_j' exp(s_ij')), one b per layer x head.

- the weights are that formula (computed here in float64), exactly 0 on future keys, rows summing to
  1 / (1 + exp(b) / sum exp(s)) < 1; b = 0 at init, the off-by-one softmax;
- the blockwise path equals the dense one, outputs and gradients (b's included), with shared key heads, at key
  blocks below, at and above the window;
- gradients stay finite on huge scores and huge sinks;
- its telemetry: the logit as score, the learned sink per layer x head, the entropy of softmax(s);
- exactly layers x heads parameters more than softmax; a smoke-sized cell trains.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from attnlab.training.attention import score_class
from score_reference import (assert_blockwise_equals_dense_and_reference,
                             BLOCK_CASES, DHEAD, HEADS, LAYERS, LENGTH, inputs, logits64,
                             assert_finite_through_both_paths, parameters_beyond_softmax, train_smoke_cell)


def make_score(sinks=None):
    score = score_class("softmax_sink")(layers=LAYERS, heads=HEADS, d_head=DHEAD, block_size=16, rngs=nnx.Rngs(0))
    if sinks is not None:
        score.sink_logit[...] = jnp.asarray(sinks, jnp.float32)
    return score


SINKS = [[-2.0, 0.0, 1.5, 4.0], [0.5, -1.0, 3.0, -6.0]]  # (layers, heads): both signs, large and small


def naive_weights(q, k, sink):
    """The formula row by row in float64: exp(s_ij) / (exp(b_h) + sum over j' <= i of exp(s_ij'))."""
    s = logits64(q, k)
    sink = np.asarray(sink, np.float64)[None, :, None]
    w = np.zeros_like(s)
    for i in range(s.shape[2]):
        row = s[:, :, i, : i + 1]
        top = np.maximum(row.max(-1, keepdims=True), sink)
        e = np.exp(row - top)
        w[:, :, i, : i + 1] = e / (np.exp(sink - top) + e.sum(-1, keepdims=True))
    return w


@pytest.mark.parametrize("layer", [0, 1])
@pytest.mark.parametrize("scale", [0.3, 1.0, 4.0])
def test_weights_are_the_formula(layer, scale):
    q, k, _ = inputs(scale=scale)
    out = make_score(SINKS)(q, k, layer=layer)
    expected = naive_weights(q, k, SINKS[layer])
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
    score = make_score()
    np.testing.assert_array_equal(np.asarray(score.sink_logit[...]), np.zeros((LAYERS, HEADS)))
    out = np.asarray(score(q, k, layer=0).weights, np.float64)
    s00 = np.einsum("bhd,bhd->bh", np.asarray(q)[:, 0], np.asarray(k)[:, 0]) / math.sqrt(DHEAD)
    np.testing.assert_allclose(out[:, :, 0, 0], 1.0 / (1.0 + np.exp(-s00)), rtol=1e-5)


@pytest.mark.parametrize("kv_heads,block", BLOCK_CASES)
def test_blockwise_output_and_gradients_equal_dense(kv_heads, block):
    dense_grads = assert_blockwise_equals_dense_and_reference(
        make_score(SINKS), lambda q, k: naive_weights(q, k, SINKS[1]), kv_heads, block)
    assert np.abs(np.asarray(dense_grads[0])).max() > 0, "the sink logits learn"


@pytest.mark.parametrize("scale,sink", [(30.0, 0.0), (1.0, 80.0), (1.0, -80.0)])
def test_gradients_are_finite_on_huge_scores_and_sinks(scale, sink):
    score = make_score(np.full((LAYERS, HEADS), sink))
    q, k, v = inputs(2, scale=scale, seed=3)
    assert_finite_through_both_paths(score, q, k, v)


def test_telemetry_is_the_logit_the_sink_and_the_renormalised_rows():
    q, k, _ = inputs(scale=2.0)
    score = make_score(SINKS)
    out = score(q, k, layer=0)
    assert out.mass is None and out.gate is None and out.bias is None
    rows = np.asarray(out.distribution, np.float64)
    weights = np.asarray(out.weights, np.float64)
    np.testing.assert_allclose(rows, weights / weights.sum(-1, keepdims=True), rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(np.asarray(score.scalars()["sink_logit"]), SINKS)


def test_it_has_layers_times_heads_more_parameters_than_softmax_at_the_default_config():
    extra, model = parameters_beyond_softmax("softmax_sink")
    assert extra == model["layers"] * model["heads"]


def test_a_smoke_sized_cell_trains_and_records_its_sinks(tiny_cfg, corpus_path, tmp_path):
    bundle = train_smoke_cell(tiny_cfg, corpus_path, tmp_path, "softmax_sink")
    sinks = np.asarray(bundle["learned"]["sink_logit"])
    assert sinks.shape == (tiny_cfg["model"]["layers"], tiny_cfg["model"]["heads"]) and np.any(sinks != 0.0)
