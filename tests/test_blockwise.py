"""The blockwise attention path equals the dense one for every variant, with and without GQA.

Output and gradients (queries, keys, values and the variant's own parameters)
on random inputs, at key block sizes that do and do not divide T; the whole
model with dropout on (the blockwise path drops the same weights); and the
blockwise path never builds a T x T array.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from attnlab.core.config import validate_config
from attnlab.core.errors import ConfigError
from attnlab.training.attention import VARIANTS, score_class
from attnlab.training.masks import random_uint16, random_uint16_columns
from attnlab.training.model import GPT, ModelConfig, attention_heads

LAYERS, HEADS, DHEAD, BATCH, LENGTH = 2, 4, 8, 2, 12
TOL = 1e-4  # float32: elementwise relative, and absolute relative to the array's largest entry


def make_score(variant):
    """A score module with its learned parameters moved off their init, so their gradients matter."""
    score = score_class(variant)(layers=LAYERS, heads=HEADS, d_head=DHEAD, block_size=LENGTH, rngs=nnx.Rngs(0))
    rng = np.random.default_rng(1)
    for path, param in nnx.iter_graph(score):
        if isinstance(param, nnx.Param) and param[...].ndim > 0:
            param[...] = jnp.asarray(rng.normal(0.0, 0.5, param[...].shape), jnp.float32)
    return score


def inputs(kv_heads, scale=1.0, length=LENGTH, seed=0):
    kq, kk, kv = jax.random.split(jax.random.key(seed), 3)
    q = scale * jax.random.normal(kq, (BATCH, length, HEADS, DHEAD))
    k = scale * jax.random.normal(kk, (BATCH, length, kv_heads, DHEAD))
    v = jax.random.normal(kv, (BATCH, length, kv_heads, DHEAD))
    return q, k, v


def attend(score, q, k, v, impl, block, layer=1):
    """Attention output (B,T,H,D); k and v have kv_heads heads, shared by groups of query heads."""
    group = q.shape[2] // k.shape[2]
    k, v = jnp.repeat(k, group, axis=2), jnp.repeat(v, group, axis=2)
    return attention_heads(score, q, k, v, layer, block=None if impl == "dense" else block)[0]


def output_and_grads(score, q, k, v, impl, block):
    """The attention output and the gradients of a weighted sum of it w.r.t. (score params, q, k, v)."""
    graphdef, params, rest = nnx.split(score, nnx.Param, ...)  # rest: state no optimiser updates (SLAY's features)
    weights = jax.random.normal(jax.random.key(7), q.shape)  # a loss that weighs every output element

    def loss(params, q, k, v):
        out = attend(nnx.merge(graphdef, params, rest), q, k, v, impl, block)
        return (out * weights).sum(), out

    (_, out), grads = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2, 3), has_aux=True))(params, q, k, v)
    return out, grads


def assert_close(actual, desired, tol=TOL):
    """Equal to float tolerance: each entry within tol relative, or tol times the largest |entry|."""
    actual, desired = np.asarray(actual), np.asarray(desired)
    np.testing.assert_allclose(actual, desired, rtol=tol, atol=tol * float(np.abs(desired).max()))


def assert_trees_close(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        assert_close(x, y)


# Each key-block kind once: one that does not divide T = 12 (5: blocks of 5, 5, 2), one that does (4: three
# blocks) and one larger than T (64: a single block), each with another kv_heads (heads / 2, heads, 1). attend()
# repeats the key/value heads before either path, so kv_heads only shapes the inputs (and sums k's gradient
# over each group, the same op on both paths): a second kv_heads at one block would check the same thing.
# The quick lane keeps grouped heads with a key block that does not divide T.
CASES = [(HEADS // 2, 5), pytest.param(HEADS, 4, marks=pytest.mark.slow), pytest.param(1, 64, marks=pytest.mark.slow)]
# One variant of each family for the quick lane's jaxpr scan (softmax, kernel with learned scalars, A3).
SCANNED_QUICKLY = ("softmax", "yat_b", "a3")
POSTS_VARIANTS = ("softmax", "yat", "yat_b", "a3")  # the quick lane's gradient cases; the arms run in the full suite


@pytest.mark.parametrize("variant", [v if v in POSTS_VARIANTS else pytest.param(v, marks=pytest.mark.slow)
                                     for v in VARIANTS])
@pytest.mark.parametrize("kv_heads,block", CASES)
def test_blockwise_output_and_gradients_equal_dense(variant, kv_heads, block):
    score = make_score(variant)
    q, k, v = inputs(kv_heads)
    dense, dense_grads = output_and_grads(score, q, k, v, "dense", block)
    blockwise, blockwise_grads = output_and_grads(score, q, k, v, "blockwise", block)
    assert_close(blockwise, dense)
    assert_trees_close(blockwise_grads, dense_grads)
    param_grads = jax.tree.leaves(dense_grads[0])
    assert len(param_grads) == len(jax.tree.leaves(nnx.state(score, nnx.Param)))
    assert all(float(jnp.abs(g).max()) > 0 for g in param_grads), "the variant's parameters get a gradient"


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_blockwise_equals_dense_on_huge_and_tiny_scores(variant):
    score = make_score(variant)
    for scale in (1e-2, 30.0):
        q, k, v = inputs(2, scale=scale, seed=3)
        dense = attend(score, q, k, v, "dense", 4)
        blockwise = attend(score, q, k, v, "blockwise", 4)
        assert np.all(np.isfinite(np.asarray(blockwise)))
        assert_close(blockwise, dense)


def test_zero_mass_kernel_rows_match_dense():
    # yat with q = 0: every kappa is 0, the dense path's kappa / (mass + 1e-9) gives zero weights; so does blockwise
    score = make_score("yat")
    q, k, v = inputs(HEADS)
    q = jnp.zeros_like(q)
    np.testing.assert_array_equal(np.asarray(attend(score, q, k, v, "blockwise", 5)), 0.0)
    np.testing.assert_array_equal(np.asarray(attend(score, q, k, v, "dense", 5)), 0.0)


def test_column_blocks_of_the_dropout_bits_are_the_full_draw():
    key = jax.random.key(11)
    full_draw = jax.jit(random_uint16, static_argnums=1)
    column_draw = jax.jit(random_uint16_columns, static_argnums=(1, 3))
    for shape in [(2, 3, 13, 13), (1, 4, 8, 8), (5, 7)]:
        full = np.asarray(full_draw(key, shape))
        cols = shape[-1]
        for start, width in [(0, 4), (4, 4), (8, 5), (12, 4), (0, cols)]:
            if start >= cols:
                continue
            part = np.asarray(column_draw(key, shape, start, width))
            n = min(width, cols - start)
            np.testing.assert_array_equal(part[..., :n], full[..., start:start + n])


def model_cfg(variant, impl, kv_heads=None, dropout=0.0, block=5, layers=2):
    return ModelConfig(vocab_size=20, d_model=32, layers=layers, heads=HEADS, block_size=LENGTH, d_ff=48,
                       dropout=dropout, variant=variant, kv_heads=kv_heads, attention_impl=impl,
                       attention_block=block)


# Every variant with GQA through one layer: its score module's blockwise path under dropout, at half the
# compile of two. Two layers where the per-layer parts meet dropout: each layer's own dropout keys (plain
# softmax) and A3's layer embedding (with one shared key/value head).
DROPOUT_CASES = [(v, 2, 1) for v in VARIANTS] + [("softmax", None, 2), ("a3", 1, 2)]


@pytest.mark.slow
@pytest.mark.parametrize("variant,kv_heads,layers", DROPOUT_CASES)
def test_model_trains_the_same_blockwise_with_dropout(variant, kv_heads, layers):
    """Same parameters, same dropout key: the loss and every parameter gradient agree."""
    dense = GPT(model_cfg(variant, "dense", kv_heads, dropout=0.3, layers=layers), rngs=nnx.Rngs(params=0))
    block = GPT(model_cfg(variant, "blockwise", kv_heads, dropout=0.3, layers=layers), rngs=nnx.Rngs(params=0))
    tokens = jax.random.randint(jax.random.key(2), (BATCH, LENGTH), 0, 20)

    def loss_and_grads(model):
        """f(params): the loss with dropout and its gradients, and the loss without dropout."""
        graphdef, params, rest = nnx.split(model, nnx.Param, ...)

        def loss(params, key):
            logits = nnx.merge(graphdef, params, rest)(tokens, dropout_key=key)
            return jax.nn.log_softmax(logits).mean()

        return lambda params: (jax.value_and_grad(loss)(params, jax.random.key(5)), loss(params, None)), params

    (on_dense, dense_params), (on_block, block_params) = loss_and_grads(dense), loss_and_grads(block)
    both_paths = jax.jit(lambda d, b: (on_dense(d), on_block(b)))  # one compile for both models
    ((dense_loss, dense_grads), _), ((block_loss, block_grads), block_no_dropout) = both_paths(dense_params,
                                                                                             block_params)
    np.testing.assert_allclose(float(block_loss), float(dense_loss), rtol=1e-5)
    assert_trees_close(block_grads, dense_grads)
    assert not np.isclose(float(block_loss), float(block_no_dropout), rtol=1e-5, atol=0), "dropout acts"


@pytest.mark.slow
def test_probe_uses_the_dense_path():
    model = GPT(model_cfg("a3", "blockwise"), rngs=nnx.Rngs(params=0))
    tokens = jnp.zeros((1, LENGTH), jnp.int32)
    logits, outputs = model(tokens, probe=True)
    assert outputs[0].weights.shape == (1, HEADS, LENGTH, LENGTH)
    np.testing.assert_allclose(np.asarray(logits), np.asarray(model(tokens)), rtol=1e-5, atol=1e-5)


def _shapes(jaxpr):
    """Every intermediate shape of a jaxpr, sub-jaxprs (scan bodies, remat) included."""
    for eqn in jaxpr.eqns:
        for var in eqn.outvars:
            yield getattr(var.aval, "shape", ())
        for param in eqn.params.values():
            for sub in param if isinstance(param, (list, tuple)) else (param,):
                if isinstance(sub, jax.extend.core.ClosedJaxpr):
                    yield from _shapes(sub.jaxpr)
                elif isinstance(sub, jax.extend.core.Jaxpr):
                    yield from _shapes(sub)


@pytest.mark.parametrize("variant", [v if v in SCANNED_QUICKLY else pytest.param(v, marks=pytest.mark.slow)
                                     for v in VARIANTS])
def test_blockwise_never_builds_a_t_by_t_array(variant):
    length = 37  # no other dimension is 37, so a (…, 37, 37) array can only be T x T
    score = make_score(variant)
    q, k, v = inputs(2, length=length)
    for impl, expect in (("blockwise", False), ("dense", True)):
        graphdef, params, rest = nnx.split(score, nnx.Param, ...)

        def loss(params, q, k, v, impl=impl):
            return attend(nnx.merge(graphdef, params, rest), q, k, v, impl, 8).sum()

        jaxpr = jax.make_jaxpr(jax.grad(loss, argnums=(0, 1, 2, 3)))(params, q, k, v)
        square = any(list(shape).count(length) >= 2 for shape in _shapes(jaxpr.jaxpr))
        assert square == expect, f"{impl}: T x T array {'missing' if expect else 'built'}"


def test_config_refuses_kv_heads_that_do_not_divide_heads(smoke_config):
    # Without the smoke config's studies first: its micro-ladder has a 3-head rung, refused below.
    cfg = {**smoke_config, "studies": [], "model": {**smoke_config["model"], "heads": 4, "d_model": 32, "kv_heads": 3}}
    with pytest.raises(ConfigError, match="model.kv_heads"):
        validate_config(cfg)
    cfg["model"]["kv_heads"] = 2
    validate_config(cfg)
    with pytest.raises(ConfigError, match="kv_heads 2 does not divide heads 3"):
        validate_config({**cfg, "studies": smoke_config["studies"]})  # a study's point the kv_heads cannot serve
    cfg["model"]["attention_impl"] = "flash"
    with pytest.raises(ConfigError, match="model.attention_impl"):
        validate_config(cfg)


@pytest.mark.slow
def test_attention_bench_measures_both_paths():
    from benchmarks.attention import display, run

    table = run(["softmax"], [512], batch=1, heads=2, kv_heads=1, d_head=16, block=64, repeats=1, train=False,
                log=lambda *a, **k: None)
    row = table.iloc[0]
    assert row["fwd dense MiB"] >= 2 * 512 * 512 * 4 / 2**20  # the (B, H, T, T) weights, at least
    assert row["fwd blockwise MiB"] < row["fwd dense MiB"] / 2
    assert list(display(table).columns) == ["variant", "T", "fwd MiB dense / blockwise", "fwd ms dense / blockwise"]
