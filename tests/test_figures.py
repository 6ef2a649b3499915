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
from attnlab.pipeline.figures import (VARIANT_MARKERS, char_label, contest_cells, default_style, label_every,
                                      parse_style, set_position_ticks, shown_cells, variant_color, variant_marker,
                                      window_ruler)
from attnlab.pipeline.figures import lr_sweep, mass_auroc, reading, score_orbit

FIGURE_MODULES = ("loss_curves", "lr_sweep", "depth_grid", "training_maps", "reading", "score_orbit", "scalars",
                  "a3_gates", "entropy", "score_scale", "mass_auroc", "paired_differences")
# The variants the project names; every figure tells them apart by marker as well as by colour.
NAMED_VARIANTS = ("softmax", "yat", "yat_b", "a3", "yat_exp", "yat_b_exp", "softmax_t", "a3_heads")
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


def test_maps_tick_positions_by_number_and_the_ruler_prints_the_window_under_them():
    import matplotlib.pyplot as plt

    assert label_every(32, 32) == 1
    assert label_every(128, 32) == 4
    text = "To be,\nor not to be " * 4  # 76 characters
    fig, ax = plt.subplots()
    set_position_ticks(ax, len(text), "y")
    labels = [t.get_text() for t in ax.get_yticklabels()]
    plt.close(fig)
    assert labels == [str(p) for p in range(0, len(text), 8)], "ticks are positions, not every k-th letter"
    ruler, glyphs = window_ruler(text)
    assert len(glyphs) == len(text) and glyphs[6] == "⏎" and glyphs[2] == "␣"
    for position in range(0, len(text), 8):  # each number starts above the character it names
        assert ruler[position:].startswith(str(position))


def test_every_named_variant_has_its_own_marker_and_colour():
    style = parse_style(None)
    colors = [variant_color(style, v) for v in NAMED_VARIANTS]
    markers = [variant_marker(v) for v in NAMED_VARIANTS]
    assert len(set(colors)) == len(NAMED_VARIANTS) and len(set(markers)) == len(NAMED_VARIANTS)
    assert set(NAMED_VARIANTS) <= set(VARIANT_MARKERS) and set(NAMED_VARIANTS) <= set(default_style()["colors"])
    okabe_ito = {"#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7"}
    assert {c.upper() for c in colors} <= okabe_ito, "the defaults stay in the colour-blind-safe palette"
    assert variant_marker("unknown_variant", ["softmax", "unknown_variant"]) not in markers


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


def test_lr_sweep_without_divergence_has_no_band_and_keeps_coinciding_points_apart():
    sweep = pd.DataFrame({
        "variant": ["softmax", "softmax", "yat_b", "yat_b"],
        "lr": [1e-3, 1e-2] * 2,
        "best_val_loss": [1.60, 1.55, 1.60, 1.55],  # the two variants coincide at every LR
        "final_val_loss": [1.60, 1.55, 1.60, 1.55],
        "diverged": [False] * 4,
        "diverged_step": [None] * 4,
    })
    contest = pd.DataFrame({"variant": ["softmax", "yat_b"], "lr": [1e-2, 1e-2]})
    fig, marks = lr_sweep.draw(sweep, contest, parse_style(TINY_STYLE))
    ax = fig.axes[0]
    assert not marks["diverged"] and not ax.patches, "a diverged band drawn although nothing diverged"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert not any("diverged" in label for label in labels), "the legend lists a marker that is not drawn"
    assert ax.get_xlim()[1] < 1e-2 * 2, "the x axis runs well past the last LR"
    contest_points = [line.get_xdata()[0] for line in ax.lines if len(line.get_xdata()) == 1
                      and line.get_markerfacecolor() != "white"]
    assert len(contest_points) == 2 and not np.isclose(*contest_points), "one contest-LR point hides the other"


# ---- the reading animation and the small GIFs


