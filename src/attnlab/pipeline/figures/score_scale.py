"""How large the trained attention scores get: max score per layer, and per variant its seeds and its max score.

The numbers are the score_scale table's, under the writeup's names: max score
(column max_score) is a layer's largest score over every held-out batch; the
mean over layers of max score, per seed (column
seed_mean_over_layers_of_max_score) is the summary the posts quote; a
variant's max score is its largest over layers and seeds. The number printed
under its name is the score-scale table's own ratio to softmax: each seed's
max score over softmax's of the same seed, the geometric mean over the seeds
(attnlab.pipeline.ground.score_scale computes both), so it is not the ratio of the
two max scores drawn, which may come from different seeds.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

from attnlab.pipeline.ground.contract import BASELINE
from attnlab.pipeline.ground.contract import SEED_MEAN_OVER_LAYERS as SEED_MEAN
from attnlab.pipeline.figures.cells import variant_order
from attnlab.pipeline.figures.main import figure_main
from attnlab.pipeline.figures.style import (MARKER_EDGE, empty_note, new_figure, title, variant_color, variant_handle,
                                            variant_marker)
from attnlab.pipeline.ground.score_scale import max_score_ratios, max_scores, seed_means, times

DODGE = 0.08  # layers between neighbouring variants' points
SEEDS_AT, MAX_AT = -0.14, 0.2  # x offsets within a variant's column: its seeds (and range bar), its max score


def load(tables, style) -> dict:
    return {"score": tables["score_scale"], "contest": tables["contest"]}


def ratio_labels(score: pd.DataFrame) -> dict[str, str]:
    """variant -> the text under its name: its max score as a multiple of the baseline's ('baseline' for it)."""
    ratios = max_score_ratios(score)
    return {variant: "baseline" if variant == BASELINE else f"{times(ratio)} {BASELINE}"
            for variant, ratio in ratios.items()}


def _by_layer(ax, score, shown, order, style) -> None:
    for k, variant in enumerate(shown):
        color, marker = variant_color(style, variant, order), variant_marker(variant, order)
        cells = score[score.variant == variant]
        x_shift = DODGE * (k - (len(shown) - 1) / 2)
        ax.plot(cells.layer + x_shift, cells.max_score, ls="none", marker=marker, ms=4, mfc="none", mec=color,
                alpha=0.8)
        mean = cells.groupby("layer").max_score.mean()
        ax.plot(mean.index + x_shift, mean.values, "-", marker=marker, ms=6, color=color, mec=MARKER_EDGE,
                mew=0.6, lw=1.3)
    layers = sorted(score.layer.unique())
    ax.set_xticks(layers, [str(int(layer)) for layer in layers])
    ax.set_xlabel("layer")
    ax.set_ylabel("max score\n(largest over held-out batches)")
    ax.set_title("per layer (hollow: each seed; filled: mean over seeds)")


def _by_variant(ax, score, shown, order, style) -> None:
    """Each variant's column: its seeds' mean over layers (hollow, with their range) and its max score (filled)."""
    per_seed, maxima, labels = seed_means(score), max_scores(score), ratio_labels(score)
    for x, variant in enumerate(shown):
        color, marker = variant_color(style, variant, order), variant_marker(variant, order)
        values = per_seed[per_seed.variant == variant][SEED_MEAN].to_numpy(dtype=float)
        jitter = np.linspace(-0.05, 0.05, len(values)) if len(values) > 1 else np.zeros(1)
        ax.plot(x + SEEDS_AT + jitter, values, ls="none", marker=marker, ms=5.5, mfc="white", mec=color, mew=1.2)
        ax.plot([x + SEEDS_AT - 0.12] * 2, [values.min(), values.max()], color=color, lw=2, solid_capstyle="butt")
        ax.plot([x + MAX_AT], [maxima[variant]], ls="none", marker=marker, ms=7, color=color, mec=MARKER_EDGE,
                mew=0.6)
    if BASELINE in maxima:
        ax.axhline(maxima[BASELINE], color=variant_color(style, BASELINE, order), ls=":", lw=1)
    # the ratios sit under the names, where no marker can cover them
    ax.set_xticks(range(len(shown)), [f"{v}\n{labels[v]}" for v in shown], fontsize=7.5)
    ax.set_xlim(-0.6, len(shown) - 0.4)
    ax.set_xlabel(RATIO_NOTE, fontsize=7.5)
    ax.set_ylabel("score")
    ax.set_title(f"per variant (dotted: {BASELINE}'s max score)", loc="left", pad=24)  # above the legend
    ax.legend(handles=[
        Line2D([], [], ls="none", marker="o", ms=5.5, mfc="white", mec="0.3", mew=1.2,
               label="mean over layers of max score, one per seed (bar: range)"),
        Line2D([], [], ls="none", marker="o", ms=7, color="0.3", mec=MARKER_EDGE,
               label="max score: the largest over layers and seeds"),
    ], fontsize=7, loc="lower left", bbox_to_anchor=(0, 1.0), borderaxespad=0.2, frameon=False)


# What the number under each name is (max_score_ratios): not the ratio of the two max scores drawn, which can
# come from different seeds, but each seed's max score over the baseline's of that seed, averaged on a log scale.
RATIO_NOTE = (f"under each name: its max score over {BASELINE}'s of the same seed, "
              "geometric mean over the seeds")


def draw(data: dict, style: dict):
    score, contest = data["score"], data["contest"]
    fig, (by_layer, by_variant) = new_figure(style, 6.4, nrows=2, layout="constrained")
    if score.empty:
        for ax in (by_layer, by_variant):
            empty_note(ax, "no rows in score_scale.csv")
        return fig
    order = variant_order(contest if contest is not None else score, score)
    shown = [v for v in order if v in set(score.variant)]
    _by_layer(by_layer, score, shown, order, style)
    _by_variant(by_variant, score, shown, order, style)
    for ax in (by_layer, by_variant):
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.4g}"))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.grid(alpha=0.3)
    by_variant.margins(y=0.15)
    fig.legend(handles=[variant_handle(style, v, order, lw=1.6) for v in shown], loc="outside lower center",
               ncol=len(shown), frameon=False)
    title(fig, "Attention score scale of the trained contest cells on held-out batches (log scale)")
    return fig


if __name__ == "__main__":
    sys.exit(figure_main(load, draw))
