"""Figures: the analytic scores, the window's character labels, diverged cells, and every figure from tiny bundles."""

from __future__ import annotations

import importlib
import json
import math

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from attnlab.training.bundle_writer import write_bundle


def save_stand_in_params(folder):
    """Figures never read parameters; a bundle still lists (and hashes) a params/ folder."""
    folder.mkdir()
    (folder / "stand_in.bin").write_bytes(b"\x00" * 8)
from attnlab.pipeline.figures import (char_label, contest_cells, label_every, parse_style, set_char_ticks, shown_cells,
                             variant_color)
from attnlab.pipeline.figures import lr_sweep, score_orbit

FIGURE_MODULES = ("loss_curves", "lr_sweep", "depth_grid", "training_maps", "reading", "score_orbit", "scalars",
                  "a3_gates", "entropy")
TINY_STYLE = json.dumps({"dpi": 40, "gif_frames": 3, "map_layer": 9, "map_head": 9})


# ---- the analytic score orbit


def test_orbit_scores_match_their_formulas():
    rng = np.random.default_rng(0)
    q = np.array([1.5, -0.5])
    keys = rng.normal(size=(7, 2))
    for k, bil, yat in zip(keys, score_orbit.bilinear_score(q, keys), score_orbit.yat_score(q, keys, eps=0.5)):
        dot = q[0] * k[0] + q[1] * k[1]
        assert bil == pytest.approx(dot)
        assert yat == pytest.approx(dot**2 / ((q[0] - k[0]) ** 2 + (q[1] - k[1]) ** 2 + 0.5))
    # at the query itself the kernel is |q|^4 / eps; orthogonal keys score 0
    assert score_orbit.yat_score(q, q[None], eps=1.0)[0] == pytest.approx(np.dot(q, q) ** 2)
    assert score_orbit.yat_score(q, np.array([[0.5, 1.5]]))[0] == pytest.approx(0.0)
    grid = score_orbit.key_grid(extent=2.0, size=5)
    assert grid.shape == (5, 5, 2) and score_orbit.bilinear_score(q, grid).shape == (5, 5)
    assert np.linalg.norm(score_orbit.orbit(6), axis=1) == pytest.approx(np.full(6, score_orbit.RADIUS))


# ---- window characters and style


def test_char_label_shows_invisible_characters():
    assert char_label("\n") == "⏎"
    assert char_label(" ") == "␣"
    assert char_label("a") == "a"
    assert char_label("$") == r"\$"  # no accidental mathtext between two dollar signs


def test_crowded_windows_label_every_kth_character():
    import matplotlib.pyplot as plt

    assert label_every(32, 32) == 1
    assert label_every(128, 32) == 4
    text = "To be,\nor not to be " * 7  # 133 characters
    fig, ax = plt.subplots()
    set_char_ticks(ax, text, "x", max_labels=20)
    labels = [t.get_text() for t in ax.get_xticklabels()]
    plt.close(fig)
    assert len(labels) <= 20
    step = label_every(len(text), 20)
    assert labels == [char_label(c) for c in text[::step]]


def test_style_fills_schema_defaults_and_merges_colours():
    style = parse_style(json.dumps({"dpi": 50, "colors": {"yat": "#000000"}}))
    assert style["dpi"] == 50 and style["gif_frames"] >= 2
    assert variant_color(style, "yat") == "#000000"
    assert variant_color(style, "softmax").startswith("#")  # schema default kept
    assert variant_color(style, "new_variant", ["softmax", "new_variant"]).startswith("#")


# ---- which cells are shown


