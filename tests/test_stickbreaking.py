"""Stick-breaking attention: w_ij = σ(s_ij) ∏_{j<k<i} (1 − σ(s_ik)) over the keys before i, not renormalised.

- the weights are that formula (float64 reference, the product taken directly), exactly 0 on the current and
  future keys, each row summing to 1 − ∏(1 − β) and row 0 to nothing.

What every catalogued function must do (blockwise against dense and the reference, finite gradients, the
parameter count, a smoke cell, plain telemetry) is tests/test_catalog_scores.py; its reference formula is in
tests/score_catalog.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from score_catalog import make, stickbreaking_weights
from score_reference import (LENGTH, inputs, logits64)

EARLIER = np.tril(np.ones((LENGTH, LENGTH), dtype=bool), k=-1)


@pytest.mark.parametrize("scale", [0.3, 1.0, 3.0])
def test_weights_are_the_formula_on_earlier_keys_with_rows_short_of_one(scale):
    q, k, _ = inputs(scale=scale)
    out = make("stickbreaking")(q, k, layer=0)
    weights = np.asarray(out.weights, np.float64)
    np.testing.assert_allclose(weights, stickbreaking_weights(q, k), rtol=2e-5, atol=1e-7)
    assert np.all(weights[..., ~EARLIER] == 0.0), "nothing on the current or a future key"
    assert np.all(weights[..., 0, :] == 0.0), "row 0 has no earlier key"
    beta = 1.0 / (1.0 + np.exp(-logits64(q, k)))
    left = np.prod(np.where(EARLIER, 1.0 - beta, 1.0), axis=-1)
    np.testing.assert_allclose(weights.sum(-1), 1.0 - left, rtol=2e-5, atol=1e-7)


