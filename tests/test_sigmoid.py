"""Sigmoid attention: w_ij = sigmoid(q.k / sqrt(d_h) - log(block_size)) on the causal window, rows not normalised.

- the weights are that formula (computed here in numpy), in (0, 1), exactly 0 on future keys, and their rows
  do not sum to 1; the bias is the model's context length, not the window's;
- gradients stay finite on scores far past the bias, where every weight saturates;
- its telemetry: the pre-sigmoid logit as score, no row mass, the entropy of the rows renormalised;
- the model trains the same dense and blockwise; the arms config trains it at softmax's LR.

What every catalogued function must do (blockwise against dense and the reference, finite gradients, the
parameter count, a smoke cell, plain telemetry) is tests/test_catalog_scores.py.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from flax import nnx

from attnlab.core.config import validate_config
from attnlab.training.model import GPT, ModelConfig
from attnlab.training.probe import probe_batch
from conftest import REPO
from score_catalog import BLOCK_SIZE, make, sigmoid_weights
from score_reference import BATCH, HEADS, LENGTH, assert_close, assert_finite_through_both_paths, inputs, logits64


def make_score(block_size=BLOCK_SIZE):
    return make("sigmoid", block_size=block_size)


@pytest.mark.parametrize("scale", [0.3, 1.0, 3.0])
def test_weights_are_the_sigmoid_of_the_biased_logits(scale):
    q, k, _ = inputs(scale=scale)
    out = make_score()(q, k, layer=1)
    expected = sigmoid_weights(q, k)
    logits = np.where(np.tril(np.ones((LENGTH, LENGTH), dtype=bool)), logits64(q, k) - math.log(BLOCK_SIZE), -np.inf)
    np.testing.assert_allclose(np.asarray(out.weights), expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(out.scores), logits, rtol=1e-5, atol=1e-5)  # -inf on future keys too


def test_weights_are_in_0_1_exactly_0_on_future_keys_and_rows_are_not_normalised():
    q, k, _ = inputs()
    w = np.asarray(make_score()(q, k, layer=0).weights, np.float64)
    future = ~np.tril(np.ones((LENGTH, LENGTH), dtype=bool))
    assert np.all(w[..., future] == 0.0), "weight on a future key"
    visible = w[..., ~future]
    assert np.all((visible > 0.0) & (visible < 1.0))
    sums = w.sum(-1)
    np.testing.assert_array_equal(sums[..., 0], w[..., 0, 0])  # the first row sees one key: its weight, not 1
    assert np.all(sums[..., 0] < 0.5) and np.ptp(sums) > 0.1, "rows are not normalised"


def test_the_bias_is_minus_log_block_size_whatever_the_window():
    q, k, _ = inputs(length=5)
    zero = make_score(block_size=64)(jnp.zeros_like(q), k, layer=0)
    visible = np.tril(np.ones((5, 5), dtype=bool))
    np.testing.assert_allclose(np.asarray(zero.weights)[..., visible], 1.0 / 65.0, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(zero.scores)[..., visible], -math.log(64), rtol=1e-6)
    assert not nnx.state(make_score(), nnx.Param), "b is a constant, not a parameter"


def test_telemetry_is_the_logit_no_mass_and_the_renormalised_rows():
    q, k, _ = inputs(scale=2.0)
    out = make_score()(q, k, layer=0)
    assert out.mass is None and out.gate is None and out.bias is None
    rows = np.asarray(out.distribution, np.float64)
    np.testing.assert_allclose(rows.sum(-1), 1.0, rtol=1e-6)
    weights = np.asarray(out.weights, np.float64)
    np.testing.assert_allclose(rows, weights / weights.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
    # logits of order -1e3: every weight of some rows underflows to 0, and their rows are still distributions
    q, k, _ = inputs(scale=30.0)
    huge = make_score()(q, k, layer=0)
    assert np.any(np.asarray(huge.weights).sum(-1) == 0.0)
    rows = np.asarray(huge.distribution, np.float64)
    assert np.all(np.isfinite(rows)) and np.all(rows[..., ~np.tril(np.ones((LENGTH, LENGTH), bool))] == 0.0)
    np.testing.assert_allclose(rows.sum(-1), 1.0, rtol=1e-6)


def test_the_probe_reports_the_entropy_of_the_renormalised_rows_and_no_mass():
    cfg = ModelConfig(vocab_size=20, d_model=32, layers=2, heads=HEADS, block_size=LENGTH, d_ff=48, dropout=0.0,
                      variant="sigmoid")
    model = GPT(cfg, rngs=nnx.Rngs(params=0))
    tokens = jax.random.randint(jax.random.key(1), (BATCH, LENGTH), 0, 20)
    arrays = probe_batch(model, tokens, tokens, min_keys=4)
    assert "mass" not in arrays
    entropy = np.asarray(arrays["entropy"])  # (L, B, H, T), NaN for rows with fewer than 4 keys
    kept = entropy[..., 3:]
    assert np.all(np.isnan(entropy[..., :3])) and np.all((kept > 0.0) & (kept <= 1.0 + 1e-6))
    _, outputs = model(tokens, probe=True)
    np.testing.assert_allclose(np.asarray(arrays["max_score"]), [float(o.scores.max()) for o in outputs])


def test_gradients_are_finite_on_scores_far_past_the_bias():
    q, k, v = inputs(2, scale=300.0, seed=3)
    assert_finite_through_both_paths(make_score(), q, k, v)


@pytest.mark.parametrize("kv_heads", [None, 2, 1])
@pytest.mark.slow
def test_the_model_trains_the_same_dense_and_blockwise_with_shared_key_heads(kv_heads):
    def model(impl):
        cfg = ModelConfig(vocab_size=20, d_model=32, layers=1, heads=HEADS, block_size=LENGTH, d_ff=48, dropout=0.3,
                          variant="sigmoid", kv_heads=kv_heads, attention_impl=impl, attention_block=5)
        return GPT(cfg, rngs=nnx.Rngs(params=0))

    tokens = jax.random.randint(jax.random.key(2), (BATCH, LENGTH), 0, 20)

    def loss_and_grads(model):
        graphdef, params, rest = nnx.split(model, nnx.Param, ...)

        def loss(params):
            logits = nnx.merge(graphdef, params, rest)(tokens, dropout_key=jax.random.key(5))
            return jax.nn.log_softmax(logits).mean()

        return jax.jit(jax.value_and_grad(loss))(params)

    (dense_loss, dense_grads), (block_loss, block_grads) = loss_and_grads(model("dense")), loss_and_grads(
        model("blockwise"))
    np.testing.assert_allclose(float(block_loss), float(dense_loss), rtol=1e-5)
    for a, b in zip(jax.tree.leaves(block_grads), jax.tree.leaves(dense_grads), strict=True):
        assert_close(a, b)


def test_arms_config_trains_sigmoid_at_softmaxs_fixed_lr():
    cfg = validate_config(yaml.safe_load((REPO / "config" / "arms.yaml").read_text()))
    assert "sigmoid" in cfg["variants"] and cfg["contest"]["lr"]["sigmoid"] == cfg["contest"]["lr"]["softmax"] == 3e-3
    for name in ("default", "smoke"):
        assert "sigmoid" not in yaml.safe_load((REPO / "config" / f"{name}.yaml").read_text())["variants"]


