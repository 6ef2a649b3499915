"""Grouped-query and multi-query attention (model.kv_heads): counts, layout, and what sharing means."""

import copy
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from flax import nnx

from attnlab.core.config import validate_config
from attnlab.core.config_types import model_config
from attnlab.training.attention import VARIANTS
from attnlab.training.flops import step_flops
from attnlab.training.model import GPT, ModelConfig, count_params
from attnlab.training.params import parameter_counts
from conftest import REPO

# paper size (d_model 192, 4 heads of 48, 6 layers): each layer's q, k, v projections are
# 192 x 192 + 192 for q and 192 x (kv_heads x 48) + kv_heads x 48 for k and for v
PAPER_COUNTS = {
    None: {"softmax": 2_719_169, "yat": 2_719_169, "yat_b": 2_719_217},
    4: {"softmax": 2_719_169, "yat": 2_719_169, "yat_b": 2_719_217},
    2: {"softmax": 2_496_833, "yat": 2_496_833, "yat_b": 2_496_881},
    1: {"softmax": 2_385_665, "yat": 2_385_665, "yat_b": 2_385_713},
}


def paper(kv_heads):
    cfg = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    cfg["model"]["kv_heads"] = kv_heads
    return validate_config(cfg)


@functools.cache
def paper_counts(kv_heads) -> dict[str, int]:
    """parameter_counts at the paper config with this kv_heads, traced once per test process."""
    return parameter_counts(paper(kv_heads))


@pytest.mark.parametrize("kv_heads", [k if k == 1 else pytest.param(k, marks=pytest.mark.slow)
                                      for k in PAPER_COUNTS])
def test_paper_parameter_counts_follow_gqa_arithmetic(kv_heads):
    counts = paper_counts(kv_heads)
    for variant, expected in PAPER_COUNTS[kv_heads].items():
        assert counts[variant] == expected, variant
    d, layers, d_head, kv = 192, 6, 48, kv_heads or 4
    mha_qkv = d * 3 * d + 3 * d
    gqa_qkv = (d * d + d) + 2 * (d * kv * d_head + kv * d_head)
    assert counts["softmax"] == 2_719_169 - layers * (mha_qkv - gqa_qkv)
    # each variant's own parameters do not depend on kv_heads: they live on the query heads
    full = paper_counts(None)
    for variant in counts:
        assert counts[variant] - counts["softmax"] == full[variant] - full["softmax"], variant


def small(variant, kv_heads=None, impl="dense", seed=0):
    cfg = ModelConfig(vocab_size=20, d_model=32, layers=2, heads=4, block_size=12, d_ff=48, dropout=0.0,
                      variant=variant, kv_heads=kv_heads, attention_impl=impl, attention_block=5)
    return GPT(cfg, rngs=nnx.Rngs(params=seed))


def params(model) -> dict:
    return nnx.to_pure_dict(nnx.state(model, nnx.Param))


