"""The GPT skeleton: parameter counts, no future leakage, same skeleton for every variant."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from flax import nnx

import attnlab.training.model as model_module
from attnlab.core.config import validate_config
from attnlab.core.config_types import ModelConfig
from attnlab.core.variants import VARIANTS
from attnlab.training.model import DROPOUT_SITES, GPT, count_params
from attnlab.training.params import parameter_counts
from conftest import REPO


def small_model(variant, dropout=0.0, seed=0):
    cfg = ModelConfig(vocab_size=20, d_model=24, layers=2, heads=4, block_size=12, d_ff=48,
                      dropout=dropout, variant=variant)
    return GPT(cfg, rngs=nnx.Rngs(params=seed))


@pytest.mark.slow  # the quick lane checks every variant's paper count through `attnlab params` (test_arms)
def test_paper_parameter_counts_match_the_published_ones():
    cfg = validate_config(yaml.safe_load((REPO / "config" / "paper.yaml").read_text()))
    counts = parameter_counts(cfg)
    assert counts["softmax"] == 2_719_169
    assert counts["yat"] == 2_719_169
    assert counts["yat_b"] == 2_719_217
    # A3: shared w_g, u (2 x 144), b_g (1) and a 6 x 4 x 48 layer/head embedding
    assert counts["a3"] - counts["softmax"] == 2 * (2 * 48 + 48) + 1 + 6 * 4 * 48
    # issue 11's arms: the softmax-normalised kernels have their l1 twins' counts; softmax_t one
    # inverse temperature per layer x head; a3_heads w_g, u (144 each) and b_g per layer x head, the same embedding
    assert counts["yat_exp"] == counts["yat"] == 2_719_169
    assert counts["yat_b_exp"] == counts["yat_b"] == 2_719_217
    assert counts["softmax_t"] == 2_719_169 + 6 * 4 == 2_719_193
    assert counts["a3_heads"] - counts["softmax"] == 6 * 4 * (2 * (2 * 48 + 48) + 1) + 6 * 4 * 48 == 8_088
    assert counts["a3"] == 2_720_610 and counts["a3_heads"] == 2_727_257


def test_abstract_count_equals_initialised_count():
    assert count_params(small_model("a3")) == parameter_counts(
        {"variants": ["a3"], "model": {"d_model": 24, "layers": 2, "heads": 4, "block_size": 12, "d_ff": 48,
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
    """a3 draws its layer/head embedding at init; the score module is built last, so the skeleton is untouched."""
    soft = nnx.state(small_model("softmax"), nnx.Param)
    a3 = nnx.state(small_model("a3"), nnx.Param)
    skeleton = [name for name in soft if name != "score"]
    assert "score" in a3 and {"tok_embed", "pos_embed", "blocks", "head"} <= set(skeleton)
    for name in skeleton:
        for x, y in zip(jax.tree.leaves(soft[name]), jax.tree.leaves(a3[name])):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_embeddings_use_flax_default_initialiser_not_gpt2s():
    """The seed's nnx.Embed default: variance scaling, std 1/sqrt(d_model), not normal(0.02)."""
    cfg = ModelConfig(vocab_size=65, d_model=192, layers=1, heads=4, block_size=128, d_ff=32, dropout=0.1,
                      variant="softmax")
    model = GPT(cfg, rngs=nnx.Rngs(params=0))
    for table in (model.tok_embed.embedding[...], model.pos_embed.embedding[...]):
        assert abs(float(np.std(table)) * np.sqrt(192) - 1.0) < 0.08, float(np.std(table))


def test_dropout_acts_exactly_on_attention_weights_and_mlp_output(monkeypatch):
    """With a dropout key: the embedding sum and the attention projection stay deterministic, the
    attention weights and the MLP output are dropped, once per layer each (the seed's two sites)."""
    calls = []
    real = model_module.dropout

    def recording(x, rate, key, masks="bits16"):
        if key is not None:
            import inspect

            calls.append((inspect.stack()[1].frame.f_code.co_qualname, x.ndim))
        return real(x, rate, key, masks)

    monkeypatch.setattr(model_module, "dropout", recording)
    model = small_model("softmax", dropout=0.3)
    model(jnp.zeros((2, 12), dtype=jnp.int32), dropout_key=jax.random.key(0))
    assert DROPOUT_SITES == ("attention_weights", "mlp_output")
    assert calls == [("attention_heads", 4), ("Block.__call__", 3)] * 2, calls
    calls.clear()
    model(jnp.zeros((2, 12), dtype=jnp.int32))
    assert calls == []


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
