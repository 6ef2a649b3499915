"""The fast loop computes what the plain loop computes, and the FLOP count is right."""

import numpy as np
import pytest

from attnlab.core.config_types import ModelConfig
from attnlab.core.variants import VARIANTS
from attnlab.training.flops import step_flops
from benchmarks.train_step import PlainLoop, ProjectLoop


def tiny(variant, dropout=0.0, layers=2):
    return ModelConfig(vocab_size=65, d_model=32, layers=layers, heads=2, block_size=16, d_ff=64,
                       dropout=dropout, variant=variant)


@pytest.mark.slow
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_fast_loop_matches_plain_loop_without_dropout(variant):
    """One layer: the loops differ in how they feed and step the model, not in its depth (half the compile)."""
    tokens = (np.arange(5000) * 7 % 65).astype(np.int32)  # a learnable text: each character predicts the next
    project = ProjectLoop(tiny(variant, layers=1), tokens, batch=4, max_steps=12, seed=3)
    plain = PlainLoop(tiny(variant, layers=1), tokens, batch=4, seed=3)
    fast_losses = np.concatenate([project.run(5)[0], project.run(7)[0]])
    plain_losses = plain.run(12)[0]
    np.testing.assert_allclose(fast_losses, plain_losses, atol=1e-5, rtol=0)
    assert fast_losses[-1] < fast_losses[0], "the loop should be learning"


@pytest.mark.slow
def test_dropout_masks_differ_but_both_train():
    tokens = np.random.default_rng(1).integers(0, 65, 5000, dtype=np.int32)
    fast = ProjectLoop(tiny("softmax", 0.1), tokens, batch=4, max_steps=8).run(8)[0]
    plain = PlainLoop(tiny("softmax", 0.1), tokens, batch=4).run(8)[0]
    assert np.all(np.isfinite(fast)) and np.all(np.isfinite(plain))
    assert not np.allclose(fast, plain), "the project loop draws its dropout masks differently"


def matmul_flops_in_jaxpr(jaxpr) -> int:
    """2 x M x N x K summed over every dot_general of a jaxpr, sub-jaxprs (scan, pjit, remat) included."""
    import math

    total = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "dot_general":
            (contract, _), _ = eqn.params["dimension_numbers"]
            lhs = eqn.invars[0].aval.shape
            total += 2 * math.prod(eqn.outvars[0].aval.shape) * math.prod(lhs[i] for i in contract)
        for value in eqn.params.values():
            for sub in (value if isinstance(value, (list, tuple)) else [value]):
                inner = getattr(sub, "jaxpr", None)
                if inner is not None:
                    total += matmul_flops_in_jaxpr(getattr(inner, "jaxpr", inner))
    return total


@pytest.mark.parametrize("kv_heads", [None, pytest.param(1, marks=pytest.mark.slow)])
def test_step_flops_equals_the_matmuls_jax_traces(kv_heads):
    """step_flops against an independent count: the dot_generals in the jaxpr of a real training step."""
    import dataclasses

    import jax
    import jax.numpy as jnp

    from attnlab.training.steps import loss_fn
    from benchmarks.train_step import setup

    cfg = dataclasses.replace(tiny("softmax"), d_model=48, heads=4, block_size=24, d_ff=80, kv_heads=kv_heads)
    graphdef, rest, _, params, _ = setup(cfg)
    x = jnp.zeros((3, cfg.block_size), dtype=jnp.int32)
    grad = jax.value_and_grad(loss_fn)
    traced = jax.make_jaxpr(lambda p: grad(p, graphdef, rest, x, x, None))(params)
    assert step_flops(cfg, 3) == matmul_flops_in_jaxpr(traced.jaxpr)
