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
    """What an animated figure's draw returns: update(i) redraws `fig` as frame i of `frames`.

    With `blit`, update(i) returns the artists that change between frames, in the order they are to be drawn
    (back to front); everything else is drawn once and every frame starts from that image. Most of a full
    redraw is axes, ticks and labels that never change.
    """

    fig: object
    update: Callable[[int], list | None]
    frames: int
    frame_ms: int = 250
    hold_ms: int = 1500  # the last frame stays up this long, so a viewer can read the end state
    colors: int = 255  # at most this many colours in the shared palette
    blit: bool = False


def gif_dpi(style: dict, cap: int = 80) -> int:
    """Animations are drawn at most at `cap` dpi: a page shows them at screen size, and every frame costs bytes."""
    return int(min(style["dpi"], cap))


def grab_frame(fig):
    """The figure as it is drawn now, a Pillow RGB image."""
    from PIL import Image

    fig.canvas.draw()
    return Image.fromarray(np.asarray(fig.canvas.buffer_rgba())[..., :3].copy())


def drawn_frames(animation: Animation) -> list:
    """Every frame as a Pillow RGB image: each one drawn whole, or (blit) the unchanging rest drawn once and
    each frame's changing artists drawn over a copy of it. A blitted animation ends with its artists no longer
    marked animated, so the poster (a normal save) draws them."""
    from PIL import Image

    fig, n_frames = animation.fig, max(1, animation.frames)
    if not animation.blit:
        frames = []
        for i in range(n_frames):
            animation.update(i)
            frames.append(grab_frame(fig))
        return frames
    canvas, background, frames = fig.canvas, None, []
    changing = {}  # every artist some frame changed, once each (frames mostly return the same ones)
    for i in range(n_frames):
        artists = list(animation.update(i) or [])
        for artist in artists:
            artist.set_animated(True)
            changing[id(artist)] = artist
        if background is None:
            canvas.draw()  # skips the animated artists
            background = canvas.copy_from_bbox(fig.bbox)
        else:
            canvas.restore_region(background)
        for artist in artists:
            fig.draw_artist(artist)
        frames.append(Image.fromarray(np.asarray(canvas.buffer_rgba())[..., :3].copy()))
    for artist in changing.values():
        artist.set_animated(False)
    return frames


def save_gif(animation: Animation, out: Path, poster: Path | None = None, poster_dpi: int | None = None) -> Path:
    """Draw every frame, write the GIF whole (temp file, then rename), then the poster of the last frame.

    Frames share one palette, taken from the first and last frames: no flicker
    between frames, and the encoder can reuse unchanged pixels.
    """
    from PIL import Image

    fig, n_frames = animation.fig, max(1, animation.frames)
    grabbed = drawn_frames(animation)
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
