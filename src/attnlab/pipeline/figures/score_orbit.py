"""Analytic (no runs): a query orbits in a 2-D plane; the bilinear score q·k and the Yat score over a grid of keys."""

from __future__ import annotations

import sys

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.cm import ScalarMappable
from matplotlib.colors import BoundaryNorm
from matplotlib.ticker import MaxNLocator

from attnlab.pipeline.figures.gif import Animation, gif_dpi
from attnlab.pipeline.figures.main import figure_main
from attnlab.pipeline.figures.style import TEXT_WIDTH, wrap

EPS = 1.0  # the yat variant's fixed epsilon
RADIUS = 1.5  # of the query's orbit
EXTENT = 3.0  # keys cover [-EXTENT, EXTENT]^2
GRID = 161
LEVELS = 16  # colour bands per panel: a contour-map look that shows the shape and packs into few GIF bytes


def bilinear_score(q: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """q·k for every key (keys: (..., 2))."""
    return keys @ np.asarray(q, dtype=float)


def yat_score(q: np.ndarray, keys: np.ndarray, eps: float = EPS) -> np.ndarray:
    """(q·k)² / (‖q−k‖² + ε) for every key (keys: (..., 2))."""
    q = np.asarray(q, dtype=float)
    return bilinear_score(q, keys) ** 2 / (((keys - q) ** 2).sum(-1) + eps)


def orbit(n_frames: int, radius: float = RADIUS) -> np.ndarray:
    """(n, 2) query positions evenly around a circle, starting on the x axis."""
    angles = np.linspace(0.0, 2 * np.pi, n_frames, endpoint=False)
    return radius * np.stack([np.cos(angles), np.sin(angles)], axis=-1)


def key_grid(extent: float = EXTENT, size: int = GRID) -> np.ndarray:
    axis = np.linspace(-extent, extent, size)
    return np.stack(np.meshgrid(axis, axis), axis=-1)  # (size, size, 2), [row=y, col=x]


def load(tables, style) -> float:
    """Nothing to read: the figure is analytic. Its one input is the Yat kernel's epsilon."""
    return EPS


def draw(eps: float, style: dict) -> Animation:
    keys = key_grid()
    queries = orbit(max(2, int(style["gif_frames"])))
    # fixed colour bands over the whole orbit, so frames compare
    bil_max = RADIUS * EXTENT * np.sqrt(2)
    yat_max = max(float(yat_score(q, keys, eps).max()) for q in queries)
    fig, (left, right) = plt.subplots(1, 2, figsize=(TEXT_WIDTH, 3.5), dpi=gif_dpi(style), layout="constrained")
    panels = [
        {"ax": left, "score": bilinear_score, "cmap": "RdBu_r",
         "levels": MaxNLocator(LEVELS, symmetric=True).tick_values(-bil_max, bil_max),
         "title": "bilinear score $q\\cdot k$\n(softmax's logit, unscaled)"},
        {"ax": right, "score": lambda q, k: yat_score(q, k, eps), "cmap": "magma",
         "levels": MaxNLocator(LEVELS).tick_values(0.0, yat_max),
         "title": r"Yat score $(q\cdot k)^2 / (\|q-k\|^2 + \varepsilon)$" + "\n" + rf"$\varepsilon$ = {eps:g}"},
    ]
    circle = np.linspace(0, 2 * np.pi, 200)
    x, y = keys[..., 0], keys[..., 1]
    for panel in panels:
        ax = panel["ax"]
        panel["norm"] = BoundaryNorm(panel["levels"], plt.get_cmap(panel["cmap"]).N)
        fig.colorbar(ScalarMappable(panel["norm"], panel["cmap"]), ax=ax, shrink=0.85, label="score (unitless)",
                     ticks=panel["levels"][::2])
        panel["bands"] = None
        ax.plot(RADIUS * np.cos(circle), RADIUS * np.sin(circle), ls="--", lw=0.8, color="0.6", zorder=3)
        (panel["point"],) = ax.plot([], [], marker="*", ms=11, color="white", mec="black", ls="none",
                                    label="query q", zorder=4)
        (panel["arrow"],) = ax.plot([], [], color="0.5", lw=1.2, zorder=4)
        ax.set_xlim(-EXTENT, EXTENT)
        ax.set_ylim(-EXTENT, EXTENT)
        ax.set_aspect("equal")
        ax.set_title(panel["title"])
        ax.set_xlabel("key coordinate $k_1$")
        ax.set_ylabel("key coordinate $k_2$")
        ax.legend(loc="lower left")

    def update(frame):
        q = queries[frame]
        for panel in panels:
            if panel["bands"] is not None:
                panel["bands"].remove()
            panel["bands"] = panel["ax"].contourf(x, y, panel["score"](q, keys), levels=panel["levels"],
                                                  cmap=panel["cmap"], norm=panel["norm"], extend="neither",
                                                  zorder=1)
            panel["point"].set_data([q[0]], [q[1]])
            panel["arrow"].set_data([0, q[0]], [0, q[1]])
        angle = np.degrees(np.arctan2(q[1], q[0])) % 360
        fig.suptitle(wrap(f"Scores of every key k for a query q orbiting at |q| = {RADIUS:g} "
                          f"(angle {angle:.0f}°; analytic, no training)"))

    return Animation(fig, update, len(queries), frame_ms=200, hold_ms=200, colors=64)


if __name__ == "__main__":
    sys.exit(figure_main(load, draw))
