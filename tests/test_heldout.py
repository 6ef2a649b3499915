"""The held-out half: every evaluation reads two fixed halves of the validation windows besides all of them;
choices read the select half, and the report half reads what was chosen on windows no choice saw."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from attnlab.core.bundle_format import CURVE_COLUMNS
from attnlab.training.steps import select_windows
from attnlab.training.summary import held_out


def curve_rows(*evaluations: dict) -> list[list]:
    """Curve rows in CURVE_COLUMNS order, as the trainer keeps them, from {column: value} evaluations."""
    return [[evaluation.get(column, math.nan) for column in CURVE_COLUMNS] for evaluation in evaluations]


def test_the_select_half_is_every_other_window_in_batch_major_order():
    select = np.asarray(select_windows((3, 5)))
    assert select.tolist() == [[1, 0, 1, 0, 1], [0, 1, 0, 1, 0], [1, 0, 1, 0, 1]]


def test_the_held_out_loss_is_the_report_half_where_the_select_half_is_best():
    """The posts' measure is best at step 30, the report half too; the select half is best at step 20, so the
    held-out reading is the report half there, neither the lowest report loss nor the one at the full best."""
    curve = curve_rows({"step": 0, "val_loss": 4.0, "val_loss_select": 4.1, "val_loss_report": 3.9},
                       {"step": 10, "val_loss": 2.50, "val_loss_select": 2.60, "val_loss_report": 2.40},
                       {"step": 20, "val_loss": 2.45, "val_loss_select": 2.55, "val_loss_report": 2.35},
                       {"step": 30, "val_loss": 2.40, "val_loss_select": 2.58, "val_loss_report": 2.22})
    assert held_out(curve) == {"best_val_loss_select": 2.55, "best_val_loss_heldout": 2.35, "best_step_select": 20}
    tie = curve + curve_rows({"step": 40, "val_loss": 2.3, "val_loss_select": 2.55, "val_loss_report": 2.1})
    assert held_out(tie)["best_step_select"] == 20, "a tie goes to the earlier evaluation, as best_step's does"
    nothing = held_out([])
    assert math.isnan(nothing["best_val_loss_heldout"]) and nothing["best_step_select"] is None


@pytest.mark.parametrize("whole_split", [False, True], ids=["sampled-batches", "whole-split"])
def test_the_halves_partition_the_windows_of_every_evaluation(tiny_cfg, small_corpus, tmp_path, whole_split):
    """Through the trainer: each evaluation's full loss is the mean of its two halves weighted by their windows
    (an odd number of windows, so the halves differ in size), the halves read different windows, and the
    bundle's curve and summary record them."""
    from attnlab.core.cell_key import CellKey
    from attnlab.core.corpus import load_corpus
    from attnlab.pipeline.ground.bundle_reader import read_bundle, read_curve
    from pack_of_one import train_alone

    corpus, sha256 = small_corpus
    cfg = copy.deepcopy(tiny_cfg)
    cfg["data"]["sha256"] = sha256
    cfg["train"].update(steps=4, eval_every=2, batch_size=5, eval_batches=3, eval_whole_split=whole_split)
    summary = train_alone(cfg, CellKey.of("softmax", 3e-3, 0), corpus, tmp_path / "cell", log=lambda *_: None)
    block = cfg["model"]["block_size"]
    val = load_corpus(corpus, cfg["data"]["train_fraction"], sha256).val
    windows = len(range(0, len(val) - block, block)) if whole_split else 5 * 3
    n_select, n_report = (windows + 1) // 2, windows // 2
    curve = read_curve(tmp_path / "cell")
    assert list(curve.columns) == list(CURVE_COLUMNS) and list(curve.step) == [0, 2, 4]
    weighted = (n_select * curve.val_loss_select + n_report * curve.val_loss_report) / windows
    np.testing.assert_allclose(weighted, curve.val_loss, rtol=2e-6)
    assert (curve.val_loss_select != curve.val_loss_report).all()
    best = int(curve.val_loss_select.idxmin())
    assert read_bundle(tmp_path / "cell")["best_val_loss_heldout"] == summary["best_val_loss_heldout"]
    assert summary["best_step_select"] == curve.step[best]
    assert summary["best_val_loss_select"] == curve.val_loss_select[best]
    assert summary["best_val_loss_heldout"] == curve.val_loss_report[best]
    assert summary["best_val_loss"] == curve.val_loss.min()
