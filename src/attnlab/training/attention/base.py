"""What every score function returns, how its scores become weights, and the causal-window helpers they share."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp

from attnlab.core.constants import KERNEL_NORMALISER_EPS


class ScoreOutput(NamedTuple):
    """Attention weights plus the telemetry a score function can offer.

    weights: (B, H, T, T), zero on masked (future) keys. Each row is a
             distribution over the causal window, unless the normaliser does
             not normalise rows (sigmoid): then see `distribution`.
    scores:  (B, H, T, T), the quantity whose maximum the telemetry reports
             (softmax's scaled logit, the kernel's kappa, A3's gated logit);
             masked entries hold -inf so a max ignores them.
    mass:    (B, H, T) kernel row mass sum_j kappa_ij, or None.
    gate:    (B, H, T) A3's per-row inverse temperature, or None.
    bias:    (B, H, T) A3's per-key additive bias, or None.
    distribution: (B, H, T, T) each row of `weights` divided by its sum, where
             the rows do not already sum to 1; what the row entropy is taken
             of. None: the weights themselves are the distributions.
    """

    weights: jnp.ndarray
    scores: jnp.ndarray
    mass: jnp.ndarray | None = None
    gate: jnp.ndarray | None = None
    bias: jnp.ndarray | None = None
    distribution: jnp.ndarray | None = None


class Normaliser:
    """How a score map becomes attention weights, over the whole window and key block by key block.

    A score module names its normaliser in its `normaliser` attribute and
    hands it its scores; the dense path (the module's __call__), the blockwise
    path (attention.blockwise) and the normaliser crossover
    (attention.normalisers.Renormalised) all take it from there. So a variant
    with a normaliser of its own defines it in its own module: nothing else
    lists the normalisers.

    The blockwise path keeps, per query row, running statistics (start) and
    the running sum of weight x value. For each key block the normaliser turns
    the block's scores into weights and updates its statistics (block), possibly
    asking for the running sum to be rescaled first; at the end it turns the
    running sum into the output (finish).
    """

    name: str  # what bundles and the crossover call it

    def dense(self, scores: jnp.ndarray, mask: jnp.ndarray) -> ScoreOutput:
        """scores (B, H, T, T), mask (T, T) True where visible -> weights (masked keys exactly 0) and telemetry."""
        raise NotImplementedError

    def start(self, shape: tuple[int, ...], dtype) -> Any:
        """The running statistics before the first key block; `shape` is (B, H, T)."""
        raise NotImplementedError

    def block(self, stats: Any, scores: jnp.ndarray, visible: jnp.ndarray) -> tuple[Any, jnp.ndarray,
                                                                                    jnp.ndarray | None]:
        """One key block: scores (B, H, T, Kb), visible (T, Kb) -> (stats, weights, rescale).

        weights (B, H, T, Kb) are zero on keys not visible; rescale (B, H, T)
        multiplies the running sum of weight x value before this block's is
        added, or is None to leave it as it is.
        """
        raise NotImplementedError

    def finish(self, stats: Any, acc: jnp.ndarray) -> jnp.ndarray:
        """The output (B, H, T, D) from the running sum of weight x value, acc (B, H, T, D)."""
        raise NotImplementedError


class BlockScorer(NamedTuple):
    """What a score function hands the blockwise path (attnlab.training.attention.blockwise).

    A variant supports the blockwise path with one method, blockwise(q, k,
    layer) -> BlockScorer; its dense __call__ stays the reference it must equal.
    Queries stay whole; the keys are visited in blocks, and nothing of size
    T x T is built.

    normaliser: the variant's Normaliser, the same one its dense path uses.
    scores:     scores(k_block, *keyed_blocks) -> (B, H, T, Kb), the scores of
                every query against one block of keys (k_block (B, Kb, H, D)),
                before the causal mask (the normaliser applies it). Per-query
                quantities (A3's gate) are closed over.
    keyed:      arrays indexed by key position on axis 1, (B, S, ...), cut into
                the same blocks as the keys and passed to scores (A3's per-key bias).
    """

    normaliser: Normaliser
    scores: Callable[..., jnp.ndarray]
    keyed: tuple[jnp.ndarray, ...] = ()


def head_outputs(score, attend: Callable[[jnp.ndarray], jnp.ndarray], v: jnp.ndarray, layer: int) -> jnp.ndarray:
    """A layer's head outputs (B,T,H,D): the score function's own head_outputs(attend, v, layer) where it defines
    one, else attend(v), its weights times the values.

    attend(values (B,S,H,E)) -> (B,T,H,E) is sum_j w_ij values_j with the weights of the path in use (dense or
    blockwise, dropout included), so a score function that owns this step (differential attention: two maps per
    head and a per-head normalisation) writes it once for both paths.
    """
    own = getattr(score, "head_outputs", None)
    return attend(v) if own is None else own(attend, v, layer)


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
