"""Causal attention maps drawn one way in every figure: one colour scale, the masked future blank."""

from __future__ import annotations

import numpy as np

from attnlab.pipeline.figures.style import MAX_HEIGHT, TEXT_WIDTH, wrap
from attnlab.pipeline.figures.window import set_position_ticks, window_line

MAP_LABELS = 1.3  # inches of a map figure's width for the query labels and the colour bar
HEADER = 0.85  # inches of a map figure's height for its title and the window's text


def map_norm():
    """Shared colour scale of attention maps: weights in [0, 1], square-root scale so diffuse rows show."""
    from matplotlib.colors import PowerNorm

    return PowerNorm(gamma=0.5, vmin=0.0, vmax=1.0)


def draw_map(ax, weights: np.ndarray, norm, label_x: bool = True, label_y: bool = True):
    """One causal attention map (query rows x key columns, by window position); the masked future is blank."""
    weights = np.asarray(weights, dtype=np.float32)
    length = weights.shape[-1]
    future = np.triu(np.ones((length, length), dtype=bool), k=1)
    image = ax.imshow(np.ma.masked_array(weights, mask=future), cmap="magma", norm=norm,
                      interpolation="nearest", aspect="equal")
    ax.set_facecolor("0.88")
    if label_x:
        set_position_ticks(ax, length, "x")
        ax.set_xlabel("key position", fontsize=7.5)
    else:
        ax.set_xticks([])
    if label_y:
        set_position_ticks(ax, length, "y")
    else:
        ax.set_yticks([])
    return image


def clamp(index: int, size: int) -> int:
    """A configured layer or head index clamped to the model's range."""
    return int(min(max(int(index), 0), size - 1))


def map_figure(style: dict, rows: int, cols: int):
    """A figure of rows x cols square maps as wide as the printed column: its header subfigure (title and the
    window's text) and the body's axes."""
    import matplotlib.pyplot as plt

    side = (TEXT_WIDTH - MAP_LABELS) / max(cols, 1)
    body_height = rows * (side + 0.1) + 0.5
    height = min(HEADER + body_height, MAX_HEIGHT)
    fig = plt.figure(figsize=(TEXT_WIDTH, height), dpi=style["dpi"], layout="constrained")
    header, body = fig.subfigures(2, 1, height_ratios=[HEADER, height - HEADER])
    return fig, header, body, body.subplots(rows, cols, squeeze=False)


def map_header(header, title: str, text: str | None) -> None:
    """The maps' title and, under it, the window they read as one line of text (wrapped when long)."""
    header.suptitle(wrap(title, 0.96 * TEXT_WIDTH), fontsize=9, va="top", y=0.98)
    if text:
        note = (f"the window read, keys 0–{len(text) - 1} (⏎ newline, ␣ space); over the maps, the character of "
                "each ticked key:")
        header.text(0.5, 0.08, note + "\n" + window_line(text, 0.9 * TEXT_WIDTH, 7.5), ha="center", va="bottom",
                    fontsize=7.5, fontfamily="monospace", linespacing=1.3, parse_math=False)


def cell_lines(label: str, width: float, fontsize: float = 7.5) -> str:
    """A cell's label ('softmax (lr 0.003, seed 0)') in lines that fit a map's width."""
    variant, _, rest = label.partition(" (")
    return variant + ("\n" + wrap(rest.rstrip(")"), width, fontsize) if rest else "")
