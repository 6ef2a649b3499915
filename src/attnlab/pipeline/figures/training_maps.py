"""One layer and head's attention map at the four training checkpoints (columns) for every variant (rows)."""

from __future__ import annotations

import sys

import matplotlib.pyplot as plt
import numpy as np

from attnlab.pipeline.plan.bundle_reader import read_arrays
from attnlab.pipeline.figures.cells import cell_label, shown_cells
from attnlab.pipeline.figures.main import figure_main
from attnlab.pipeline.figures.maps import clamp, draw_map, map_norm
from attnlab.pipeline.figures.window import draw_window_ruler, ruler_size, window_text


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


def _step_title(step: int, total) -> str:
    if total and np.isfinite(total) and total > 0:
        return f"step {step} ({100 * step / total:.0f}%)"
    return f"step {step}"


def draw(entries: list[dict], style: dict):
    rows = max(len(entries), 1)
    cols = max((len(e["steps"]) for e in entries), default=1)
    width = 2.6 * cols + 1.4
    fig = plt.figure(figsize=(width, 2.6 * rows + 1.7), dpi=style["dpi"], layout="constrained")
    header, body = fig.subfigures(2, 1, height_ratios=[0.9, 2.6 * rows + 0.8])
    axes = body.subplots(rows, cols, squeeze=False)
    norm = map_norm()
    image = None
    for r, entry in enumerate(entries):
        for c in range(cols):
            ax = axes[r, c]
            if c >= len(entry["steps"]):
                ax.text(0.5, 0.5, f"no snapshot\n(diverged at step {entry['diverged_step']})", ha="center",
                        va="center", transform=ax.transAxes, fontsize=8)
                ax.set_xticks([])
                ax.set_yticks([])
                continue
            image = draw_map(ax, entry["maps"][c], norm, label_x=r == rows - 1, label_y=c == 0)
            ax.set_title(_step_title(entry["steps"][c], entry["total"]), fontsize=9)
            if c == 0:
                ax.set_ylabel(f"{entry['label']}\nquery position", fontsize=8)
    if image is not None:
        body.colorbar(image, ax=axes, shrink=0.6, label="attention weight (sqrt scale)")
        where = {(e["layer"], e["head"]) for e in entries}
        shown = ", ".join(f"layer {lyr}, head {hd}" for lyr, hd in sorted(where))
        draw_window_ruler(header, entries[0]["text"], fontsize=ruler_size(len(entries[0]["text"]), width), y=0.3)
    else:
        axes[0, 0].text(0.5, 0.5, "no contest cells in runs.csv", ha="center", transform=axes[0, 0].transAxes)
        shown = "none"
    header.suptitle(f"Attention through training ({shown}; contest LR, one seed per variant, named at its row)")
    return fig


if __name__ == "__main__":
    sys.exit(figure_main(load, draw))
