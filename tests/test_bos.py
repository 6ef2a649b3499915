"""data.bos: a beginning-of-sequence token on every window, off by default (no built cell's identity or number
changes), part of a cell's identity when on, and trained end to end with its first key the token."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from attnlab.core.config import cell_slice, validate_config
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


def test_a_cell_trains_with_the_token_first_in_every_window_and_its_map(tiny_cfg, small_corpus, tmp_path):
    """A tiny cell with data.bos: the stored window starts with the token (read back as ␂), and the same cell
    without it trains other numbers from the same stream."""
    from attnlab.core.cell_key import CellKey
    from attnlab.training.train import run_cell

    corpus, sha256 = small_corpus
    cfg = copy.deepcopy(tiny_cfg)
    cfg["data"]["sha256"] = sha256
    cfg["train"].update(steps=4, eval_every=2)
    plain = run_cell(cfg, CellKey.of("softmax", 3e-3, 0), corpus, tmp_path / "plain", log=lambda *_: None)
    cfg["data"]["bos"] = True
    opened = run_cell(cfg, CellKey.of("softmax", 3e-3, 0), corpus, tmp_path / "bos", log=lambda *_: None)
    assert opened["config"]["data"]["bos"] is True
    attention = np.load(tmp_path / "bos" / "attention.npz")
    assert str(attention["text"])[0] == "\u2402" and int(attention["tokens"][0]) == 16  # 16 characters, then BOS
    assert np.isfinite(opened["best_val_loss"]) and opened["best_val_loss"] != pytest.approx(plain["best_val_loss"])
