"""The project's Linear layer (attnlab.training.dense.Dense) is nnx.Linear with its backward products written out:
the same parameters, outputs and gradients, bit for bit, and the same training numbers."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from attnlab.training.dense import Dense

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("shape", [(2, 8, 16), (5, 16), (3, 4, 2, 16)])
@pytest.mark.parametrize("use_bias", [True, False])
def test_dense_computes_what_nnx_linear_computes_and_its_gradients(shape, use_bias):
    ours, theirs = (layer(16, 24, use_bias=use_bias, rngs=nnx.Rngs(params=3)) for layer in (Dense, nnx.Linear))
    for a, b in zip(jax.tree.leaves(nnx.state(ours)), jax.tree.leaves(nnx.state(theirs))):
        assert np.array_equal(a, b), "same parameters from the same key"
    x = jnp.asarray(np.random.default_rng(0).standard_normal(shape), dtype=jnp.float32)
    weight = jnp.asarray(np.random.default_rng(1).standard_normal((*shape[:-1], 24)), dtype=jnp.float32)

    def loss(layer, x):
        return jnp.sum(jnp.tanh(layer(x)) * weight)

    (value_a, (grads_a, dx_a)), (value_b, (grads_b, dx_b)) = (
        jax.jit(nnx.value_and_grad(loss, argnums=(0, 1)))(layer, x) for layer in (ours, theirs))
    assert np.array_equal(value_a, value_b)
    assert np.array_equal(dx_a, dx_b)
    for a, b in zip(jax.tree.leaves(grads_a), jax.tree.leaves(grads_b)):
        assert np.array_equal(a, b)


COMPARE = """
import sys
import jax
import numpy as np
from attnlab.core.config_types import ModelConfig
from attnlab.training.runtime import configure_runtime
configure_runtime(1, None)
from benchmarks.train_step import ProjectLoop, autodiff_linears
mcfg = ModelConfig(vocab_size=65, d_model=32, layers=2, heads=2, block_size=32, d_ff=64, dropout=0.1,
                   variant=sys.argv[1])
tokens = np.random.default_rng(0).integers(0, 65, 20_000, dtype=np.int32)
ours = ProjectLoop(mcfg, tokens, 8, max_steps=30)
with autodiff_linears():
    theirs = ProjectLoop(mcfg, tokens, 8, max_steps=30)
(a, _), (b, _) = ours.run(30), theirs.run(30)
same = np.array_equal(a, b) and all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(ours.params),
                                                                         jax.tree.leaves(theirs.params)))
print("same" if same else "differ", float(a[-1]), float(b[-1]))
"""


@pytest.mark.parametrize("variant", ["softmax", "yat_b"])  # yat_b amplifies any rounding difference
@pytest.mark.slow
def test_a_training_chunk_with_dense_layers_gives_the_numbers_of_nnx_linear_layers(variant):
    """The build's training chunk (the smoke model), its model built with Dense and with nnx.Linear, compiled
    as a build compiles it: the losses and every parameter after 30 steps are equal. (Under the tests' quick
    compile flags XLA fuses the two backward passes differently and they differ in the last bit.)"""
    from processes import build_xla_flags, run

    result = run(["-c", COMPARE, variant], cwd=REPO, env=build_xla_flags() | {"PYTHONPATH": REPO})
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split()[0] == "same", result.stdout
