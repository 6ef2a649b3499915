"""The telemetry probe: what a trained model's attention looks like on held-out batches (under jit).

Its arrays are summarised for bundle.json by attnlab.core.telemetry_stats
(the definitions, thresholds included, are stated there).
"""

from __future__ import annotations

import jax.numpy as jnp


def probe_batch(model, x: jnp.ndarray, y: jnp.ndarray, min_keys: int) -> dict[str, jnp.ndarray]:
    """Telemetry of one held-out batch (call under jit)."""
    logits, outputs, residuals = model.forward(x, dense=True)
    length = x.shape[1]
    visible = jnp.arange(1, length + 1, dtype=jnp.float32)
    weights = jnp.stack([o.weights for o in outputs])  # (L,B,H,T,T)
    result = {
        "max_score": jnp.stack([o.scores.max() for o in outputs]),  # (L,)
        # the robust reading beside the maximum: a high quantile of the scores each query can see
        "q999_score": jnp.stack([visible_quantile(o.scores, SCORE_QUANTILE) for o in outputs]),  # (L,)
        "correct": (logits.argmax(-1) == y),  # (B, T)
        "entropy": jnp.stack([normalised_entropy(row_distribution(o), visible, min_keys)
                              for o in outputs]),  # (L,B,H,T)
        # the weight each query puts on the window's first key, averaged over queries: the attention-sink measure
        "first_key_mean": weights[..., 0].mean(axis=(1, 3)),  # (L,H)
        # signed weights (Cog attention): the magnitude on negative weights and in all, per layer
        "negative_sum": jnp.where(weights < 0, -weights, 0.0).sum(axis=(1, 2, 3, 4)),  # (L,)
        "absolute_sum": jnp.abs(weights).sum(axis=(1, 2, 3, 4)),  # (L,)
        "activation_kurtosis": jnp.stack([kurtosis(r) for r in residuals]),  # (L,)
        "activation_max": jnp.stack([jnp.abs(r).max() for r in residuals]),  # (L,)
    }
    if outputs[0].mass is not None:
        result["mass"] = jnp.stack([o.mass for o in outputs]).mean(axis=(0, 2))  # (B, T)
    if outputs[0].gate is not None:
        result["gate_sum"] = jnp.stack([o.gate.sum(axis=(0, 2)) for o in outputs])  # (L, H)
        result["gate_sq"] = jnp.stack([(o.gate**2).sum(axis=(0, 2)) for o in outputs])
        result["bias_sum"] = jnp.stack([o.bias.sum(axis=(0, 2)) for o in outputs])
        result["bias_sq"] = jnp.stack([(o.bias**2).sum(axis=(0, 2)) for o in outputs])
    return result


SCORE_QUANTILE = 0.999  # attnlab.pipeline.ground.contract.QUANTILE_NAME


def visible_quantile(scores: jnp.ndarray, q: float) -> jnp.ndarray:
    """The q-quantile of one batch's scores (B, H, T, T) over the causally visible (query, key) pairs only: a
    masked score is no score the model computed a weight from."""
    rows, cols = jnp.tril_indices(scores.shape[-1])
    return jnp.quantile(scores[..., rows, cols].astype(jnp.float32), q)


def kurtosis(values: jnp.ndarray) -> jnp.ndarray:
    """Pearson kurtosis (3 for a normal distribution) of every entry of one batch's residual stream: the
    activation-outlier measure (heavy tails give large values)."""
    centred = values - values.mean()
    variance = (centred**2).mean()
    return (centred**4).mean() / jnp.maximum(variance**2, 1e-30)


def row_distribution(out) -> jnp.ndarray:
    """The weights as distributions over keys: themselves, or renormalised where rows do not sum to 1 (sigmoid)."""
    return out.weights if out.distribution is None else out.distribution


def normalised_entropy(weights: jnp.ndarray, visible: jnp.ndarray, min_keys: int) -> jnp.ndarray:
    """Row entropy / log(visible keys), NaN for rows with fewer than min_keys keys. (B,H,T)"""
    plogp = jnp.where(weights > 0, weights * jnp.log(jnp.where(weights > 0, weights, 1.0)), 0.0)
    entropy = -plogp.sum(-1)
    normalised = entropy / jnp.log(jnp.maximum(visible, 2.0))
    return jnp.where(visible >= min_keys, normalised, jnp.nan)


def attention_maps(model, window: jnp.ndarray) -> jnp.ndarray:
    """(L, H, T, T) attention weights of one window (call under jit)."""
    _, outputs, _ = model.forward(window[None], dense=True)
    return jnp.stack([o.weights[0] for o in outputs])
