"""One head reading the window: its attention row as the query advances, softmax above the Yat kernel (trained)."""

from __future__ import annotations

import sys

import matplotlib.pyplot as plt
import numpy as np

from attnlab.pipeline.bundle_reader import read_arrays
from attnlab.pipeline.figures import (cell_label, char_label, clamp, cli, empty_note, label_every, parse_style, read_tables,
                             save_gif, shown_cells, snippet, variant_color, variant_order, window_text)

BASELINE = "softmax"
KERNELS = ("yat", "yat_b")  # the first one that ran is shown


def pick_variants(available: list[str]) -> list[str]:
    """Softmax above the kernel: yat, or yat_b when yat did not run."""
    kernel = next((v for v in KERNELS if v in available), None)
    return [v for v in (BASELINE, kernel) if v in available]


def load_rows(runs, contest, layer: int, head: int) -> list[dict]:
    """Per shown variant: the last snapshot's (T, T) map of the chosen layer and head (clamped)."""
    cells = shown_cells(runs, contest).set_index("variant", drop=False)
    entries = []
    for variant in pick_variants(list(cells.index)):
        row = cells.loc[variant]
        attention = read_arrays(row.path, "attention.npz")
        weights = attention["weights"]
        lyr, hd = clamp(layer, weights.shape[1]), clamp(head, weights.shape[2])
        entries.append({"variant": variant, "label": cell_label(row), "layer": lyr, "head": hd,
                        "step": int(attention["steps"][-1]), "text": window_text(attention),
                        "map": np.asarray(weights[-1, lyr, hd], dtype=np.float32)})
    return entries


def query_positions(length: int, n_frames: int) -> np.ndarray:
    """Evenly spaced query positions from an eighth into the window (a few keys visible) to its end."""
    first = min(length - 1, max(1, length // 8))
    return np.unique(np.linspace(first, length - 1, max(2, n_frames)).round().astype(int))


def draw(entries: list[dict], order: list[str], style: dict):
    """The figure and update(frame): every panel shows the attention row of the frame's query position."""
    panels = max(len(entries), 1)
    width = 11 if not entries else max(11.0, 0.1 * len(entries[0]["text"]))  # room to label every character
    fig, axes = plt.subplots(panels, 1, figsize=(width, 2.6 * panels + 1.0), dpi=style["dpi"], squeeze=False)
    axes = axes[:, 0]
    if not entries:
        empty_note(axes[0], "neither softmax nor a kernel variant among the contest cells")
        return fig, lambda i: None, 1
    text = entries[0]["text"]
    length = len(text)
    positions = query_positions(length, int(style["gif_frames"]))
    keys = np.arange(length)
    step = label_every(length, 160)
    ticks = keys[::step]
    top = 1.08 * max(max(float(e["map"][positions].max()) for e in entries), 1e-6)  # one scale for all panels

    def update(frame):
        i = int(positions[frame])
        for ax, entry in zip(axes, entries):
            ax.clear()
            row = entry["map"][i]
            color = variant_color(style, entry["variant"], order)
            ax.bar(keys[: i + 1], row[: i + 1], width=0.85, color=color)
            ax.axvspan(i + 0.5, length - 0.5, color="0.9", zorder=0)
            if i < length - 6:
                ax.text((i + length) / 2, top * 0.9, "future keys (masked)", ha="center", fontsize=8, color="0.4")
            ax.axvline(i, color="0.2", lw=0.8, ls=":")
            ax.set_xlim(-0.5, length - 0.5)
            ax.set_ylim(0, top)
            ax.set_xticks(ticks, [char_label(text[j]) for j in ticks], fontsize=8 if length <= 64 else 7,
                          fontfamily="monospace")
            for label, j in zip(ax.get_xticklabels(), ticks):
                if j == i:
                    label.set_color("crimson")
                    label.set_fontweight("bold")
            ax.set_ylabel("attention weight")
            ax.set_title(f"{entry['label']}, layer {entry['layer']}, head {entry['head']}, step {entry['step']}",
                         fontsize=9, color=color)
        axes[-1].set_xlabel("key (character of the window; query position dotted, its label red)")
        fig.suptitle(f"Reading the window: query {i} = '{char_label(text[i])}' after "
                     f"'{snippet(text, i - 24, i)}'", fontsize=11)
        fig.tight_layout()

    return fig, update, len(positions)


def main(argv: list[str] | None = None) -> int:
    args = cli(__doc__).parse_args(argv)
    style = parse_style(args.style)
    runs, contest = read_tables(args.runs, args.contest)
    entries = load_rows(runs, contest, style["map_layer"], style["map_head"])
    fig, update, n_frames = draw(entries, variant_order(contest, runs), style)
    save_gif(fig, update, n_frames, args.out, frame_ms=400)
    print(f"wrote {args.out} ({n_frames} frames: {', '.join(e['variant'] for e in entries)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
