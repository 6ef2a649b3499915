"""Forest plot of each variant's paired difference from softmax, with its 95% interval (contest and best LR).

One row per variant: its best validation loss minus softmax's of the same seed,
each at its own contest LR. The filled marker is the mean over the seeds both
have and the bar its interval (the contest table's delta_vs_softmax,
delta_ci_low and delta_ci_high: a t-interval, or the confidence sequence where
seeds were added until decided); the small dots are the single seeds. The hollow
marker is the same difference with each variant at its best sweep LR (the
best_lr table), with its interval where the sweep has more than one seed.
Left of zero beats softmax.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.ground import intervals, statistics
from attnlab.pipeline.ground.contract import BASELINE
from attnlab.pipeline.figures.cells import contest_cells, variant_order
from attnlab.pipeline.figures.main import figure_main
from attnlab.pipeline.figures.style import (MARKER_EDGE, TEXT_WIDTH, empty_note, new_figure, variant_color,
                                            variant_marker, wrap)

BEST_OFFSET = 0.28  # the best-LR row sits this far below the contest row of its variant


def load(tables, style) -> dict:
    contest = tables["contest"]
    return {"contest": contest, "best": tables["best_lr"], "dots": per_seed_differences(tables["runs"], contest)}


def per_seed_differences(runs: pd.DataFrame, contest: pd.DataFrame) -> dict[str, tuple[float, ...]]:
    """variant -> its per-seed paired differences from softmax at the contest LRs (the dots)."""
    cells = contest_cells(runs, contest)
    if cells.empty:
        return {}
    base = cells[cells.variant == BASELINE]
    base = dict(zip(base.seed.astype(int), base.best_val_loss.astype(float)))
    out = {}
    for variant, own in cells.groupby("variant", sort=False):
        out[variant] = statistics.paired(dict(zip(own.seed.astype(int), own.best_val_loss.astype(float))), base).values
    return out


def draw(data: dict, style: dict):
    """One row per variant: its seeds (dots), their mean and interval, and its best-LR comparison (hollow)."""
    contest, best, dots = data["contest"], data.get("best"), data.get("dots", {})
    shown = [v for v in variant_order(contest) if v != BASELINE]
    fig, ax = new_figure(style, 1.3 + 0.6 * max(len(shown), 1), layout="constrained")
    if contest.empty or "delta_vs_softmax" not in contest or not shown:
        empty_note(ax, "no variant beside softmax in contest.csv" if not contest.empty else "contest.csv is empty")
        return fig
    order = variant_order(contest)
    level = f"{intervals.CONFIDENCE:.0%}"
    rows = contest.set_index("variant")
    best_rows = best.set_index("variant") if best is not None and not best.empty else pd.DataFrame()
    labels = []
    for y, variant in enumerate(shown):
        row = rows.loc[variant]
        color, marker = variant_color(style, variant, order), variant_marker(variant, order)
        mean, low, high = float(row.delta_vs_softmax), float(row.delta_ci_low), float(row.delta_ci_high)
        values = np.asarray(dots.get(variant, ()), dtype=float)
        if values.size:
            ax.plot(values, np.full(values.size, y) + np.linspace(-0.07, 0.07, values.size), ls="none",
                    marker=".", ms=5, color=color, alpha=0.6)
        if np.isfinite(low) and np.isfinite(high):
            ax.plot([low, high], [y, y], color=color, lw=2.4, solid_capstyle="butt")
            ax.plot([low, low, np.nan, high, high], [y - 0.1, y + 0.1, np.nan, y - 0.1, y + 0.1], color=color, lw=1.4)
            note = f"wins {row.wins} seeds"
        else:
            paired = float(row.get("n_paired", np.nan))
            note = "no bounded interval" if np.isfinite(paired) and paired >= 2 else statistics.ONE_SEED
        ax.plot([mean], [y], ls="none", marker=marker, ms=7.5, color=color, mec=MARKER_EDGE, mew=0.6)
        choice = " (auto)" if str(row.get("lr_choice", "")) == "auto" else ""
        labels.append((y, f"{variant}\ncontest LR {format_lr(float(row.lr))}{choice}"))
        ax.annotate(note, (1.0, y), xycoords=("axes fraction", "data"), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize=7.5, color="0.25")
        if variant in best_rows.index:
            b = best_rows.loc[variant]
            yb = y + BEST_OFFSET
            if np.isfinite(b.delta_ci_low) and np.isfinite(b.delta_ci_high):
                ax.plot([b.delta_ci_low, b.delta_ci_high], [yb, yb], color=color, lw=1.2, ls="--")
            ax.plot([b.delta_vs_softmax], [yb], ls="none", marker=marker, ms=6, mfc="white", mec=color, mew=1.2)
            ax.annotate(f"best LR {format_lr(float(b.best_lr))}", (b.delta_vs_softmax, yb), xytext=(6, 0),
                        textcoords="offset points", va="center", fontsize=7, color="0.35")
    ax.axvline(0.0, color=variant_color(style, BASELINE, order), ls=":", lw=1.2)
    ax.set_yticks([y for y, _ in labels], [text for _, text in labels], fontsize=7.5)
    ax.set_ylim(len(shown) - 0.5, -0.6)
    ax.set_xlabel(f"best validation loss − {BASELINE}'s of the same seed (nats/char); left of 0 beats {BASELINE}")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(wrap(f"Paired differences from {BASELINE}: mean over seeds (filled) with its {level} interval, "
                      f"single seeds (dots), and each variant at its best sweep LR against {BASELINE} at its own "
                      "(hollow)", 0.8 * TEXT_WIDTH, 8.5), fontsize=8.5)
    return fig


if __name__ == "__main__":
    sys.exit(figure_main(load, draw))
