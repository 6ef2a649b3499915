"""Scalable-Softmax: w_ij = softmax_j((s_{l,h} log n_i) q_i.k_j / sqrt(d_h)), n_i = i + 1 the keys row i sees.

- the weights are that formula (float64 reference), for learned scales of both signs, exactly 0 on future keys,
  rows summing to 1; at init the last row of a window is plain softmax.

What every catalogued function must do (blockwise against dense and the reference, finite gradients, the
parameter count, a smoke cell, plain telemetry) is tests/test_catalog_scores.py; its reference formula is in
tests/score_catalog.py.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from score_catalog import SCALES, make, ssmax_weights
from score_reference import (LENGTH, inputs, logits64)

@pytest.mark.parametrize("layer", [0, 1])
@pytest.mark.parametrize("scale", [0.3, 1.0, 4.0])
def test_weights_are_the_formula(layer, scale):
    q, k, _ = inputs(scale=scale)
    weights = np.asarray(make("ssmax", length_scale=SCALES)(q, k, layer=layer).weights, np.float64)
    np.testing.assert_allclose(weights, ssmax_weights(q, k, SCALES[layer]), rtol=2e-5, atol=1e-7)
    assert np.all(weights[..., ~np.tril(np.ones((LENGTH, LENGTH), dtype=bool))] == 0.0)
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-5)


def test_at_init_a_window_of_block_size_ends_on_plain_softmax():
    """s = 1 / log(block_size): the last row of a full window scales its logits by exactly 1."""
    q, k, _ = inputs()
    score = make("ssmax", block_size=LENGTH)
    np.testing.assert_allclose(np.asarray(score.length_scale[...]), 1.0 / math.log(LENGTH), rtol=1e-6)
    last = np.asarray(score(q, k, layer=0).weights, np.float64)[:, :, -1]
    plain = np.asarray(jax.nn.softmax(jnp.asarray(logits64(q, k)[:, :, -1]), axis=-1), np.float64)
    np.testing.assert_allclose(last, plain, rtol=1e-5, atol=1e-7)


