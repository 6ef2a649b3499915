"""A³ per layer x head: the learned gate, the key bias's spread, and the net effect on row entropy against softmax.

The gate G multiplies the logits, so G below its init cools them; the key bias B
is added per key, so a wide spread of B over the keys sharpens the rows. Which
one wins is read off the third panel, A³'s row entropy minus softmax's, not off
either mechanism alone.
"""

from __future__ import annotations

import sys

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.ground.contract import A3_GATE_INIT as GATE_INIT
from attnlab.pipeline.ground.contract import BASELINE
from attnlab.pipeline.figures.heatmap import bounded_norm, centred_norm, layer_head_heatmap
from attnlab.pipeline.figures.main import figure_main
from attnlab.pipeline.figures.style import empty_note, new_figure, title

VARIANT = "a3"
KEYS = ("a3_gate_mean", "a3_bias_std")
COLUMNS = {"a3_gate_mean": "gate_mean", "a3_bias_std": "bias_std"}  # the a3_gates table's names


def load(tables, style) -> dict:
    return load_gates(tables["a3_gates"], tables["contest"])


def per_seed_grid(rows: pd.DataFrame, column: str) -> np.ndarray:
    """(seeds, layers, heads) of one column of the a3_gates table, seeds in order."""
    grids = []
    for _, cells in rows.groupby("seed", sort=True):
        grid = cells.pivot(index="layer", columns="head", values=column).sort_index().sort_index(axis=1)
        grids.append(grid.to_numpy(dtype=float))
    return np.array(grids)


def load_gates(gates: pd.DataFrame, contest: pd.DataFrame) -> dict:
    """A³'s gate mean and bias spread per contest seed, and both variants' row entropy per layer x head.

    {'a3_gate_mean', 'a3_bias_std', 'a3_entropy', 'softmax_entropy': (seeds, L, H), 'seeds', 'lr', 'baseline_lr'},
    all from the a3_gates table (the contest cells' telemetry), the LRs from the contest table.
    """
    mine, base = gates[gates.variant == VARIANT], gates[gates.variant == BASELINE]
    found = {key: per_seed_grid(mine, column) for key, column in COLUMNS.items()}
    found["a3_entropy"] = per_seed_grid(mine, "entropy")
    found["softmax_entropy"] = per_seed_grid(base, "entropy")
    lrs = dict(zip(contest.variant, contest.lr.astype(float)))
    return dict(found, seeds=sorted(int(s) for s in mine.seed.unique()),
                lr=lrs.get(VARIANT) if len(mine) else None, baseline_lr=lrs.get(BASELINE) if len(base) else None)


def draw(gates: dict, style: dict):
    fig, axes = new_figure(style, 3.6, ncols=3, layout="constrained")
    if gates["lr"] is None or any(not np.isfinite(gates[key]).any() for key in KEYS):
        for ax in axes:
            empty_note(ax, f"no {VARIANT} contest cell with gate telemetry in a3_gates.csv")
        title(fig, "A³ gates")
        return fig
    gate, spread = gates["a3_gate_mean"].mean(axis=0), gates["a3_bias_std"].mean(axis=0)
    image = layer_head_heatmap(axes[0], gate, None, bounded_norm(gate, GATE_INIT, 0.0, 1.0), "PuOr_r",
                               f"gate G (white: init {GATE_INIT:.3f};\nbelow init cools\nthe logits)")
    bar = fig.colorbar(image, ax=axes[0], shrink=0.9, location="bottom", label="gate G, mean over tokens")
    bar.ax.xaxis.set_major_locator(MaxNLocator(4))  # the two-slope scale would crowd its default ticks
    image = layer_head_heatmap(axes[1], spread, None, plt.Normalize(0, max(float(spread.max()), 1e-6)), "Greens",
                               "key bias B: spread over keys\n(0 at init; a wider\nspread sharpens)")
    fig.colorbar(image, ax=axes[1], shrink=0.9, location="bottom", label="std of B over keys\n(logit units)")
    a3_entropy, base_entropy = gates["a3_entropy"], gates["softmax_entropy"]
    if a3_entropy.size and base_entropy.size and a3_entropy.shape[1:] == base_entropy.shape[1:]:
        diff = a3_entropy.mean(axis=0) - base_entropy.mean(axis=0)
        image = layer_head_heatmap(axes[2], diff, None, centred_norm(diff, 0.0), "RdBu", signed=True,
                                   title=f"net: row entropy A³ − {BASELINE}\n(below 0: A³ sharper)")
        fig.colorbar(image, ax=axes[2], shrink=0.9, location="bottom",
                     label="difference in normalised\nrow entropy")
    else:
        empty_note(axes[2], f"no {BASELINE} contest cell of the same shape to compare with")
    n = len(gates["seeds"])
    seeds = f"mean over seeds {', '.join(map(str, gates['seeds']))}" if n > 1 else f"seed {gates['seeds'][0]}"
    against = f" vs {BASELINE} at {format_lr(gates['baseline_lr'])}" if gates["baseline_lr"] is not None else ""
    title(fig, f"A³ per layer × head at contest LR {format_lr(gates['lr'])}{against} ({seeds})")
    return fig


if __name__ == "__main__":
    sys.exit(figure_main(load, draw))
