"""The seed author's pre-norm GPT skeleton, identical for every variant; only the score module differs.

Exactly as the seed script builds it:
- token and position embeddings with Flax's default nnx.Embed initialiser
  (variance scaling 1/d_model, std about 1/sqrt(d_model)), summed, with no dropout;
- pre-norm blocks (LayerNorm, epsilon 1e-6): attention, then a GELU MLP;
- dropout in exactly two places per block: DROPOUT_SITES below. There is none
  on the embedding sum and none after the attention output projection;
- a final LayerNorm and an untied linear head.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from attnlab.core.config_types import ModelConfig
from attnlab.training.attention import score_class
from attnlab.training.attention.base import ScoreOutput
from attnlab.training.masks import random_uint16

# Where dropout acts, in the order of the per-layer dropout keys.
DROPOUT_SITES = ("attention_weights", "mlp_output")


def dropout(x: jnp.ndarray, rate: float, key: jax.Array | None, masks: str = "bits16") -> jnp.ndarray:
    """Inverted dropout; a None key means evaluation (identity).

    "bits16" drops the elements whose 16 random bits fall below
    round(rate * 2^16). The realised rate differs from the nominal one by at
    most 2^-17 and kept values are scaled by the realised keep probability, so
    the layer stays unbiased. "bernoulli" is the usual float-uniform mask (the
    plain loop of attnlab.training.bench uses it).
    """
    if key is None or rate == 0.0:
        return x
    if masks == "bernoulli":
        return jnp.where(jax.random.bernoulli(key, 1.0 - rate, x.shape), x / (1.0 - rate), 0.0)
    threshold = round(rate * 65536)
    keep = random_uint16(key, x.shape) >= threshold
    return jnp.where(keep, x * (65536.0 / (65536 - threshold)), 0.0)


class Attention(nnx.Module):
    def __init__(self, cfg: ModelConfig, *, rngs: nnx.Rngs):
        self.cfg = cfg
        self.qkv = nnx.Linear(cfg.d_model, 3 * cfg.d_model, rngs=rngs)
        self.proj = nnx.Linear(cfg.d_model, cfg.d_model, rngs=rngs)

    def __call__(self, x, score: nnx.Module, layer: int, weights_key) -> tuple[jnp.ndarray, ScoreOutput]:
        batch, length, _ = x.shape
        cfg = self.cfg
        q, k, v = jnp.split(self.qkv(x), 3, axis=-1)
        shape = (batch, length, cfg.heads, cfg.d_head)
        q, k, v = q.reshape(shape), k.reshape(shape), v.reshape(shape)
        out = score(q, k, layer)
        weights = dropout(out.weights, cfg.dropout, weights_key, cfg.dropout_masks)
        mixed = jnp.einsum("bhts,bshd->bthd", weights, v).reshape(batch, length, cfg.d_model)
        return self.proj(mixed), out


class Block(nnx.Module):
    def __init__(self, cfg: ModelConfig, *, rngs: nnx.Rngs):
        self.cfg = cfg
        self.ln_attn = nnx.LayerNorm(cfg.d_model, rngs=rngs)
        self.attn = Attention(cfg, rngs=rngs)
        self.ln_mlp = nnx.LayerNorm(cfg.d_model, rngs=rngs)
        self.fc_in = nnx.Linear(cfg.d_model, cfg.d_ff, rngs=rngs)
        self.fc_out = nnx.Linear(cfg.d_ff, cfg.d_model, rngs=rngs)

    def __call__(self, x, score, layer: int, keys) -> tuple[jnp.ndarray, ScoreOutput]:
        attended, out = self.attn(self.ln_attn(x), score, layer, keys[0])
        x = x + attended
        hidden = jax.nn.gelu(self.fc_in(self.ln_mlp(x)))
        x = x + dropout(self.fc_out(hidden), self.cfg.dropout, keys[1], self.cfg.dropout_masks)
        return x, out


class GPT(nnx.Module):
    """Token + learned position embeddings, pre-norm blocks, final LayerNorm, linear head."""

    def __init__(self, cfg: ModelConfig, *, rngs: nnx.Rngs):
        self.cfg = cfg
        self.tok_embed = nnx.Embed(cfg.vocab_size, cfg.d_model, rngs=rngs)  # Flax's default initialiser
        self.pos_embed = nnx.Embed(cfg.block_size, cfg.d_model, rngs=rngs)
        self.blocks = nnx.List([Block(cfg, rngs=rngs) for _ in range(cfg.layers)])
        self.ln_final = nnx.LayerNorm(cfg.d_model, rngs=rngs)
        self.head = nnx.Linear(cfg.d_model, cfg.vocab_size, rngs=rngs)
        # Created last so the skeleton's initial weights do not depend on the variant.
        self.score = score_class(cfg.variant)(
            layers=cfg.layers, heads=cfg.heads, d_head=cfg.d_head, rngs=rngs, a3_embed_dim=cfg.a3_embed_dim
        )

    def __call__(self, tokens: jnp.ndarray, dropout_key: jax.Array | None = None, probe: bool = False):
        """tokens (B, T) int -> logits (B, T, V); with probe=True also each layer's ScoreOutput."""
        length = tokens.shape[1]
        x = self.tok_embed(tokens) + self.pos_embed(jnp.arange(length))[None]
        keys = self._dropout_keys(dropout_key)
        outputs = []
        for layer, block in enumerate(self.blocks):
            x, out = block(x, self.score, layer, keys[layer])
            outputs.append(out)
        logits = self.head(self.ln_final(x))
        return (logits, outputs) if probe else logits

    def _dropout_keys(self, key: jax.Array | None) -> list[list[jax.Array | None]]:
        """One key per layer and dropout site (DROPOUT_SITES), or all None for evaluation."""
        sites, layers = len(DROPOUT_SITES), self.cfg.layers
        if key is None or self.cfg.dropout == 0.0:
            return [[None] * sites for _ in range(layers)]
        flat = jax.random.split(key, sites * layers)
        return [[flat[sites * i + j] for j in range(sites)] for i in range(layers)]


def count_params(model: nnx.Module) -> int:
    return int(sum(x.size for x in jax.tree.leaves(nnx.state(model, nnx.Param))))
