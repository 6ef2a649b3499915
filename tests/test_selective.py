"""Selective attention: softmax_j(s_hij − F_ij), F_ij = Σ_{j<k<i} ReLU(s_0kj) from head 0's logits.

- the weights are that formula (float64 reference, the sum taken query by query), causal distributions, and
  different from softmax's once head 0 selects (a test that the penalty is applied at all);
- the first key and each query's own key are never penalised; F is the same for every head.

What every catalogued function must do (blockwise against dense and the reference, finite gradients, the
parameter count, a smoke cell, plain telemetry) is tests/test_catalog_scores.py; its reference formula is in
tests/score_catalog.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.training.attention.selective import selection_penalty
from score_catalog import make, selective_penalty, selective_weights
from score_reference import (LENGTH, inputs, logits64)

VISIBLE = np.tril(np.ones((LENGTH, LENGTH), dtype=bool))


def plain_softmax(q, k):
    s = np.where(VISIBLE, logits64(q, k), -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("scale", [0.3, 1.0, 3.0])
def test_weights_are_the_formula_and_not_softmaxs(scale):
    q, k, _ = inputs(scale=scale)
    weights = np.asarray(make("selective")(q, k, layer=0).weights, np.float64)
    np.testing.assert_allclose(weights, selective_weights(q, k), rtol=2e-5, atol=1e-7)
    assert np.all(weights[..., ~VISIBLE] == 0.0)
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-5)
    assert np.abs(weights - plain_softmax(q, k)).max() > 1e-3, "head 0's selections change the weights"


def test_the_penalty_spares_the_first_key_and_each_querys_own_and_is_shared_by_every_head():
    q, k, _ = inputs(scale=2.0)
    s = logits64(q, k)
    penalty = np.asarray(selection_penalty(s.astype(np.float32), np.arange(LENGTH)))
    assert penalty.shape == (s.shape[0], 1, LENGTH, LENGTH)
    np.testing.assert_allclose(penalty[:, 0], selective_penalty(s), rtol=1e-5, atol=1e-5)
    assert np.all(penalty[..., 0] == 0.0) and np.all(np.diagonal(penalty, axis1=-2, axis2=-1) == 0.0)
    assert penalty.max() > 0


