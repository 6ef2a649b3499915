"""train.matmul_precision: a stated setting, part of a cell's identity when it is not the seed's float32, and
recorded in every bundle's provenance."""

from __future__ import annotations

import copy

import pytest

from attnlab.core.config import ConfigError, cell_slice, validate_config
from attnlab.core.config_types import JAX_PRECISION, train_config


def with_precision(smoke_config: dict, precision: str | None) -> dict:
    cfg = copy.deepcopy(smoke_config)
    if precision is not None:
        cfg["train"]["matmul_precision"] = precision
    return validate_config(cfg)


def test_the_default_is_float32_and_leaves_every_built_cells_identity_as_it_was(smoke_config):
    unset, stated = with_precision(smoke_config, None), with_precision(smoke_config, "float32")
    assert train_config(unset).matmul_precision == "float32"
    assert "matmul_precision" not in cell_slice(unset)["train"]
    assert cell_slice(unset) == cell_slice(stated)


@pytest.mark.parametrize("precision", ["tf32", "bfloat16"])
def test_another_precision_is_another_cell(smoke_config, precision):
    sliced = cell_slice(with_precision(smoke_config, precision))
    assert sliced["train"]["matmul_precision"] == precision
    assert sliced != cell_slice(with_precision(smoke_config, None))
    assert train_config(sliced).matmul_precision == precision


def test_an_unknown_precision_is_refused_naming_the_choices(smoke_config):
    with pytest.raises(ConfigError, match=r"train\.matmul_precision.*float32.*tf32.*bfloat16"):
        with_precision(smoke_config, "fp16")


def test_every_choice_names_a_jax_precision():
    import jax

    for name, jax_name in JAX_PRECISION.items():
        with jax.default_matmul_precision(jax_name):
            assert jax.config.jax_default_matmul_precision == jax_name, name


@pytest.mark.slow
def test_the_bundle_records_the_precision_it_trained_at(tiny_cfg, small_corpus, tmp_path):
    from attnlab.core.cell_key import CellKey
    from pack_of_one import train_alone

    corpus, sha256 = small_corpus
    cfg = copy.deepcopy(tiny_cfg)
    cfg["data"]["sha256"] = sha256
    cfg["train"].update(steps=4, eval_every=2)
    summary = train_alone(cfg, CellKey.of("softmax", 3e-3, 0), corpus, tmp_path / "out", log=lambda *_: None)
    assert summary["provenance"]["matmul_precision"] == "float32"
    cfg["train"]["matmul_precision"] = "bfloat16"
    low = train_alone(cfg, CellKey.of("softmax", 3e-3, 0), corpus, tmp_path / "low", log=lambda *_: None)
    assert low["provenance"]["matmul_precision"] == "bfloat16" and low["config"]["train"]["matmul_precision"] == \
        "bfloat16"
