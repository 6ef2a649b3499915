"""How every figure looks: the page it is drawn for, the config's `figures` style, one colour and one marker per
variant (from its place in the registry), blank panels.

Every figure is drawn for the printed text column: TEXT_WIDTH inches wide (it
fits A4 and Letter alike), no taller than MAX_HEIGHT (a figure of attention
maps: MAP_MAX_HEIGHT), with lettering sized in points for that page (FONTS,
never under MIN_FONT). The writeup prints each figure at the width it was
drawn at, so a point here is a point on paper
(attnlab.pipeline.report.style.print_scale).

Importing this module selects matplotlib's Agg backend, so a figure job draws
the same off screen on any machine, and sets the figures' font sizes.
"""

from __future__ import annotations

import json
import textwrap
import zlib

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from attnlab.core.config import schema as config_schema  # noqa: E402
from attnlab.core.variants import VARIANTS  # noqa: E402

TEXT_WIDTH = 6.5  # inches: the printed text column (A4 and Letter less their margins are wider)
# inches: a figure, its caption and the line under it (about 1.5 in more) take at most two thirds of a
# printed page's text area (A4 or Letter), so a figure that does not fit where it falls and moves whole to
# the next page leaves the page before it at least a third full
MAX_HEIGHT = 5.0
# inches: a figure of attention maps may grow past MAX_HEIGHT to keep its maps readable (maps.MAP_SIDE), up to
# a page of its own: Letter's text area, the shorter (9.7 in), less its caption and the line under it
MAP_MAX_HEIGHT = 8.0
MIN_FONT = 7.0  # points at printed size: no figure letters anything smaller
# matplotlib's default sizes, in points, for the printed column ('small' and smaller are never used).
FONTS = {"font.size": 8.0, "axes.titlesize": 8.5, "axes.labelsize": 8.0, "xtick.labelsize": 7.5,
         "ytick.labelsize": 7.5, "legend.fontsize": 7.5, "legend.title_fontsize": 7.5, "figure.titlesize": 9.0,
         "figure.labelsize": 8.0}
matplotlib.rcParams.update(FONTS)

LOSS_LABEL = "validation loss (nats/char)"
# Every variant's colour and marker come from its place in the registry (attnlab.core.variants.VARIANTS: the
# built-in variants in the order they were added, then installed ones by name), so a new variant, built in or
# installed, gets its own in every figure with no list to edit, and adding one at the end changes no other's.
# The config's figures.colors overrides a colour. Colours: the Okabe–Ito palette (colour-blind safe), then Tol's
# wine, muted and vibrant palettes, distinct from it; past the palette's end colours repeat, markers never do.
PALETTE = ("#0072B2", "#D55E00", "#E69F00", "#009E73", "#CC79A7", "#F0E442", "#56B4E9", "#000000", "#882255",
           "#44AA99", "#CC6677", "#999933", "#332288", "#117733", "#AA4499", "#DDCC77", "#88CCEE", "#EE3377",
           "#CC3311", "#0077BB", "#EE7733", "#009988", "#BBBBBB")
# matplotlib's named filled markers, then stars and polygons by their points: one marker per variant, the same in
# every figure, so no picture relies on colour alone
MARKERS = ("o", "s", "D", "^", "v", "P", "X", "*", "p", "h", "d", ">", "<", "8", "H", (4, 1, 0), (7, 0, 0),
           (6, 1, 0), (8, 1, 0), (10, 1, 0))
MARKER_EDGE = "0.15"  # a dark rim keeps light colours (yellow, sky blue) visible on white


def default_style() -> dict:
    """The `figures` defaults of the config schema."""
    props = config_schema()["properties"]["figures"]["properties"]
    return {key: sub["default"] for key, sub in props.items() if "default" in sub}


def parse_style(text: str | None) -> dict:
    """The `figures` config section (JSON) over the schema defaults; colours merge per variant."""
    style = default_style()
    given = json.loads(text) if text else {}
    colors = dict(style.get("colors", {}), **given.get("colors", {}))
    style.update(given)
    style["colors"] = colors
    return style


def variant_place(variant: str, order: list[str] | None = None) -> int:
    """A variant's place in the registry; a name the registry does not hold (a test's) after every registered one,
    by its place in `order` or else a stable hash of the name."""
    registered = list(VARIANTS)
    if variant in registered:
        return registered.index(variant)
    index = order.index(variant) if order and variant in order else zlib.crc32(variant.encode()) % 1000
    return len(registered) + index


def variant_color(style: dict, variant: str, order: list[str] | None = None) -> str:
    """The configured colour of a variant, else the palette's at its place in the registry."""
    if variant in style.get("colors", {}):
        return style["colors"][variant]
    return PALETTE[variant_place(variant, order) % len(PALETTE)]


def variant_marker(variant: str, order: list[str] | None = None):
    """The variant's own marker in every figure, from its place in the registry: MARKERS, then stars of ever more
    points."""
    place = variant_place(variant, order)
    if place < len(MARKERS):
        return MARKERS[place]
    return (11 + place - len(MARKERS), 1, 0)  # stars past MARKERS' last (ten points), one more point each


def variant_handle(style: dict, variant: str, order: list[str] | None = None, label: str | None = None, **line):
    """A legend entry showing the variant's colour and marker together."""
    from matplotlib.lines import Line2D

    return Line2D([], [], color=variant_color(style, variant, order), marker=variant_marker(variant, order),
                  mec=MARKER_EDGE, mew=0.6, ms=7, label=variant if label is None else label, **line)


def new_figure(style: dict, height: float, width: float = TEXT_WIDTH, **kwargs):
    """A figure and its axes at the style's resolution, as wide as the printed text column by default."""
    return plt.subplots(figsize=(width, min(height, MAX_HEIGHT)), dpi=style["dpi"], **kwargs)


TEXT_EM = 0.56  # DejaVu Sans, matplotlib's font, averages a little over half an em per character of running text


def wrap(text: str, width: float = TEXT_WIDTH, fontsize: float = FONTS["figure.titlesize"]) -> str:
    """`text` broken into lines that fit `width` inches at `fontsize` points."""
    return textwrap.fill(text, width=max(20, int(width * 72 / (TEXT_EM * fontsize))), break_long_words=False)


def title(fig, text: str, fontsize: float = FONTS["figure.titlesize"]):
    """The figure's title, wrapped to the figure's width."""
    return fig.suptitle(wrap(text, 0.96 * fig.get_figwidth(), fontsize), fontsize=fontsize)


def empty_note(ax, message: str) -> None:
    """A panel that says what is missing instead of silently drawing nothing."""
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, fontsize=8.5, wrap=True)
    ax.set_xticks([])
    ax.set_yticks([])
