"""One layer and head's attention map at the four training checkpoints (columns) for every variant (rows)."""

from __future__ import annotations

import sys

import numpy as np

from attnlab.pipeline.ground.bundle_reader import read_arrays
from attnlab.pipeline.figures.cells import cell_label, shown_cells
from attnlab.pipeline.figures.main import figure_main
from attnlab.pipeline.figures.maps import (MAP_LEFT, ROW_LABEL, cell_lines, clamp, draw_map, fit_maps, map_colorbar,
                                           map_figure, map_norm)
from attnlab.pipeline.figures.style import TEXT_EM
from attnlab.pipeline.figures.window import set_key_characters, window_text


def load(tables, style) -> list[dict]:
    return load_snapshots(tables["runs"], tables["contest"], style["map_layer"], style["map_head"])


def load_snapshots(runs, contest, layer: int, head: int) -> list[dict]:
    """Per variant (its shown cell): every snapshot of the chosen layer and head (clamped to the model)."""
    entries = []
    for _, row in shown_cells(runs, contest).iterrows():
        attention = read_arrays(row.path, "attention.npz")
        weights = attention["weights"]  # (snapshots, layers, heads, T, T)
        lyr, hd = clamp(layer, weights.shape[1]), clamp(head, weights.shape[2])
        total = row.get("config.train.steps")
        entries.append({"label": cell_label(row), "layer": lyr, "head": hd, "text": window_text(attention),
                        "steps": [int(s) for s in attention["steps"]], "total": total,
                        "diverged_step": row.diverged_step if bool(row.diverged) else None,
                        "maps": np.asarray(weights[:, lyr, hd], dtype=np.float32)})
    return entries


def column_title(step: int, total, width_in: float, fontsize: float = 7.5) -> str:
    """A checkpoint's title over its column: its step and share of training, the share on a line of its own
    where one line would not keep a glyph clear of the next column's title."""
    if not (total and np.isfinite(total) and total > 0):
        return f"step {step}"
    one = f"step {step} ({100 * step / total:.0f}%)"
    fits = (len(one) + 2) * TEXT_EM * fontsize / 72 <= width_in
    return one if fits else one.replace(" (", "\n(")


def draw(entries: list[dict], style: dict):
    rows = max(len(entries), 1)
    cols = max((len(e["steps"]) for e in entries), default=1)
    where = {(e["layer"], e["head"]) for e in entries}
    shown = ", ".join(f"layer {lyr}, head {hd}" for lyr, hd in sorted(where)) or "no contest cells"
    fig, body, axes, grid = map_figure(style, rows, cols, f"Attention through training ({shown}; one seed per "
                                       "variant at its contest LR)", entries[0]["text"] if entries else None)
    side = (fig.get_figwidth() - MAP_LEFT) / cols
    norm = map_norm()
    image = None
    # Cells trained to a plateau stop at steps of their own: then every map is titled with its own step, and the
    # share of the ceiling (train.steps) is left out, as it is no share of that cell's training.
    shared = len({tuple(e["steps"]) for e in entries}) <= 1
    for r, entry in enumerate(entries):
        for c in range(cols):
            ax = axes[r, c]
            if c >= len(entry["steps"]):
                why = (f"diverged at\nstep {entry['diverged_step']}" if entry["diverged_step"] is not None
                       else f"stopped at\nstep {entry['steps'][-1]}")
                ax.text(0.5, 0.5, f"no snapshot\n({why})", ha="center", va="center", transform=ax.transAxes,
                        fontsize=7.5)
                ax.set_xticks([])
                ax.set_yticks([])
                continue
            image = draw_map(ax, entry["maps"][c], norm, label_x=r == rows - 1, label_y=c == 0)
            if r == 0 and shared:
                ax.set_title(column_title(entry["steps"][c], entry["total"], side), fontsize=7.5)
            elif not shared:
                ax.set_title(f"step {entry['steps'][c]}", fontsize=7)
            if c == 0:
                ax.set_ylabel(f"{cell_lines(entry['label'], side)}\nquery position", **ROW_LABEL)
    if image is not None:
        map_colorbar(body, image, axes, "attention weight (square-root scale)")
        fit_maps(fig, grid, axes)
        set_key_characters(axes[0, :], entries[0]["text"])
        fit_maps(fig, grid, axes)
    else:
        axes[0, 0].text(0.5, 0.5, "no contest cells in runs.csv", ha="center", transform=axes[0, 0].transAxes)
    return fig


if __name__ == "__main__":
    sys.exit(figure_main(load, draw))
