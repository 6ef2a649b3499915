"""Scalable-Softmax: w_ij = softmax_j((s_{l,h} log n_i) q_i.k_j / sqrt(d_h)), n_i = i + 1 the keys row i sees.

- the weights are that formula (float64 reference), for learned scales of both signs, exactly 0 on future keys,
  rows summing to 1; at init the last row of a window is plain softmax;
- the blockwise path equals the dense one and the reference, outputs and gradients (the scales' included),
  with shared key heads, at key blocks below, at and above the window; gradients stay finite on huge scores;
- exactly layers x heads parameters more than softmax; a smoke cell trains and records its scales.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from attnlab.training.attention import score_class
from score_reference import (assert_blockwise_equals_dense_and_reference,
                             BLOCK_CASES, DHEAD, HEADS, LAYERS, LENGTH, inputs, logits64,
                             assert_finite_through_both_paths, parameters_beyond_softmax, train_smoke_cell)

SCALES = [[0.2, 0.5, 1.0, -0.3], [0.05, 2.0, 0.7, 0.0]]  # (layers, heads)


def make_score(scales=None, block_size=16):
    score = score_class("ssmax")(layers=LAYERS, heads=HEADS, d_head=DHEAD, block_size=block_size, rngs=nnx.Rngs(0))
    if scales is not None:
        score.length_scale[...] = jnp.asarray(scales, jnp.float32)
    return score


def naive_weights(q, k, scales):
    """Row i: softmax over keys 0..i of (s_h log(i + 1)) times the logits, in float64."""
    s = logits64(q, k)
    w = np.zeros_like(s)
    for i in range(s.shape[2]):
        row = np.asarray(scales, np.float64)[None, :, None] * math.log(i + 1) * s[:, :, i, : i + 1]
        e = np.exp(row - row.max(-1, keepdims=True))
        w[:, :, i, : i + 1] = e / e.sum(-1, keepdims=True)
    return w


@pytest.mark.parametrize("layer", [0, 1])
@pytest.mark.parametrize("scale", [0.3, 1.0, 4.0])
def test_weights_are_the_formula(layer, scale):
    q, k, _ = inputs(scale=scale)
    weights = np.asarray(make_score(SCALES)(q, k, layer=layer).weights, np.float64)
    np.testing.assert_allclose(weights, naive_weights(q, k, SCALES[layer]), rtol=2e-5, atol=1e-7)
    assert np.all(weights[..., ~np.tril(np.ones((LENGTH, LENGTH), dtype=bool))] == 0.0)
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-5)


def test_at_init_a_window_of_block_size_ends_on_plain_softmax():
    """s = 1 / log(block_size): the last row of a full window scales its logits by exactly 1."""
    q, k, _ = inputs()
    score = make_score(block_size=LENGTH)
    np.testing.assert_allclose(np.asarray(score.length_scale[...]), 1.0 / math.log(LENGTH), rtol=1e-6)
    last = np.asarray(score(q, k, layer=0).weights, np.float64)[:, :, -1]
    plain = np.asarray(jax.nn.softmax(jnp.asarray(logits64(q, k)[:, :, -1]), axis=-1), np.float64)
    np.testing.assert_allclose(last, plain, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("kv_heads,block", BLOCK_CASES)
def test_blockwise_output_and_gradients_equal_dense_and_the_reference(kv_heads, block):
    dense_grads = assert_blockwise_equals_dense_and_reference(
        make_score(SCALES), lambda q, k: naive_weights(q, k, SCALES[1]), kv_heads, block)
    assert np.abs(np.asarray(dense_grads[0])).max() > 0, "the scales learn"


def test_gradients_are_finite_on_huge_scores():
    q, k, v = inputs(2, scale=30.0, seed=3)
    assert_finite_through_both_paths(make_score(SCALES), q, k, v)


def test_it_has_layers_times_heads_more_parameters_than_softmax_at_the_default_config():
    extra, model = parameters_beyond_softmax("ssmax")
    assert extra == model["layers"] * model["heads"]


def test_a_smoke_sized_cell_trains_and_records_its_scales(tiny_cfg, corpus_path, tmp_path):
    bundle = train_smoke_cell(tiny_cfg, corpus_path, tmp_path, "ssmax")
    scales = np.asarray(bundle["learned"]["length_scale"])
    assert scales.shape == (tiny_cfg["model"]["layers"], tiny_cfg["model"]["heads"])
    start = np.float32(1.0 / math.log(tiny_cfg["model"]["block_size"]))
    assert np.any(np.abs(scales - start) > 1e-6), "s trained"
