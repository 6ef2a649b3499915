"""How the telemetry tables read: score scale, mass AUROC, row entropy, yat_b's scalars, A³'s gates and start.

One display per table, for its .md and .tex and the writeup alike
(attnlab.pipeline.tables.display gathers them); a display that summarises a
table's seeds has its per-seed rows in DETAILS, which the writeup folds under
the table. The score scale's numbers come from attnlab.pipeline.ground.score_scale,
which the score-scale figure prints from too.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from attnlab.core.telemetry_stats import DIFFUSE_ABOVE, SHARP_BELOW, SINK_WEIGHT
from attnlab.pipeline.ground import intervals, statistics
from attnlab.pipeline.ground.contract import A3_GATE_INIT, BASELINE, SEED_MEAN_OVER_LAYERS, SHARE_DIFFUSE, SHARE_SHARP
from attnlab.pipeline.ground.formatting import fixed, lr_text, mean_pm, number, percent, signed
from attnlab.pipeline.ground.score_scale import max_score_ratios, max_scores, seed_means, times

LEVEL = f"{intervals.CONFIDENCE:.0%}"
SEED_MEAN_LABEL = "mean over layers of max score, per seed (range over seeds)"
SCALAR_INIT = math.log(2.0)  # softplus(0): where yat_b's b and ε start
SCALAR_NAMES = {"eps": "ε"}


def score_display(score: pd.DataFrame) -> pd.DataFrame:
    """Per variant: the seed means over layers of max score (range over seeds), the max score and its ratio to
    the baseline's, the numbers the score-scale figure prints."""
    per_seed, top, ratios = seed_means(score), max_scores(score), max_score_ratios(score)
    rows = []
    for variant, cells in score.groupby("variant", sort=False):
        mine = per_seed[per_seed.variant == variant][SEED_MEAN_OVER_LAYERS]
        rows.append({"variant": variant, "LR": lr_text(cells.lr.iloc[0]), "seeds": cells.seed.nunique(),
                     SEED_MEAN_LABEL: f"{number(mine.min())} – {number(mine.max())}",
                     "max score": number(top[variant]),
                     RATIO_LABEL: "baseline" if variant == BASELINE else times(ratios[variant])})
    return pd.DataFrame(rows, columns=["variant", "LR", "seeds", SEED_MEAN_LABEL, "max score", RATIO_LABEL])


RATIO_LABEL = f"max score / {BASELINE}'s, paired by seed"


def auroc_display(auroc: pd.DataFrame) -> pd.DataFrame:
    """Per kernel variant: the mean AUROC over its contest seeds with its interval, its distance from 0.5, and
    the mean row mass of correctly and wrongly predicted tokens."""
    rows = []
    for variant, cells in auroc.groupby("variant", sort=False):
        estimate = statistics.mean_interval(cells.mass_auroc, seeds=cells.seed)
        value = (f"{estimate.mean:.3f} [{estimate.low:.3f}, {estimate.high:.3f}]" if estimate.has_interval
                 else f"{estimate.mean:.3f} ({estimate.reason})")
        rows.append({"variant": variant, "LR": lr_text(cells.lr.iloc[0]), "seeds": estimate.n,
                     f"AUROC [{LEVEL} interval]": value, "distance from 0.5": fixed(abs(estimate.mean - 0.5)),
                     "mean mass, correct tokens": number(cells.mass_correct_mean.mean()),
                     "mean mass, wrong tokens": number(cells.mass_wrong_mean.mean())})
    return pd.DataFrame(rows, columns=["variant", "LR", "seeds", f"AUROC [{LEVEL} interval]", "distance from 0.5",
                                       "mean mass, correct tokens", "mean mass, wrong tokens"])


def auroc_per_seed(auroc: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"variant": auroc.variant, "seed": auroc.seed.astype(int), "AUROC": auroc.mass_auroc.map(fixed),
                         "mean mass, correct tokens": auroc.mass_correct_mean.map(number),
                         "mean mass, wrong tokens": auroc.mass_wrong_mean.map(number)})


def entropy_display(entropy: pd.DataFrame) -> pd.DataFrame:
    """Per variant: mean normalised row entropy over its contest seeds (± std), the shares of sharp and diffuse
    rows."""
    stats = entropy.groupby("variant", sort=False).agg(
        mean=("mean", "mean"), std=("mean", lambda x: x.std(ddof=0)), sharp=(SHARE_SHARP, "mean"),
        diffuse=(SHARE_DIFFUSE, "mean"), seeds=("seed", "nunique")).reset_index()
    return pd.DataFrame({
        "variant": stats.variant, "seeds": stats.seeds,
        "mean normalised entropy": mean_pm(stats["mean"], stats["std"], digits=3),
        f"sharp rows (< {SHARP_BELOW:g})": stats.sharp.map(lambda x: percent(x, signed=False)),
        f"diffuse rows (> {DIFFUSE_ABOVE:g})": stats.diffuse.map(lambda x: percent(x, signed=False)),
    })


