"""A still figure written whole: rendered in memory, then a temp file renamed into place."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib.pyplot as plt

from attnlab.core.io import atomic_write_bytes


def save_figure(fig, out: Path, dpi: int, tight: bool = True) -> Path:
    """Render `fig` in the format its suffix names (PNG by default), close it and write the file atomically."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format=Path(out).suffix.lstrip(".") or "png", dpi=dpi,
                bbox_inches="tight" if tight else None)
    plt.close(fig)
    atomic_write_bytes(Path(out), buffer.getvalue())
    return Path(out)
