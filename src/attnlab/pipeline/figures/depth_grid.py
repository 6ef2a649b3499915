"""Trained attention maps through depth: one row per layer, one column per variant, heads averaged (last snapshot)."""

from __future__ import annotations

import sys

import matplotlib.pyplot as plt
import numpy as np

from attnlab.pipeline.bundle_reader import read_arrays
from attnlab.pipeline.figures import (cell_label, cli, draw_map, map_norm, parse_style, read_tables, save_figure,
                             shown_cells, window_text)


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
    fig, axes = plt.subplots(layers, cols, figsize=(2.7 * cols + 1.2, 2.6 * layers + 1.0), dpi=style["dpi"],
                             squeeze=False, layout="constrained")
    norm = map_norm()
    image = None
    for c, entry in enumerate(maps):
        for layer in range(layers):
            ax = axes[layer, c]
            if layer >= entry["maps"].shape[0]:
                ax.set_axis_off()
                continue
            image = draw_map(ax, entry["maps"][layer], entry["text"], norm,
                             label_x=layer == layers - 1, label_y=c == 0)
            if layer == 0:
                ax.set_title(f"{entry['label']}\nstep {entry['step']}", fontsize=9)
            if c == 0:
                ax.set_ylabel(f"layer {layer}\nquery (character)", fontsize=8)
    if image is not None:
        fig.colorbar(image, ax=axes, shrink=0.6, label="attention weight (mean over heads, sqrt scale)")
    else:
        axes[0, 0].text(0.5, 0.5, "no contest cells in runs.csv", ha="center", transform=axes[0, 0].transAxes)
    fig.suptitle("Trained attention through depth (rows: layers, heads averaged; contest LR, sweep seed)")
    return fig


def main(argv: list[str] | None = None) -> int:
    args = cli(__doc__).parse_args(argv)
    style = parse_style(args.style)
    runs, contest = read_tables(args.runs, args.contest)
    save_figure(draw(load_maps(runs, contest), style), args.out, style["dpi"])
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
