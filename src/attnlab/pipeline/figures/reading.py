"""One head reading the window: every variant's attention row as the query advances through every position (trained)."""

from __future__ import annotations

import sys

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

from attnlab.pipeline.ground.bundle_reader import read_arrays
from attnlab.pipeline.figures.cells import cell_label, shown_cells, variant_order
from attnlab.pipeline.figures.gif import Animation, gif_dpi
from attnlab.pipeline.figures.main import figure_main
from attnlab.pipeline.figures.maps import clamp
from attnlab.pipeline.figures.style import MAX_HEIGHT, TEXT_WIDTH, empty_note, variant_color, variant_handle
from attnlab.pipeline.figures.window import char_label, character_step, snippet, window_text

MAX_FRAMES = 128  # longer windows show this many evenly spaced query positions


def load(tables, style) -> dict:
    runs, contest = tables["runs"], tables["contest"]
    return {"entries": load_rows(runs, contest, style["map_layer"], style["map_head"]),
            "order": variant_order(contest, runs)}


def load_rows(runs, contest, layer: int, head: int) -> list[dict]:
    """Per variant (its shown cell, in contest order): the last snapshot's (T, T) map of the chosen layer and head."""
    entries = []
    for _, row in shown_cells(runs, contest).iterrows():
        variant = row.variant
        attention = read_arrays(row.path, "attention.npz")
        weights = attention["weights"]
        lyr, hd = clamp(layer, weights.shape[1]), clamp(head, weights.shape[2])
        entries.append({"variant": variant, "label": cell_label(row), "layer": lyr, "head": hd,
                        "step": int(attention["steps"][-1]), "text": window_text(attention),
                        "map": np.asarray(weights[-1, lyr, hd], dtype=np.float32)})
    return entries


def query_positions(length: int, max_frames: int = MAX_FRAMES) -> np.ndarray:
    """Every query position from 1 (two keys visible) to the window's end; evenly spaced past `max_frames`."""
    if length - 1 <= max_frames:
        return np.arange(1, length) if length > 1 else np.zeros(1, dtype=int)
    return np.unique(np.linspace(1, length - 1, max_frames).round().astype(int))


def draw(data: dict, style: dict) -> Animation:
    """Every panel shows the attention row of the frame's query position; the last frame reads the whole window."""
    entries, order = data["entries"], data["order"]
    panels = max(len(entries), 1)
    height = min(1.3 * panels + 0.9, MAX_HEIGHT)
    fig, axes = plt.subplots(panels, 1, figsize=(TEXT_WIDTH, height), dpi=gif_dpi(style), squeeze=False,
                             sharex=True)
    axes = axes[:, 0]
    if not entries:
        empty_note(axes[0], "no contest cells in runs.csv")
        return Animation(fig, lambda i: None, 1)
    text = entries[0]["text"]
    length = len(text)
    positions = query_positions(length)
    keys = np.arange(length)
    # every key's character where the columns are wide enough for it at the smallest font, else every k-th
    ticks = keys[:: character_step((TEXT_WIDTH - 0.8) * 72 / max(length, 1))]
    # one scale for every panel and frame, set past the first few queries (whose one or two visible keys
    # would flatten every later row); a taller bar is cut at the top and its value written there
    settled = positions[positions >= max(1, length // 8)]
    settled = settled if settled.size else positions
    top = 1.1 * max(max(float(e["map"][settled].max()) for e in entries), 1e-6)
    panels = []
    for ax, entry in zip(axes, entries):
        color = variant_color(style, entry["variant"], order)
        bars = ax.bar(keys, np.zeros(length), width=0.85, color=color)
        future = Rectangle((length - 0.5, 0), 0, 1, transform=ax.get_xaxis_transform(), color="0.9", zorder=0)
        ax.add_patch(future)
        note = ax.text(0, 0.45, "future keys (masked)", transform=ax.get_xaxis_transform(), ha="center",
                       fontsize=7.5, color="0.4")
        cursor = ax.axvline(0, color="0.2", lw=0.8, ls=":")
        ax.set_xlim(-0.5, length - 0.5)
        ax.set_ylim(0, top)
        ax.set_ylabel("weight", fontsize=7.5)
        ax.tick_params(axis="y", labelsize=7)
        ax.legend(handles=[variant_handle(style, entry["variant"], order, label=(
            f"{entry['label']}, layer {entry['layer']}, head {entry['head']}, step {entry['step']}"))],
            loc="lower left", bbox_to_anchor=(0, 1), borderaxespad=0.1, frameon=False, fontsize=7.5,
            handlelength=1.2)
        panels.append({"entry": entry, "bars": bars, "future": future, "note": note, "cursor": cursor, "cut": []})
    axes[-1].set_xticks(ticks, [char_label(text[j]) for j in ticks], fontsize=7.5 if length <= 64 else 7,
                        fontfamily="monospace")
    axes[-1].set_xlabel("key (character of the window; query position dotted, its label red)")
    # the query's key label, red, drawn over the black one where the tick labels are (same place and font)
    label = axes[-1].get_xticklabels()[0]
    marker = axes[-1].text(0, label.get_position()[1], "", transform=label.get_transform(), ha=label.get_ha(),
                           va=label.get_va(), fontproperties=label.get_fontproperties(), color="crimson",
                           fontweight="bold", bbox={"facecolor": "white", "edgecolor": "none", "pad": 0},
                           clip_on=False)
    title = fig.suptitle(" ", fontsize=9)
    fig.tight_layout()

    def update(frame) -> list:
        """Set frame `frame`; returns what changed, back to front (the figure is blitted)."""
        i = int(positions[frame])
        changed = []
        for panel in panels:
            row = np.where(keys <= i, panel["entry"]["map"][i], 0.0)
            for bar, height in zip(panel["bars"], np.minimum(row, top)):
                bar.set_height(height)
            for value_label in panel["cut"]:
                value_label.remove()
            ax = panel["cursor"].axes
            panel["cut"] = [ax.text(j, top, f"{row[j]:.2f}", ha="center", va="top", fontsize=7, color="white",
                                    fontweight="bold") for j in np.flatnonzero(row > top)]
            panel["future"].set_x(i + 0.5)
            panel["future"].set_width(length - 1 - i)
            panel["note"].set_x((i + length) / 2)
            panel["note"].set_visible(i < length - 12)
            panel["cursor"].set_xdata([i, i])
            changed += [panel["future"], *panel["bars"], panel["cursor"], *ax.spines.values(), panel["note"],
                        *panel["cut"]]
        marker.set_text(char_label(text[i]) if i in ticks else "")
        marker.set_x(i)
        title.set_text(f"Reading the window: query {i} = '{char_label(text[i])}' after "
                       f"'{snippet(text, i - 24, i)}'")
        return changed + [marker, title]

    return Animation(fig, update, len(positions), frame_ms=300, blit=True)


if __name__ == "__main__":
    sys.exit(figure_main(load, draw))
