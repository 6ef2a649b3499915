"""The seed author's pre-norm GPT skeleton, identical for every variant; only the score module differs.

Exactly as the seed script builds it:
- token and position embeddings with Flax's default nnx.Embed initialiser
  (variance scaling 1/d_model, std about 1/sqrt(d_model)), summed, with no dropout;
- pre-norm blocks (LayerNorm, epsilon 1e-6): attention, then a GELU MLP;
- dropout in exactly two places per block: DROPOUT_SITES below. There is none
  on the embedding sum and none after the attention output projection;
- a final LayerNorm and an untied linear head.

Keys and values may have fewer heads than queries (ModelConfig.kv_heads:
grouped-query attention, 1 = multi-query): query head h uses key/value head
h // (heads / kv_heads). With kv_heads == heads (the default) the projections
are one fused qkv Linear (the seed's multi-head layout), so parameters and their initial values do
not change; otherwise queries get a d x d Linear and keys and values one
d x (2 kv_heads d_head) Linear. Attention is computed densely (the T x T
weights, which the telemetry probe reads) or, with attention_impl
"blockwise", key block by key block (attention.blockwise); probe=True always
takes the dense path. On either path the score function's weights meet the
values through attention_heads below: weights x values unless the score
function owns that step (attention.base.head_outputs). The score module is
built with the variant's own settings (ModelConfig.variant_options).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from attnlab.core.cell import kv_heads_problem
from attnlab.core.config_types import ModelConfig
from attnlab.training.attention import score_class
from attnlab.training.dense import Dense
from attnlab.training.attention.base import ScoreOutput, head_outputs
from attnlab.training.attention.blockwise import blockwise_attention
from attnlab.training.masks import bits16_keep, random_uint16

# Where dropout acts, in the order of the per-layer dropout keys.
DROPOUT_SITES = ("attention_weights", "mlp_output")


def dropout(x: jnp.ndarray, rate: float, key: jax.Array | None, masks: str = "bits16") -> jnp.ndarray:
    """Inverted dropout; a None key means evaluation (identity).

    "bits16" drops the elements whose 16 random bits fall below
    round(rate * 2^16). The realised rate differs from the nominal one by at
    most 2^-17 and kept values are scaled by the realised keep probability, so
    the layer stays unbiased. "bernoulli" is the usual float-uniform mask (the
    plain loop of benchmarks/train_step.py uses it).
    """
    if key is None or rate == 0.0:
        return x
    if masks == "bernoulli":
        return jnp.where(jax.random.bernoulli(key, 1.0 - rate, x.shape), x / (1.0 - rate), 0.0)
    threshold, scale = bits16_keep(rate)
    keep = random_uint16(key, x.shape) >= threshold
    return jnp.where(keep, x * scale, 0.0)


class Attention(nnx.Module):
    def __init__(self, cfg: ModelConfig, *, rngs: nnx.Rngs):
        self.cfg = cfg
        kv_heads = cfg.kv_head_count
        if problem := kv_heads_problem(kv_heads, cfg.heads):
            raise ValueError(problem)
        if cfg.attention_impl not in ("dense", "blockwise"):
            raise ValueError(f"attention_impl {cfg.attention_impl!r}: expected 'dense' or 'blockwise'")
        if cfg.attention_impl == "blockwise" and cfg.dropout > 0 and cfg.dropout_masks != "bits16":
            raise ValueError("the blockwise path draws its dropout masks per key block: it needs dropout_masks "
                             "'bits16'")
        if kv_heads == cfg.heads:
            self.qkv = Dense(cfg.d_model, 3 * cfg.d_model, rngs=rngs)  # the seed's layout and init, exactly
        else:
            self.q = Dense(cfg.d_model, cfg.d_model, rngs=rngs)
            self.kv = Dense(cfg.d_model, 2 * kv_heads * cfg.d_head, rngs=rngs)
        self.proj = Dense(cfg.d_model, cfg.d_model, rngs=rngs)

    def project(self, x) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
        """x (B,T,d) -> q (B,T,H,D) and k, v (B,T,H,D), each key/value head repeated for its group of query heads."""
        batch, length, _ = x.shape
        cfg = self.cfg
        kv_heads = cfg.kv_head_count
        if kv_heads == cfg.heads:
            q, k, v = jnp.split(self.qkv(x), 3, axis=-1)
        else:
            q = self.q(x)
            k, v = jnp.split(self.kv(x), 2, axis=-1)
        q = q.reshape(batch, length, cfg.heads, cfg.d_head)
        group = cfg.heads // kv_heads
        k, v = (jnp.repeat(t.reshape(batch, length, kv_heads, cfg.d_head), group, axis=2) if group > 1
                else t.reshape(batch, length, kv_heads, cfg.d_head) for t in (k, v))
        return q, k, v

    def __call__(self, x, score: nnx.Module, layer: int, weights_key,
                 dense: bool = False) -> tuple[jnp.ndarray, ScoreOutput | None]:
        """Returns (output, ScoreOutput); the blockwise path (unless dense=True) builds no weights: None."""
        batch, length, _ = x.shape
        cfg = self.cfg
        q, k, v = self.project(x)
        block = cfg.attention_block if cfg.attention_impl == "blockwise" and not dense else None
        heads, out = attention_heads(score, q, k, v, layer, block=block, dropout_rate=cfg.dropout,
                                     dropout_key=weights_key, masks=cfg.dropout_masks)
        return self.proj(heads.reshape(batch, length, cfg.d_model)), out


def attention_heads(score: nnx.Module, q, k, v, layer: int, *, block: int | None = None, dropout_rate: float = 0.0,
                    dropout_key: jax.Array | None = None,
                    masks: str = "bits16") -> tuple[jnp.ndarray, ScoreOutput | None]:
    """One layer's head outputs (B,T,H,D) from q, k, v (B,T,H,D), and the dense path's ScoreOutput (None when
    `block` asks for the blockwise path, which builds no weights).

    Either path hands the score function `attend(values)`: its weights, dropped out as training drops them,
    times any per-key values (B,S,H,E). By default the head outputs are attend(v); a score function that owns
    the step after its weights (differential attention's per-head normalisation) defines
    head_outputs(attend, v, layer) and returns them itself (attention.base.head_outputs), the same way on both
    paths.
    """
    if block is not None:
        scorer = score.blockwise(q, k, layer)
        out = None

        def attend(values):
            return blockwise_attention(q, k, values, scorer, block, dropout_rate=dropout_rate,
                                       dropout_key=dropout_key)
    else:
        out = score(q, k, layer)
        weights = dropout(out.weights, dropout_rate, dropout_key, masks)

        def attend(values):
            return jnp.einsum("bhts,bshd->bthd", weights, values)
    return head_outputs(score, attend, v, layer), out


class Block(nnx.Module):
    def __init__(self, cfg: ModelConfig, *, rngs: nnx.Rngs):
        self.cfg = cfg
        self.ln_attn = nnx.LayerNorm(cfg.d_model, rngs=rngs)
        self.attn = Attention(cfg, rngs=rngs)
        self.ln_mlp = nnx.LayerNorm(cfg.d_model, rngs=rngs)
        self.fc_in = Dense(cfg.d_model, cfg.d_ff, rngs=rngs)
        self.fc_out = Dense(cfg.d_ff, cfg.d_model, rngs=rngs)

    def __call__(self, x, score, layer: int, keys, dense: bool = False) -> tuple[jnp.ndarray, ScoreOutput | None]:
        attended, out = self.attn(self.ln_attn(x), score, layer, keys[0], dense)
        x = x + attended
        hidden = jax.nn.gelu(self.fc_in(self.ln_mlp(x)))
        x = x + dropout(self.fc_out(hidden), self.cfg.dropout, keys[1], self.cfg.dropout_masks)
        return x, out


class GPT(nnx.Module):
    """Token + learned position embeddings (or none: ModelConfig.position), pre-norm blocks, final LayerNorm,
    linear head."""

    def __init__(self, cfg: ModelConfig, *, rngs: nnx.Rngs):
        self.cfg = cfg
        self.tok_embed = nnx.Embed(cfg.vocab_size, cfg.d_model, rngs=rngs)  # Flax's default initialiser
        if cfg.position not in ("learned", "none"):
            raise ValueError(f"position {cfg.position!r}: expected 'learned' or 'none'")
        # none: no position embedding; the causal mask alone tells positions apart, and any window length reads
        self.pos_embed = nnx.Embed(cfg.block_size, cfg.d_model, rngs=rngs) if cfg.position == "learned" else None
        self.blocks = nnx.List([Block(cfg, rngs=rngs) for _ in range(cfg.layers)])
        self.ln_final = nnx.LayerNorm(cfg.d_model, rngs=rngs)
        self.head = Dense(cfg.d_model, cfg.vocab_size, rngs=rngs)
        # Created last so the skeleton's initial weights do not depend on the variant.
        self.score = score_class(cfg.variant)(
            layers=cfg.layers, heads=cfg.heads, d_head=cfg.d_head, block_size=cfg.block_size, rngs=rngs,
            a3_embed_dim=cfg.a3_embed_dim, **dict(cfg.variant_options),
        )

    def __call__(self, tokens: jnp.ndarray, dropout_key: jax.Array | None = None, probe: bool = False):
        """tokens (B, T) int -> logits (B, T, V); with probe=True also each layer's ScoreOutput.

        probe=True always computes attention densely (the telemetry reads the weights).
        """
        logits, outputs, _ = self.forward(tokens, dropout_key, probe)
        return (logits, outputs) if probe else logits

    def forward(self, tokens: jnp.ndarray, dropout_key: jax.Array | None = None, dense: bool = False):
        """(logits, each layer's ScoreOutput, each block's output: the residual stream after it (L of
        (B, T, d_model))). One pass for training, evaluation and the telemetry, so what the telemetry reads is
        what trains; unused outputs cost nothing under jit."""
        length = tokens.shape[1]
        x = self.tok_embed(tokens)
        if self.pos_embed is not None:
            x = x + self.pos_embed(jnp.arange(length))[None]
        keys = self._dropout_keys(dropout_key)
        outputs, residuals = [], []
        for layer, block in enumerate(self.blocks):
            x, out = block(x, self.score, layer, keys[layer], dense)
            outputs.append(out)
            residuals.append(x)
        return self.head(self.ln_final(x)), outputs, residuals

    def _dropout_keys(self, key: jax.Array | None) -> list[list[jax.Array | None]]:
        """One key per layer and dropout site (DROPOUT_SITES), or all None for evaluation."""
        sites, layers = len(DROPOUT_SITES), self.cfg.layers
        if key is None or self.cfg.dropout == 0.0:
            return [[None] * sites for _ in range(layers)]
        flat = jax.random.split(key, sites * layers)
        return [[flat[sites * i + j] for j in range(sites)] for i in range(layers)]


def count_params(model: nnx.Module) -> int:
    return int(sum(x.size for x in jax.tree.leaves(nnx.state(model, nnx.Param))))