def test_reading_shows_every_variant_at_every_query_position():
    length = 20
    entries = [{"variant": v, "label": v, "layer": 0, "head": 0, "step": 10, "text": "x" * length,
                "map": np.tril(np.ones((length, length))) / np.arange(1, length + 1)[:, None]}
               for v in ("softmax", "yat", "yat_b", "a3")]
    fig, update, n_frames = reading.draw(entries, [e["variant"] for e in entries], parse_style(TINY_STYLE))
    assert n_frames == length - 1, "every query position from 1 to the window's end is a frame"
    assert len([ax for ax in fig.axes if ax.get_legend()]) == len(entries)
    update(n_frames - 1)
    import matplotlib.pyplot as plt

    plt.close(fig)
    assert len(reading.query_positions(1000)) == reading.MAX_FRAMES


def test_score_orbit_gif_stays_small_at_the_default_style(tmp_path):
    out = tmp_path / "orbit.gif"
    score_orbit.main(["--style", json.dumps({"dpi": 110, "gif_frames": 16}), "--out", str(out)])
    with Image.open(out) as image:
        assert image.n_frames == 16
    assert out.stat().st_size < 500_000, f"score_orbit.gif is {out.stat().st_size:,} bytes"


def test_mass_roc_curve_has_the_bundles_auroc_as_its_area():
    from attnlab.core.telemetry_stats import mass_auroc as auroc

    rng = np.random.default_rng(3)
    mass = np.round(rng.gamma(2.0, 10.0, size=400), 1)  # rounded: ties must step together
    correct = rng.random(400) < 1 / (1 + np.exp(-(mass - 20) / 10))
    fpr, tpr = mass_auroc.roc_curve(mass, correct)
    assert fpr[0] == tpr[0] == 0 and fpr[-1] == tpr[-1] == 1
    assert np.trapezoid(tpr, fpr) == pytest.approx(auroc(mass, correct))


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
    summary_t = {"entropy": {"mean": 0.6, "share_sharp": 0.1, "share_diffuse": 0.3,
                             "mean_per_layer_head": rng.random((layers, heads)).tolist()}, "max_score": 5.0}
    if variant.startswith("yat"):  # the kernel's row mass, as the probe stores it
        telemetry["mass"] = rng.gamma(2.0, 10.0, size=(2, 2, length)).astype(np.float32)
        summary_t["mass_auroc"] = 0.5
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
            **({"telemetry.mass_auroc": 0.5} if "mass_auroc" in summary_t else {}),
            **{f"telemetry.entropy.{k}": v for k, v in summary_t["entropy"].items() if not isinstance(v, list)}}


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
    from attnlab.pipeline.tables import best_lr_table, contest_table

    spec = {"variants": variants, "contest_lr": contest_lr, "contest_seeds": [0, 1], "auto": ["a3"],
            "sweep_lrs": [0.001, 0.01], "sweep_seed": 0}
    contest = contest_table(runs, spec)
    contest.to_csv(tables / "contest.csv", index=False)
    best_lr_table(runs, spec, contest).to_csv(tables / "best_lr.csv", index=False)
    pd.DataFrame([{"variant": v, "lr": contest_lr[v], "seed": s, "layer": layer, "mean_max_score": 2.0 + layer,
                   "max_score": 3.0 + layer + s, "seed_mean_over_layers_of_max_score": 3.5 + s}
                  for v in variants for s in (0, 1) for layer in (0, 1)]).to_csv(tables / "score_scale.csv",
                                                                                 index=False)
    return root


