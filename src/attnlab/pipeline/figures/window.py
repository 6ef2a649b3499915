"""The attention window's characters on a figure: axis labels, position ticks and a ruler printed once."""

from __future__ import annotations

import numpy as np

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


def label_every(length: int, max_labels: int) -> int:
    """Label every k-th position so that at most `max_labels` labels show."""
    return max(1, int(np.ceil(length / max(1, max_labels))))


def position_step(length: int) -> int:
    """The spacing of position ticks on a map and of marks on the window ruler: 4 for short windows, else 8."""
    return 4 if length <= 32 else 8


def set_position_ticks(ax, length: int, axis: str = "x", fontsize: float = 7) -> None:
    """Tick window positions 0, k, 2k, ... by number; the characters are printed once, on the window ruler."""
    positions = np.arange(0, length, position_step(length))
    labels = [str(p) for p in positions]
    if axis == "x":
        ax.set_xticks(positions, labels, fontsize=fontsize)
    else:
        ax.set_yticks(positions, labels, fontsize=fontsize)


def window_ruler(text: str) -> tuple[str, str]:
    """Two aligned monospace lines: position numbers every k characters, and the window's characters."""
    step = position_step(len(text))
    ruler = [" "] * (len(text) + 4)
    for position in range(0, len(text), step):
        for offset, digit in enumerate(str(position)):
            ruler[position + offset] = digit
    glyphs = "".join(CHAR_GLYPHS.get(c, c if c.isprintable() else "?") for c in text)
    return "".join(ruler).rstrip(), glyphs


def draw_window_ruler(fig, text: str, fontsize: float = 8, y: float = 0.5) -> None:
    """Print the window the maps read, under its position numbers, across a (sub)figure."""
    ruler, glyphs = window_ruler(text)
    fig.text(0.5, y, f"position  {ruler}\nwindow    {glyphs}", ha="center", va="center", fontsize=fontsize,
             fontfamily="monospace", linespacing=1.5, multialignment="left", parse_math=False)


def ruler_size(length: int, width_in: float) -> float:
    """The font size at which the ruler's 10 + `length` monospace characters fill at most 90% of the width."""
    return float(np.clip(0.9 * width_in * 72 / (0.6 * (length + 10)), 5, 10))


def snippet(text: str, start: int, stop: int) -> str:
    """The window's characters from `start` to `stop` as axis-safe labels."""
    return "".join(char_label(c) for c in text[max(0, start): stop])
