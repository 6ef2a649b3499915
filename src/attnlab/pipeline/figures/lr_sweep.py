"""Best validation loss against learning rate per variant (sweep seed, or the mean over the sweep seeds); diverged
cells marked, never as a number."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.transforms import blended_transform_factory

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.figures.cells import lr_keys, variant_order
from attnlab.pipeline.figures.main import figure_main
from attnlab.pipeline.figures.style import (LOSS_LABEL, MARKER_EDGE, empty_note, new_figure, variant_color,
                                            variant_handle, variant_marker)

ROW_HEIGHT = 0.06  # axes fraction per variant row in the diverged band, which exists only when a cell diverged
DODGE = 0.025  # decades between neighbouring variants at one LR, so coinciding points stay visible


def seed_means(sweep: pd.DataFrame) -> pd.DataFrame:
    """One row per variant and LR: the mean best validation loss over the sweep seeds; a cell with a diverged
    seed counts as diverged (at its earliest diverged step), so no diverged seed is averaged into a point."""
    if sweep.empty or "seed" not in sweep or sweep.seed.nunique() <= 1:
        return sweep
    rows = []
    for (variant, _), cells in sweep.groupby([sweep.variant, lr_keys(sweep.lr).to_numpy()], sort=False):
        diverged = cells[cells.diverged.astype(bool)]
        rows.append({"variant": variant, "lr": float(cells.lr.iloc[0]),
                     "best_val_loss": cells.best_val_loss.astype(float).mean(),
                     "diverged": bool(len(diverged)),
                     "diverged_step": diverged.diverged_step.min() if len(diverged) else np.nan})
    return pd.DataFrame(rows)


def load(tables, style) -> dict:
    return {"sweep": tables["lr_sweep"], "contest": tables["contest"]}


def draw(data: dict, style: dict):
    """The LR sweep figure (see plot)."""
    return plot(data["sweep"], data["contest"], style)[0]


def plot(sweep: pd.DataFrame, contest: pd.DataFrame | None, style: dict):
    """The figure and what it marked: {'points': [(variant, lr, loss)], 'diverged': [(variant, lr, step)]}.

    A cell is a point only if it did not diverge and its loss is finite; every
    other cell is an 'x' in a band at the top, so no cell is ever missing. Each
    variant's contest LR is its filled marker; its other sweep LRs are hollow.
    """
    fig, ax = new_figure(style, 4.2)
    marks = {"points": [], "diverged": []}
    seeds = sweep.seed.nunique() if "seed" in sweep and not sweep.empty else 1
    sweep = seed_means(sweep)
    if sweep.empty:
        empty_note(ax, "no sweep cells in lr_sweep.csv")
        return fig, marks
    order = variant_order(contest if contest is not None else sweep, sweep)
    shown = [v for v in order if v in set(sweep.variant)]
    contest_lr = {} if contest is None else dict(zip(contest.variant, lr_keys(contest.lr)))
    plotted = ~sweep.diverged.astype(bool) & np.isfinite(sweep.best_val_loss.astype(float))
    failed_variants = [v for v in shown if (~plotted[sweep.variant == v]).any()]
    band = ROW_HEIGHT * len(failed_variants) + 0.04 if failed_variants else 0.0
    top = blended_transform_factory(ax.transData, ax.transAxes)
    lrs = sorted(sweep.lr.astype(float).unique())
    finite, any_chosen = [], False
    for k, variant in enumerate(shown):
        color, marker = variant_color(style, variant, order), variant_marker(variant, order)
        dodge = 10 ** (DODGE * (k - (len(shown) - 1) / 2))
        cells = sweep[sweep.variant == variant].sort_values("lr")
        ok = ~cells.diverged.astype(bool) & np.isfinite(cells.best_val_loss.astype(float))
        good, bad = cells[ok], cells[~ok]
        x = good.lr.astype(float) * dodge
        ax.plot(x, good.best_val_loss, "-", color=color, lw=1.6, alpha=0.85, zorder=2)
        chosen = (lr_keys(good.lr) == contest_lr.get(variant)).to_numpy()
        any_chosen |= bool(chosen.any())
        ax.plot(x[~chosen], good.best_val_loss[~chosen], ls="none", marker=marker, ms=6, mfc="white", mec=color,
                mew=1.4, zorder=3)
        ax.plot(x[chosen], good.best_val_loss[chosen], ls="none", marker=marker, ms=7.5, color=color,
                mec=MARKER_EDGE, mew=0.7, zorder=4)
        marks["points"] += [(variant, float(r.lr), float(r.best_val_loss)) for r in good.itertuples()]
        finite += list(good.best_val_loss)
        if variant in failed_variants:
            y = 1 - 0.02 - ROW_HEIGHT * (failed_variants.index(variant) + 0.5)
            for r in bad.itertuples():
                step = r.diverged_step if bool(r.diverged) and pd.notna(r.diverged_step) else None
                marks["diverged"].append((variant, float(r.lr), None if step is None else int(step)))
                ax.plot(float(r.lr) * dodge, y, "x", color=color, ms=7, mew=2, transform=top, clip_on=False)
                what = f"diverged @ step {int(step)}" if step is not None else "no finite loss"
                right_half = float(r.lr) > np.sqrt(lrs[0] * lrs[-1]) if len(lrs) > 1 else False
                ax.annotate(f"{variant}: {what}", (float(r.lr) * dodge, y), xycoords=top,
                            xytext=(-8 if right_half else 8, 0), textcoords="offset points",
                            ha="right" if right_half else "left", va="center", fontsize=7.5, color=color)
    if failed_variants:
        ax.add_patch(Rectangle((0, 1 - band), 1, band, transform=ax.transAxes, color="0.93", zorder=0))
        ax.text(0.01, 1 - band + 0.005, "diverged or no finite loss (no loss plotted)", transform=ax.transAxes,
                fontsize=7.5, color="0.35", va="bottom")
    ax.set_xscale("log")
    ax.set_xticks(lrs, [format_lr(lr) for lr in lrs])
    ax.minorticks_off()
    span = (lrs[-1] / lrs[0]) if lrs[0] > 0 and len(lrs) > 1 else 10.0
    pad = span ** 0.12
    ax.set_xlim(lrs[0] / pad, lrs[-1] * pad)
    if finite:
        lo, hi = min(finite), max(finite)
        margin = max(0.06 * (hi - lo), 0.01)
        lo, hi = lo - margin, hi + margin
        ax.set_ylim(lo, lo + (hi - lo) / (1 - band))
        ax.set_yticks([t for t in ax.get_yticks() if lo <= t <= hi])
    ax.set_xlabel("learning rate (log scale; variants nudged apart at each LR)")
    ax.set_ylabel(f"best {LOSS_LABEL}")
    ax.grid(alpha=0.3, which="both")
    handles = [variant_handle(style, v, order, lw=1.6) for v in shown]
    if any_chosen:
        handles.append(Line2D([], [], marker="o", ms=9, color="0.3", mec=MARKER_EDGE, ls="none",
                              label="filled: contest LR"))
        handles.append(Line2D([], [], marker="o", ms=8, mfc="white", mec="0.3", mew=1.8, ls="none",
                              label="hollow: other sweep LR"))
    if marks["diverged"]:
        handles.append(Line2D([], [], marker="x", ms=9, mew=2, color="0.3", ls="none", label="diverged"))
    ax.legend(handles=handles, loc="best", framealpha=0.9)
    where = "at the sweep seed" if seeds <= 1 else f"mean over the {seeds} sweep seeds"
    ax.set_title(f"Learning-rate sweep {where}: best validation loss per LR")
    fig.tight_layout()
    return fig, marks


if __name__ == "__main__":
    sys.exit(figure_main(load, draw))
