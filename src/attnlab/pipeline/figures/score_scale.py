"""How large the trained attention scores get: max score per layer, and its mean over layers per seed.

The numbers are the score_scale table's, under the writeup's names: max score
(column max_score) is a layer's largest score over every held-out batch; the
mean over layers of max score, per seed (column
seed_mean_over_layers_of_max_score) is the summary the posts quote, which the
writeup and score_scale.md show as a range over seeds.
"""

from __future__ import annotations

import sys

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

from attnlab.pipeline.figures import (MARKER_EDGE, cli, empty_note, parse_style, save_figure, variant_color,
                                      variant_handle, variant_marker, variant_order)
from attnlab.pipeline.tables import SEED_MEAN_OVER_LAYERS as SEED_MEAN

BASELINE = "softmax"
DODGE = 0.08  # layers between neighbouring variants' points


def seed_means(score: pd.DataFrame) -> pd.DataFrame:
    """variant, seed and the table's mean over layers of max score (the same value on each layer row of a seed)."""
    return score.groupby(["variant", "seed"], sort=False)[SEED_MEAN].first().reset_index()


def draw(score: pd.DataFrame, contest: pd.DataFrame | None, style: dict):
    fig, (by_layer, by_seed) = plt.subplots(1, 2, figsize=(11, 4.4), dpi=style["dpi"], layout="constrained",
                                            gridspec_kw={"width_ratios": [1.3, 1]})
    if score.empty:
        for ax in (by_layer, by_seed):
            empty_note(ax, "no rows in score_scale.csv")
        return fig
    order = variant_order(contest if contest is not None else score, score)
    shown = [v for v in order if v in set(score.variant)]
    for k, variant in enumerate(shown):
        color, marker = variant_color(style, variant, order), variant_marker(variant, order)
        cells = score[score.variant == variant]
        x_shift = DODGE * (k - (len(shown) - 1) / 2)
        by_layer.plot(cells.layer + x_shift, cells.max_score, ls="none", marker=marker, ms=5, mfc="none", mec=color,
                      alpha=0.8)
        mean = cells.groupby("layer").max_score.mean()
        by_layer.plot(mean.index + x_shift, mean.values, "-", marker=marker, ms=8, color=color, mec=MARKER_EDGE,
                      mew=0.6, lw=1.6)
    layers = sorted(score.layer.unique())
    by_layer.set_xticks(layers, [str(int(layer)) for layer in layers])
    by_layer.set_xlabel("layer")
    by_layer.set_ylabel("max score (largest over held-out batches)")
    by_layer.set_title("per layer (hollow: each seed; filled: mean over seeds)", fontsize=10)

    per_seed = seed_means(score)
    base = per_seed[per_seed.variant == BASELINE][SEED_MEAN]
    base_mean = float(base.mean()) if len(base) else np.nan
    for x, variant in enumerate(shown):
        color, marker = variant_color(style, variant, order), variant_marker(variant, order)
        values = per_seed[per_seed.variant == variant][SEED_MEAN].to_numpy(dtype=float)
        jitter = np.linspace(-0.12, 0.12, len(values)) if len(values) > 1 else np.zeros(1)
        by_seed.plot(x + jitter, values, ls="none", marker=marker, ms=8, color=color, mec=MARKER_EDGE, mew=0.6)
        by_seed.plot([x - 0.22, x - 0.22], [values.min(), values.max()], color=color, lw=2, solid_capstyle="butt")
        if np.isfinite(base_mean) and variant != BASELINE and base_mean > 0:
            by_seed.annotate(f"{values.mean() / base_mean:,.3g}× {BASELINE}", (x, values.max()), xytext=(0, 7),
                             textcoords="offset points", ha="center", fontsize=8, color="0.25")
    if np.isfinite(base_mean):
        by_seed.axhline(base_mean, color=variant_color(style, BASELINE, order), ls=":", lw=1)
    by_seed.set_xticks(range(len(shown)), shown)
    by_seed.set_xlim(-0.6, len(shown) - 0.4)
    by_seed.set_ylabel("mean over layers of max score, per seed")
    by_seed.set_title(f"per seed (bar: range over seeds; dotted: {BASELINE}'s mean)", fontsize=10)
    for ax in (by_layer, by_seed):
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.4g}"))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.grid(alpha=0.3)
    by_seed.margins(y=0.15)
    fig.legend(handles=[variant_handle(style, v, order, lw=1.6) for v in shown], loc="outside lower center",
               ncol=len(shown), fontsize=8)
    fig.suptitle("Attention score scale of the trained contest cells on held-out batches (log scale)")
    return fig


def main(argv: list[str] | None = None) -> int:
    args = cli(__doc__.splitlines()[0], tables=("score_scale", "contest")).parse_args(argv)
    style = parse_style(args.style)
    score, contest = pd.read_csv(args.score_scale), pd.read_csv(args.contest)
    save_figure(draw(score, contest, style), args.out, style["dpi"])
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
