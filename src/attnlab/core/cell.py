"""What a cell must be before any compute: a known variant, a positive finite LR, a seed numpy and JAX accept,
and key/value heads that group its query heads evenly.

JAX-free, so a command line refuses a bad cell before it loads JAX. Each
command line that trains (attnlab train, python -m attnlab.training.train)
calls check_cell once; the config loader, the model and the attention
benchmark share kv_heads_problem.
"""

from __future__ import annotations

import math

from attnlab.core.errors import ConfigError
from attnlab.core.variants import check_variant

SEED_BITS = 32
SEED_LIMIT = 2**SEED_BITS  # seeds are 0 <= s < 2^32 (numpy's and JAX's seed range)


def check_cell(variant: str, lr: float, seed: int) -> None:
    """Refuse a bad cell, naming the option and the fix."""
    check_variant(variant)
    if not (lr > 0 and math.isfinite(lr)):
        raise ConfigError(f"--lr must be a positive, finite number, got {lr}")
    if not 0 <= seed < SEED_LIMIT:
        raise ConfigError(f"--seed must be in 0 <= seed < 2^{SEED_BITS}, got {seed}")


def kv_heads_problem(kv_heads: int, heads: int) -> str | None:
    """Why `kv_heads` key/value heads cannot serve `heads` query heads (None when they can).

    Each key/value head serves a whole group of query heads, so kv_heads must
    divide heads: heads is multi-head attention, 1 multi-query, any other
    divisor grouped-query.
    """
    if kv_heads >= 1 and heads % kv_heads == 0:
        return None
    divisors = ", ".join(str(d) for d in range(1, heads + 1) if heads % d == 0)
    return (f"kv_heads {kv_heads} does not divide heads {heads}; each key/value head serves a whole group of "
            f"query heads, so pick one of {divisors}")
