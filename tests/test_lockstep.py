"""A vmapped pack (attnlab.training.lockstep): one compiled program over the stacked cells gives numbers close
to each cell trained alone. Close, not equal: a batched matmul may sum in another order. The tolerances are
what this CPU measured with margin (printed by `pytest -s`); yat_b, which amplifies rounding, is held over its
first steps only."""

from __future__ import annotations

import copy
import json

import numpy as np
import pandas as pd
import pytest
import yaml

from attnlab.core.bundle_format import cell_dir
from attnlab.core.cell_key import CellKey
from attnlab.core.config import cell_slice, validate_config
from conftest import REPO
from pack_of_one import quiet


def sized(name: str, sha256: str, **train) -> dict:
    """The model of config/<name>.yaml, as a cell slice, trained as `train` says."""
    cfg = validate_config(copy.deepcopy(yaml.safe_load((REPO / "config" / f"{name}.yaml").read_text())))
    sliced = cell_slice(cfg)
    sliced["data"]["sha256"] = sha256
    sliced["train"].update(train)
    return sliced


def curves(root, keys) -> list[pd.DataFrame]:
    return [pd.read_csv(cell_dir(root, k.variant, k.lr, k.seed) / "curve.csv") for k in keys]


def train_both(cfg, keys, corpus, tmp_path):
    from attnlab.training.pack import run_pack

    vmapped = run_pack(cfg, keys, corpus, tmp_path / "vmap", log=quiet, mode="vmap")
    alone = run_pack(cfg, keys, corpus, tmp_path / "alone", log=quiet, mode="sequential")
    return vmapped, alone


@pytest.mark.parametrize("size,steps,tolerance", [("smoke", 60, 1e-5), ("default", 30, 1e-5)])
@pytest.mark.slow
def test_a_vmapped_softmax_pack_follows_each_cell_alone(small_corpus, tmp_path, size, steps, tolerance):
    """At the smoke size over 60 steps; at the default size (its batched matmuls are the build's) over 30: each
    curve read at three evaluations after the first."""
    corpus, sha256 = small_corpus
    cfg = sized(size, sha256, steps=steps, eval_every=steps // 3, eval_batches=2)
    keys = [CellKey.of("softmax", 3e-3, 0), CellKey.of("softmax", 1e-2, 1)]  # another LR and seed in one program
    (vmapped, alone) = train_both(cfg, keys, corpus, tmp_path)
    assert len(vmapped) == len(alone) == 2
    for packed, single in zip(curves(tmp_path / "vmap", keys), curves(tmp_path / "alone", keys)):
        assert list(packed.step) == list(single.step)
        gap = np.abs(packed[["train_loss", "val_loss"]].to_numpy() - single[["train_loss", "val_loss"]].to_numpy())
        print(f"{size}: largest loss gap, vmapped vs alone, over {steps} steps: {np.nanmax(gap):.3g}")
        assert np.nanmax(gap) <= tolerance
    bundle = json.loads((cell_dir(tmp_path / "vmap", "softmax", 0.01, 1) / "bundle.json").read_text())
    assert bundle["provenance"]["pack"]["mode"] == "vmap" and bundle["provenance"]["pack"]["size"] == 2


@pytest.mark.slow
def test_a_vmapped_yat_b_pack_follows_each_cell_alone_over_its_first_steps(small_corpus, tmp_path):
    corpus, sha256 = small_corpus
    cfg = sized("smoke", sha256, steps=10, eval_every=5, eval_batches=2)
    keys = [CellKey.of("yat_b", 3e-3, 0), CellKey.of("yat_b", 3e-3, 1)]
    train_both(cfg, keys, corpus, tmp_path)
    for packed, single in zip(curves(tmp_path / "vmap", keys), curves(tmp_path / "alone", keys)):
        gap = np.abs(packed[["train_loss", "val_loss"]].to_numpy() - single[["train_loss", "val_loss"]].to_numpy())
        print(f"yat_b: largest loss gap, vmapped vs alone, over 10 steps: {np.nanmax(gap):.3g}")
        assert np.nanmax(gap) <= 1e-5


class Killed(Exception):
    pass


@pytest.mark.slow
def test_a_vmapped_pack_resumes_a_cell_from_its_checkpoint_beside_a_fresh_one(small_corpus, tmp_path):
    """A cell a checkpoint put at step 20 waits while its sibling catches up from 0; then they run together."""
    from attnlab.training.pack import run_pack

    corpus, sha256 = small_corpus
    cfg = sized("smoke", sha256, steps=40, eval_every=10, eval_batches=2, checkpoint_every=20)
    keys = [CellKey.of("softmax", 3e-3, 0), CellKey.of("softmax", 3e-3, 1)]

    def killed_after_its_checkpoint(message: str) -> None:
        if "step 30/40" in message:
            raise Killed(message)

    with pytest.raises(Killed):
        run_pack(cfg, keys[:1], corpus, tmp_path / "vmap", checkpoint_dir=tmp_path / "checkpoints",
                 log=killed_after_its_checkpoint, mode="vmap")
    logged = []
    run_pack(cfg, keys, corpus, tmp_path / "vmap", checkpoint_dir=tmp_path / "checkpoints", log=logged.append,
             mode="vmap")
    assert any("resuming softmax lr=0.003 seed=0 from step 20" in line for line in logged), logged
    run_pack(cfg, keys, corpus, tmp_path / "alone", log=quiet, mode="sequential")
    for packed, single in zip(curves(tmp_path / "vmap", keys), curves(tmp_path / "alone", keys)):
        assert list(packed.step) == [0, 10, 20, 30, 40]
        gap = np.abs(packed[["val_loss"]].to_numpy() - single[["val_loss"]].to_numpy())
        assert np.nanmax(gap) <= 1e-5
