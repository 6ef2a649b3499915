"""Windows longer than trained on: a model without position embeddings (model.position: none) reads any length,
and train.eval_context_multiples evaluates the best checkpoint at those lengths, into the context_length table."""

from __future__ import annotations

import copy

import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from attnlab.core.config import ConfigError, cell_slice, validate_config
from attnlab.core.config_types import ModelConfig, model_config, train_config
from attnlab.training.model import GPT, count_params


def small(position: str, variant: str = "softmax") -> GPT:
    cfg = ModelConfig(vocab_size=20, d_model=16, layers=2, heads=2, block_size=8, d_ff=32, dropout=0.0,
                      variant=variant, position=position)
    return GPT(cfg, rngs=nnx.Rngs(params=0))


def with_context(smoke_config: dict, position: str | None, multiples) -> dict:
    cfg = copy.deepcopy(smoke_config)
    if position is not None:
        cfg["model"]["position"] = position
    if multiples is not None:
        cfg["train"]["eval_context_multiples"] = multiples
    return validate_config(cfg)


@pytest.mark.parametrize("variant", ["softmax", "stickbreaking", "ssmax"])
def test_without_position_embeddings_a_model_reads_windows_longer_than_its_block(variant):
    model = small("none", variant)
    tokens = jnp.asarray(np.random.default_rng(0).integers(0, 20, (2, 32)))
    logits = model(tokens)
    assert logits.shape == (2, 32, 20) and bool(jnp.isfinite(logits).all())
    # causal: the first 8 positions' logits do not depend on what follows them
    np.testing.assert_allclose(np.asarray(model(tokens[:, :8])), np.asarray(logits[:, :8]), rtol=2e-5, atol=2e-5)
    assert count_params(small("learned", variant)) - count_params(model) == 8 * 16  # the block's embedding rows


def test_the_defaults_change_no_cell_and_longer_windows_need_no_position_embedding(smoke_config):
    plain = with_context(smoke_config, None, None)
    assert cell_slice(plain) == cell_slice(with_context(smoke_config, "learned", []))
    longer = with_context(smoke_config, "none", [4, 2])
    assert cell_slice(longer)["model"]["position"] == "none"
    assert train_config(longer).context_multiples == (2, 4)
    assert cell_slice(longer) == cell_slice(with_context(smoke_config, "none", [2, 4]))  # one cell, any order
    assert model_config(longer, "softmax", 65).position == "none"
    with pytest.raises(ConfigError, match=r"eval_context_multiples.*needs model\.position: none"):
        with_context(smoke_config, None, [2])


@pytest.mark.slow
def test_a_cell_records_its_loss_at_each_longer_window_and_the_table_reads_it(tiny_cfg, small_corpus, tmp_path):
    from attnlab.core.cell_key import CellKey
    from attnlab.pipeline.tables.telemetry import context_length_rows
    from pack_of_one import train_alone

    corpus, sha256 = small_corpus
    cfg = copy.deepcopy(tiny_cfg)
    cfg["data"]["sha256"] = sha256
    cfg["model"]["position"] = "none"
    cfg["train"].update(steps=4, eval_every=2, eval_context_multiples=[2, 4])
    summary = train_alone(cfg, CellKey.of("stickbreaking", 3e-3, 0), corpus, tmp_path / "out", log=lambda *_: None)
    losses = summary["val_loss_at_context"]
    assert set(losses) == {"1", "2", "4"} and all(np.isfinite(v) for v in losses.values())
    assert losses["1"] == summary["best_val_loss_whole_split"]
    assert len({round(v, 6) for v in losses.values()}) == 3  # each window length is its own evaluation
    rows = context_length_rows({"variant": "stickbreaking", "lr": 3e-3, "seed": 0}, summary)
    block = cfg["model"]["block_size"]
    assert [(r["multiple"], r["context_length"]) for r in rows] == [(1, block), (2, 2 * block), (4, 4 * block)]
    assert rows[0]["vs_trained"] == 1.0 and rows[2]["vs_trained"] == pytest.approx(losses["4"] / losses["1"])


def test_longer_windows_the_validation_split_cannot_hold_are_refused_before_training(tiny_cfg, small_corpus,
                                                                                    tmp_path):
    from attnlab.core.cell_key import CellKey
    from attnlab.core.corpus import CorpusError
    from pack_of_one import train_alone

    corpus, sha256 = small_corpus
    cfg = copy.deepcopy(tiny_cfg)
    cfg["data"]["sha256"] = sha256
    cfg["model"]["position"] = "none"
    cfg["train"].update(steps=4, eval_every=2, eval_context_multiples=[2, 10_000])
    with pytest.raises(CorpusError, match=r"eval_context_multiples 10000 x block_size .* drop that multiple"):
        train_alone(cfg, CellKey.of("softmax", 3e-3, 0), corpus, tmp_path / "out", log=lambda *_: None)
    assert not (tmp_path / "out" / "bundle.json").exists()
