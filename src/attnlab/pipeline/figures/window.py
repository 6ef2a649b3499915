"""The attention window's characters on a figure: each at the centre of its key column, and the window as text.

A map's key columns are narrower than a readable glyph once the map fits the
printed column, so a map labels every k-th column with its character (k as
small as the column width allows at the figure's smallest font), on the axis
above it, and the whole window is printed once, as text, above the maps.
"""

from __future__ import annotations

import textwrap

import numpy as np

from attnlab.pipeline.figures.style import MIN_FONT

# How window characters that do not print are shown on an axis.
CHAR_GLYPHS = {"\n": "⏎", " ": "␣", "\t": "⇥", "\r": "␍"}


def char_label(char: str) -> str:
    """A window character as an axis label: newline '⏎', space '␣', '$' escaped from mathtext."""
    if char in CHAR_GLYPHS:
        return CHAR_GLYPHS[char]
    if char == "$":
        return r"\$"
    if not char.isprintable():
        return f"\\x{ord(char):02x}"
    return char


def window_text(attention: dict) -> str:
    """The window's characters from attention.npz, cut or padded to the maps' length T."""
    text = str(attention.get("text", ""))
    length = int(np.asarray(attention["weights"]).shape[-1])
    return text[:length].ljust(length, "?")


def position_step(length: int, max_ticks: int = 5) -> int:
    """The spacing of position ticks on a map: a power of two from 4 up, at most `max_ticks` ticks (8 for a
    32-key window), so the numbers never crowd a map the width of a quarter of the printed column."""
    step = 4
    while -(-length // step) > max_ticks:
        step *= 2
    return step


def set_position_ticks(ax, length: int, axis: str = "x", fontsize: float = 7) -> None:
    """Tick window positions 0, k, 2k, ... by number (the characters go on the axis above, set_key_characters)."""
    positions = np.arange(0, length, position_step(length))
    labels = [str(p) for p in positions]
    if axis == "x":
        ax.set_xticks(positions, labels, fontsize=fontsize)
    else:
        ax.set_yticks(positions, labels, fontsize=fontsize)


GLYPH_EM = 0.6  # a monospace glyph's advance, in ems (DejaVu Sans Mono)


def character_step(column_pt: float, fontsize: float = MIN_FONT, gap: float = 1.25) -> int:
    """Label every k-th column so that neighbouring labels of `fontsize` keep `gap` glyphs apart at least."""
    return max(1, int(np.ceil(gap * GLYPH_EM * fontsize / max(column_pt, 1e-6))))


def set_key_characters(axes, text: str, fontsize: float = MIN_FONT) -> list:
    """The window's characters on the axis above each map of `axes`, each at the centre of its key column.

    A map's columns are key positions 0..T-1, centred on whole numbers (imshow). The step between labelled
    columns comes from the narrowest map's column width as drawn, so the figure is laid out first. Returns
    the top axes."""
    axes = [ax for ax in np.ravel(axes) if ax is not None]
    if not axes:
        return []
    fig = axes[0].figure
    fig.canvas.draw()  # lay the figure out, so each map's printed width is known
    length = max(len(text), 1)
    column_pt = min(ax.get_window_extent().width for ax in axes) * 72 / fig.dpi / length
    # the top labels take room from the maps once drawn: keep a tenth in hand
    keys = np.arange(0, len(text), character_step(0.9 * column_pt, fontsize))
    tops = []
    for ax in axes:
        top = ax.secondary_xaxis("top")
        top.set_xticks(keys, [char_label(text[j]) for j in keys], fontsize=fontsize, fontfamily="monospace")
        top.tick_params(length=2, pad=1)
        tops.append(top)
    return tops


def window_line(text: str, width_in: float, fontsize: float = 7.5) -> str:
    """The whole window as monospace text for a figure's header, broken into lines that fit `width_in`."""
    glyphs = "".join(CHAR_GLYPHS.get(c, c if c.isprintable() else "?") for c in text)
    per_line = max(16, int(width_in * 72 / (GLYPH_EM * fontsize)))
    return "\n".join(textwrap.wrap(glyphs, per_line, drop_whitespace=False, break_on_hyphens=False)
                     or [""])


def snippet(text: str, start: int, stop: int) -> str:
    """The window's characters from `start` to `stop` as axis-safe labels."""
    return "".join(char_label(c) for c in text[max(0, start): stop])
