"""The score scale's summaries, computed once for the writeup's table and the score-scale figure.

Both print the same numbers because both call these: each seed's mean over
layers of max score (the posts' "per-layer mean"), each variant's max score
(the largest over layers, seeds and held-out batches) and the ratio to the
baseline's, paired by seed (each seed's largest score over the baseline's of
the same seed, through the mean log-ratio: the claims ledger's number), written
one way ('216×').
"""

from __future__ import annotations

import math

import pandas as pd

from attnlab.pipeline.ground import statistics
from attnlab.pipeline.ground.contract import BASELINE
from attnlab.pipeline.ground.contract import SEED_MEAN_OVER_LAYERS as SEED_MEAN


def seed_means(score: pd.DataFrame) -> pd.DataFrame:
    """variant, seed and the table's mean over layers of max score (the same value on each layer row of a seed)."""
    return score.groupby(["variant", "seed"], sort=False)[SEED_MEAN].first().reset_index()


def max_scores(score: pd.DataFrame) -> pd.Series:
    """variant -> its max score: the largest max_score over layers and seeds (the table's 'max score')."""
    return score.groupby("variant", sort=False).max_score.max().astype(float)


def max_score_ratios(score: pd.DataFrame, baseline: str = BASELINE) -> pd.Series:
    """variant -> its largest score over the baseline's, paired by seed (the geometric mean over the seeds both
    have of the per-seed ratio); NaN where they share no seed with a positive score."""
    per_seed = score.groupby(["variant", "seed"], sort=False).max_score.max().astype(float)
    reference = per_seed[baseline].to_dict() if baseline in per_seed.index.get_level_values(0) else {}
    reference = {s: v for s, v in reference.items() if v > 0}
    ratios = {}
    for variant in dict.fromkeys(score.variant):
        own = {s: v for s, v in per_seed[variant].to_dict().items() if v > 0}
        estimate = statistics.paired(own, reference, ratio=True)
        ratios[variant] = estimate.mean if estimate.n else math.nan
    return pd.Series(ratios, dtype=float)


def times(ratio: float) -> str:
    """A ratio of scores as '5.67×' (three significant digits), '—' when there is none."""
    if ratio is None or not math.isfinite(ratio):
        return "—"
    return f"{ratio:,.3g}×"
