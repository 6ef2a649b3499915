"""What a trained model's attention looks like: score scale, kernel mass, entropy, gates.

The probe runs on the device over the fixed held-out batches; the summaries
turn its arrays into the scalars a bundle records (definitions in design.md).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

SHARP_BELOW = 0.3
DIFFUSE_ABOVE = 0.8
ENTROPY_BINS = 50


def probe_batch(model, x: jnp.ndarray, y: jnp.ndarray, min_keys: int) -> dict[str, jnp.ndarray]:
    """Telemetry of one held-out batch (call under jit)."""
    logits, outputs = model(x, probe=True)
    length = x.shape[1]
    visible = jnp.arange(1, length + 1, dtype=jnp.float32)
    result = {
        "max_score": jnp.stack([o.scores.max() for o in outputs]),  # (L,)
        "correct": (logits.argmax(-1) == y),  # (B, T)
        "entropy": jnp.stack([normalised_entropy(o.weights, visible, min_keys) for o in outputs]),  # (L,B,H,T)
    }
    if outputs[0].mass is not None:
        result["mass"] = jnp.stack([o.mass for o in outputs]).mean(axis=(0, 2))  # (B, T)
    if outputs[0].gate is not None:
        result["gate_sum"] = jnp.stack([o.gate.sum(axis=(0, 2)) for o in outputs])  # (L, H)
        result["gate_sq"] = jnp.stack([(o.gate**2).sum(axis=(0, 2)) for o in outputs])
        result["bias_sum"] = jnp.stack([o.bias.sum(axis=(0, 2)) for o in outputs])
        result["bias_sq"] = jnp.stack([(o.bias**2).sum(axis=(0, 2)) for o in outputs])
    return result


def normalised_entropy(weights: jnp.ndarray, visible: jnp.ndarray, min_keys: int) -> jnp.ndarray:
    """Row entropy / log(visible keys), NaN for rows with fewer than min_keys keys. (B,H,T)"""
    plogp = jnp.where(weights > 0, weights * jnp.log(jnp.where(weights > 0, weights, 1.0)), 0.0)
    entropy = -plogp.sum(-1)
    normalised = entropy / jnp.log(jnp.maximum(visible, 2.0))
    return jnp.where(visible >= min_keys, normalised, jnp.nan)


def attention_maps(model, window: jnp.ndarray) -> jnp.ndarray:
    """(L, H, T, T) attention weights of one window (call under jit)."""
    _, outputs = model(window[None], probe=True)
    return jnp.stack([o.weights[0] for o in outputs])


def mass_auroc(mass: np.ndarray, correct: np.ndarray) -> float:
    """Probability a correct token's mass outranks an incorrect one's (ties count half)."""
    mass, correct = np.ravel(mass), np.ravel(correct).astype(bool)
    n_pos, n_neg = int(correct.sum()), int((~correct).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = pd.Series(mass).rank(method="average").to_numpy()
    return float((ranks[correct].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def summarise(arrays: dict[str, np.ndarray], tokens_per_batch: int) -> dict:
    """Scalars for bundle.json from the probe arrays stacked over held-out batches."""
    entropy = arrays["entropy"]  # (N, L, B, H, T)
    per_layer = [entropy[:, layer][np.isfinite(entropy[:, layer])] for layer in range(entropy.shape[1])]
    every_row = np.concatenate(per_layer)
    per_head = np.nanmean(entropy, axis=(0, 2, 4))  # (L, H)
    summary = {
        "max_score_per_layer": arrays["max_score"].max(axis=0).tolist(),
        "max_score": float(arrays["max_score"].max()),
        "mean_max_score_per_layer": arrays["max_score"].mean(axis=0).tolist(),
        "accuracy": float(arrays["correct"].mean()),
        "entropy": {
            "mean": float(every_row.mean()),
            "share_sharp": float((every_row < SHARP_BELOW).mean()),
            "share_diffuse": float((every_row > DIFFUSE_ABOVE).mean()),
            "mean_per_layer": [float(x.mean()) for x in per_layer],
            "mean_per_layer_head": per_head.tolist(),
            "rows": int(every_row.size),
        },
    }
    if "mass" in arrays:
        summary["mass_auroc"] = mass_auroc(arrays["mass"], arrays["correct"])
        summary["mass_mean"] = float(arrays["mass"].mean())
    if "gate_sum" in arrays:
        count = arrays["correct"].shape[0] * tokens_per_batch
        for name in ("gate", "bias"):
            mean = arrays[f"{name}_sum"].sum(0) / count
            var = np.maximum(arrays[f"{name}_sq"].sum(0) / count - mean**2, 0.0)
            summary[f"a3_{name}_mean"] = mean.tolist()
            summary[f"a3_{name}_std"] = np.sqrt(var).tolist()
    return summary


def entropy_histograms(entropy: np.ndarray) -> np.ndarray:
    """(L, bins) counts of normalised row entropy over [0, 1], for the entropy figure."""
    edges = np.linspace(0.0, 1.0, ENTROPY_BINS + 1)
    return np.stack(
        [np.histogram(np.clip(e[np.isfinite(e)], 0, 1), bins=edges)[0] for e in np.moveaxis(entropy, 1, 0)]
    )
