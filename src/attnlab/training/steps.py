"""The jitted computations of training: loss, multi-step update, evaluation, probes.

Everything is a pure function of (graphdef, state): the model is merged inside
the traced function, so one compiled executable serves every LR and seed.
"""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from attnlab.training.attention.normalisers import Renormalised
from attnlab.training.batches import slice_batch
from attnlab.training.probe import attention_maps, probe_batch


def make_optimizer(lr: float, weight_decay: float) -> optax.GradientTransformation:
    """AdamW with the LR held in the optimiser state, a runtime value rather than a constant."""
    return optax.inject_hyperparams(optax.adamw)(learning_rate=lr, weight_decay=weight_decay)


def cross_entropy(logits: jnp.ndarray, targets: jnp.ndarray) -> jnp.ndarray:
    return optax.softmax_cross_entropy_with_integer_labels(logits, targets).mean()


def loss_fn(params, graphdef, rest, x, y, dropout_key):
    model = nnx.merge(graphdef, params, rest)
    return cross_entropy(model(x, dropout_key=dropout_key), y)


def dropout_key(seed, step):
    """Dropout randomness, like batches, is a pure function of (seed, step).

    Threefry keys explicitly: the fast mask draw (masks.random_uint16) hashes
    with Threefry whatever JAX's default PRNG is set to.
    """
    key = jax.random.key(seed, impl="threefry2x32")
    return jax.random.fold_in(jax.random.fold_in(key, step), 1)


def train_step(graphdef, rest, optimizer, params, opt_state, x, y, key):
    """One AdamW step on one batch; returns (params, opt_state, loss)."""
    loss, grads = jax.value_and_grad(loss_fn)(params, graphdef, rest, x, y, key)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


def _train_chunk(graphdef, rest, optimizer, params, opt_state, tokens, offsets, seed, start, n_steps, *,
                block_size: int, bos: int | None = None):
    """Run n_steps (runtime, <= len(offsets)) steps from `start` without leaving the device.

    offsets[i] holds the batch offsets of step start+i (attnlab.training.batches).
    Returns (params, opt_state, losses) with losses[i] the loss of step start+i
    (entries past n_steps are NaN).
    """
    max_steps = offsets.shape[0]

    def body(i, carry):
        params, opt_state, losses = carry
        step = start + i
        x, y = slice_batch(tokens, offsets[i], block_size, bos)
        params, opt_state, loss = train_step(
            graphdef, rest, optimizer, params, opt_state, x, y, dropout_key(seed, step)
        )
        return params, opt_state, losses.at[i].set(loss)

    losses = jnp.full((max_steps,), jnp.nan, dtype=jnp.float32)
    return jax.lax.fori_loop(0, n_steps, body, (params, opt_state, losses))


CHUNK_STATIC = ("graphdef", "optimizer", "block_size", "bos")
train_chunk = jax.jit(_train_chunk, static_argnames=CHUNK_STATIC, donate_argnames=("params", "opt_state"))


@partial(jax.jit, static_argnames=CHUNK_STATIC, donate_argnames=("params", "opt_state"))
def train_chunks(graphdef, rest, optimizer, params, opt_state, tokens, offsets, seeds, start, n_steps, *,
                 block_size: int, bos: int | None = None):
    """train_chunk for a pack of cells at once: params, opt_state, offsets and seeds stacked on a leading axis
    (one cell each; their LRs live in the stacked optimiser states), the same steps for all. On an accelerator
    one such program keeps the device busy where one small cell cannot."""
    def one(cell_params, cell_opt_state, cell_offsets, seed):
        return _train_chunk(graphdef, rest, optimizer, cell_params, cell_opt_state, tokens, cell_offsets, seed, start,
                            n_steps, block_size=block_size, bos=bos)

    return jax.vmap(one)(params, opt_state, offsets, seeds)


class Reading(NamedTuple):
    """One evaluation's mean validation loss: over every window (`full`, the posts' measure) and over each of
    two fixed, disjoint halves of the windows. Choices (an LR, a plateau stop) read `select`; `report`, on
    windows no choice saw, says what the chosen evaluation is worth without the luck of being chosen."""

    full: jax.Array
    select: jax.Array
    report: jax.Array


