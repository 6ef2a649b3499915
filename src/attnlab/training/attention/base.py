"""What every score function returns, and the causal-window helpers they share."""

from __future__ import annotations

from typing import Callable, Literal, NamedTuple

import jax
import jax.numpy as jnp

from attnlab.core.constants import KERNEL_NORMALISER_EPS


class ScoreOutput(NamedTuple):
    """Attention weights plus the telemetry a score function can offer.

    weights: (B, H, T, T), each row a distribution over the causal window.
    scores:  (B, H, T, T), the quantity whose maximum the telemetry reports
             (softmax's scaled logit, the kernel's kappa, A3's gated logit);
             masked entries hold -inf so a max ignores them.
    mass:    (B, H, T) kernel row mass sum_j kappa_ij, or None.
    gate:    (B, H, T) A3's per-row inverse temperature, or None.
    bias:    (B, H, T) A3's per-key additive bias, or None.
    """

    weights: jnp.ndarray
    scores: jnp.ndarray
    mass: jnp.ndarray | None = None
    gate: jnp.ndarray | None = None
    bias: jnp.ndarray | None = None


class BlockScorer(NamedTuple):
    """What a score function hands the blockwise path (attnlab.training.attention.blockwise).

    A variant supports the blockwise path with one method, blockwise(q, k,
    layer) -> BlockScorer; its dense __call__ stays the reference it must equal.
    Queries stay whole; the keys are visited in blocks, and nothing of size
    T x T is built.

    normaliser: "softmax": scores are logits, normalised by an online softmax
                (running max and running sum of exponentials);
                "kernel": scores are kappa >= 0, normalised as the dense
                kernel_weights does, kappa / (sum kappa + 1e-9), from a
                running sum of kappa and of kappa * v.
    scores:     scores(k_block, *keyed_blocks) -> (B, H, T, Kb), the scores of
                every query against one block of keys (k_block (B, Kb, H, D)),
                before the causal mask (the blockwise path applies it). Per-query
                quantities (A3's gate) are closed over.
    keyed:      arrays indexed by key position on axis 1, (B, S, ...), cut into
                the same blocks as the keys and passed to scores (A3's per-key bias).
    """

    normaliser: Literal["softmax", "kernel"]
    scores: Callable[..., jnp.ndarray]
    keyed: tuple[jnp.ndarray, ...] = ()


def causal_mask(length: int) -> jnp.ndarray:
    """(T, T) boolean, True where key j is visible to query i (j <= i)."""
    return jnp.tril(jnp.ones((length, length), dtype=bool))


def pairwise_dots(q: jnp.ndarray, k: jnp.ndarray) -> jnp.ndarray:
    """q (B,T,H,D), k (B,S,H,D) -> (B,H,T,S) without materialising transposes."""
    return jnp.einsum("bthd,bshd->bhts", q, k)


def masked_softmax(logits: jnp.ndarray, mask: jnp.ndarray) -> jnp.ndarray:
    """Softmax over the visible keys; masked keys get exactly 0."""
    logits = jnp.where(mask, logits, -jnp.inf)
    return jnp.where(mask, jax.nn.softmax(logits, axis=-1), 0.0)


def kernel_weights(kappa: jnp.ndarray, mask: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Normalise a non-negative kernel over the causal window, as the seed does: kappa / (mass + 1e-9).

    Returns (weights, mass). Masked keys get kappa = 0 (exclusion, not -inf).
    The 1e-9 is the seed's: a row whose every visible key scores exactly 0
    (possible only for yat with a zero query) gets all-zero weights, as there.
    """
    kappa = jnp.where(mask, kappa, 0.0)
    mass = kappa.sum(-1)
    return kappa / (mass[..., None] + KERNEL_NORMALISER_EPS), mass


def squared_distance(q: jnp.ndarray, k: jnp.ndarray, dots: jnp.ndarray) -> jnp.ndarray:
    """||q_i - k_j||^2 from the dots already computed, clamped at 0 against rounding."""
    q_sq = jnp.einsum("bthd,bthd->bht", q, q)[..., :, None]
    k_sq = jnp.einsum("bshd,bshd->bhs", k, k)[..., None, :]
    return jnp.maximum(q_sq + k_sq - 2.0 * dots, 0.0)
