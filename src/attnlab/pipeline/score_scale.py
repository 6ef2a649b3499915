"""The score scale's summaries, computed once for the writeup's table and the score-scale figure.

Both print the same numbers because both call these: each seed's mean over
layers of max score (the posts' "per-layer mean"), each variant's max score
(the largest over layers, seeds and held-out batches) and that max score as a
multiple of the baseline's, written one way ('216×').
"""

from __future__ import annotations

import math

import pandas as pd

from attnlab.pipeline.contract import BASELINE
from attnlab.pipeline.contract import SEED_MEAN_OVER_LAYERS as SEED_MEAN


def seed_means(score: pd.DataFrame) -> pd.DataFrame:
    """variant, seed and the table's mean over layers of max score (the same value on each layer row of a seed)."""
    return score.groupby(["variant", "seed"], sort=False)[SEED_MEAN].first().reset_index()


def max_scores(score: pd.DataFrame) -> pd.Series:
    """variant -> its max score: the largest max_score over layers and seeds (the table's 'max score')."""
    return score.groupby("variant", sort=False).max_score.max().astype(float)


def max_score_ratios(score: pd.DataFrame, baseline: str = BASELINE) -> pd.Series:
    """variant -> its max score over the baseline's (NaN for every variant when the baseline has none above 0)."""
    maxima = max_scores(score)
    reference = float(maxima.get(baseline, math.nan))
    if not (math.isfinite(reference) and reference > 0):
        return maxima * math.nan
    return maxima / reference


def times(ratio: float) -> str:
    """A ratio of scores as '5.67×' (three significant digits), '—' when there is none."""
    if ratio is None or not math.isfinite(ratio):
        return "—"
    return f"{ratio:,.3g}×"
