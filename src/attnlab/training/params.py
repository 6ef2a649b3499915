"""Parameter counts per variant, from the model's abstract shapes (nothing is initialised)."""

from __future__ import annotations

import jax
from flax import nnx

from attnlab.core.config_types import model_config
from attnlab.core.constants import TINYSHAKESPEARE_VOCAB
from attnlab.training.model import GPT

def parameter_counts(cfg: dict, vocab_size: int = TINYSHAKESPEARE_VOCAB) -> dict[str, int]:
    """Variant -> number of learned scalars at this config (65 characters by default)."""
    counts = {}
    for variant in cfg["variants"]:
        shapes = nnx.eval_shape(lambda v=variant: GPT(model_config(cfg, v, vocab_size), rngs=nnx.Rngs(0)))
        counts[variant] = int(sum(x.size for x in jax.tree.leaves(nnx.state(shapes, nnx.Param))))
    return counts
