"""Best validation loss against learning rate per variant (sweep seed); diverged cells marked, never as a number."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.transforms import blended_transform_factory

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.figures import (LOSS_LABEL, cli, empty_note, new_figure, parse_style, save_figure, variant_color,
                             variant_marker, variant_order)

BAND = 0.76  # the top of the axes above this height (axes fraction) holds the diverged markers


def draw(sweep: pd.DataFrame, contest: pd.DataFrame | None, style: dict):
    """The figure and what it marked: {'points': [(variant, lr, loss)], 'diverged': [(variant, lr, step)]}.

    A cell is a point only if it did not diverge and its loss is finite; every
    other cell is an 'x' in the band at the top, so no cell is ever missing.
    """
    fig, ax = new_figure(style, 8, 5)
    marks = {"points": [], "diverged": []}
    if sweep.empty:
        empty_note(ax, "no sweep cells in lr_sweep.csv")
        return fig, marks
    order = variant_order(contest if contest is not None else sweep, sweep)
    contest_lr = {} if contest is None else dict(zip(contest.variant, contest.lr.astype(float)))
    top = blended_transform_factory(ax.transData, ax.transAxes)
    finite = []
    for k, variant in enumerate(v for v in order if v in set(sweep.variant)):
        color = variant_color(style, variant, order)
        cells = sweep[sweep.variant == variant].sort_values("lr")
        ok = ~cells.diverged.astype(bool) & np.isfinite(cells.best_val_loss.astype(float))
        good, bad = cells[ok], cells[~ok]
        ax.plot(good.lr, good.best_val_loss, "-", marker=variant_marker(variant, order), color=color, lw=1.8,
                ms=9 - 1.2 * k, alpha=0.9, label=variant)
        marks["points"] += [(variant, float(r.lr), float(r.best_val_loss)) for r in good.itertuples()]
        finite += list(good.best_val_loss)
        if variant in contest_lr:
            chosen = good[np.isclose(good.lr, contest_lr[variant])]
            ax.plot(chosen.lr, chosen.best_val_loss, "o", ms=13, mfc="none", mec=color, mew=1.5)
        y = 0.95 - 0.05 * k
        for r in bad.itertuples():
            step = r.diverged_step if bool(r.diverged) and pd.notna(r.diverged_step) else None
            marks["diverged"].append((variant, float(r.lr), None if step is None else int(step)))
            ax.plot(r.lr, y, "x", color=color, ms=10, mew=2.5, transform=top, clip_on=False)
            what = f"diverged @ step {int(step)}" if step is not None else "no finite loss"
            ax.annotate(f"{variant}: {what}", (r.lr, y), xycoords=top, xytext=(7, 0), textcoords="offset points",
                        va="center", fontsize=8, color=color)
    ax.add_patch(Rectangle((0, BAND), 1, 1 - BAND, transform=ax.transAxes, color="0.93", zorder=0))
    ax.text(0.01, BAND + 0.01, "diverged (no loss plotted)", transform=ax.transAxes, fontsize=8, color="0.35")
    ax.set_xscale("log")
    lrs = sorted(sweep.lr.astype(float).unique())
    ax.set_xticks(lrs, [format_lr(lr) for lr in lrs])
    ax.minorticks_off()
    span = (lrs[-1] / lrs[0]) if lrs[0] > 0 else 10.0
    ax.set_xlim(lrs[0] / span**0.08, lrs[-1] * span**0.35)
    if finite:
        lo, hi = min(finite), max(finite)
        pad = max(0.05 * (hi - lo), 0.01)
        lo -= pad
        ax.set_ylim(lo, lo + (hi + pad - lo) / (BAND - 0.02))
        ax.set_yticks([t for t in ax.get_yticks() if lo <= t <= hi + pad])
    ax.set_xlabel("learning rate (log scale)")
    ax.set_ylabel(f"best {LOSS_LABEL}")
    ax.grid(alpha=0.3, which="both")
    handles, _ = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], marker="o", ms=11, mfc="none", mec="0.3", ls="none", label="contest LR"))
    handles.append(Line2D([], [], marker="x", ms=9, mew=2, color="0.3", ls="none", label="diverged"))
    ax.legend(handles=handles, fontsize=8, loc="center right")
    ax.set_title("Learning-rate sweep at the sweep seed: best validation loss per LR")
    fig.tight_layout()
    return fig, marks


def main(argv: list[str] | None = None) -> int:
    args = cli(__doc__, tables=("sweep", "contest")).parse_args(argv)
    style = parse_style(args.style)
    sweep, contest = pd.read_csv(args.sweep), pd.read_csv(args.contest)
    fig, marks = draw(sweep, contest, style)
    save_figure(fig, args.out, style["dpi"])
    print(f"wrote {args.out}: {len(marks['points'])} points, {len(marks['diverged'])} diverged cells marked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
