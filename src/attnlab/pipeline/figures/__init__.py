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
FALLBACK_COLORS = ("#1f77b4", "#d62728", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
VARIANT_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
TABLE_FILES = {"runs": "runs.csv", "contest": "contest.csv", "sweep": "lr_sweep.csv"}
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


def variant_marker(variant: str, order: list[str]) -> str:
    """A marker shape per variant, so overlapping points of different variants stay distinguishable."""
    index = order.index(variant) if variant in order else 0
    return VARIANT_MARKERS[index % len(VARIANT_MARKERS)]


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


def set_char_ticks(ax, text: str, axis: str = "x", max_labels: int = 32, fontsize: float = 7) -> None:
    """Tick every k-th window position and label it with its character."""
    step = label_every(len(text), max_labels)
    positions = np.arange(0, len(text), step)
    labels = [char_label(text[i]) for i in positions]
    if axis == "x":
        ax.set_xticks(positions, labels, fontsize=fontsize, fontfamily="monospace")
    else:
        ax.set_yticks(positions, labels, fontsize=fontsize, fontfamily="monospace")


def snippet(text: str, start: int, stop: int) -> str:
    return "".join(char_label(c) for c in text[max(0, start): stop])


# ---- attention maps


def map_norm():
    """Shared colour scale of attention maps: weights in [0, 1], square-root scale so diffuse rows show."""
    from matplotlib.colors import PowerNorm

    return PowerNorm(gamma=0.5, vmin=0.0, vmax=1.0)


def draw_map(ax, weights: np.ndarray, text: str, norm, label_x: bool = True, label_y: bool = True,
             max_labels: int = 16):
    """One causal attention map (query rows x key columns); the masked future is left blank."""
    weights = np.asarray(weights, dtype=np.float32)
    length = weights.shape[-1]
    future = np.triu(np.ones((length, length), dtype=bool), k=1)
    image = ax.imshow(np.ma.masked_array(weights, mask=future), cmap="magma", norm=norm,
                      interpolation="nearest", aspect="equal")
    ax.set_facecolor("0.88")
    if label_x:
        set_char_ticks(ax, text, "x", max_labels=max_labels, fontsize=7)
        ax.set_xlabel("key (character)", fontsize=8)
    else:
        ax.set_xticks([])
    if label_y:
        set_char_ticks(ax, text, "y", max_labels=max_labels, fontsize=7)
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


def save_gif(fig, update, n_frames: int, out: Path, frame_ms: int = 250, hold_ms: int = 1500) -> Path:
    """Call update(i) for each frame, grab it, and write the animation whole (temp file, then rename).

    The last frame stays up for `hold_ms` so a viewer can read the end state.
    """
    from PIL import Image

    frames = []
    for i in range(n_frames):
        update(i)
        frames.append(grab_frame(fig).quantize(colors=255, method=Image.Quantize.FASTOCTREE))
    plt.close(fig)
    buffer = io.BytesIO()
    frames[0].save(buffer, format="GIF", save_all=True, append_images=frames[1:],
                   duration=[frame_ms] * (n_frames - 1) + [hold_ms], loop=0, disposal=1)
    atomic_write_bytes(Path(out), buffer.getvalue())
    return Path(out)


# ---- command line


def cli(description: str, tables: tuple[str, ...] = ("runs", "contest")) -> argparse.ArgumentParser:
    """The arguments every figure takes: its tables, the style JSON and the output path."""
    parser = argparse.ArgumentParser(description=description)
    for name in tables:
        parser.add_argument(f"--{name}", required=True, type=Path, help=f"results/tables/{TABLE_FILES[name]}")
    parser.add_argument("--style", default="{}", help="JSON of the config's `figures` section")
    parser.add_argument("--out", required=True, type=Path)
    return parser