def test_shown_cell_is_the_contest_lr_at_the_smallest_seed():
    runs = pd.DataFrame({
        "variant": ["yat", "yat", "yat", "softmax", "softmax"],
        "lr": [0.003, 0.003, 0.01, 0.0003, 0.0003],
        "seed": [2, 1, 0, 1, 0],
        "path": list("abcde"),
    })
    contest = pd.DataFrame({"variant": ["softmax", "yat"], "lr": [0.0003, 0.003]})
    assert list(contest_cells(runs, contest).path) == ["e", "d", "b", "a"]
    shown = shown_cells(runs, contest)
    assert list(zip(shown.variant, shown.seed)) == [("softmax", 0), ("yat", 1)]


# ---- the LR sweep never plots a diverged cell as a number


def test_lr_sweep_marks_diverged_cells_instead_of_plotting_them():
    sweep = pd.DataFrame({
        "variant": ["softmax"] * 3 + ["yat"] * 3,
        "lr": [1e-3, 3e-3, 1e-2] * 2,
        "best_val_loss": [1.60, 1.55, 1.52, 1.58, 1.56, float("nan")],
        "final_val_loss": [1.60, 1.55, 9.0, 1.58, 1.56, float("nan")],
        "diverged": [False, False, True, False, False, False],
        "diverged_step": [None, None, 4312, None, None, None],
    })
    contest = pd.DataFrame({"variant": ["softmax", "yat"], "lr": [3e-3, 3e-3]})
    fig, marks = lr_sweep.draw(sweep, contest, parse_style(TINY_STYLE))
    assert ("softmax", 0.01, 4312) in marks["diverged"]
    assert ("yat", 0.01, None) in marks["diverged"]  # a non-finite loss is marked too, never dropped
    assert len(marks["points"]) + len(marks["diverged"]) == len(sweep)
    assert all(not (v == "softmax" and lr == 0.01) for v, lr, _ in marks["points"])
    ax = fig.axes[0]
    plotted = np.concatenate([line.get_ydata() for line in ax.lines if line.get_transform() == ax.transData])
    assert not np.any(np.isclose(plotted.astype(float), 1.52)), "the diverged cell's loss was drawn as a number"
    assert any("diverged @ step 4312" in t.get_text() for t in ax.texts)


# ---- every figure from tiny synthetic bundles


def _cell(root, variant, lr, seed, layers=2, heads=2, length=12, diverged=False):
    rng = np.random.default_rng(seed + int(lr * 1e4))
    steps = [0, 2, 5, 10]
    raw = rng.random((len(steps), layers, heads, length, length)) * np.tril(np.ones((length, length)))
    weights = (raw / raw.sum(-1, keepdims=True)).astype(np.float16)
    text = "Good\nmorrow, $a"[:length]
    curve = pd.DataFrame({"step": [0, 5, 10], "train_loss": [np.nan, 3.0, 2.5],
                          "val_loss": [4.2, 3.1 + lr, 2.6 + lr + 0.01 * seed], "elapsed_s": [0.0, 0.1, 0.2]})
    telemetry = {"max_score": rng.random((2, layers)), "correct": rng.random((2, 2, length)) > 0.5,
                 "entropy_hist": rng.integers(0, 9, size=(layers, 50))}
    summary_t = {"entropy": {"mean": 0.6, "share_sharp": 0.1, "share_diffuse": 0.3}, "max_score": 5.0}
    learned = {}
    if variant == "yat_b":
        learned = {"b": rng.random((layers, heads)).tolist(), "eps": rng.random((layers, heads)).tolist()}
    if variant == "a3":
        for name in ("gate_mean", "gate_std", "bias_mean", "bias_std"):
            summary_t[f"a3_{name}"] = rng.random((layers, heads)).tolist()
    summary = {
        "variant": variant, "lr": lr, "seed": seed, "config": {"train": {"steps": 10}}, "provenance": {},
        "n_params": 100, "best_val_loss": float(curve.val_loss.min()), "final_val_loss": float(curve.val_loss.iloc[-1]),
        "best_val_bpc": 3.0, "diverged": diverged, "diverged_step": 7 if diverged else None, "wall_time_s": 0.2,
        "steps_per_s": 50.0, "telemetry": summary_t, **({"learned": learned} if learned else {}),
    }
    attention = {"steps": np.array(steps), "tokens": np.arange(length), "text": np.array(text), "weights": weights}
    out = root / variant / f"lr{lr:g}" / f"seed{seed}"
    write_bundle(out, summary, curve, telemetry, attention, save_stand_in_params)
    return {"variant": variant, "lr": lr, "seed": seed, "path": str(out), "best_val_loss": summary["best_val_loss"],
            "final_val_loss": summary["final_val_loss"], "diverged": diverged,
            "diverged_step": summary["diverged_step"], "n_params": 100, "config.train.steps": 10,
            **{f"telemetry.entropy.{k}": v for k, v in summary_t["entropy"].items()}}


