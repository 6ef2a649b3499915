"""What the tests of one score function share: random inputs with shared key heads, the attention output and
its gradients through the dense or the blockwise path, a closeness check, and a smoke-sized training cell."""

from __future__ import annotations

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from attnlab.training.model import attention_heads


LAYERS, HEADS, DHEAD, BATCH, LENGTH = 2, 4, 8, 2, 12
# key blocks below the window, dividing it or not, and one wider than the window (the dense case)
BLOCK_CASES = [(HEADS, 4), (HEADS // 2, 5), (1, 12), (HEADS, 64)]


def inputs(kv_heads=HEADS, scale=1.0, seed=0, length=LENGTH):
    """q (B,T,H,D); k and v with kv_heads heads, each repeated for its group of query heads, as the model does."""
    kq, kk, kv = jax.random.split(jax.random.key(seed), 3)
    q = scale * jax.random.normal(kq, (BATCH, length, HEADS, DHEAD))
    k = scale * jax.random.normal(kk, (BATCH, length, kv_heads, DHEAD))
    v = jax.random.normal(kv, (BATCH, length, kv_heads, DHEAD))
    group = HEADS // kv_heads
    return q, jnp.repeat(k, group, axis=2), jnp.repeat(v, group, axis=2)


def logits64(q, k):
    """q.k / sqrt(d_h) in float64, (B, H, T, S)."""
    q, k = np.asarray(q, np.float64), np.asarray(k, np.float64)
    return np.einsum("bthd,bshd->bhts", q, k) / math.sqrt(q.shape[-1])


def output_and_grads(score, q, k, v, impl, block, layer=1):
    """The attention output and the gradients of a weighted sum of it w.r.t. the module's parameters (if any),
    q, k and v."""
    probe = jax.random.normal(jax.random.key(7), q.shape)
    graphdef, params, rest = nnx.split(score, nnx.Param, ...)  # rest: state no optimiser updates (SLAY's features)

    def loss(params, q, k, v):
        module = nnx.merge(graphdef, params, rest)
        out, _ = attention_heads(module, q, k, v, layer, block=None if impl == "dense" else block)
        return (out * probe).sum(), out

    (_, out), grads = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2, 3), has_aux=True))(params, q, k, v)
    return out, jax.tree.leaves(grads)


def assert_close(actual, desired, tol=1e-4):
    actual, desired = np.asarray(actual), np.asarray(desired)
    np.testing.assert_allclose(actual, desired, rtol=tol, atol=tol * float(np.abs(desired).max()))


def train_smoke_cell(tiny_cfg, corpus_path, tmp_path, variant: str) -> dict:
    """A 20-step smoke-sized cell of `variant` trained by the rules' trainer in this process (a pack of one:
    the command line's start-up is other tests' subject, and costs more than the cell); its bundle.json, checked
    to have trained without diverging to a loss below the uniform one."""
    from attnlab.core.cell_key import CellKey
    from pack_of_one import train_alone

    cfg = {**tiny_cfg, "train": {**tiny_cfg["train"], "steps": 20, "eval_every": 10}}
    out = tmp_path / variant / "lr0.003" / "seed0"
    train_alone(cfg, CellKey.of(variant, 3e-3, 0), corpus_path, out)
    bundle = json.loads((out / "bundle.json").read_text())
    assert bundle["variant"] == variant and bundle["steps_done"] == 20 and not bundle["diverged"]
    assert np.isfinite(bundle["final_val_loss"]) and bundle["final_val_loss"] < math.log(65)
    return bundle


def assert_finite_through_both_paths(score, q, k, v, block=5):
    """Outputs and every gradient finite, dense and blockwise."""
    for impl in ("dense", "blockwise"):
        out, grads = output_and_grads(score, q, k, v, impl, block)
        assert np.all(np.isfinite(np.asarray(out))), impl
        assert all(np.all(np.isfinite(np.asarray(g))) for g in grads), impl


def parameters_beyond_softmax(variant: str) -> tuple[int, dict]:
    """How many parameters `variant` has beyond softmax at the default config, and that config's model section."""
    import yaml

    from attnlab.core.config import validate_config
    from attnlab.training.params import parameter_counts
    from conftest import REPO

    cfg = validate_config(yaml.safe_load((REPO / "config" / "default.yaml").read_text()))
    counts = parameter_counts({**cfg, "variants": ["softmax", variant]})
    return counts[variant] - counts["softmax"], cfg["model"]


def weights_times_values(naive_weights):
    """A float64 reference output from a float64 reference's weights: the weights applied to the values."""
    return lambda q, k, v: np.einsum("bhts,bshd->bthd", naive_weights(q, k), np.asarray(v, np.float64))


def assert_blockwise_equals_dense_and_reference(score, naive_output, kv_heads, block, scale=2.0) -> list:
    """The blockwise output and gradients equal the dense path's, and the dense output equals the float64
    reference's (naive_output(q, k, v), layer 1's head outputs); returns the dense gradients."""
    q, k, v = inputs(kv_heads, scale=scale)
    dense, dense_grads = output_and_grads(score, q, k, v, "dense", block)
    blockwise, blockwise_grads = output_and_grads(score, q, k, v, "blockwise", block)
    assert_close(blockwise, dense)
    assert_close(dense, naive_output(q, k, v))
    for a, b in zip(blockwise_grads, dense_grads, strict=True):
        assert_close(a, b)
    return dense_grads
