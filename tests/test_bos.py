"""data.bos: a beginning-of-sequence token on every window, off by default (no built cell's identity or number
changes), part of a cell's identity when on, and trained end to end with its first key the token."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from attnlab.core.config import cell_slice, validate_config
from attnlab.core.corpus import BOS_GLYPH
from attnlab.core.config_types import bos_token, model_config
from attnlab.training.params import parameter_counts


def with_bos(smoke_config: dict, bos: bool | None) -> dict:
    cfg = copy.deepcopy(smoke_config)
    if bos is not None:
        cfg["data"]["bos"] = bos
    return validate_config(cfg)


def test_off_by_default_and_then_no_cells_identity_changes(smoke_config):
    unset, off, on = (with_bos(smoke_config, b) for b in (None, False, True))
    assert "bos" not in cell_slice(unset)["data"] and cell_slice(unset) == cell_slice(off)
    assert cell_slice(on)["data"]["bos"] is True and cell_slice(on) != cell_slice(unset)
    assert bos_token(unset, 65) is None and bos_token(on, 65) == 65


def test_the_token_adds_one_embedding_row_and_one_head_output(smoke_config):
    off, on = with_bos(smoke_config, False), with_bos(smoke_config, True)
    assert model_config(on, "softmax", 65).vocab_size == 66 == model_config(off, "softmax", 65).vocab_size + 1
    d_model = off["model"]["d_model"]
    grown = {v: parameter_counts(on)[v] - parameter_counts(off)[v] for v in off["variants"]}
    assert set(grown.values()) == {2 * d_model + 1}  # an embedding row, a head column and its bias


@pytest.mark.slow
def test_the_training_loop_feeds_the_token_first_alone_and_in_a_pack():
    """The compiled training chunk (one cell, and a vmapped pack of cells) computes each step's loss on the
    token-first windows: its first step's loss is the loss of those windows built by hand, not of the plain ones."""
    import jax
    import jax.numpy as jnp
    import optax
    from flax import nnx

    from attnlab.core.config_types import ModelConfig
    from attnlab.training.batches import slice_batch
    from attnlab.training.model import GPT
    from attnlab.training.steps import dropout_key, loss_fn, train_chunk, train_chunks

    chars, block, batch = 12, 8, 3
    model = GPT(ModelConfig(vocab_size=chars + 1, d_model=16, layers=1, heads=2, block_size=block, d_ff=32,
                            dropout=0.0, variant="softmax"), rngs=nnx.Rngs(params=0))
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    optimizer = optax.adamw(1e-3)
    tokens = jnp.asarray(np.random.default_rng(0).integers(0, chars, 200), dtype=jnp.int32)
    offsets = jnp.asarray(np.random.default_rng(1).integers(0, 200 - block - 1, (2, batch)), dtype=jnp.int32)
    seed = jnp.asarray(0, dtype=jnp.uint32)
    first = {}
    for bos in (chars, None):
        fresh = jax.tree.map(jnp.copy, params)  # the chunk donates (consumes) the parameters it is given
        _, _, losses = train_chunk(graphdef, rest, optimizer, fresh, optimizer.init(fresh), tokens, offsets, seed,
                                   0, 1, block_size=block, bos=bos)
        x, y = slice_batch(tokens, offsets[0], block, bos)
        first[bos] = float(loss_fn(params, graphdef, rest, x, y, dropout_key(seed, 0)))
        assert float(losses[0]) == pytest.approx(first[bos], rel=1e-5)
    assert first[chars] != pytest.approx(first[None], rel=1e-4)
    stacked = jax.tree.map(lambda a: jnp.stack([a, a]), (params, optimizer.init(params)))
    _, _, pack_losses = train_chunks(graphdef, rest, optimizer, *stacked, tokens, jnp.stack([offsets, offsets]),
                                     jnp.stack([seed, seed]), 0, 1, block_size=block, bos=chars)
    assert np.allclose(np.asarray(pack_losses[:, 0]), first[chars], rtol=1e-5)


@pytest.mark.slow
def test_a_cell_trains_with_the_token_first_in_every_window_and_its_map(tiny_cfg, small_corpus, tmp_path):
    """A tiny cell with data.bos: the stored window starts with the token (read back as ⇤), and the same cell
    without it trains other numbers from the same stream."""
    from attnlab.core.cell_key import CellKey
    from pack_of_one import train_alone

    corpus, sha256 = small_corpus
    cfg = copy.deepcopy(tiny_cfg)
    cfg["data"]["sha256"] = sha256
    cfg["train"].update(steps=4, eval_every=2)
    plain = train_alone(cfg, CellKey.of("softmax", 3e-3, 0), corpus, tmp_path / "plain", log=lambda *_: None)
    cfg["data"]["bos"] = True
    opened = train_alone(cfg, CellKey.of("softmax", 3e-3, 0), corpus, tmp_path / "bos", log=lambda *_: None)
    assert opened["config"]["data"]["bos"] is True
    attention = np.load(tmp_path / "bos" / "attention.npz")
    assert str(attention["text"])[0] == BOS_GLYPH and int(attention["tokens"][0]) == 16  # 16 characters, then BOS
    assert np.isfinite(opened["best_val_loss"]) and opened["best_val_loss"] != pytest.approx(plain["best_val_loss"])