@pytest.fixture(scope="module")
def tiny_tables(tmp_path_factory):
    """Tiny bundles and the three tables figures read, in the columns attnlab.pipeline.tables writes."""
    root = tmp_path_factory.mktemp("figs")
    variants = ["softmax", "yat", "yat_b", "a3"]
    contest_lr = {"softmax": 0.003, "yat": 0.003, "yat_b": 0.003, "a3": 0.01}
    cells = {(v, lr, 0) for v in variants for lr in (0.001, 0.01)}
    cells |= {(v, lr, s) for v, lr in contest_lr.items() for s in (0, 1)}
    runs = pd.DataFrame([_cell(root / "runs", v, lr, s, diverged=(v == "softmax" and lr == 0.01))
                         for v, lr, s in sorted(cells)])
    tables = root / "tables"
    tables.mkdir()
    runs.to_csv(tables / "runs.csv", index=False)
    sweep = runs[runs.seed == 0]
    sweep = sweep[sweep.lr.isin([0.001, 0.01])]
    sweep[["variant", "lr", "best_val_loss", "final_val_loss", "diverged", "diverged_step"]].to_csv(
        tables / "lr_sweep.csv", index=False)
    pd.DataFrame({"variant": variants, "lr": [f"{contest_lr[v]:g}" for v in variants], "n_seeds": 2}).to_csv(
        tables / "contest.csv", index=False)
    return root


@pytest.mark.parametrize("name", FIGURE_MODULES)
def test_every_figure_draws_from_tiny_bundles(tiny_tables, name):
    module = importlib.import_module(f"attnlab.pipeline.figures.{name}")
    assert module.__doc__ and callable(module.draw) and callable(module.main)
    tables = tiny_tables / "tables"
    suffix = ".gif" if name in ("reading", "score_orbit") else ".png"
    out = tiny_tables / "figures" / f"{name}{suffix}"
    argv = ["--style", TINY_STYLE, "--out", str(out)]
    if name == "lr_sweep":
        argv += ["--sweep", str(tables / "lr_sweep.csv"), "--contest", str(tables / "contest.csv")]
    elif name != "score_orbit":  # the analytic figure reads no run at all
        argv += ["--runs", str(tables / "runs.csv"), "--contest", str(tables / "contest.csv")]
    if name == "loss_curves":
        argv += ["--gif", str(out.with_suffix(".gif"))]
    assert module.main(argv) == 0
    for path in {out, out.with_suffix(".gif") if name == "loss_curves" else out}:
        with Image.open(path) as image:
            assert image.size[0] > 50 and image.size[1] > 50
            if path.suffix == ".gif":
                assert image.n_frames >= 2
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")], "a temp file was left behind"


def test_no_figure_module_imports_the_model():
    """Figures read bundles; importing the model (or training) would tie them to retraining edits."""
    import ast
    from pathlib import Path

    folder = Path(importlib.import_module("attnlab.pipeline.figures").__file__).parent
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert node.module.split(".")[:2] not in (["attnlab", "model"], ["attnlab", "train"],
                                                          ["attnlab", "attention"], ["attnlab", "config"]), path
    assert math.isclose(score_orbit.EPS, 1.0)
