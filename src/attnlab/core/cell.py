"""What a cell must be before any compute: a known variant, a positive finite LR, a seed numpy and JAX accept,
and key/value heads that group its query heads evenly.

JAX-free, so a command line refuses a bad cell before it loads JAX. Each
command line that trains (attnlab train, python -m attnlab.training.pack)
calls check_cell once and checks --threads and --checkpoint-dir here; the
config loader, the model and the attention benchmark share kv_heads_problem.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from attnlab.core.cell_key import CellKey
from attnlab.core.errors import ConfigError
from attnlab.core.variants import check_variant

SEED_BITS = 32
SEED_LIMIT = 2**SEED_BITS  # seeds are 0 <= s < 2^32 (numpy's and JAX's seed range)


def check_cell(variant: str, lr: float, seed: int) -> CellKey:
    """The cell's key, or a refusal naming the option and the fix."""
    check_variant(variant)
    if not (lr > 0 and math.isfinite(lr)):
        raise ConfigError(f"--lr must be a positive, finite number, got {lr}")
    if not 0 <= seed < SEED_LIMIT:
        raise ConfigError(f"--seed must be in 0 <= seed < 2^{SEED_BITS}, got {seed}")
    return CellKey.of(variant, lr, seed)


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


def at_least_one(noun: str, example: int = 1):
    """An argparse type for a count of `noun` (threads, runs): a whole number of at least 1."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of {noun}, e.g. {example}") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
        return value

    parse.__name__ = f"count of {noun}"  # argparse names the type by it in its messages
    return parse


def checkpoint_root_problem(root: Path) -> str:
    """Why a checkpoint root cannot be used ('' when it can): the filesystem root, or a file."""
    resolved = Path(root).resolve()
    if resolved.parent == resolved:
        return ("the filesystem root cannot hold the trainer's folders; pass a folder of its own, e.g. "
                "results/checkpoints")
    if resolved.exists() and not resolved.is_dir():
        return "is a file, not a folder; pass a folder (it may hold other files) or a path that does not exist yet"
    return ""
