"""Softpick: w_ij = ReLU(e^{s_ij} - 1) / (sum_j' |e^{s_ij'} - 1| + eps), rows summing to at most 1.

- the weights are that formula (float64 reference), exactly 0 on future keys and on keys scoring at or below 0,
  a row of non-positive scores attending to nothing, no row summing above 1;
- huge scores, where e^{s} overflows, pick the largest key as the formula does.

What every catalogued function must do (blockwise against dense and the reference, finite gradients, the
parameter count, a smoke cell, plain telemetry) is tests/test_catalog_scores.py; its reference formula is in
tests/score_catalog.py.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from score_catalog import make, softpick_weights
from score_reference import (LENGTH, inputs, logits64)

VISIBLE = np.tril(np.ones((LENGTH, LENGTH), dtype=bool))


@pytest.mark.parametrize("scale", [0.3, 1.0, 3.0])
def test_weights_are_the_formula_zero_at_non_positive_scores_and_rows_at_most_one(scale):
    q, k, _ = inputs(scale=scale)
    out = make("softpick")(q, k, layer=0)
    weights = np.asarray(out.weights, np.float64)
    np.testing.assert_allclose(weights, softpick_weights(q, k), rtol=2e-5, atol=1e-7)
    s = logits64(q, k)
    assert np.all(weights[..., ~VISIBLE] == 0.0), "nothing on future keys"
    assert np.all(weights[(s <= 0) & VISIBLE] == 0.0) and np.any((s <= 0) & VISIBLE), "a non-positive score picks 0"
    assert np.all(weights.sum(-1) <= 1.0 + 1e-6) and np.any(weights.sum(-1) < 0.99), "rows sum to at most 1"


def test_a_row_of_non_positive_scores_attends_to_nothing():
    q, k, _ = inputs(scale=1.0)
    # a zero query scores 0 against every key: its row of weights is all zero, with no NaN
    out = make("softpick")(jnp.zeros_like(q), k, layer=0)
    assert np.all(np.asarray(out.weights) == 0.0)
    assert np.all(np.isfinite(np.asarray(out.distribution))) and np.all(np.asarray(out.distribution) == 0.0)


def test_huge_scores_pick_the_largest_key_as_the_formula_does():
    """At scores where e^{s} overflows float32, the shifted form still gives the formula's limit."""
    q, k, _ = inputs(scale=30.0, seed=3)
    weights = np.asarray(make("softpick")(q, k, layer=0).weights, np.float64)
    assert np.all(np.isfinite(weights))
    s = logits64(q, k)
    rows = np.where(VISIBLE, s, -np.inf)
    top = rows.argmax(-1)
    picked = np.take_along_axis(weights, top[..., None], -1)[..., 0]
    dominant = np.sort(rows, -1)[..., -1] - np.sort(rows, -1)[..., -2] > 5.0
    dominant &= rows.max(-1) > 5.0
    assert dominant.any()
    np.testing.assert_allclose(picked[dominant], 1.0, atol=1e-2)


