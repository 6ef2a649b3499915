"""Validation-loss curves of the contest runs: every seed, each variant at its contest LR, whole run and late zoom."""

from __future__ import annotations

import sys

import numpy as np
from matplotlib.lines import Line2D

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.ground.bundle_reader import read_curve
from attnlab.pipeline.figures.cells import contest_cells, variant_order
from attnlab.pipeline.figures.main import figure_main
from attnlab.pipeline.figures.style import (LOSS_LABEL, MARKER_EDGE, empty_note, new_figure, title, variant_color,
                                            variant_handle, variant_marker)

SEED_STYLES = ("-", "--", ":", "-.")


def load(tables, style) -> dict:
    """The contest cells' curves and the variants' order."""
    runs, contest = tables["runs"], tables["contest"]
    return {"curves": load_curves(runs, contest), "order": variant_order(contest, runs)}


def load_curves(runs, contest) -> list[dict]:
    """One entry per contest cell: its identity, colour key and validation curve."""
    curves = []
    for row in contest_cells(runs, contest).itertuples():
        curve = read_curve(row.path).dropna(subset=["val_loss"])
        curves.append({"variant": row.variant, "lr": float(row.lr), "seed": int(row.seed),
                       "diverged": bool(row.diverged), "diverged_step": row.diverged_step,
                       "step": curve.step.to_numpy(), "val": curve.val_loss.to_numpy()})
    return curves


def _legend(fig, curves, order, style):
    seeds = sorted({c["seed"] for c in curves})
    handles = []
    for variant in [v for v in order if any(c["variant"] == v for c in curves)]:
        mine = [c for c in curves if c["variant"] == variant]
        handles.append(variant_handle(style, variant, order, lw=2,
                                      label=f"{variant} (lr {format_lr(mine[0]['lr'])}, {len(mine)} seeds)"))
    handles += [Line2D([], [], color="0.3", ls=SEED_STYLES[i % len(SEED_STYLES)], label=f"seed {s}")
                for i, s in enumerate(seeds)]
    if any(c["diverged"] for c in curves):
        handles.append(Line2D([], [], color="0.3", marker="x", ls="none", markersize=7, label="diverged here"))
    fig.legend(handles=handles, loc="outside lower center", ncol=3, frameon=False)


def _plot(ax, curves, order, style):
    seeds = sorted({c["seed"] for c in curves})
    for c in curves:
        color = variant_color(style, c["variant"], order)
        ax.plot(c["step"], c["val"], color=color, lw=1.2, alpha=0.9,
                ls=SEED_STYLES[seeds.index(c["seed"]) % len(SEED_STYLES)],
                marker=variant_marker(c["variant"], order), markevery=_every(c["step"]), ms=4.5, mec=MARKER_EDGE,
                mew=0.5)
        if c["diverged"] and len(c["step"]):
            ax.plot(c["step"][-1], c["val"][-1], marker="x", color=color, markersize=7, mew=1.6)


def _every(steps: np.ndarray, marks: int = 8):
    """Mark about `marks` evaluations per curve, so a curve's variant reads from its marker as well as its colour."""
    return max(1, int(np.ceil(len(steps) / marks)))


def _zoom_limits(curves) -> tuple[float, float, float]:
    """x start and y range of the late-training panel: the second half of training."""
    last = max(c["step"].max() for c in curves)
    late = np.concatenate([c["val"][c["step"] >= last / 2] for c in curves])
    late = late[np.isfinite(late)]
    if late.size == 0:
        return last / 2, 0.0, 1.0
    pad = max(0.02 * (late.max() - late.min()), 1e-3)
    return last / 2, late.min() - pad, late.max() + pad


def draw(data: dict, style: dict):
    curves, order = data["curves"], data["order"]
    fig, (full, zoom) = new_figure(style, 3.6, ncols=2, layout="constrained")
    if not curves:
        empty_note(full, "no contest runs in runs.csv")
        empty_note(zoom, "")
        return fig
    _plot(full, curves, order, style)
    _plot(zoom, curves, order, style)
    x0, lo, hi = _zoom_limits(curves)
    zoom.set_xlim(x0, max(c["step"].max() for c in curves))
    zoom.set_ylim(lo, hi)
    full.set_title("whole run")
    zoom.set_title("second half of training (zoomed)")
    for ax in (full, zoom):
        ax.set_xlabel("training step")
        ax.set_ylabel(LOSS_LABEL)
        ax.grid(alpha=0.3)
    _legend(fig, curves, order, style)
    title(fig, "Validation loss of the contest runs: every seed, each variant at its contest LR")
    return fig


if __name__ == "__main__":
    sys.exit(figure_main(load, draw))
