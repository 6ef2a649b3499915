"""What the scale ladder's figures share: one line per variant over parameter count with its intervals, the
single seeds, and the posts' paper-size numbers as points at 2.72 M parameters.

A line joins the means over seeds at each rung (the ladder table's columns),
its bars are their t-intervals, and the small dots are the seeds (ladder_seeds).
The published numbers are each variant's at the paper protocol (published.yaml),
where each variant trained at its own LR for 12,000 steps: they mark where a
trend would have to arrive, not a point of this ladder.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter

from attnlab.pipeline.ground.published import published
from attnlab.pipeline.ground.contract import BASELINE
from attnlab.pipeline.figures.style import MARKER_EDGE, variant_color, variant_handle, variant_marker
from attnlab.pipeline.tables.ladder import INTERVALS, params_text

DODGE = 0.012  # decades of x between neighbouring variants' markers, so intervals do not overlap
PAPER_PARAMS = published()["params"][BASELINE]  # where the posts' numbers sit on the parameter axis


def variants_of(table: pd.DataFrame, baseline: bool = False) -> list[str]:
    """The ladder's variants in its order; the baseline only when asked for."""
    order = list(dict.fromkeys(table.variant)) if not table.empty else []
    return [v for v in order if baseline or v != BASELINE]


def params_axis(ax, table: pd.DataFrame | None = None) -> None:
    """A log axis of parameter counts labelled 30 k, 100 k, 1 M, from below the smallest rung to past the paper's
    size, so every panel of a figure spans the same range."""
    ax.set_xscale("log")
    if table is not None and not table.empty:
        ax.set_xlim(float(table.n_params.min()) / 1.5, max(PAPER_PARAMS, float(table.n_params.max())) * 1.5)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: params_text(x)))
    ax.xaxis.set_minor_formatter(FuncFormatter(lambda x, _: ""))
    ax.set_xlabel("parameters (log scale)")
    ax.grid(alpha=0.3, which="major")


def lines(ax, table: pd.DataFrame, column: str, style: dict, order: list[str], variants: list[str],
          x: str = "n_params", seeds: pd.DataFrame | None = None,
          seed_column: str | None = None) -> list:
    """Each variant's means over seeds (marker and line) with their t-interval bars, and its seeds as dots.

    `column` is a mean column of the ladder table; its interval columns are the table's (INTERVALS). Returns the
    legend handles."""
    low, high = INTERVALS[column]
    handles = []
    for k, variant in enumerate(variants):
        rows = table[table.variant == variant].sort_values(x)
        if rows.empty or not np.isfinite(rows[column].astype(float)).any():
            continue
        color, marker = variant_color(style, variant, order), variant_marker(variant, order)
        shift = 10 ** (DODGE * (k - (len(variants) - 1) / 2))  # x is a count on a log axis
        xs = rows[x].astype(float).to_numpy() * shift
        mean = rows[column].astype(float).to_numpy()
        lo, hi = rows[low].astype(float).to_numpy(), rows[high].astype(float).to_numpy()
        if seeds is not None and not seeds.empty:
            dots = seeds[seeds.variant == variant]
            dot_x = dots[x].astype(float).to_numpy() * shift
            ax.plot(dot_x, dots[seed_column or column].astype(float), ls="none", marker=".", ms=4, color=color,
                    alpha=0.45)
        has = np.isfinite(lo) & np.isfinite(hi)
        ax.vlines(xs[has], lo[has], hi[has], color=color, lw=1.8, alpha=0.9)
        ax.plot(xs, mean, "-", marker=marker, ms=5.5, color=color, mec=MARKER_EDGE, mew=0.6, lw=1.2)
        handles.append(variant_handle(style, variant, order))
    return handles


def paper_points() -> dict[str, dict]:
    """variant -> its published paper-size numbers beside the baseline's: n_params, the paired-by-mean
    difference of best validation loss per published LR, the max-score ratio and the entropy gap."""
    pub = published()
    base = next((e for e in pub["contest"] if e["variant"] == BASELINE), None)
    n_params = pub["params"][BASELINE]
    points: dict[str, dict] = {}
    for entry in pub["contest"]:
        if entry["variant"] != BASELINE and base is not None:
            points.setdefault(entry["variant"], {"n_params": n_params, "delta": []})["delta"].append(
                (float(entry["lr"]), entry["mean"] - base["mean"]))
    scores, entropy = pub.get("score_scale", {}), pub.get("entropy", {})
    for variant in set(scores) | set(entropy):
        if variant == BASELINE:
            continue
        point = points.setdefault(variant, {"n_params": n_params, "delta": []})
        if "max" in scores.get(variant, {}) and "max" in scores.get(BASELINE, {}):
            point["max_score_ratio"] = scores[variant]["max"] / scores[BASELINE]["max"]
        if "mean" in entropy.get(variant, {}) and "mean" in entropy.get(BASELINE, {}):
            point["entropy_gap"] = entropy[variant]["mean"] - entropy[BASELINE]["mean"]
    return points


def paper_handle() -> Line2D:
    """The legend entry of the published points."""
    return Line2D([], [], ls="none", marker="o", ms=6.5, mfc="white", mec="0.3", mew=1.2,
                  label=f"published, {params_text(PAPER_PARAMS)} parameters")


def paper_marks(ax, key: str, style: dict, order: list[str], variants: list[str]) -> bool:
    """The published paper-size value of `key` for each shown variant, hollow at 2.72 M; True if any was drawn."""
    drawn = False
    for variant, point in paper_points().items():
        if variant not in variants:
            continue
        values = [value for _, value in point["delta"]] if key == "delta_vs_softmax" else (
            [point[key]] if key in point else [])
        for value in values:
            ax.plot([point["n_params"]], [value], ls="none", marker=variant_marker(variant, order), ms=7,
                    mfc="white", mec=variant_color(style, variant, order), mew=1.6, zorder=5)
            drawn = True
    return drawn
