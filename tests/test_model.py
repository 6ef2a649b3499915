"""The GPT skeleton: parameter counts, no future leakage, same skeleton for every variant."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from flax import nnx

from attnlab.training.attention import VARIANTS
from attnlab.core.config import validate_config
from attnlab.training.model import GPT, ModelConfig, count_params
from attnlab.training.params import parameter_counts
from conftest import REPO


def small_model(variant, dropout=0.0, seed=0):
    cfg = ModelConfig(vocab_size=20, d_model=24, layers=2, heads=3, block_size=12, d_ff=48,
                      dropout=dropout, variant=variant)
    return GPT(cfg, rngs=nnx.Rngs(params=seed))


def test_paper_parameter_counts_match_the_published_ones():
    cfg = validate_config(yaml.safe_load((REPO / "config" / "paper.yaml").read_text()))
    counts = parameter_counts(cfg)
    assert counts["softmax"] == 2_719_169
    assert counts["yat"] == 2_719_169
    assert counts["yat_b"] == 2_719_217
    # A3: shared w_g, u (2 x 144), b_g (1) and a 6 x 4 x 48 layer/head embedding
    assert counts["a3"] - counts["softmax"] == 2 * (2 * 48 + 48) + 1 + 6 * 4 * 48


def test_abstract_count_equals_initialised_count():
    assert count_params(small_model("a3")) == parameter_counts(
        {"variants": ["a3"], "model": {"d_model": 24, "layers": 2, "heads": 3, "block_size": 12, "d_ff": 48,
                                        "dropout": 0.0}}, vocab_size=20)["a3"]


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_no_variant_leaks_the_future(variant):
    model = small_model(variant)
    if variant == "a3":  # make the gate and bias depend on the context, as after training
        model.score.w_g[...] = jnp.linspace(-2, 2, model.score.w_g.shape[0])
        model.score.u[...] = jnp.linspace(1, -1, model.score.u.shape[0])
    tokens = jax.random.randint(jax.random.key(1), (2, 12), 0, 20)
    t = 6
    changed = tokens.at[:, t + 1:].set((tokens[:, t + 1:] + 7) % 20)
    before, after = model(tokens), model(changed)
    np.testing.assert_allclose(np.asarray(before[:, : t + 1]), np.asarray(after[:, : t + 1]), atol=1e-5)
    assert not np.allclose(np.asarray(before[:, t + 1:]), np.asarray(after[:, t + 1:]))


def test_skeleton_initialisation_does_not_depend_on_the_variant():
    soft = nnx.state(small_model("softmax"), nnx.Param)
    kern = nnx.state(small_model("yat_b"), nnx.Param)
    for path in ("tok_embed", "head"):
        a = jax.tree.leaves(soft[path])
        b = jax.tree.leaves(kern[path])
        for x, y in zip(a, b):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_dropout_changes_outputs_only_with_a_key():
    model = small_model("softmax", dropout=0.5)
    tokens = jnp.zeros((1, 12), dtype=jnp.int32)
    np.testing.assert_array_equal(np.asarray(model(tokens)), np.asarray(model(tokens)))
    assert not np.allclose(np.asarray(model(tokens)), np.asarray(model(tokens, dropout_key=jax.random.key(0))))


@pytest.mark.parametrize("masks", ["bits16", "bernoulli"])
def test_dropout_masks_drop_the_configured_share_and_stay_unbiased(masks):
    from attnlab.training.model import dropout

    x = jnp.ones((400, 500))
    y = np.asarray(dropout(x, 0.1, jax.random.key(0), masks))
    assert abs((y == 0).mean() - 0.1) < 0.003
    assert abs(y.mean() - 1.0) < 0.005
