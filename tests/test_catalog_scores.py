"""What every catalogued score function must do, one suite over the catalog (tests/score_catalog.py):

- its blockwise path equals its dense one, outputs and gradients, and the dense output equals its float64
  reference applied to the values, with shared key heads, at key blocks below, at and above the window; a
  learned per-head parameter gets a gradient;
- outputs and gradients stay finite through both paths on tiny and huge scores;
- where its telemetry is plain, the logit is its score and the entropy is of its rows' magnitudes renormalised;
- at the default config it has softmax's parameter count, or per layer and head the parameters it learns (one,
  or a forget gate's vector and bias);
- a smoke-sized cell trains through the rules' trainer, and its bundle records exactly what it learned (and a
  kernel's row-mass AUROC).

What a formula alone does (signed weights, rows short of one, the penalty's shape) is in each function's own
test file.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from flax import nnx

from score_catalog import CATALOG
from score_reference import (BLOCK_CASES, LENGTH, assert_blockwise_equals_dense_and_reference,
                             assert_finite_through_both_paths, inputs, logits64, parameters_beyond_softmax,
                             train_smoke_cell)

BY_NAME = pytest.mark.parametrize("ref", CATALOG, ids=[ref.variant for ref in CATALOG])


@BY_NAME
@pytest.mark.parametrize("kv_heads,block", BLOCK_CASES)
def test_blockwise_output_and_gradients_equal_dense_and_the_reference(ref, kv_heads, block):
    score = ref.build()
    dense_grads = assert_blockwise_equals_dense_and_reference(score, ref.output, kv_heads, block)
    if ref.learned is not None:  # its parameters come first among the gradients
        assert np.abs(np.asarray(dense_grads[0])).max() > 0, f"{ref.learned} learns"


@BY_NAME
@pytest.mark.parametrize("scale", [1e-3, 30.0])
def test_outputs_and_gradients_are_finite_on_tiny_and_huge_scores(ref, scale):
    q, k, v = inputs(2, scale=scale, seed=3)
    assert_finite_through_both_paths(ref.build(), q, k, v)


@pytest.mark.parametrize("ref", [r for r in CATALOG if r.plain_telemetry],
                         ids=[r.variant for r in CATALOG if r.plain_telemetry])
def test_plain_telemetry_is_the_logit_and_the_entropy_of_the_row_magnitudes_renormalised(ref):
    q, k, _ = inputs(scale=2.0)
    out = ref.build()(q, k, layer=0)
    assert out.mass is None and out.gate is None
    magnitudes = np.abs(np.asarray(out.weights, np.float64))
    sums = magnitudes.sum(-1, keepdims=True)
    np.testing.assert_allclose(np.asarray(out.distribution), magnitudes / np.where(sums > 0, sums, 1.0), rtol=1e-5,
                               atol=1e-7)
    visible = np.tril(np.ones((LENGTH, LENGTH), dtype=bool))
    np.testing.assert_allclose(np.asarray(out.scores)[..., visible], logits64(q, k)[..., visible], rtol=1e-5,
                               atol=1e-5)


@BY_NAME
def test_parameters_beyond_softmax_are_per_layer_and_head_only_where_it_learns_them(ref):
    extra, model = parameters_beyond_softmax(ref.variant)
    if ref.learned is None:
        assert extra == 0 and not nnx.state(ref.build(), nnx.Param)
    else:
        assert extra == ref.beyond_softmax(model)


@BY_NAME
@pytest.mark.slow
def test_a_smoke_sized_cell_trains_and_its_bundle_records_what_it_learned(ref, tiny_cfg, corpus_path, tmp_path):
    bundle = train_smoke_cell(tiny_cfg, corpus_path, tmp_path, ref.variant)
    telemetry = bundle["telemetry"]
    assert 0.0 < telemetry["entropy"]["mean"] <= 1.0 and math.isfinite(telemetry["max_score"])
    if ref.learned is None:
        assert "learned" not in bundle and ("mass_auroc" in telemetry) == ref.row_mass
        return
    learned = ref.scalar or ref.learned
    values = np.asarray(bundle["learned"][learned])
    assert values.shape == ref.learned_shape(tiny_cfg["model"])
    assert np.any(np.abs(values - np.asarray(ref.initial(tiny_cfg["model"]), np.float32)) > 1e-6), f"{learned} trained"
