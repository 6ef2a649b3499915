"""Forest plot of the catalog: every catalogued score function against softmax as one family, the A/A row above.

One row per function (the catalog table): its mean paired difference from
softmax over the contest seeds, the thin bar its 95% interval read alone, the
thick bar the family-wise interval (all of them cover together at 95% or more). The
marker is filled where Holm's step-down over the family finds a difference,
hollow where it does not. The grey top row is softmax's A/A split: softmax
against itself on two halves of its seeds, a zero difference read over half as
many pairs, the null reference (clipped to the functions' range, with an arrow
where it runs past).
Left of zero beats softmax.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.ground import intervals
from attnlab.pipeline.ground.contract import BASELINE
from attnlab.pipeline.figures.cells import variant_order
from attnlab.pipeline.figures.main import figure_main
from attnlab.pipeline.figures.style import (MARKER_EDGE, TEXT_WIDTH, empty_note, new_figure, variant_color,
                                            variant_marker, wrap)
from attnlab.pipeline.tables.catalog import AA, HIGHER, LOWER, family_level

REFERENCE_COLOR = "0.45"


def load(tables, style) -> dict:
    return {"catalog": tables["catalog"], "contest": tables["contest"]}


def span(functions: pd.DataFrame) -> tuple[float, float]:
    """The x range: every function's mean and intervals and 0, with a margin. The A/A row's interval, over half
    the seeds, may be far wider; it is clipped to this range, with an arrow where it runs past."""
    values = pd.concat([pd.to_numeric(functions[c], errors="coerce") for c in
                        ("delta_vs_softmax", "delta_ci_low", "delta_ci_high", "family_ci_low", "family_ci_high")])
    values = values[np.isfinite(values)]
    if values.empty:  # no function has a finite difference (every cell diverged, or no softmax to pair with)
        return -0.05, 0.05
    low, high = min(float(values.min()), 0.0), max(float(values.max()), 0.0)
    pad = 0.08 * (high - low) if high > low else 0.01
    return low - pad, high + pad


def draw(data: dict, style: dict):
    table, contest = data["catalog"], data["contest"]
    fig, ax = new_figure(style, 1.4 + 0.42 * max(len(table), 1), layout="constrained")
    if table.empty or (table.variant != AA).sum() == 0:
        empty_note(ax, "no catalogued score function in this build (config/catalog.yaml trains them)")
        return fig
    order = variant_order(contest)
    left, right = span(table[table.variant != AA])
    labels = []
    for y, row in enumerate(table.itertuples()):
        reference = row.variant == AA
        color = REFERENCE_COLOR if reference else variant_color(style, row.variant, order)
        marker = "o" if reference else variant_marker(row.variant, order)
        if np.isfinite(row.family_ci_low) and np.isfinite(row.family_ci_high):
            ax.plot([row.family_ci_low, row.family_ci_high], [y, y], color=color, lw=4.5, alpha=0.35,
                    solid_capstyle="butt")
        if np.isfinite(row.delta_ci_low) and np.isfinite(row.delta_ci_high):
            low, high = max(row.delta_ci_low, left), min(row.delta_ci_high, right)
            ax.plot([low, high], [y, y], color=color, lw=1.4)
            for end, edge, arrow in ((row.delta_ci_low, left, "<"), (row.delta_ci_high, right, ">")):
                if end != (low if arrow == "<" else high):  # the interval runs past the axis: an arrow says so
                    ax.plot([edge], [y], ls="none", marker=arrow, ms=5, color=color)
        found = row.finding in (LOWER, HIGHER)  # the family's finding (a design's reading stays hollow)
        ax.plot([row.delta_vs_softmax], [y], ls="none", marker=marker, ms=7, mec=MARKER_EDGE if found else color,
                mfc=color if found else "white", mew=0.8 if found else 1.4)
        name = f"{BASELINE} vs itself\n(A/A, seed halves)" if reference else row.variant
        labels.append((y, f"{name}\nLR {format_lr(float(row.lr))}" if not reference else name))
        note = row.finding if reference else (f"Holm p {row.p_holm:.3g}" if np.isfinite(row.p_holm) else row.finding)
        ax.annotate(note, (1.0, y), xycoords=("axes fraction", "data"), xytext=(9, 0), textcoords="offset points",
                    va="center", fontsize=7, color="0.25")
    ax.axhline(0.5, color="0.7", lw=0.8)
    ax.set_xlim(left, right)
    ax.axvline(0.0, color=variant_color(style, BASELINE, order), ls=":", lw=1.2)
    ax.set_yticks([y for y, _ in labels], [text for _, text in labels], fontsize=7.5)
    ax.set_ylim(len(table) - 0.5, -0.6)
    ax.set_xlabel(f"best validation loss − {BASELINE}'s of the same seed (nats/char); left of 0 beats {BASELINE}")
    ax.grid(axis="x", alpha=0.3)
    level = f"{intervals.CONFIDENCE:.0%}"
    ax.set_title(wrap(f"The catalog against {BASELINE}, paired by seed: mean (marker; filled where Holm's step-down "
                      f"finds a difference), {level} interval alone (thin) and family-wise interval "
                      f"({family_level(table)}; thick); top row: softmax against itself", 0.8 * TEXT_WIDTH, 8.5),
                 fontsize=8.5)
    return fig


if __name__ == "__main__":
    sys.exit(figure_main(load, draw))
