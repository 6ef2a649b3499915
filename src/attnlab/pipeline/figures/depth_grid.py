"""Trained attention maps through depth: one row per layer, one column per variant, heads averaged (last snapshot)."""

from __future__ import annotations

import sys

import matplotlib.pyplot as plt
import numpy as np

from attnlab.pipeline.plan.bundle_reader import read_arrays
from attnlab.pipeline.figures.cells import cell_label, shown_cells
from attnlab.pipeline.figures.main import figure_main
from attnlab.pipeline.figures.maps import draw_map, map_norm
from attnlab.pipeline.figures.window import draw_window_ruler, ruler_size, window_text


def load(tables, style) -> list[dict]:
    return load_maps(tables["runs"], tables["contest"])


def load_maps(runs, contest) -> list[dict]:
    """Per variant (its shown cell): the last snapshot's (layers, T, T) map averaged over heads."""
    maps = []
    for row in shown_cells(runs, contest).itertuples():
        attention = read_arrays(row.path, "attention.npz")
        last = np.asarray(attention["weights"][-1], dtype=np.float32)  # (layers, heads, T, T)
        maps.append({"label": cell_label(row), "step": int(attention["steps"][-1]),
                     "maps": last.mean(axis=1), "text": window_text(attention)})
    return maps


def draw(maps: list[dict], style: dict):
    layers = max((m["maps"].shape[0] for m in maps), default=1)
    cols = max(len(maps), 1)
    width = 2.7 * cols + 1.2
    fig = plt.figure(figsize=(width, 2.6 * layers + 1.7), dpi=style["dpi"], layout="constrained")
    header, body = fig.subfigures(2, 1, height_ratios=[0.9, 2.6 * layers + 0.8])
    axes = body.subplots(layers, cols, squeeze=False)
    norm = map_norm()
    image = None
    for c, entry in enumerate(maps):
        for layer in range(layers):
            ax = axes[layer, c]
            if layer >= entry["maps"].shape[0]:
                ax.set_axis_off()
                continue
            image = draw_map(ax, entry["maps"][layer], norm, label_x=layer == layers - 1, label_y=c == 0)
            if layer == 0:
                ax.set_title(f"{entry['label']}\nstep {entry['step']}", fontsize=9)
            if c == 0:
                ax.set_ylabel(f"layer {layer}\nquery position", fontsize=8)
    if image is not None:
        body.colorbar(image, ax=axes, shrink=0.6, label="attention weight (mean over heads, sqrt scale)")
        header.suptitle("Trained attention through depth (rows: layers, heads averaged; contest LR, one seed per "
                        "variant, named above its column)")
        draw_window_ruler(header, maps[0]["text"], fontsize=ruler_size(len(maps[0]["text"]), width), y=0.3)
    else:
        axes[0, 0].text(0.5, 0.5, "no contest cells in runs.csv", ha="center", transform=axes[0, 0].transAxes)
        header.suptitle("Trained attention through depth")
    return fig


if __name__ == "__main__":
    sys.exit(figure_main(load, draw))
