"""The compute-overhead row's timing: every variant's training step in one process, taking turns."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from attnlab.core.config import load_config
from attnlab.pipeline.ground import contract

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_variants_take_turns_in_one_process_and_the_table_keeps_the_contract(tmp_path):
    cfg = load_config(REPO / "config" / "smoke.yaml")
    cell = json.dumps({k: cfg[k] for k in ("data", "model", "train")})
    out = tmp_path / "step_times.csv"
    subprocess.run([sys.executable, "-m", "attnlab.training.step_timing", "--cell-config", cell, "--variants",
                    "softmax", "a3", "--rounds", "3", "--steps", "2", "--out", str(out)], check=True,
                   capture_output=True, text=True)
    table = pd.read_csv(out)
    assert list(table.columns) == contract.columns("step_times")
    assert list(table.variant) == ["softmax", "a3", "a3", "softmax", "softmax", "a3"], "turns, reversed each round"
    assert (table.seconds_per_step > 0).all() and set(table["round"]) == {0, 1, 2}
    assert (table.d_model == cfg["model"]["d_model"]).all() and (table.steps == 2).all()
