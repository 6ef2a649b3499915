"""Cheap random bits for dropout masks: Threefry-2x32 in counter mode, unrolled.

On a CPU, drawing dropout masks with jax.random is a large share of a small
model's training step: jax.random.bits spends one Threefry hash per element
(folding its two output words into one), and JAX lowers the hash on CPU as a
rolled loop that XLA cannot fuse. Here each hash of a counter pair yields 64
bits, cut into four 16-bit values, and the 20 rounds are unrolled so XLA fuses
them into one kernel. The hash is the same function as
jax.extend.random.threefry_2x32 (tests/test_masks.py checks bit equality).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))  # Threefry-2x32, Salmon et al. 2011
KEY_SCHEDULE_PARITY = np.uint32(0x1BD11BDA)


def threefry2x32(key_words: jnp.ndarray, x0: jnp.ndarray, x1: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """The 20-round Threefry-2x32 hash of counter pairs (x0, x1) under a 2-word key."""
    k0, k1 = key_words[0], key_words[1]
    schedule = (k0, k1, k0 ^ k1 ^ KEY_SCHEDULE_PARITY)
    x0, x1 = x0 + schedule[0], x1 + schedule[1]
    for block in range(5):
        for r in ROTATIONS[block % 2]:
            x0 = x0 + x1
            x1 = ((x1 << np.uint32(r)) | (x1 >> np.uint32(32 - r))) ^ x0
        x0 = x0 + schedule[(block + 1) % 3]
        x1 = x1 + schedule[(block + 2) % 3] + np.uint32(block + 1)
    return x0, x1


def random_uint16(key: jax.Array, shape: tuple[int, ...]) -> jnp.ndarray:
    """Uniform 16-bit integers of `shape`, four per hash, from a Threefry key."""
    size = math.prod(shape)
    pairs = (size + 3) // 4
    counters = jnp.arange(2 * pairs, dtype=jnp.uint32)
    x0, x1 = threefry2x32(jax.random.key_data(key), counters[:pairs], counters[pairs:])
    words = jnp.concatenate([x0, x1])
    return jax.lax.bitcast_convert_type(words, jnp.uint16).reshape(-1)[:size].reshape(shape)
