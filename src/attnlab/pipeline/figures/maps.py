"""Causal attention maps drawn one way in every figure: one colour scale, the masked future blank."""

from __future__ import annotations

import textwrap

import numpy as np

from attnlab.core.corpus import BOS_GLYPH
from attnlab.pipeline.figures.style import MAP_MAX_HEIGHT, MAX_HEIGHT, TEXT_EM, TEXT_WIDTH, wrap
from attnlab.pipeline.figures.window import GLYPH_EM, set_position_ticks, window_line


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
    ax.tick_params(length=2, pad=1.5)  # short ticks, as the window characters' above: the width goes to the maps
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

    The maps are as large as the printed column allows, in a figure no taller than MAX_HEIGHT, or, where that
    would make them smaller than MAP_SIDE, no taller than MAP_MAX_HEIGHT (a page of its own); when the height
    is what limits them, the figure is narrower than the column rather than padded to it. fit_maps, once
    everything is drawn, sets the height the maps take. Returns the figure, the body subfigure (for the colour
    bar), the maps' axes and the grid of header and body (for fit_maps)."""
    import matplotlib.pyplot as plt

    rows, cols = max(rows, 1), max(cols, 1)
    width = TEXT_WIDTH
    for _ in range(3):  # the header's height depends on the width, the width on the maps' side
        lines, header = _header(title, text, width)
        fixed = header + MAP_TOP + MAP_FOOT + MAP_BAR + (rows - 1) * MAP_GAP
        side = min((TEXT_WIDTH - MAP_LEFT) / cols, _fitting_side(rows, fixed))
        # narrower than the column only when the height keeps the maps under MAP_SIDE
        width = TEXT_WIDTH if side >= MAP_SIDE else min(TEXT_WIDTH, MAP_LEFT + cols * side)
    lines, header = _header(title, text, width)
    height = header + MAP_TOP + MAP_FOOT + MAP_BAR + (rows - 1) * MAP_GAP + rows * side
    fig = plt.figure(figsize=(width, height), dpi=style["dpi"], layout="constrained")
    fig.get_layout_engine().set(w_pad=1 / 72, wspace=MAP_SPACE)
    grid = fig.add_gridspec(2, 1, height_ratios=[header, height - header])
    top, body = fig.add_subfigure(grid[0]), fig.add_subfigure(grid[1])
    top.suptitle(lines[0], fontsize=9, va="top", y=0.98)
    if lines[1]:
        top.text(0.5, 0.04, lines[1], ha="center", va="bottom", fontsize=7.5, fontfamily="monospace",
                 linespacing=1.3, parse_math=False)
    return fig, body, body.subplots(rows, cols, squeeze=False), grid


def _fitting_side(rows: int, fixed: float) -> float:
    """The largest side `rows` rows of maps may take height for: what MAX_HEIGHT leaves them when that is
    MAP_SIDE or more, else what MAP_MAX_HEIGHT leaves (`fixed`: the figure's height besides the maps)."""
    short = (MAX_HEIGHT - fixed) / rows
    return short if short >= MAP_SIDE else (MAP_MAX_HEIGHT - fixed) / rows


def map_colorbar(body, image, axes, label: str):
    """The maps' one colour scale, a bar under them: beside them it would take the width the maps need."""
    return body.colorbar(image, ax=axes, location="bottom", shrink=0.45, aspect=35, pad=0.02, label=label)


def fit_maps(fig, grid, axes) -> None:
    """Make the figure as tall as its maps need, now that its labels are drawn: each map as wide as its column
    allows, in a figure no taller than MAX_HEIGHT, or MAP_MAX_HEIGHT where MAX_HEIGHT would leave the maps
    smaller than MAP_SIDE. The header keeps its height in inches."""
    maps = [ax for ax in np.ravel(axes) if ax.images]
    if not maps:
        return
    rows = len({round(ax.get_position(original=True).y0, 3) for ax in maps})
    top = fig.subfigs[0]
    for _ in range(5):  # constrained layout moves the labels with the height: a few rounds settle it
        fig.canvas.draw()
        header = top.bbox.height / fig.dpi
        cells = [_cell(ax) for ax in maps]
        cell_w, cell_h = min(w for w, _ in cells), min(h for _, h in cells)
        now = fig.get_figheight()
        filled, readable = now + rows * (cell_w - cell_h), now + rows * (MAP_SIDE - cell_h)  # maps that wide
        height = min(filled, MAX_HEIGHT if readable <= MAX_HEIGHT else MAP_MAX_HEIGHT)
        if abs(height - now) < 0.005:
            break
        fig.set_figheight(height)
        grid.set_height_ratios([header, height - header])


def _cell(ax) -> tuple[float, float]:
    """Width and height in inches of the box the layout gives a map (its square takes the shorter side)."""
    box = ax.get_position(original=True).transformed(ax.get_figure(root=False).transSubfigure)
    return box.width / ax.get_figure(root=True).dpi, box.height / ax.get_figure(root=True).dpi


# inches: a map's side where the page has room, so that a row can be read (a 64-key window's keys 0.55 mm apart)
MAP_SIDE = 1.4
# inches of a map figure beside and around its maps: the query labels left of them, the column titles and the
# window's characters above the top row, the gap between rows, the key positions under the last row and the
# colour bar under those
MAP_LEFT = 0.7
MAP_TOP = 0.45
MAP_GAP = 0.1
MAP_FOOT = 0.4
MAP_BAR = 0.55
MAP_SPACE = 0.04  # between columns of maps (of a map's width), so that their rows of window characters stay apart
# a row's label, left of its first map: set close, so that the maps keep the width
ROW_LABEL = {"fontsize": 7.5, "linespacing": 1.1, "labelpad": 2}


def _header(title: str, text: str | None, width: float) -> tuple[tuple[str, str], float]:
    """The header's lines at `width` inches and its height in inches (9 pt title, 7.5 pt window)."""
    lines = _header_lines(title, text, width)
    height = (lines[0].count("\n") + 1) * 9 * 1.25 / 72 + (
        (lines[1].count("\n") + 1) * 7.5 * 1.3 / 72 if lines[1] else 0) + 0.15
    return lines, height


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
    """A cell's label ('softmax (lr 0.003, seed 0)') in lines that fit a map's width: the variant, then its LR
    and seed, on two lines where one would run into the next map's label."""
    variant, _, rest = label.partition(" (")
    rest = rest.rstrip(")")
    if (len(rest) + 2) * TEXT_EM * fontsize / 72 > width:
        rest = rest.replace(", ", "\n")
    return variant + ("\n" + rest if rest else "")
