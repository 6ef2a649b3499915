"""Telemetry definitions shared by the bundle writer and the tables: AUROC, entropy shares, summaries.

numpy only (no JAX, no pandas): the trainer imports this module in every cell's
process, and the pipeline reads the same thresholds from here.
"""

from __future__ import annotations

import numpy as np

SHARP_BELOW = 0.3  # a row with normalised entropy below this is "sharp"
DIFFUSE_ABOVE = 0.8  # ... above this, "diffuse"
ENTROPY_BINS = 50
# A head has an attention sink when its queries put, on average, more than this weight on the window's first key
# (Gu et al. 2024, "When Attention Sink Emerges in Language Models", the sink rate's epsilon, which the Softpick
# paper uses too); the sink rate is the share of layer x head pairs that have one.
SINK_WEIGHT = 0.3


def mass_auroc(mass: np.ndarray, correct: np.ndarray) -> float:
    """Probability a correct token's mass outranks an incorrect one's (ties count half)."""
    mass, correct = np.ravel(mass), np.ravel(correct).astype(bool)
    n_pos, n_neg = int(correct.sum()), int((~correct).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = average_ranks(mass)
    return float((ranks[correct].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, tied values sharing the mean of their ranks (what scipy.stats.rankdata and pandas'
    rank(method="average") compute for finite values), in numpy so a trainer need not import either."""
    values = np.ravel(values)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])  # where each run of equal values begins
    ends = np.r_[starts[1:], len(values)]
    ranks = np.empty(len(values))
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return ranks


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
        # per layer, the 99.9th percentile of the visible scores of each held-out batch, averaged over batches
        **({"q999_score_per_layer": arrays["q999_score"].mean(axis=0).tolist()} if "q999_score" in arrays else {}),
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
    if "first_key_mean" in arrays:
        summary.update(sink_summary(arrays))
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


def sink_summary(arrays: dict[str, np.ndarray]) -> dict:
    """The attention-sink, signed-weight and activation-outlier scalars from the probe's arrays.

    first_key_weight: per layer x head, the mean weight a query puts on its window's first key (every query
    sees it); sink_rate: the share of layer x head pairs above SINK_WEIGHT. negative_mass_share: the magnitude
    on negative weights over the magnitude of all weights (0 for a variant whose weights cannot be negative).
    activation_kurtosis: per layer, the Pearson kurtosis of the residual stream after the block, averaged over
    held-out batches; activation_max: the largest |activation| there; each also as the maximum over layers.
    """
    first_key = arrays["first_key_mean"].mean(0)  # (L, H): every batch has as many queries
    negative, absolute = arrays["negative_sum"].sum(0), arrays["absolute_sum"].sum(0)
    kurtosis = arrays["activation_kurtosis"].mean(0)  # (L,)
    largest = arrays["activation_max"].max(0)  # (L,)
    return {
        "first_key_weight_per_layer_head": first_key.tolist(),
        "sink_rate": float((first_key > SINK_WEIGHT).mean()),
        "negative_mass_share": float(negative.sum() / absolute.sum()) if absolute.sum() > 0 else float("nan"),
        "negative_mass_share_per_layer": np.divide(negative, absolute, out=np.full_like(negative, np.nan),
                                                   where=absolute > 0).tolist(),
        "activation_kurtosis_per_layer": kurtosis.tolist(),
        "activation_kurtosis": float(kurtosis.max()),
        "activation_max_per_layer": largest.tolist(),
        "activation_max": float(largest.max()),
    }


def entropy_histograms(entropy: np.ndarray) -> np.ndarray:
    """(L, bins) counts of normalised row entropy over [0, 1], for the entropy figure."""
    edges = np.linspace(0.0, 1.0, ENTROPY_BINS + 1)
    return np.stack(
        [np.histogram(np.clip(e[np.isfinite(e)], 0, 1), bins=edges)[0] for e in np.moveaxis(entropy, 1, 0)]
    )
