"""Selective attention: softmax_j(s_hij − F_ij), F_ij = Σ_{j<k<i} ReLU(s_0kj) from head 0's logits.

- the weights are that formula (float64 reference, the sum taken query by query), causal distributions, and
  different from softmax's once head 0 selects (a test that the penalty is applied at all);
- the first key and each query's own key are never penalised; F is the same for every head;
- the blockwise path equals the dense one and the reference, outputs and gradients, with shared key heads, at
  key blocks below, at and above the window; gradients stay finite on tiny and huge scores;
- softmax's parameter count; a smoke cell trains.
"""

from __future__ import annotations

import numpy as np
import pytest
from flax import nnx

from attnlab.training.attention import score_class
from attnlab.training.attention.selective import selection_penalty
from score_reference import (assert_blockwise_equals_dense_and_reference,
                             BLOCK_CASES, DHEAD, HEADS, LAYERS, LENGTH, inputs, logits64,
                             assert_finite_through_both_paths, parameters_beyond_softmax, train_smoke_cell)

VISIBLE = np.tril(np.ones((LENGTH, LENGTH), dtype=bool))


def make_score():
    return score_class("selective")(layers=LAYERS, heads=HEADS, d_head=DHEAD, block_size=16, rngs=nnx.Rngs(0))


def naive_penalty(s):
    """F_ij = Σ_{k=j+1}^{i-1} max(0, s_0kj) for j >= 1, in float64, (B, T, S)."""
    f = np.zeros((s.shape[0], s.shape[2], s.shape[3]))
    for i in range(s.shape[2]):
        for j in range(1, i):
            f[:, i, j] = sum(np.maximum(s[:, 0, kq, j], 0.0) for kq in range(j + 1, i))
    return f


def naive_weights(q, k):
    s = logits64(q, k)
    logits = s - naive_penalty(s)[:, None]
    w = np.zeros_like(s)
    for i in range(s.shape[2]):
        row = logits[:, :, i, : i + 1]
        e = np.exp(row - row.max(-1, keepdims=True))
        w[:, :, i, : i + 1] = e / e.sum(-1, keepdims=True)
    return w


def plain_softmax(q, k):
    s = np.where(VISIBLE, logits64(q, k), -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("scale", [0.3, 1.0, 3.0])
def test_weights_are_the_formula_and_not_softmaxs(scale):
    q, k, _ = inputs(scale=scale)
    weights = np.asarray(make_score()(q, k, layer=0).weights, np.float64)
    np.testing.assert_allclose(weights, naive_weights(q, k), rtol=2e-5, atol=1e-7)
    assert np.all(weights[..., ~VISIBLE] == 0.0)
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-5)
    assert np.abs(weights - plain_softmax(q, k)).max() > 1e-3, "head 0's selections change the weights"


def test_the_penalty_spares_the_first_key_and_each_querys_own_and_is_shared_by_every_head():
    q, k, _ = inputs(scale=2.0)
    s = logits64(q, k)
    penalty = np.asarray(selection_penalty(s.astype(np.float32), np.arange(LENGTH)))
    assert penalty.shape == (s.shape[0], 1, LENGTH, LENGTH)
    np.testing.assert_allclose(penalty[:, 0], naive_penalty(s), rtol=1e-5, atol=1e-5)
    assert np.all(penalty[..., 0] == 0.0) and np.all(np.diagonal(penalty, axis1=-2, axis2=-1) == 0.0)
    assert penalty.max() > 0


@pytest.mark.parametrize("kv_heads,block", BLOCK_CASES)
def test_blockwise_output_and_gradients_equal_dense_and_the_reference(kv_heads, block):
    assert_blockwise_equals_dense_and_reference(make_score(), naive_weights, kv_heads, block)


@pytest.mark.parametrize("scale", [1e-3, 30.0])
def test_gradients_are_finite_on_tiny_and_huge_scores(scale):
    q, k, v = inputs(2, scale=scale, seed=3)
    assert_finite_through_both_paths(make_score(), q, k, v)


def test_selective_has_softmaxs_parameter_count_at_the_default_config():
    assert parameters_beyond_softmax("selective")[0] == 0
    assert not nnx.state(make_score(), nnx.Param)


def test_a_smoke_sized_selective_cell_trains(tiny_cfg, corpus_path, tmp_path):
    bundle = train_smoke_cell(tiny_cfg, corpus_path, tmp_path, "selective")
    assert "learned" not in bundle and "mass_auroc" not in bundle["telemetry"]
