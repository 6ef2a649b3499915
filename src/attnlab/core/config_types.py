"""Typed views of a validated config slice: what a training cell is built from.

Kept apart from the loader (attnlab.core.config) on purpose: training imports
only these, so rewording a config error message changes no training cell's
code fingerprint and retrains nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int  # characters in the corpus (65 for tinyshakespeare)
    d_model: int  # residual width
    layers: int  # transformer blocks
    heads: int  # attention heads per block; d_model must divide evenly
    block_size: int  # context length T
    d_ff: int  # hidden width of the GELU MLP
    dropout: float  # on the attention weights and on the MLP output (the seed's two sites)
    variant: str  # key into attnlab.core.variants.VARIANTS
    a3_embed_dim: int | None = None  # A3's layer/head embedding width (default d_head)
    dropout_masks: str = "bits16"  # "bits16" (fast, see attnlab.training.masks) or "bernoulli"
    kv_heads: int | None = None  # key/value heads shared by groups of query heads: None = heads, 1 = MQA
    attention_impl: str = "dense"  # "dense" (T x T weights) or "blockwise" (keys in blocks, running normaliser)
    attention_block: int = 64  # keys per block of the blockwise path (need not divide block_size)
    position: str = "learned"  # "learned" (an embedding of block_size positions) or "none"
    # this variant's own settings, ((name, value), ...) sorted (model.variant_options; its module declares them and
    # their defaults, attnlab.core.variants.declared_settings): what its score module is built with beyond the shape
    variant_options: tuple[tuple[str, object], ...] = ()

    @property
    def d_head(self) -> int:
        return self.d_model // self.heads

    @property
    def kv_head_count(self) -> int:
        """Key/value heads: kv_heads, or heads when it is None (plain multi-head attention)."""
        return self.heads if self.kv_heads is None else self.kv_heads


@dataclass(frozen=True)
class TrainConfig:
    steps: int  # optimiser steps
    batch_size: int  # sequences per step (and per held-out batch)
    eval_every: int  # steps between validation evaluations
    eval_batches: int  # fixed held-out batches per evaluation
    weight_decay: float  # AdamW weight decay
    checkpoint_every: int  # steps between resumable checkpoints
    diverge_loss: float  # training loss ceiling; above it (or non-finite) the cell stops
    matmul_precision: str = "float32"  # float32, tf32 or bfloat16 (JAX_PRECISION names JAX's spelling of each)
    eval_whole_split: bool = False  # evaluate on every validation character once instead of eval_batches batches
    plateau: "Plateau | None" = None  # stop at a plateau, steps being the ceiling; None: train exactly steps
    context_multiples: tuple[int, ...] = ()  # longer windows (x block_size) the best checkpoint is evaluated at


@dataclass(frozen=True)
class Plateau:
    patience: int  # steps over which the best validation loss must still improve (a multiple of eval_every)
    tolerance: float  # relative improvement at or below which the cell has plateaued
    min_steps: int = 0  # no stop before this step (a slow start is not a plateau)


@dataclass(frozen=True)
class TelemetryConfig:
    snapshot_fractions: tuple[float, ...]  # when the fixed window's attention maps are stored
    entropy_min_keys: int  # rows with fewer visible keys stay out of the entropy statistics
    window_offset: int | None  # None: the seed's fixed window; else a start inside the validation split
    batches: int  # held-out telemetry batches for the final probe


def bos_token(cfg: dict, vocab_size: int) -> int | None:
    """The beginning-of-sequence token's id (one past the corpus's characters) where data.bos is on, else None."""
    return vocab_size if cfg.get("data", {}).get("bos") else None


def model_config(cfg: dict, variant: str, vocab_size: int) -> ModelConfig:
    """The model of one variant over a corpus of vocab_size characters (one more token with data.bos)."""
    m = cfg["model"]
    return ModelConfig(
        vocab_size=vocab_size + (bos_token(cfg, vocab_size) is not None), d_model=m["d_model"],
        layers=m["layers"], heads=m["heads"],
        block_size=m["block_size"], d_ff=m["d_ff"], dropout=float(m["dropout"]), variant=variant,
        a3_embed_dim=m.get("a3_embed_dim"), kv_heads=m.get("kv_heads"),
        attention_impl=m.get("attention_impl", "dense"), attention_block=m.get("attention_block", 64),
        position=m.get("position", "learned"),
        variant_options=tuple(sorted((m.get("variant_options") or {}).get(variant, {}).items())),
    )


def train_config(cfg: dict) -> TrainConfig:
    t = cfg["train"]
    return TrainConfig(
        steps=t["steps"], batch_size=t["batch_size"], eval_every=t["eval_every"], eval_batches=t["eval_batches"],
        weight_decay=float(t["weight_decay"]), checkpoint_every=t.get("checkpoint_every") or t["eval_every"],
        diverge_loss=float(t["diverge_loss"]), matmul_precision=t.get("matmul_precision", "float32"),
        eval_whole_split=bool(t.get("eval_whole_split", False)),
        plateau=Plateau(int(t["plateau"]["patience"]), float(t["plateau"]["tolerance"]),
                        int(t["plateau"].get("min_steps", 0))) if t.get("plateau") else None,
        context_multiples=tuple(sorted(int(m) for m in t.get("eval_context_multiples") or ())),
    )


def telemetry_config(cfg: dict) -> TelemetryConfig:
    t = cfg["telemetry"]
    return TelemetryConfig(
        snapshot_fractions=tuple(float(f) for f in t["snapshot_fractions"]),
        entropy_min_keys=t["entropy_min_keys"], window_offset=t.get("window_offset"),
        batches=t.get("batches") or cfg["train"]["eval_batches"],
    )


def to_json(obj) -> str:
    """Compact, key-sorted JSON: the form config slices travel in (and are compared as params)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


# execution.pack_mode's concrete modes (auto resolves to one of them where the job runs, attnlab.training.pack),
# and the variable the workflow hands the mode through (an execution setting, never a param of the rule)
PACK_MODES = ("sequential", "vmap")
PACK_MODE_ENV = "ATTNLAB_PACK_MODE"

# train.matmul_precision -> the value of JAX's jax_default_matmul_precision that computes it
JAX_PRECISION = {"float32": "float32", "tf32": "tensorfloat32", "bfloat16": "bfloat16"}