def select_windows(shape) -> jnp.ndarray:
    """1.0 for the select half's windows, 0.0 for the report half's, over an evaluation's (batch, window) grid:
    the even windows in batch-major order. Alternate windows halve sampled batches and the whole split's
    consecutive stretches alike, so each half reads text from all over the split."""
    return (jnp.arange(math.prod(shape)).reshape(shape) % 2 == 0).astype(jnp.float32)


def half_sums(per_target: jnp.ndarray, weight: jnp.ndarray, select: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """One batch's summed per-target losses over its select windows and over its report windows, each window at
    its weight. Summed from the per-target losses, not from a per-window mean the full loss also reads: sharing
    that would change how XLA sums the full loss, and so its last bits."""
    return ((per_target * (weight * select)[:, None]).sum(),
            (per_target * (weight * (1.0 - select))[:, None]).sum())


def reading(full, select_sums, report_sums, weight, select, targets: int) -> Reading:
    """The Reading of an evaluation from its full loss and its halves' summed losses (targets per window)."""
    return Reading(full, select_sums.sum() / (targets * (weight * select).sum()),
                   report_sums.sum() / (targets * (weight * (1.0 - select)).sum()))


@partial(jax.jit, static_argnames=("graphdef",))
def evaluate(graphdef, rest, params, val_x, val_y) -> Reading:
    """Mean loss over the fixed held-out batches (no dropout), and over each half of their windows.

    `full` is the mean of the per-batch losses, computed exactly as before
    the halves existed, so it keeps its value to the bit; every window holds
    T targets, so it is also the halves' mean weighted by their windows.
    """
    model = nnx.merge(graphdef, params, rest)
    weight = jnp.ones(val_x.shape[:2], dtype=jnp.float32)
    select = select_windows(weight.shape)

    def batch(xyws):
        per_target = optax.softmax_cross_entropy_with_integer_labels(model(xyws[0]), xyws[1])
        return per_target.mean(), *half_sums(per_target, xyws[2], xyws[3])

    losses, select_sums, report_sums = jax.lax.map(batch, (val_x, val_y, weight, select))
    return reading(losses.mean(), select_sums, report_sums, weight, select, val_y.shape[-1])


@partial(jax.jit, static_argnames=("graphdef",))
def evaluate_windows(graphdef, rest, params, x, y, weight) -> Reading:
    """Mean loss over weighted windows (no dropout): every character of a split once, padding at weight 0; and
    over each half of those windows, weighted as the whole is. `full` is computed exactly as before the halves."""
    model = nnx.merge(graphdef, params, rest)
    select = select_windows(weight.shape)

    def batch(xyws):
        per_target = optax.softmax_cross_entropy_with_integer_labels(model(xyws[0]), xyws[1])
        return (per_target.mean(-1) * xyws[2]).sum(), *half_sums(per_target, xyws[2], xyws[3])

    sums, select_sums, report_sums = jax.lax.map(batch, (x, y, weight, select))
    return reading(sums.sum() / weight.sum(), select_sums, report_sums, weight, select, y.shape[-1])


@partial(jax.jit, static_argnames=("graphdef", "normaliser"))
def evaluate_normalised(graphdef, rest, params, val_x, val_y, *, normaliser: str):
    """evaluate()'s full loss with the kernel family's kappa normalised by `normaliser` ("kernel" or "softmax").

    The normaliser crossover: the trained weights, unchanged, with the score
    module wrapped in attention.normalisers.Renormalised.
    """
    model = nnx.merge(graphdef, params, rest)
    model.score = Renormalised(model.score, normaliser)
    losses = jax.lax.map(lambda xy: cross_entropy(model(xy[0]), xy[1]), (val_x, val_y))
    return losses.mean()


@partial(jax.jit, static_argnames=("graphdef", "min_keys"))
def probe(graphdef, rest, params, val_x, val_y, *, min_keys: int):
    """Telemetry arrays stacked over the held-out batches."""
    model = nnx.merge(graphdef, params, rest)
    return jax.lax.map(lambda xy: probe_batch(model, xy[0], xy[1], min_keys), (val_x, val_y))


@partial(jax.jit, static_argnames=("graphdef",))
def window_attention(graphdef, rest, params, window):
    return attention_maps(nnx.merge(graphdef, params, rest), window)
