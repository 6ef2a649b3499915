"""Causal attention maps drawn one way in every figure: one colour scale, the masked future blank."""

from __future__ import annotations

import numpy as np

from attnlab.pipeline.figures.window import set_position_ticks


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
    """A configured layer or head index clamped to the model's range."""
    return int(min(max(int(index), 0), size - 1))