def test_kv_heads_equal_to_heads_is_todays_model_exactly():
    """Same layout (one fused qkv Linear) and the same initial values as before kv_heads existed."""
    default, explicit = params(small("a3")), params(small("a3", kv_heads=4))
    assert set(default["blocks"][0]["attn"]) == {"qkv", "proj"}
    for a, b in zip(jax.tree.leaves(default), jax.tree.leaves(explicit), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert jax.tree.structure(default) == jax.tree.structure(explicit)
    grouped = params(small("a3", kv_heads=2))["blocks"][0]["attn"]
    assert {k: v["kernel"].shape for k, v in grouped.items()} == {"q": (32, 32), "kv": (32, 32), "proj": (32, 32)}


def as_multi_head(gqa: GPT, variant: str, kv_heads: int) -> GPT:
    """A kv_heads = heads model whose key/value heads are copies of the GQA model's shared ones."""
    mha = small(variant)
    source, target = params(gqa), params(mha)
    heads, d_head, d = 4, 8, 32
    group = heads // kv_heads
    for layer, block in source["blocks"].items():
        attn = block["attn"]
        kv_kernel = attn["kv"]["kernel"].reshape(d, 2, kv_heads, d_head)
        kv_bias = attn["kv"]["bias"].reshape(2, kv_heads, d_head)
        k_kernel, v_kernel = (jnp.repeat(kv_kernel[:, i], group, axis=1).reshape(d, d) for i in range(2))
        k_bias, v_bias = (jnp.repeat(kv_bias[i], group, axis=0).reshape(d) for i in range(2))
        fused = target["blocks"][layer]["attn"]
        fused["qkv"]["kernel"] = jnp.concatenate([attn["q"]["kernel"], k_kernel, v_kernel], axis=1)
        fused["qkv"]["bias"] = jnp.concatenate([attn["q"]["bias"], k_bias, v_bias])
        fused["proj"] = attn["proj"]
        for name in block:
            if name != "attn":
                target["blocks"][layer][name] = block[name]
    for name in source:
        if name != "blocks":
            target[name] = source[name]
    state = nnx.state(mha, nnx.Param)
    nnx.replace_by_pure_dict(state, target)
    nnx.update(mha, state)
    return mha


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("kv_heads", [2, 1])
def test_gqa_is_multi_head_attention_with_shared_key_value_heads(variant, kv_heads):
    """Query head h uses key/value head h // (heads / kv_heads): the same model as multi-head attention
    whose key and value heads are repeated per group (for A3, with its context's key half shared too)."""
    gqa = small(variant, kv_heads=kv_heads, seed=1)
    state = nnx.state(gqa.score, nnx.Param)  # move learned scoring parameters off init so they matter
    rng = np.random.default_rng(0)
    nnx.update(gqa.score, jax.tree.map(lambda x: x + 0.3 * rng.standard_normal(x.shape).astype(np.float32), state))
    mha = as_multi_head(gqa, variant, kv_heads)
    tokens = jax.random.randint(jax.random.key(3), (2, 12), 0, 20)
    np.testing.assert_allclose(np.asarray(gqa(tokens)), np.asarray(mha(tokens)), rtol=1e-5, atol=1e-5)
    assert count_params(gqa) < count_params(mha)


@pytest.mark.parametrize("kv_heads", [4, 2, 1])
def test_query_heads_of_a_group_see_the_same_keys(kv_heads):
    model = small("softmax", kv_heads=kv_heads)
    x = jax.random.normal(jax.random.key(0), (2, 12, 32))
    q, k, v = model.blocks[0].attn.project(x)
    assert q.shape == k.shape == v.shape == (2, 12, 4, 8)
    group = 4 // kv_heads
    for h in range(4):
        np.testing.assert_array_equal(np.asarray(k[:, :, h]), np.asarray(k[:, :, h - h % group]))
        np.testing.assert_array_equal(np.asarray(v[:, :, h]), np.asarray(v[:, :, h - h % group]))
    if kv_heads > 1:
        assert not np.allclose(np.asarray(k[:, :, 0]), np.asarray(k[:, :, 3]))


def test_model_config_reads_the_new_keys_with_todays_defaults(smoke_config):
    mcfg = model_config(smoke_config, "softmax", 65)
    assert (mcfg.kv_heads, mcfg.kv_head_count, mcfg.attention_impl, mcfg.attention_block) == (None, 2, "dense", 64)
    cfg = copy.deepcopy(smoke_config)
    cfg["model"].update(kv_heads=1, attention_impl="blockwise", attention_block=16)
    mcfg = model_config(validate_config(cfg), "softmax", 65)
    assert (mcfg.kv_head_count, mcfg.attention_impl, mcfg.attention_block) == (1, "blockwise", 16)


def test_step_flops_count_the_smaller_key_value_projections():
    base = dict(vocab_size=65, d_model=192, layers=6, heads=4, block_size=128, d_ff=768, dropout=0.1,
                variant="softmax")
    full, mqa = step_flops(ModelConfig(**base), 64), step_flops(ModelConfig(**base, kv_heads=1), 64)
    tokens = 64 * 128
    assert full - mqa == 3 * 6 * 2 * tokens * 192 * (2 * 192 - 2 * 48)


def test_a_kv_heads_that_does_not_divide_heads_is_refused_when_building():
    with pytest.raises(ValueError, match="kv_heads 3 does not divide heads 4; .* pick one of 1, 2, 4"):
        small("softmax", kv_heads=3)