@pytest.mark.parametrize("name", FIGURE_MODULES)
def test_every_figure_draws_from_tiny_bundles(tiny_tables, name):
    module = importlib.import_module(f"attnlab.pipeline.figures.{name}")
    tables = tiny_tables / "tables"
    suffix = ".gif" if name in ("reading", "score_orbit") else ".png"
    out = tiny_tables / "figures" / f"{name}{suffix}"
    argv = ["--style", TINY_STYLE, "--out", str(out)]
    if name == "lr_sweep":
        argv += ["--sweep", str(tables / "lr_sweep.csv"), "--contest", str(tables / "contest.csv")]
    elif name == "score_scale":
        argv += ["--score-scale", str(tables / "score_scale.csv"), "--contest", str(tables / "contest.csv")]
    elif name == "paired_differences":
        argv += ["--runs", str(tables / "runs.csv"), "--contest", str(tables / "contest.csv"),
                 "--best-lr", str(tables / "best_lr.csv")]
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
                image.seek(image.n_frames - 1)
            colours = image.convert("RGB").getcolors(maxcolors=1_000_000)
            assert colours and len(colours) > 16, f"{path.name} is (nearly) blank: {len(colours or [])} colours"
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")], "a temp file was left behind"


def test_a3_gates_shows_the_net_effect_on_entropy_not_only_the_gate(tiny_tables):
    from attnlab.pipeline.figures import a3_gates, read_tables

    tables = tiny_tables / "tables"
    runs, contest = read_tables(tables / "runs.csv", tables / "contest.csv")
    gates = a3_gates.load_gates(runs, contest)
    assert gates["a3_entropy"].shape == gates["softmax_entropy"].shape == (2, 2, 2)
    fig = a3_gates.draw(gates, parse_style(TINY_STYLE))
    titles = [ax.get_title() for ax in fig.axes]
    assert any("entropy A³ − softmax" in t for t in titles), titles
    assert "softer" not in fig._suptitle.get_text(), "the title must not read the gate alone as softer rows"
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_the_forest_plot_draws_each_interval_and_says_when_there_is_none():
    import matplotlib.pyplot as plt

    from attnlab.pipeline import statistics
    from attnlab.pipeline.figures import paired_differences

    contest = pd.DataFrame({"variant": ["softmax", "yat", "a3"], "lr": [3e-3, 3e-3, 1e-2],
                            "lr_choice": ["given", "given", "auto"], "delta_vs_softmax": [0.0, 0.05, -0.03],
                            "delta_ci_low": [0.0, 0.02, np.nan], "delta_ci_high": [0.0, 0.08, np.nan],
                            "wins": ["0/3", "0/3", "1/1"]})
    fig = paired_differences.draw(contest, None, {"yat": (0.04, 0.05, 0.06)}, parse_style(TINY_STYLE))
    ax = fig.axes[0]
    bars = [line for line in ax.lines if list(line.get_xdata()) == [0.02, 0.08]]
    assert len(bars) == 1, "yat's interval is drawn from the contest table's bounds"
    texts = [t.get_text() for t in ax.texts]
    assert "wins 0/3 seeds" in texts and statistics.ONE_SEED in texts
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["yat\ncontest LR 0.003", "a3\ncontest LR 0.01 (auto)"], "softmax is the zero line, not a row"
    plt.close(fig)


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


def test_a_format_specific_caption_wins_over_the_shared_one(tmp_path, monkeypatch):
    """loss_curves.gif has one panel: its caption must not describe the still figure's zoom panel."""
    from attnlab.pipeline import report

    folder = tmp_path / "workflow" / "report"
    folder.mkdir(parents=True)
    (folder / "curves.rst").write_text("Both panels; the right panel zooms.\n")
    (folder / "curves.gif.rst").write_text("One panel,\n animated.\n")
    monkeypatch.setattr(report, "results_dir", lambda: tmp_path / "results")
    assert report.caption("curves.png") == "Both panels; the right panel zooms."
    assert report.caption("curves.gif") == "One panel, animated."
    assert "is missing" in report.caption("other.png")


def test_the_animated_loss_curves_have_their_own_caption():
    from conftest import REPO

    still = (REPO / "workflow" / "report" / "loss_curves.rst").read_text()
    animated = (REPO / "workflow" / "report" / "loss_curves.gif.rst").read_text()
    assert "right panel" in still and "right panel" not in animated
