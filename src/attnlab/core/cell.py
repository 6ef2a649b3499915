"""What a cell must be before any compute: a known variant, a positive finite LR, a seed numpy and JAX accept.

JAX-free, so the command line refuses a bad cell before it loads JAX; the
trainer checks again for callers that come to it directly.
"""

from __future__ import annotations

import math

from attnlab.core.errors import ConfigError
from attnlab.core.variants import check_variant

SEED_LIMIT = 2**32  # seeds are 0 <= s < 2^32 (numpy's and JAX's seed range)


def check_cell(variant: str, lr: float, seed: int) -> None:
    """Refuse a bad cell, naming the option and the fix."""
    check_variant(variant)
    if not (lr > 0 and math.isfinite(lr)):
        raise ConfigError(f"--lr must be a positive, finite number, got {lr}")
    if not 0 <= seed < SEED_LIMIT:
        raise ConfigError(f"--seed must be in 0 <= seed < 2^32, got {seed}")
