"""Trained attention maps through depth: one row per layer, one column per variant, heads averaged (last snapshot)."""

from __future__ import annotations

import sys

import numpy as np

from attnlab.pipeline.ground.bundle_reader import read_arrays
from attnlab.pipeline.figures.cells import cell_label, shown_cells
from attnlab.pipeline.figures.main import figure_main
from attnlab.pipeline.figures.maps import (MAP_LEFT, ROW_LABEL, cell_lines, draw_map, fit_maps, map_colorbar,
                                           map_figure, map_norm)
from attnlab.pipeline.figures.window import set_key_characters, window_text


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
    title = ("Trained attention through depth (rows: layers, heads averaged; contest LR, one seed per variant, "
             "named above its column)" if maps else "Trained attention through depth")
    fig, body, axes, grid = map_figure(style, layers, cols, title, maps[0]["text"] if maps else None)
    side = (fig.get_figwidth() - MAP_LEFT) / cols
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
                ax.set_title(f"{cell_lines(entry['label'], side)}\nstep {entry['step']}",
                             fontsize=7.5)
            if c == 0:
                ax.set_ylabel(f"layer {layer}\nquery position", **ROW_LABEL)
    if image is not None:
        map_colorbar(body, image, axes, "attention weight (mean over heads, square-root scale)")
        fit_maps(fig, grid, axes)
        set_key_characters(axes[0, :len(maps)], maps[0]["text"])
        fit_maps(fig, grid, axes)
    else:
        axes[0, 0].text(0.5, 0.5, "no contest cells in runs.csv", ha="center", transform=axes[0, 0].transAxes)
    return fig


if __name__ == "__main__":
    sys.exit(figure_main(load, draw))
