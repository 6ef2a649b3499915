"""Animated figures: frames drawn by an update function, one shared palette, and a poster of the last frame.

A printed page cannot play a GIF, so every animation also writes its poster,
a PNG of the final frame at the still figures' resolution: the end state the
animation builds up to, which print shows in the GIF's place.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import matplotlib.pyplot as plt
import numpy as np

from attnlab.core.io import atomic_write_bytes
from attnlab.pipeline.figures.save import save_figure


@dataclass
class Animation:
    """What an animated figure's draw returns: update(i) redraws `fig` as frame i of `frames`."""

    fig: object
    update: Callable[[int], None]
    frames: int
    frame_ms: int = 250
    hold_ms: int = 1500  # the last frame stays up this long, so a viewer can read the end state
    colors: int = 255  # at most this many colours in the shared palette


def gif_dpi(style: dict, cap: int = 80) -> int:
    """Animations are drawn at most at `cap` dpi: a page shows them at screen size, and every frame costs bytes."""
    return int(min(style["dpi"], cap))


def grab_frame(fig):
    """The figure as it is drawn now, a Pillow RGB image."""
    from PIL import Image

    fig.canvas.draw()
    return Image.fromarray(np.asarray(fig.canvas.buffer_rgba())[..., :3].copy())


def save_gif(animation: Animation, out: Path, poster: Path | None = None, poster_dpi: int | None = None) -> Path:
    """Draw every frame, write the GIF whole (temp file, then rename), then the poster of the last frame.

    Frames share one palette, taken from the first and last frames: no flicker
    between frames, and the encoder can reuse unchanged pixels.
    """
    from PIL import Image

    fig, n_frames = animation.fig, max(1, animation.frames)
    grabbed = []
    for i in range(n_frames):
        animation.update(i)
        grabbed.append(grab_frame(fig))
    both = Image.new("RGB", (grabbed[0].width, 2 * grabbed[0].height))
    both.paste(grabbed[0], (0, 0))
    both.paste(grabbed[-1], (0, grabbed[0].height))
    palette = both.quantize(colors=animation.colors, method=Image.Quantize.MEDIANCUT)
    # averaging puts the page white at (252, 252, 252), a grey box on a white page: snap near-white back
    entries = palette.getpalette()
    palette.putpalette([255 if min(entries[i - i % 3: i - i % 3 + 3]) >= 245 else value
                        for i, value in enumerate(entries)])
    frames = [frame.quantize(palette=palette, dither=Image.Dither.NONE) for frame in grabbed]
    buffer = io.BytesIO()
    frames[0].save(buffer, format="GIF", save_all=True, append_images=frames[1:], optimize=True,
                   duration=[animation.frame_ms] * (n_frames - 1) + [animation.hold_ms], loop=0, disposal=1)
    atomic_write_bytes(Path(out), buffer.getvalue())
    if poster is not None:  # the figure still shows the last frame: render it again, sharper, uncropped
        save_figure(fig, poster, poster_dpi or fig.dpi, tight=False)
    else:
        plt.close(fig)
    return Path(out)
