"""Shared plumbing of the figure modules: style, variant colours, which cells to show, atomic saves.

Each figure is one module (`python -m attnlab.pipeline.figures.<name> ... --out PATH`)
that reads tables and bundles only, never trains and never recomputes what a
bundle holds. This package keeps what they share, so each module is only its
picture.
"""

from __future__ import annotations

import argparse
import io
import json
import zlib
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from attnlab.core.bundle_format import format_lr  # noqa: E402
from attnlab.core.config import schema as config_schema  # noqa: E402
from attnlab.pipeline.paths import workspace_of  # noqa: E402
from attnlab.core.io import atomic_write_bytes  # noqa: E402

LOSS_LABEL = "validation loss (nats/char)"
# Okabe–Ito, the colour-blind-safe palette the schema's defaults are drawn from; for variants the
# config does not colour.
FALLBACK_COLORS = ("#0072B2", "#D55E00", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#000000", "#F0E442")
# One marker per variant, the same in every figure, so no picture relies on colour alone.
VARIANT_MARKERS = {"softmax": "o", "yat": "s", "yat_b": "D", "a3": "^", "yat_exp": "v", "yat_b_exp": "P",
                   "softmax_t": "X", "a3_heads": "*"}
SPARE_MARKERS = ("h", "p", "<", ">", "d", "8")
MARKER_EDGE = "0.15"  # a dark rim keeps light colours (yellow, sky blue) visible on white
TABLE_FILES = {"runs": "runs.csv", "contest": "contest.csv", "sweep": "lr_sweep.csv", "score_scale": "score_scale.csv",
               "best_lr": "best_lr.csv"}
# How window characters that do not print are shown on an axis.
CHAR_GLYPHS = {"\n": "⏎", " ": "␣", "\t": "⇥", "\r": "␍"}


# ---- style


def default_style() -> dict:
    """The `figures` defaults of the config schema (the single place they are written)."""
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


def variant_color(style: dict, variant: str, order: list[str] | None = None) -> str:
    """The configured colour of a variant, else a stable fallback from its place in `order`."""
    if variant in style.get("colors", {}):
        return style["colors"][variant]
    index = order.index(variant) if order and variant in order else zlib.crc32(variant.encode())
    return FALLBACK_COLORS[index % len(FALLBACK_COLORS)]


def variant_marker(variant: str, order: list[str] | None = None) -> str:
    """The variant's own marker in every figure; a variant without one gets a spare by its place in `order`."""
    if variant in VARIANT_MARKERS:
        return VARIANT_MARKERS[variant]
    index = order.index(variant) if order and variant in order else zlib.crc32(variant.encode())
    return SPARE_MARKERS[index % len(SPARE_MARKERS)]


def variant_handle(style: dict, variant: str, order: list[str] | None = None, label: str | None = None, **line):
    """A legend entry showing the variant's colour and marker together."""
    from matplotlib.lines import Line2D

    return Line2D([], [], color=variant_color(style, variant, order), marker=variant_marker(variant, order),
                  mec=MARKER_EDGE, mew=0.6, ms=7, label=variant if label is None else label, **line)


# ---- which cells a figure shows


def read_tables(runs_path: Path, contest_path: Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    runs = pd.read_csv(runs_path)
    runs["path"] = [str(resolve_bundle(p, runs_path)) for p in runs["path"]]
    contest = pd.read_csv(contest_path) if contest_path is not None else None
    return runs, contest


def resolve_bundle(path: str, runs_path: Path) -> Path:
    """A bundle path from runs.csv: relative to the working dir, else to the workspace of runs.csv."""
    path = Path(path)
    if path.is_absolute() or path.exists():
        return path
    workspace = workspace_of(runs_path)
    return workspace / path if (workspace / path).exists() else path


def variant_order(contest: pd.DataFrame, runs: pd.DataFrame | None = None) -> list[str]:
    """Variants in the contest table's order (the config's), then any others that ran."""
    order = list(dict.fromkeys(contest.variant))
    if runs is not None:
        order += [v for v in dict.fromkeys(runs.variant) if v not in order]
    return order


def contest_cells(runs: pd.DataFrame, contest: pd.DataFrame) -> pd.DataFrame:
    """Every seed of every variant at that variant's contest LR, in contest order."""
    parts = []
    for row in contest.itertuples():
        cells = runs[(runs.variant == row.variant) & np.isclose(runs.lr.astype(float), float(row.lr))]
        if "seeds" in contest.columns:  # only the contest's seeds, as in the contest table
            cells = cells[cells.seed.isin([int(s) for s in str(row.seeds).split()])]
        parts.append(cells.sort_values("seed"))
    if not parts:
        return runs.iloc[0:0]
    return pd.concat(parts).reset_index(drop=True)


def shown_cells(runs: pd.DataFrame, contest: pd.DataFrame) -> pd.DataFrame:
    """One cell per variant for per-variant pictures: the contest LR at the smallest (sweep) seed."""
    cells = contest_cells(runs, contest)
    return cells.groupby("variant", sort=False).head(1).reset_index(drop=True)


def cell_label(row) -> str:
    return f"{row.variant} (lr {format_lr(row.lr)}, seed {int(row.seed)})"


# ---- window characters


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
    return "".join(char_label(c) for c in text[max(0, start): stop])


# ---- attention maps


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
        ax.set_xlabel("key position", fontsize=8)
    else:
        ax.set_xticks([])
    if label_y:
        set_position_ticks(ax, length, "y")
    else:
        ax.set_yticks([])
    return image


def clamp(index: int, size: int) -> int:
    return int(min(max(int(index), 0), size - 1))


# ---- figures and saving


def new_figure(style: dict, width: float, height: float, **kwargs):
    return plt.subplots(figsize=(width, height), dpi=style["dpi"], **kwargs)


def empty_note(ax, message: str) -> None:
    """A panel that says what is missing instead of silently drawing nothing."""
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, fontsize=10, wrap=True)
    ax.set_xticks([])
    ax.set_yticks([])


def save_figure(fig, out: Path, dpi: int) -> Path:
    """Render a still figure in memory and write it whole (temp file, then rename)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format=Path(out).suffix.lstrip(".") or "png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    atomic_write_bytes(Path(out), buffer.getvalue())
    return Path(out)


def grab_frame(fig):
    """The figure as it is drawn now, a Pillow RGB image."""
    from PIL import Image

    fig.canvas.draw()
    return Image.fromarray(np.asarray(fig.canvas.buffer_rgba())[..., :3].copy())


def save_gif(fig, update, n_frames: int, out: Path, frame_ms: int = 250, hold_ms: int = 1500,
             colors: int = 255) -> Path:
    """Call update(i) for each frame, grab it, and write the animation whole (temp file, then rename).

    The last frame stays up for `hold_ms` so a viewer can read the end state. Frames share
    one palette of at most `colors` colours, taken from the first and last frames.
    """
    from PIL import Image

    grabbed = []
    for i in range(n_frames):
        update(i)
        grabbed.append(grab_frame(fig))
    plt.close(fig)
    # one palette for every frame: no flicker between frames, and the encoder can reuse unchanged pixels
    both = Image.new("RGB", (grabbed[0].width, 2 * grabbed[0].height))
    both.paste(grabbed[0], (0, 0))
    both.paste(grabbed[-1], (0, grabbed[0].height))
    palette = both.quantize(colors=colors, method=Image.Quantize.MEDIANCUT)
    # averaging puts the page white at (252, 252, 252), a grey box on a white page: snap near-white back
    entries = palette.getpalette()
    palette.putpalette([255 if min(entries[i - i % 3: i - i % 3 + 3]) >= 245 else value
                        for i, value in enumerate(entries)])
    frames = [frame.quantize(palette=palette, dither=Image.Dither.NONE) for frame in grabbed]
    buffer = io.BytesIO()
    frames[0].save(buffer, format="GIF", save_all=True, append_images=frames[1:], optimize=True,
                   duration=[frame_ms] * (n_frames - 1) + [hold_ms], loop=0, disposal=1)
    atomic_write_bytes(Path(out), buffer.getvalue())
    return Path(out)


def gif_dpi(style: dict, cap: int = 80) -> int:
    """Animations are drawn at most at `cap` dpi: a page shows them at screen size, and every frame costs bytes."""
    return int(min(style["dpi"], cap))


# ---- command line


def cli(description: str, tables: tuple[str, ...] = ("runs", "contest")) -> argparse.ArgumentParser:
    """The arguments every figure takes: its tables, the style JSON and the output path."""
    parser = argparse.ArgumentParser(description=description)
    for name in tables:
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, required=True, type=Path,
                            help=f"results/tables/{TABLE_FILES[name]}")
    parser.add_argument("--style", default="{}", help="JSON of the config's `figures` section")
    parser.add_argument("--out", required=True, type=Path)
    return parser
