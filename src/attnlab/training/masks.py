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


def bits16_keep(rate: float) -> tuple[int, float]:
    """The "bits16" dropout rule: keep an element whose 16 random bits are >= threshold, scaled by `scale`.

    threshold = round(rate * 2^16); scale is the inverse realised keep probability.
    """
    threshold = round(rate * 65536)
    return threshold, 65536.0 / (65536 - threshold)


def random_uint16_columns(key: jax.Array, shape: tuple[int, ...], start, width: int) -> jnp.ndarray:
    """random_uint16(key, shape)[..., start:start + width], computing only those columns.

    The blockwise attention path draws its dropout mask one key block at a
    time with this, so it drops exactly the weights the dense path drops. Each
    element hashes its own counter pair (four times the hashing of the full
    draw, which shares one hash between four elements), but nothing of size
    shape is ever built. `start` may be traced; columns past the last one
    (a padded final block) get arbitrary bits. Needs prod(shape) < 2^32.
    """
    *lead, cols = shape
    size = math.prod(shape)
    if size >= 2**32 - 4 * cols:
        raise ValueError(f"random_uint16_columns: {shape} has too many elements for 32-bit counters")
    pairs = np.uint32((size + 3) // 4)
    rows = jnp.arange(math.prod(lead), dtype=jnp.uint32)[:, None]
    index = rows * np.uint32(cols) + (jnp.asarray(start, jnp.uint32) + jnp.arange(width, dtype=jnp.uint32))[None]
    word = index >> np.uint32(1)  # the 32-bit word holding this 16-bit value
    first_half = word < pairs  # words [0, pairs) are the hashes' first outputs, the rest their second
    counter = jnp.where(first_half, word, word - pairs)
    x0, x1 = threefry2x32(jax.random.key_data(key), counter, counter + pairs)
    halves = jax.lax.bitcast_convert_type(jnp.where(first_half, x0, x1), jnp.uint16)  # (..., 2) as in random_uint16
    bits = jnp.where((index & np.uint32(1)) == 0, halves[..., 0], halves[..., 1])
    return bits.reshape(*lead, width)
