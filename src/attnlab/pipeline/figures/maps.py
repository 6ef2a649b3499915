"""Causal attention maps drawn one way in every figure: one colour scale, the masked future blank."""

from __future__ import annotations

import textwrap

import numpy as np

from attnlab.core.corpus import BOS_GLYPH
from attnlab.pipeline.figures.style import MAX_HEIGHT, TEXT_WIDTH, wrap
from attnlab.pipeline.figures.window import GLYPH_EM, set_position_ticks, window_line

MAP_LABELS = 1.3  # inches of a map figure's width for the query labels and the colour bar


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


def map_figure(style: dict, rows: int, cols: int, title: str, text: str | None):
    """A figure of rows x cols square maps under a header: the title and the window the maps read, as text.

    The maps are as large as the printed column allows, and smaller when that would make the figure taller
    than MAX_HEIGHT; the figure is then narrower than the column rather than padded to it. Returns the figure,
    the body subfigure (for the colour bar) and the maps' axes."""
    import matplotlib.pyplot as plt

    rows, cols = max(rows, 1), max(cols, 1)
    # the header's lines at their sizes (9 pt title, 7.5 pt window) fix its height once the width is known
    side = (TEXT_WIDTH - MAP_LABELS) / cols
    for _ in range(2):  # the header's height depends on the width, the width on the maps' side
        width = min(TEXT_WIDTH, MAP_LABELS + cols * side)
        lines = _header_lines(title, text, width)
        header = (lines[0].count("\n") + 1) * 9 * 1.25 / 72 + (
            (lines[1].count("\n") + 1) * 7.5 * 1.3 / 72 if lines[1] else 0) + 0.15
        side = min((TEXT_WIDTH - MAP_LABELS) / cols, (MAX_HEIGHT - header - MAP_FOOT) / rows - MAP_GAP)
    height = header + rows * (side + MAP_GAP) + MAP_FOOT
    fig = plt.figure(figsize=(width, height), dpi=style["dpi"], layout="constrained")
    top, body = fig.subfigures(2, 1, height_ratios=[header, height - header])
    top.suptitle(lines[0], fontsize=9, va="top", y=0.98)
    if lines[1]:
        top.text(0.5, 0.04, lines[1], ha="center", va="bottom", fontsize=7.5, fontfamily="monospace",
                 linespacing=1.3, parse_math=False)
    return fig, body, body.subplots(rows, cols, squeeze=False)


MAP_GAP = 0.12  # inches between rows of maps (a row's top labels)
MAP_FOOT = 0.5  # inches under the last row: its key positions and their label


def _header_lines(title: str, text: str | None, width: float) -> tuple[str, str]:
    """The title wrapped to `width` inches, and the window's lines (monospace, wrapped likewise)."""
    if not text:
        return wrap(title, 0.96 * width), ""
    token = f", {BOS_GLYPH} the beginning-of-sequence token" if BOS_GLYPH in text else ""
    note = (f"the window read, keys 0–{len(text) - 1} (⏎ newline, ␣ space{token}); over the maps, the character of "
            "each ticked key:")
    per_line = max(16, int(0.95 * width * 72 / (GLYPH_EM * 7.5)))
    return wrap(title, 0.96 * width), "\n".join(textwrap.wrap(note, per_line) + [window_line(text, 0.95 * width)])


def cell_lines(label: str, width: float, fontsize: float = 7.5) -> str:
    """A cell's label ('softmax (lr 0.003, seed 0)') in lines that fit a map's width."""
    variant, _, rest = label.partition(" (")
    return variant + ("\n" + wrap(rest.rstrip(")"), width, fontsize) if rest else "")
