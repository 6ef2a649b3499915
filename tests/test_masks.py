"""The unrolled Threefry used for dropout masks is JAX's Threefry, bit for bit."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.random import threefry_2x32

from attnlab.training.masks import random_uint16, threefry2x32


def test_unrolled_threefry_equals_jax_threefry():
    key = jax.random.key_data(jax.random.key(1234))
    counters = jnp.asarray(np.random.default_rng(0).integers(0, 2**32, 2 * 777, dtype=np.uint64).astype(np.uint32))
    x0, x1 = threefry2x32(key, counters[:777], counters[777:])
    np.testing.assert_array_equal(np.concatenate([x0, x1]), np.asarray(threefry_2x32(key, counters)))


def test_random_uint16_is_uniform_and_key_dependent():
    a = np.asarray(random_uint16(jax.random.key(0), (301, 7)))
    assert a.shape == (301, 7) and a.dtype == np.uint16
    assert abs(a.mean() / 65535 - 0.5) < 0.02
    assert len(np.unique(a)) > 1500
    b = np.asarray(random_uint16(jax.random.key(1), (301, 7)))
    assert (a != b).mean() > 0.99
    np.testing.assert_array_equal(a, np.asarray(random_uint16(jax.random.key(0), (301, 7))))


def test_fast_masks_match_bernoulli_masks_in_rate_scale_and_independence():
    """bits16 masks: realised rate, kept-value scale, and no correlation between neighbouring elements,
    heads, rows or steps (what a Bernoulli mask has), measured on a (steps, B, H, T, T)-shaped draw."""
    from attnlab.training.model import dropout
    from attnlab.training.steps import dropout_key

    rate = 0.1
    shape = (4, 8, 32, 32)  # B, H, T, T
    steps = [np.asarray(dropout(jnp.ones(shape), rate, dropout_key(jnp.uint32(0), s))) for s in range(3)]
    bern = np.asarray(dropout(jnp.ones(shape), rate, jax.random.key(9), "bernoulli"))
    for masks in steps + [bern]:
        kept = masks != 0
        assert abs(1 - kept.mean() - rate) < 0.004
        assert np.allclose(masks[kept], masks[kept][0]) and abs(masks.mean() - 1.0) < 0.01
    kept = [(m != 0).astype(np.float64) for m in steps]

    def corr(a, b):
        return float(np.corrcoef(a.ravel(), b.ravel())[0, 1])

    m = kept[0]
    bound = 4 / np.sqrt(m.size)  # four standard errors of a correlation of independent draws
    assert abs(corr(m[..., 1:], m[..., :-1])) < bound   # neighbouring keys
    assert abs(corr(m[..., 1:, :], m[..., :-1, :])) < bound  # neighbouring query rows
    assert abs(corr(m[:, 1:], m[:, :-1])) < bound  # neighbouring heads
    assert abs(corr(m[1:], m[:-1])) < bound  # neighbouring batch rows
    assert abs(corr(kept[0], kept[1])) < bound and abs(corr(kept[1], kept[2])) < bound  # consecutive steps
