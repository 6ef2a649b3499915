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
