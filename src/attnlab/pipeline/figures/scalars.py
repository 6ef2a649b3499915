"""yat_b's learned kernel scalars b and ε per layer x head (contest cells, mean over seeds) against their init."""

from __future__ import annotations

import math
import sys

import numpy as np
import pandas as pd

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.figures.heatmap import bounded_norm, layer_head_heatmap
from attnlab.pipeline.figures.main import figure_main
from attnlab.pipeline.figures.style import empty_note, new_figure, title

VARIANT = "yat_b"
INIT = math.log(2.0)  # softplus(0): both scalars start here
SCALARS = (("b", "b (added to q·k)"), ("eps", "ε (added to ‖q−k‖²)"))


def load(tables, style) -> dict:
    return load_scalars(tables["scalars"], tables["contest"])


def load_scalars(scalars: pd.DataFrame, contest: pd.DataFrame) -> dict:
    """Every contest seed's learned b and ε from the scalars table: {'b': (seeds, L, H), 'eps': ..., 'seeds', 'lr'}."""
    mine = scalars[scalars.variant == VARIANT]
    found = {}
    for name, _ in SCALARS:
        rows = mine[mine.scalar == name]
        found[name] = np.array([cells.pivot(index="layer", columns="head", values="value").sort_index()
                                .sort_index(axis=1).to_numpy(dtype=float)
                                for _, cells in rows.groupby("seed", sort=True)])
    lrs = dict(zip(contest.variant, contest.lr.astype(float)))
    return dict(found, seeds=sorted(int(s) for s in mine.seed.unique()),
                lr=lrs.get(VARIANT) if len(mine) else None)


def draw(scalars: dict, style: dict):
    fig, axes = new_figure(style, 3.4, ncols=2, layout="constrained")
    if scalars["lr"] is None or any(scalars[name].size == 0 for name, _ in SCALARS):
        for ax in axes:
            empty_note(ax, f"no {VARIANT} contest cell with learned scalars in scalars.csv")
        title(fig, f"{VARIANT}: learned kernel scalars")
        return fig
    n = len(scalars["seeds"])
    for ax, (name, label) in zip(axes, SCALARS):
        values = scalars[name]
        mean = values.mean(axis=0)
        std = values.std(axis=0) if n > 1 else None
        norm = bounded_norm(values, INIT, 0.0, math.inf)  # softplus: positive
        image = layer_head_heatmap(ax, mean, std, norm, "RdBu_r", f"learned {label}")
        symbol = label.split()[0]
        fig.colorbar(image, ax=ax, shrink=0.9, label=f"{symbol} (unitless;\nwhite = init log 2 ≈ {INIT:.3f})")
    spread = "mean ± std over seeds " if n > 1 else "seed "
    title(fig, f"{VARIANT} learned scalars per layer × head: {spread}{', '.join(map(str, scalars['seeds']))} "
          f"at contest LR {format_lr(scalars['lr'])}")
    return fig


if __name__ == "__main__":
    sys.exit(figure_main(load, draw))
