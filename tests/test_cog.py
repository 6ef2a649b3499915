"""Cog attention: w_ij = sign(s_ij) exp(|s_ij|) / sum_j' exp(|s_ij'|), signed weights whose magnitudes sum to 1.

- the weights are that formula (float64 reference), exactly 0 on future keys, some negative, |w| summing to 1.

What every catalogued function must do (blockwise against dense and the reference, finite gradients, the
parameter count, a smoke cell, plain telemetry) is tests/test_catalog_scores.py; its reference formula is in
tests/score_catalog.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from score_catalog import cog_weights, make
from score_reference import (LENGTH, inputs)

VISIBLE = np.tril(np.ones((LENGTH, LENGTH), dtype=bool))


@pytest.mark.parametrize("scale", [0.3, 1.0, 4.0])
def test_weights_are_the_formula_signed_with_magnitudes_summing_to_one(scale):
    q, k, _ = inputs(scale=scale)
    out = make("cog")(q, k, layer=0)
    weights = np.asarray(out.weights, np.float64)
    np.testing.assert_allclose(weights, cog_weights(q, k), rtol=2e-5, atol=1e-7)
    assert np.all(weights[..., ~VISIBLE] == 0.0) and np.any(weights < 0), "signed, and nothing on future keys"
    np.testing.assert_allclose(np.abs(weights).sum(-1), 1.0, rtol=1e-5)


