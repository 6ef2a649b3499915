"""Not a figure: layer x head heatmaps with each value written in its cell (scalars and A³ gates)."""

from __future__ import annotations

import numpy as np
import matplotlib
from matplotlib.colors import Normalize, TwoSlopeNorm

from attnlab.pipeline.figures.style import MIN_FONT


def centred_norm(values: np.ndarray, centre: float) -> Normalize:
    """A linear colour scale symmetric about `centre` (an init value), so drift either way shows."""
    spread = float(np.nanmax(np.abs(np.asarray(values) - centre))) if np.size(values) else 0.0
    spread = max(spread, 1e-6)
    return Normalize(vmin=centre - spread, vmax=centre + spread)


def bounded_norm(values: np.ndarray, centre: float, lo: float, hi: float) -> Normalize:
    """Like centred_norm for a quantity that lives in [lo, hi] (a sigmoid gate): white at `centre`."""
    values = np.asarray(values, dtype=float)
    vmin = max(lo, min(float(np.nanmin(values)), centre - 1e-3))
    vmax = min(hi, max(float(np.nanmax(values)), centre + 1e-3))
    return TwoSlopeNorm(vcenter=centre, vmin=min(vmin, centre - 1e-6), vmax=max(vmax, centre + 1e-6))


def text_colour(cmap, norm, value: float) -> str:
    """Black on light cells, white on dark ones."""
    red, green, blue, _ = matplotlib.colormaps[cmap](norm(value))
    return "white" if 0.299 * red + 0.587 * green + 0.114 * blue < 0.5 else "black"


def annotation_size(shape: tuple[int, int], width_in: float, chars: int = 6) -> float:
    """Cell text as large as a cell `width_in` / heads inches wide holds `chars` characters ('+0.012'), from
    MIN_FONT up to 9 points."""
    cell_pt = width_in * 72 / max(shape[1], 1)
    return float(np.clip(0.85 * cell_pt / (0.6 * chars), MIN_FONT, 9.0))


def layer_head_heatmap(ax, mean: np.ndarray, std: np.ndarray | None, norm, cmap: str, title: str,
                       digits: int = 3, signed: bool = False):
    """mean (layers, heads) as colours; each cell annotated 'mean' or 'mean ± std' ('+' shown when signed)."""
    mean = np.asarray(mean, dtype=float)
    image = ax.imshow(mean, cmap=cmap, norm=norm, aspect="auto")
    layers, heads = mean.shape
    width_in = ax.get_position().width * ax.figure.get_figwidth()
    size = annotation_size(mean.shape, width_in, chars=digits + (4 if std is not None else 2 + int(signed)))
    for layer in range(layers):
        for head in range(heads):
            value = mean[layer, head]
            text = f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"
            if std is not None and np.isfinite(std[layer, head]):
                text += f"\n± {std[layer, head]:.{digits}f}"
            ax.text(head, layer, text, ha="center", va="center", fontsize=size,
                    color=text_colour(cmap, norm, value))
    ax.set_xticks(range(heads), [str(h) for h in range(heads)])
    ax.set_yticks(range(layers), [str(layer) for layer in range(layers)])
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    ax.set_title(title, fontsize=8)
    return image
