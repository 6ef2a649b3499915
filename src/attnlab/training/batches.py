"""The text each cell trains and is measured on: the seed script's random streams, reproduced.

Every stream is numpy's PCG64 `default_rng(n).integers(0, len(split) - T - 1, batch)`:
- training batch of step s for seed k: n = k * 10_000_000 + s;
- validation batch i (every evaluation): n = 77_000 + i;
- telemetry batch i (the probe on the final weights): n = 88_000 + i;
- the fixed attention-map window: the first row of the batch n = 424_242, from the validation split.
So every variant of a seed sees exactly the text the published runs saw. The
offsets of a chunk of steps are computed on the host (cheap: a 12,000 x 64 table
is 3 MB) and handed to the jitted loop, which slices the windows on the device.

With a beginning-of-sequence token (`bos`, data.bos) the offsets are the same;
each window's inputs are the token and its first T - 1 characters, its targets
its first T characters, so every character a window holds is predicted once.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

TRAIN_STREAM = 10_000_000  # seed multiplier of the training stream
VALIDATION_STREAM = 77_000
TELEMETRY_STREAM = 88_000
WINDOW_STREAM = 424_242


def stream_offsets(stream: int, n_tokens: int, block_size: int, batch_size: int) -> np.ndarray:
    """Start positions of one batch of the seed's stream `stream` (int64, shape (batch,))."""
    return np.random.default_rng(stream).integers(0, n_tokens - block_size - 1, batch_size)


def train_offsets(seed: int, start: int, n_steps: int, n_tokens: int, block_size: int, batch_size: int,
                  pad_to: int | None = None) -> np.ndarray:
    """(pad_to or n_steps, batch) int32 offsets of steps start..start+n_steps-1; padding rows are 0."""
    table = np.zeros((pad_to or n_steps, batch_size), dtype=np.int32)
    for i in range(n_steps):
        table[i] = stream_offsets(seed * TRAIN_STREAM + start + i, n_tokens, block_size, batch_size)
    return table


def held_out_batches(split: np.ndarray, stream: int, block_size: int, batch_size: int, n_batches: int,
                     bos: int | None = None):
    """(n_batches, batch, T) inputs and next-character targets of batches stream+0 .. stream+n-1."""
    offsets = np.stack([stream_offsets(stream + i, len(split), block_size, batch_size) for i in range(n_batches)])
    x, y = slice_batch(jnp.asarray(split), jnp.asarray(offsets.reshape(-1), dtype=jnp.int32), block_size, bos)
    shape = (n_batches, batch_size, block_size)
    return x.reshape(shape), y.reshape(shape)


def whole_split_batches(split: np.ndarray, block_size: int, batch_size: int, bos: int | None = None):
    """Every character of a split once: its non-overlapping windows from position 0, in batches, the last batch
    padded with copies of the first window at weight 0. Returns (x, y, weight), shapes (n, batch, T) twice and
    (n, batch). A window's T targets end before the split's last character."""
    starts = np.arange(0, len(split) - block_size, block_size)
    n_batches = -(-len(starts) // batch_size)
    padded = np.zeros(n_batches * batch_size, dtype=np.int64)
    padded[: len(starts)] = starts
    weight = (np.arange(n_batches * batch_size) < len(starts)).astype(np.float32)
    x, y = slice_batch(jnp.asarray(split), jnp.asarray(padded, dtype=jnp.int32), block_size, bos)
    shape = (n_batches, batch_size, block_size)
    return x.reshape(shape), y.reshape(shape), jnp.asarray(weight.reshape(n_batches, batch_size))


def map_window(val: np.ndarray, block_size: int, offset: int | None = None, bos: int | None = None) -> np.ndarray:
    """The fixed validation window whose attention maps are stored: the seed's, or one at `offset` (after the
    beginning-of-sequence token where there is one)."""
    if offset is None:
        offset = int(stream_offsets(WINDOW_STREAM, len(val), block_size, 1)[0])
    if bos is None:
        return np.asarray(val[offset: offset + block_size])
    return np.concatenate([np.asarray([bos], dtype=val.dtype), val[offset: offset + block_size - 1]])


def slice_batch(tokens: jnp.ndarray, offsets: jnp.ndarray, block_size: int, bos: int | None = None):
    """Inputs and next-character targets for each offset, sliced on the device; with a beginning-of-sequence
    token, the token and the window's first T - 1 characters, predicting its first T."""
    take = jax.vmap(lambda o: jax.lax.dynamic_slice(tokens, (o,), (block_size + 1,)))
    windows = take(offsets)
    if bos is None:
        return windows[:, :-1], windows[:, 1:]
    first = jnp.full((windows.shape[0], 1), bos, dtype=windows.dtype)
    return jnp.concatenate([first, windows[:, :block_size - 1]], axis=1), windows[:, :-1]
