"""The fast loop computes what the plain loop computes, and the FLOP count is right."""

import numpy as np
import pytest

from attnlab.training.attention import VARIANTS
from attnlab.training.bench import PlainLoop, ProjectLoop, step_flops
from attnlab.training.model import ModelConfig


def tiny(variant, dropout=0.0):
    return ModelConfig(vocab_size=65, d_model=32, layers=2, heads=2, block_size=16, d_ff=64,
                       dropout=dropout, variant=variant)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_fast_loop_matches_plain_loop_without_dropout(variant):
    tokens = np.random.default_rng(1).integers(0, 65, 5000, dtype=np.int32)
    project = ProjectLoop(tiny(variant), tokens, batch=4, max_steps=12, seed=3)
    plain = PlainLoop(tiny(variant), tokens, batch=4, seed=3)
    fast_losses = np.concatenate([project.run(5)[0], project.run(7)[0]])
    plain_losses = plain.run(12)[0]
    np.testing.assert_allclose(fast_losses, plain_losses, atol=1e-5, rtol=0)
    assert fast_losses[-1] < fast_losses[0], "the loop should be learning"


def test_dropout_masks_differ_but_both_train():
    tokens = np.random.default_rng(1).integers(0, 65, 5000, dtype=np.int32)
    fast = ProjectLoop(tiny("softmax", 0.1), tokens, batch=4, max_steps=8).run(8)[0]
    plain = PlainLoop(tiny("softmax", 0.1), tokens, batch=4).run(8)[0]
    assert np.all(np.isfinite(fast)) and np.all(np.isfinite(plain))
    assert not np.allclose(fast, plain), "the project loop draws its dropout masks differently"


def test_step_flops_counts_every_matmul():
    cfg = ModelConfig(vocab_size=65, d_model=192, layers=6, heads=4, block_size=128, d_ff=768,
                      dropout=0.1, variant="softmax")
    tokens = 64 * 128
    dense = 6 * (2 * tokens * 192 * 576 + 2 * tokens * 192 * 192 + 2 * 2 * tokens * 192 * 768)
    attention = 6 * 2 * (2 * 64 * 4 * 128 * 128 * 48)
    head = 2 * tokens * 192 * 65
    assert step_flops(cfg, 64) == 3 * (dense + attention + head)