def sinks_display(sinks: pd.DataFrame) -> pd.DataFrame:
    """Per variant over its contest seeds: the sink rate, the largest first-key weight, the share of negative
    weight, and the residual stream's kurtosis and largest |activation| (mean ± std over seeds)."""
    stats = sinks.groupby("variant", sort=False).agg(
        seeds=("seed", "nunique"), sink=("sink_rate", "mean"), first=("first_key_weight_max", "mean"),
        negative=("negative_mass_share", "mean"), kurtosis=("activation_kurtosis", "mean"),
        kurtosis_std=("activation_kurtosis", lambda x: x.std(ddof=0)), largest=("activation_max", "mean"),
        largest_std=("activation_max", lambda x: x.std(ddof=0))).reset_index()
    return pd.DataFrame({
        "variant": stats.variant, "seeds": stats.seeds,
        f"sink rate (heads > {SINK_WEIGHT:g} on the first key)": stats.sink.map(lambda x: percent(x, signed=False)),
        "largest first-key weight": stats["first"].map(lambda x: fixed(x, 3)),
        "negative weight share": stats.negative.map(lambda x: percent(x, signed=False)),
        "activation kurtosis": mean_pm(stats["kurtosis"], stats["kurtosis_std"], digits=2),
        "largest |activation|": mean_pm(stats["largest"], stats["largest_std"], digits=1),
    })


def context_display(context: pd.DataFrame) -> pd.DataFrame:
    """Per variant and window length: the loss (mean ± std over seeds) and its change from the trained window."""
    stats = context.groupby(["variant", "multiple", "context_length"], sort=False).agg(
        seeds=("seed", "nunique"), loss=("val_loss", "mean"), loss_std=("val_loss", lambda x: x.std(ddof=0)),
        change=("vs_trained", "mean")).reset_index()
    return pd.DataFrame({
        "variant": stats.variant,
        "window": [f"{int(m)}× ({int(n)} positions)" for m, n in zip(stats.multiple, stats.context_length)],
        "seeds": stats.seeds, "validation loss": mean_pm(stats["loss"], stats["loss_std"], digits=4),
        "change from the trained window": (stats.change - 1).map(percent),
    })


def scalars_display(scalars: pd.DataFrame) -> pd.DataFrame:
    """Per learned scalar: its init and its seed means per layer and head, summarised (min, mean, max, the
    largest move from init)."""
    rows = []
    for (variant, name), cells in scalars.groupby(["variant", "scalar"], sort=False):
        per_head = cells.groupby(["layer", "head"], dropna=False).value.mean()  # a per-layer scalar: head empty
        rows.append({"variant": variant, "scalar": SCALAR_NAMES.get(name, name), "init": fixed(SCALAR_INIT),
                     "min": fixed(per_head.min()), "mean": fixed(per_head.mean()), "max": fixed(per_head.max()),
                     "largest move from init": fixed((per_head - SCALAR_INIT).abs().max())})
    return pd.DataFrame(rows, columns=["variant", "scalar", "init", "min", "mean", "max", "largest move from init"])


def gates_display(gates: pd.DataFrame) -> pd.DataFrame:
    """Per layer: A³'s gate (mean, spread over heads, std over tokens) and both variants' row entropy."""
    a3 = gates[gates.variant == "a3"]
    soft = gates[gates.variant == BASELINE].groupby("layer").entropy.mean()
    rows = [{"layer": int(layer), "gate mean": fixed(cells.gate_mean.mean()),
             "gate spread over heads": fixed(cells.groupby("head").gate_mean.mean().std(ddof=0)),
             "gate std over tokens": fixed(cells.gate_std.mean()), "A³ entropy": fixed(cells.entropy.mean()),
             f"{BASELINE} entropy": fixed(soft.get(layer, np.nan))} for layer, cells in a3.groupby("layer")]
    return pd.DataFrame(rows, columns=["layer", "gate mean", "gate spread over heads", "gate std over tokens",
                                       "A³ entropy", f"{BASELINE} entropy"])


def a3_init_display(init: pd.DataFrame) -> pd.DataFrame:
    """Per seed, the step-0 maps: A³ against the baseline, against the baseline at temperature 1/σ(3), row sums."""
    return pd.DataFrame({
        "seed": init.seed.astype(int),
        f"max |A³ − {BASELINE}|": init.max_diff_vs_softmax.map(lambda x: f"{x:.2g}"),
        f"max |A³ − {BASELINE} at temperature 1/σ(3)|": init.max_diff_vs_tempered_softmax.map(lambda x: f"{x:.2g}"),
        "worst |row sum − 1|": init.max_row_sum_error.map(lambda x: f"{x:.2g}"),
    })


def a3_layers_display(layers: pd.DataFrame) -> pd.DataFrame:
    """Per layer: both variants' mean row entropy, their difference, A³'s gate mean and its bias's spread."""
    return pd.DataFrame({
        "layer": layers.layer.astype(int),
        "A³ entropy": layers.a3_entropy.map(fixed),
        f"{BASELINE} entropy": layers.softmax_entropy.map(fixed),
        f"A³ − {BASELINE}": layers.entropy_diff.map(lambda x: signed(x, 3)),
        f"gate G mean (init {A3_GATE_INIT:.3f})": layers.a3_gate_mean.map(fixed),
        "bias B spread over keys": layers.a3_bias_std.map(fixed),
    })


DISPLAYS = {"score_scale": score_display, "mass_auroc": auroc_display, "entropy": entropy_display,
            "sinks": sinks_display, "context_length": context_display,
            "scalars": scalars_display, "a3_gates": gates_display, "a3_init": a3_init_display,
            "a3_vs_softmax_entropy": a3_layers_display}
DETAILS = {"mass_auroc": auroc_per_seed}
