"""Analytic (no runs): a query orbits in a 2-D plane; the bilinear score q·k and the Yat score over a grid of keys."""

from __future__ import annotations

import sys

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import Normalize, TwoSlopeNorm

from attnlab.pipeline.figures import cli, parse_style, save_gif

EPS = 1.0  # the yat variant's fixed epsilon
RADIUS = 1.5  # of the query's orbit
EXTENT = 3.0  # keys cover [-EXTENT, EXTENT]^2
GRID = 161


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


def draw(style: dict, eps: float = EPS):
    keys = key_grid()
    queries = orbit(max(2, int(style["gif_frames"])))
    # fixed colour scales over the whole orbit, so frames compare
    bil_max = RADIUS * EXTENT * np.sqrt(2)
    yat_max = max(float(yat_score(q, keys, eps).max()) for q in queries)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.5, 4.9), dpi=style["dpi"], layout="constrained")
    extent = (-EXTENT, EXTENT, -EXTENT, EXTENT)
    bil_img = left.imshow(bilinear_score(queries[0], keys), origin="lower", extent=extent, cmap="RdBu_r",
                          norm=TwoSlopeNorm(vcenter=0.0, vmin=-bil_max, vmax=bil_max))
    yat_img = right.imshow(yat_score(queries[0], keys, eps), origin="lower", extent=extent, cmap="magma",
                           norm=Normalize(vmin=0.0, vmax=yat_max))
    fig.colorbar(bil_img, ax=left, shrink=0.85, label="score (unitless)")
    fig.colorbar(yat_img, ax=right, shrink=0.85, label="score (unitless)")
    circle = np.linspace(0, 2 * np.pi, 200)
    markers = []
    for ax, title in ((left, r"bilinear score $q\cdot k$ (softmax's logit, unscaled)"),
                      (right, rf"Yat score $(q\cdot k)^2 / (\|q-k\|^2 + \varepsilon)$, $\varepsilon$ = {eps:g}")):
        ax.plot(RADIUS * np.cos(circle), RADIUS * np.sin(circle), ls="--", lw=0.8, color="0.6")
        (point,) = ax.plot([], [], marker="*", ms=15, color="white", mec="black", ls="none", label="query q")
        (arrow,) = ax.plot([], [], color="black", lw=1.0)
        markers.append((point, arrow))
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("key coordinate $k_1$")
        ax.set_ylabel("key coordinate $k_2$")
        ax.legend(loc="lower left", fontsize=8)

    def update(frame):
        q = queries[frame]
        bil_img.set_data(bilinear_score(q, keys))
        yat_img.set_data(yat_score(q, keys, eps))
        for point, arrow in markers:
            point.set_data([q[0]], [q[1]])
            arrow.set_data([0, q[0]], [0, q[1]])
        angle = np.degrees(np.arctan2(q[1], q[0])) % 360
        fig.suptitle(f"Scores of every key k for a query q orbiting at |q| = {RADIUS:g} "
                     f"(angle {angle:.0f}°; analytic, no training)")

    return fig, update, len(queries)


def main(argv: list[str] | None = None) -> int:
    args = cli(__doc__, tables=()).parse_args(argv)
    style = parse_style(args.style)
    fig, update, n_frames = draw(style)
    save_gif(fig, update, n_frames, args.out, frame_ms=200, hold_ms=200)
    print(f"wrote {args.out} ({n_frames} frames)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
