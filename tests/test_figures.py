"""Figures: every catalog entry drawn from tiny bundles and tables, each figure agreeing with its table, the
window's character labels, LR identity, diverged cells, posters of animations, and the rules the catalog makes."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
import json
import re

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from attnlab.core.bundle_format import CURVE_COLUMNS, format_lr
from attnlab.core.variants import VARIANTS
from attnlab.pipeline.ground import contract, score_scale as scale
from attnlab.pipeline.ground import figure_catalog as catalog
from attnlab.pipeline.figures import entropy, lr_sweep, mass_auroc, reading, score_orbit, training_maps
from attnlab.pipeline.figures import score_scale as score_figure
from attnlab.pipeline.figures.cells import contest_cells, shown_cells
from attnlab.pipeline.figures.main import figure_main
from attnlab.pipeline.figures.gif import Animation
from attnlab.pipeline.figures.main import Tables
from attnlab.pipeline.figures.style import (MAP_MAX_HEIGHT, MAX_HEIGHT, MIN_FONT, TEXT_WIDTH,
                                            default_style, parse_style, variant_color, variant_marker)
from attnlab.pipeline.report.style import print_scale
from attnlab.pipeline.figures.window import char_label, character_step, set_position_ticks, window_line
from attnlab.training.files.bundle_writer import write_bundle
from conftest import REPO
from results_folder import catalog_table, ladder_tables

TINY_STYLE = json.dumps({"dpi": 40, "gif_frames": 3, "map_layer": 9, "map_head": 9})


def close(fig) -> None:
    import matplotlib.pyplot as plt

    plt.close(fig)


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


def test_maps_tick_positions_by_number_and_the_window_prints_whole_above_them():
    import matplotlib.pyplot as plt

    text = "To be,\nor not to be " * 4  # 76 characters
    fig, ax = plt.subplots()
    set_position_ticks(ax, len(text), "y")
    labels = [t.get_text() for t in ax.get_yticklabels()]
    close(fig)
    assert labels == [str(p) for p in range(0, len(text), 16)], "ticks are positions, at most five of them"
    lines = window_line(text, 2.0, 7.5).split("\n")
    assert "".join(lines) == text.replace("\n", "⏎").replace(" ", "␣")
    assert max(map(len, lines)) <= 2.0 * 72 / (0.6 * 7.5), "each line fits the width it is given"
    assert character_step(10.0) == 1 and character_step(2.9) == 2 and character_step(1.4) == 4


@pytest.mark.parametrize("length", [12, 64])
@pytest.mark.slow
def test_the_window_characters_sit_at_the_centres_of_their_key_columns(length):
    from attnlab.pipeline.figures import depth_grid

    rng = np.random.default_rng(0)
    text = ("First Citizen:\nBefore we proceed any further, hear me speak. " * 2)[:length]
    weights = rng.random((2, length, length)) * np.tril(np.ones((length, length)))
    maps = [{"label": f"{v} (lr 0.003, seed 0)", "step": 60, "maps": weights / weights.sum(-1, keepdims=True),
             "text": text} for v in ("softmax", "yat", "yat_b", "a3")]
    fig = depth_grid.draw(maps, parse_style(TINY_STYLE))
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    top_row = [ax for ax in fig.axes if ax.images and ax.get_subplotspec().rowspan.start == 0]
    assert len(top_row) == 4
    for ax in top_row:
        (top,) = [child for child in ax.child_axes]  # the axis above the map that carries the characters
        keys, labels = top.get_xticks(), [label for label in top.get_xticklabels() if label.get_text()]
        assert len(keys) == len(labels) >= min(length, 8)
        boxes = []
        for key, label in zip(keys, labels):
            assert label.get_text() == char_label(text[int(key)])
            box = label.get_window_extent(renderer)
            centre = ax.transData.transform((key, 0))[0]  # imshow centres column j on x = j
            assert abs((box.x0 + box.x1) / 2 - centre) <= 1.0, (key, label.get_text())
            boxes.append(box)
        assert all(a.x1 <= b.x0 for a, b in zip(boxes, boxes[1:])), "neighbouring characters overlap"
        step = int(np.diff(keys)[0]) if len(keys) > 1 else 1
        assert (step == 1) == (length == 12), "every key is labelled where the columns are wide enough, not else"
    close(fig)


def test_every_registered_variant_has_its_own_marker_and_colour_from_its_place_alone():
    style = parse_style(None)
    colors = [variant_color(style, v) for v in VARIANTS]
    markers = [variant_marker(v) for v in VARIANTS]
    assert len(set(colors)) == len(VARIANTS) and len(set(markers)) == len(VARIANTS)
    okabe_ito = {"#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7"}
    # the later variants', from Paul Tol's colour-blind-safe muted scheme, then his vibrant one
    tol_muted = {"#882255", "#88CCEE", "#DDCC77", "#44AA99", "#CC6677", "#999933", "#332288", "#117733", "#AA4499"}
    tol_vibrant = {"#EE7733", "#0077BB", "#33BBEE", "#EE3377", "#CC3311", "#009988", "#BBBBBB"}
    assert {c.upper() for c in colors} <= okabe_ito | tol_muted | tol_vibrant, \
        "the defaults stay in colour-blind-safe palettes"
    assert {c.upper() for c in colors[:len(okabe_ito)]} == okabe_ito, "Okabe-Ito's eight come first"
    assert variant_marker("unknown_variant", ["softmax", "unknown_variant"]) not in markers
    # far past the named markers, a marker is still its own
    assert len({variant_marker(f"v{i}", [f"v{i}" for i in range(60)]) for i in range(60)} | set(markers)) == 60 + len(
        markers)


def test_no_figure_module_keeps_a_list_of_variants():
    """Colours and markers come from a variant's place in the registry: the figures' style names no variant, so a
    new one needs no line there (a hand-kept list of markers or colours fails this)."""
    from attnlab.pipeline.figures import style

    names = {node.value for node in ast.walk(ast.parse(Path(style.__file__).read_text()))
             if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    assert not names & set(VARIANTS), names & set(VARIANTS)
    assert not default_style().get("colors"), "the schema colours no variant by default"


def test_style_fills_schema_defaults_and_merges_colours():
    style = parse_style(json.dumps({"dpi": 50, "colors": {"yat": "#000000"}}))
    assert style["dpi"] == 50 and style["gif_frames"] >= 2
    assert variant_color(style, "yat") == "#000000"
    assert variant_color(style, "softmax").startswith("#")  # schema default kept
    assert variant_color(style, "new_variant", ["softmax", "new_variant"]).startswith("#")


# ---- which cells are shown; an LR is its exact text


def test_shown_cell_is_the_contest_lr_at_the_lowest_seed():
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


def test_a_nearby_lr_is_another_cell():
    """0.0010000001 and 0.001 are two cells (their folders differ); no figure takes one for the other."""
    runs = pd.DataFrame({"variant": ["yat", "yat"], "lr": [0.0010000001, 0.001], "seed": [0, 0],
                         "path": ["near", "exact"]})
    contest = pd.DataFrame({"variant": ["yat"], "lr": [0.001]})
    assert list(contest_cells(runs, contest).path) == ["exact"]
    sweep = pd.DataFrame({"variant": ["yat"] * 2, "lr": [0.0010000001, 0.01], "seed": [0, 0],
                          "best_val_loss": [1.5, 1.6], "final_val_loss": [1.5, 1.6], "diverged": [False, False],
                          "diverged_step": [None, None]})
    fig, _ = lr_sweep.plot(sweep, contest, parse_style(TINY_STYLE))
    filled = [line for line in fig.axes[0].lines if len(line.get_xdata()) and line.get_markerfacecolor() != "white"
              and line.get_linestyle() == "None"]
    assert all(len(line.get_xdata()) == 0 for line in filled), "0.0010000001 was drawn as the contest LR 0.001"
    close(fig)


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
    fig, marks = lr_sweep.plot(sweep, contest, parse_style(TINY_STYLE))
    assert ("softmax", 0.01, 4312) in marks["diverged"]
    assert ("yat", 0.01, None) in marks["diverged"]  # a non-finite loss is marked too, never dropped
    assert len(marks["points"]) + len(marks["diverged"]) == len(sweep)
    assert all(not (v == "softmax" and lr == 0.01) for v, lr, _ in marks["points"])
    ax = fig.axes[0]
    plotted = np.concatenate([line.get_ydata() for line in ax.lines if line.get_transform() == ax.transData])
    assert not np.any(np.isclose(plotted.astype(float), 1.52)), "the diverged cell's loss was drawn as a number"
    assert any("diverged @ step 4312" in t.get_text() for t in ax.texts)
    close(fig)


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
    fig, marks = lr_sweep.plot(sweep, contest, parse_style(TINY_STYLE))
    ax = fig.axes[0]
    assert not marks["diverged"] and not ax.patches, "a diverged band drawn although nothing diverged"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert not any("diverged" in label for label in labels), "the legend lists a marker that is not drawn"
    assert ax.get_xlim()[1] < 1e-2 * 2, "the x axis runs well past the last LR"
    contest_points = [line.get_xdata()[0] for line in ax.lines if len(line.get_xdata()) == 1
                      and line.get_markerfacecolor() != "white"]
    assert len(contest_points) == 2 and not np.isclose(*contest_points), "one contest-LR point hides the other"
    close(fig)


# ---- the reading animation and the small GIFs


def test_reading_shows_every_variant_at_every_query_position():
    length = 20
    entries = [{"variant": v, "label": v, "layer": 0, "head": 0, "step": 10, "text": "x" * length,
                "map": np.tril(np.ones((length, length))) / np.arange(1, length + 1)[:, None]}
               for v in ("softmax", "yat", "yat_b", "a3")]
    animation = reading.draw({"entries": entries, "order": [e["variant"] for e in entries]},
                             parse_style(TINY_STYLE))
    assert animation.frames == length - 1, "every query position from 1 to the window's end is a frame"
    assert len([ax for ax in animation.fig.axes if ax.get_legend()]) == len(entries)
    animation.update(animation.frames - 1)
    close(animation.fig)
    assert len(reading.query_positions(1000)) == reading.MAX_FRAMES


def test_the_blitted_reading_draws_every_frame_as_a_full_redraw_would():
    """The reading animation draws only what changes over one image of the rest: each frame must match the
    same frame drawn whole (an artist left out of update's list would stay blank or stale)."""
    from attnlab.pipeline.figures.gif import drawn_frames

    length = 24
    rng = np.random.default_rng(0)
    rows = np.tril(rng.random((length, length)) ** 4)
    entries = [{"variant": v, "label": v, "layer": 0, "head": 0, "step": 10, "text": "to be or not to be, that",
                "map": rows / rows.sum(1, keepdims=True)} for v in ("softmax", "yat_b")]

    def frames(blit):
        animation = reading.draw({"entries": entries, "order": ["softmax", "yat_b"]}, parse_style(TINY_STYLE))
        assert animation.blit
        animation.blit = blit
        drawn = [np.asarray(frame, dtype=int) for frame in drawn_frames(animation)]
        close(animation.fig)
        return drawn

    blitted, whole = frames(True), frames(False)
    assert len(blitted) == len(whole) == length - 1
    assert len({frame.tobytes() for frame in blitted}) == len(blitted), "every frame differs from the last"
    for i, (fast, full) in enumerate(zip(blitted, whole)):
        differs = int((np.abs(fast - full).sum(-1) > 30).sum())  # a stale letter alone is some 20 pixels
        assert differs <= 6, f"frame {i}: {differs} pixels differ from the full redraw"


@pytest.mark.slow
def test_score_orbit_gif_stays_small_at_the_default_style(tmp_path):
    out = tmp_path / "orbit.gif"
    figure_main(score_orbit.load, score_orbit.draw,
                ["--style", json.dumps({"dpi": 110, "gif_frames": 16}), "--out", str(out)])
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


# ---- tiny synthetic bundles and the tables figures read


def save_stand_in_params(folder):
    """Figures never read parameters; a bundle still lists (and hashes) a params/ folder."""
    folder.mkdir()
    (folder / "stand_in.bin").write_bytes(b"\x00" * 8)


def _cell(root, variant, lr, seed, layers=2, heads=2, length=12, diverged=False):
    rng = np.random.default_rng(seed + int(lr * 1e4))
    steps = [0, 2, 5, 10]
    raw = rng.random((len(steps), layers, heads, length, length)) * np.tril(np.ones((length, length)))
    weights = (raw / raw.sum(-1, keepdims=True)).astype(np.float16)
    text = "Good\nmorrow, $a"[:length]
    curve = pd.DataFrame({"step": [0, 5, 10], "train_loss": [np.nan, 3.0, 2.5],
                          "val_loss": [4.2, 3.1 + lr, 2.6 + lr + 0.01 * seed], "elapsed_s": [0.0, 0.1, 0.2]})
    curve["val_loss_select"], curve["val_loss_report"] = curve.val_loss + 0.01, curve.val_loss - 0.01
    # each seed's entropy rows sit in other bins, so a seed mean differs from any one seed
    hist = np.zeros((layers, 50), dtype=np.int64)
    hist[:, 10 + 20 * (seed % 2): 15 + 20 * (seed % 2)] = 7
    telemetry = {"max_score": rng.random((2, layers)), "correct": rng.random((2, 2, length)) > 0.5,
                 "entropy_hist": hist}
    summary_t = {"entropy": {"mean": 0.3 + 0.4 * (seed % 2), "share_sharp": 0.1 + 0.2 * seed,
                             "share_diffuse": 0.3 + 0.1 * seed,
                             "mean_per_layer_head": rng.random((layers, heads)).tolist()},
                 "max_score_per_layer": (rng.random(layers) * (500.0 if variant.startswith("yat") else 5.0)
                                         + 1.0).tolist()}
    if variant.startswith("yat"):  # the kernel's row mass, as the probe stores it
        telemetry["mass"] = rng.gamma(2.0, 10.0, size=(2, 2, length)).astype(np.float32)
        summary_t["mass_auroc"] = 0.5 + 0.01 * seed
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
        "best_val_loss_select": float(curve.val_loss_select.min()),
        "best_val_loss_heldout": float(curve.val_loss_report.iloc[-1]), "best_step_select": 10,
    }
    attention = {"steps": np.array(steps), "tokens": np.arange(length), "text": np.array(text), "weights": weights}
    out = root / variant / f"lr{lr!r}" / f"seed{seed}"
    write_bundle(out, summary, list(curve[list(CURVE_COLUMNS)].itertuples(index=False)), telemetry, attention,
                 save_stand_in_params)
    row = {"variant": variant, "lr": lr, "seed": seed, "path": str(out), "best_val_loss": summary["best_val_loss"],
           "final_val_loss": summary["final_val_loss"], "diverged": diverged,
           "diverged_step": summary["diverged_step"], "n_params": 100, "config.train.steps": 10,
           "best_val_loss_select": summary["best_val_loss_select"],
           "best_val_loss_heldout": summary["best_val_loss_heldout"]}
    return row, summary


def telemetry_tables(summaries: list[dict], contest: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The contest cells' score_scale, entropy, mass_auroc, scalars and a3_gates tables, in the contract's columns."""
    contest_lr = dict(zip(contest.variant, contest.lr.map(format_lr)))
    rows = {name: [] for name in ("score_scale", "entropy", "mass_auroc", "scalars", "a3_gates")}
    for s in summaries:
        if format_lr(s["lr"]) != contest_lr.get(s["variant"]):
            continue
        tel, key = s["telemetry"], {"variant": s["variant"], "lr": s["lr"], "seed": s["seed"]}
        per_layer = tel["max_score_per_layer"]
        rows["score_scale"] += [dict(key, layer=layer, mean_max_score=top / 2, max_score=top,
                                     **{contract.SEED_MEAN_OVER_LAYERS: float(np.mean(per_layer))})
                                for layer, top in enumerate(per_layer)]
        ent = tel["entropy"]
        rows["entropy"].append(dict(key, mean=ent["mean"], **{contract.SHARE_SHARP: ent["share_sharp"],
                                                              contract.SHARE_DIFFUSE: ent["share_diffuse"]}))
        if "mass_auroc" in tel:
            rows["mass_auroc"].append(dict(key, mass_auroc=tel["mass_auroc"], mass_correct_mean=21.0 + s["seed"],
                                           mass_wrong_mean=19.0))
        for name, values in s.get("learned", {}).items():
            rows["scalars"] += [{"variant": s["variant"], "seed": s["seed"], "layer": layer, "head": head,
                                 "scalar": name, "value": value}
                                for layer, per_head in enumerate(values) for head, value in enumerate(per_head)]
        if s["variant"] in ("a3", "softmax"):
            rows["a3_gates"] += [{"variant": s["variant"], "seed": s["seed"], "layer": layer, "head": head,
                                  "entropy": value,
                                  **{column: tel[f"a3_{column}"][layer][head] if f"a3_{column}" in tel else np.nan
                                     for column in ("gate_mean", "gate_std", "bias_mean", "bias_std")}}
                                 for layer, per_head in enumerate(ent["mean_per_layer_head"])
                                 for head, value in enumerate(per_head)]
    return {name: pd.DataFrame(found, columns=contract.columns(name)) for name, found in rows.items()}


@pytest.fixture(scope="module")
def tiny_tables(tmp_path_factory):
    """Tiny bundles and every table a figure reads, in the columns of the table contract."""
    from attnlab.pipeline.tables import best_lr_table, contest_table

    root = tmp_path_factory.mktemp("figs")
    variants = ["softmax", "yat", "yat_b", "a3"]
    contest_lr = {"softmax": 0.003, "yat": 0.003, "yat_b": 0.003, "a3": 0.01}
    cells = {(v, lr, 0) for v in variants for lr in (0.001, 0.01)}
    cells |= {(v, lr, s) for v, lr in contest_lr.items() for s in (0, 1)}
    made = [_cell(root / "runs", v, lr, s, diverged=(v == "softmax" and lr == 0.01)) for v, lr, s in sorted(cells)]
    runs = pd.DataFrame([row for row, _ in made])
    tables = root / "tables"
    tables.mkdir()
    runs.to_csv(tables / "runs.csv", index=False)
    sweep = runs[(runs.seed == 0) & runs.lr.isin([0.001, 0.01])]
    sweep[contract.columns("lr_sweep")].to_csv(tables / "lr_sweep.csv", index=False)
    spec = {"variants": variants, "contest_lr": contest_lr, "contest_seeds": [0, 1], "auto": ["a3"],
            "sweep_lrs": [0.001, 0.01], "sweep_seed": 0, "sweep_seeds": [0]}
    contest = contest_table(runs, spec)
    contest.to_csv(tables / "contest.csv", index=False)
    best_lr_table(runs, spec, contest).to_csv(tables / "best_lr.csv", index=False)
    for name, table in telemetry_tables([summary for _, summary in made], contest).items():
        assert not table.empty, name
        table.to_csv(tables / f"{name}.csv", index=False)
    for name, table in ladder_tables("smoke").items():  # what the scale ladder's figures read
        table.to_csv(tables / f"{name}.csv", index=False)
    catalog_table().to_csv(tables / "catalog.csv", index=False)  # the catalog forest's
    return root


def figure_argv(entry: catalog.Figure, root, style: str = TINY_STYLE) -> list[str]:
    """The command line the entry's rule runs, against the tiny tables and into root/figures."""
    argv = ["--style", style]
    for table in entry.tables:
        argv += ["--table", f"{table}={root / 'tables' / f'{table}.csv'}"]
    outputs = {key: root / "figures" / path.name for key, path in entry.output_paths().items()}
    argv += ["--out", str(outputs["file"])]
    if "poster" in outputs:
        argv += ["--poster", str(outputs["poster"])]
    return argv


def draw_entry(entry: catalog.Figure, root) -> None:
    module = importlib.import_module(entry.module)
    assert figure_main(module.load, module.draw, figure_argv(entry, root)) == 0


def not_blank(image) -> bool:
    colours = image.convert("RGB").getcolors(maxcolors=1_000_000)
    return bool(colours) and len(colours) > 16


# The figures of attention maps, and the side (inches on paper) at which a map's rows can be read: a 64-key
# row is then a key every 0.55 mm.
MAP_FIGURES = ("depth_grid", "training_maps")
READABLE_MAP = 1.4


def every_figure() -> list:
    """Each catalogued figure as a test parameter; the figures of maps (MAP_FIGURES), which take seconds each to
    draw, run outside the quick lane."""
    return [pytest.param(entry, id=entry.name, marks=pytest.mark.slow if entry.name in MAP_FIGURES else ())
            for entry in catalog.FIGURES]


@pytest.mark.parametrize("entry", every_figure())
def test_every_catalog_figure_draws_from_tiny_tables(tiny_tables, entry):
    draw_entry(entry, tiny_tables)
    folder = tiny_tables / "figures"
    for name in entry.outputs:
        with Image.open(folder / name) as image:
            assert image.size[0] > 50 and image.size[1] > 50
            if name.endswith(".gif"):
                assert image.n_frames >= 2
                image.seek(image.n_frames - 1)
            assert not_blank(image), f"{name} is (nearly) blank"
    assert not [p for p in folder.iterdir() if p.name.startswith(".")], "a temp file was left behind"


def drawn_figure(entry: catalog.Figure, tiny_tables):
    """The entry's figure as its rule draws it at a build's resolution (an animation at its poster frame, the
    one print shows)."""
    module = importlib.import_module(entry.module)
    style = parse_style(json.dumps(dict(json.loads(TINY_STYLE), dpi=100)))  # text measures as at a build's dpi
    tables = Tables({table: tiny_tables / "tables" / f"{table}.csv" for table in entry.tables})
    drawn = module.draw(module.load(tables, style), style)
    drawn = drawn[0] if isinstance(drawn, tuple) else drawn
    if isinstance(drawn, Animation):
        drawn.update(drawn.frames - 1)  # the poster, the frame print shows
    fig = drawn.fig if isinstance(drawn, Animation) else drawn
    fig.canvas.draw()
    return fig


def saved_width(fig) -> float:
    """The width in inches of the figure's file: cropped to what is drawn, plus savefig's pad on each side."""
    import matplotlib

    return fig.get_tightbbox(fig.canvas.get_renderer()).width + 2 * matplotlib.rcParams["savefig.pad_inches"]


@pytest.mark.parametrize("entry", every_figure())
def test_every_figure_is_drawn_for_the_printed_column_and_letters_nothing_under_7_points(tiny_tables, entry):
    """Printed (its file at the width print gives it: print_scale), every piece of text of the figure, after
    layout, is MIN_FONT points or larger, and the figure fits the text column and a page."""
    import matplotlib.pyplot as plt
    from matplotlib.text import Text

    fig = drawn_figure(entry, tiny_tables)
    try:
        assert fig.get_figwidth() <= TEXT_WIDTH + 1e-9 and fig.get_figheight() <= figure_height_limit(entry) + 1e-9
        scale = print_scale(saved_width(fig))
        texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
        assert len(texts) > 5
        small = sorted((round(t.get_fontsize() * scale, 2), t.get_text()[:40]) for t in texts
                       if t.get_fontsize() * scale < MIN_FONT)
        assert not small, f"text under {MIN_FONT} pt printed (print scale {scale:.3f}): {small[:5]}"
        # as saved (cropped to what is drawn): no wider than the column, so the page never scales it down
        assert fig.get_tightbbox(fig.canvas.get_renderer()).width <= TEXT_WIDTH + 0.02
    finally:
        plt.close(fig)


def figure_height_limit(entry: catalog.Figure) -> float:
    """The tallest the entry may be drawn: a page less its caption for a figure of maps, else MAX_HEIGHT."""
    return MAP_MAX_HEIGHT if entry.name in MAP_FIGURES else MAX_HEIGHT


@pytest.mark.parametrize("name", MAP_FIGURES)
@pytest.mark.slow
def test_attention_maps_print_large_enough_to_read_a_row(tiny_tables, name):
    """Every map of a figure of maps prints READABLE_MAP inches wide or more (the tiny tables' four variants, two
    layers and four checkpoints: the default build's grid), and the figure with its caption fits a page."""
    import matplotlib.pyplot as plt

    fig = drawn_figure(catalog.BY_NAME[name], tiny_tables)
    try:
        scale = print_scale(saved_width(fig))
        maps = [ax for ax in fig.get_axes() if ax.images]
        assert len(maps) >= 8
        sides = [ax.get_window_extent().width / fig.dpi * scale for ax in maps]
        assert min(sides) >= READABLE_MAP, f"maps print {min(sides):.2f} in wide, under {READABLE_MAP} in"
        assert fig.get_figheight() <= MAP_MAX_HEIGHT + 1e-9
    finally:
        plt.close(fig)


@pytest.mark.slow
def test_the_training_maps_column_titles_keep_apart(tiny_tables):
    """The checkpoints' titles over the top row of maps keep two ems apart at least, so that each reads as its
    column's, and none runs past its map; on maps too narrow for a title's one line, its share of training
    takes a second line."""
    import matplotlib.pyplot as plt

    fig = drawn_figure(catalog.BY_NAME["training_maps"], tiny_tables)
    try:
        renderer = fig.canvas.get_renderer()
        top = sorted((ax for ax in fig.get_axes() if ax.images and ax.get_title()),
                     key=lambda ax: ax.get_position().x0)
        assert len(top) >= 4
        boxes = [ax.title.get_window_extent(renderer) for ax in top]
        em = top[0].title.get_fontsize() * fig.dpi / 72
        gaps = [right.x0 - left.x1 for left, right in zip(boxes, boxes[1:])]
        assert min(gaps) >= 2 * em, f"titles {[ax.get_title() for ax in top]} {min(gaps) / em:.2f} em apart"
        for ax, box in zip(top, boxes):
            frame = ax.get_window_extent(renderer)
            assert box.width <= frame.width + 1, f"{ax.get_title()!r} is wider than its map"
    finally:
        plt.close(fig)
    assert training_maps.column_title(60, 60, 1.4) == "step 60 (100%)"
    assert training_maps.column_title(10000, 10000, 0.6) == "step 10000\n(100%)"
    assert training_maps.column_title(7, float("nan"), 0.6) == "step 7"


@pytest.mark.parametrize("entry", [e for e in catalog.FIGURES if e.animated], ids=lambda entry: entry.name)
def test_an_animations_poster_is_its_last_frame(tiny_tables, entry):
    draw_entry(entry, tiny_tables)
    folder = tiny_tables / "figures"
    with Image.open(folder / entry.file) as gif:
        first = np.asarray(gif.convert("RGB"), dtype=float)
        gif.seek(gif.n_frames - 1)
        last = np.asarray(gif.convert("RGB"), dtype=float)
        size = gif.size
    with Image.open(folder / entry.poster) as poster:
        assert poster.format == "PNG" and poster.size[0] >= size[0]
        still = np.asarray(poster.convert("RGB").resize(size, Image.Resampling.LANCZOS), dtype=float)
    to_last, to_first = np.abs(still - last).mean(), np.abs(still - first).mean()
    assert to_last < 12 and to_last < to_first, (to_last, to_first)


def test_a_figure_refuses_a_missing_table_by_name(tiny_tables, capsys):
    entry = catalog.BY_NAME["score_scale"]
    module = importlib.import_module(entry.module)
    argv = [arg for arg in figure_argv(entry, tiny_tables) if not arg.startswith("score_scale=")]
    argv.remove("--table")
    with pytest.raises(SystemExit):
        figure_main(module.load, module.draw, argv)
    assert "--table score_scale=results/tables/score_scale.csv" in capsys.readouterr().err


# ---- each figure agrees with its table


def test_score_scale_labels_are_the_tables_ratios_and_sit_clear_of_the_markers(tiny_tables):
    import matplotlib.pyplot as plt

    score = pd.read_csv(tiny_tables / "tables" / "score_scale.csv")
    contest = pd.read_csv(tiny_tables / "tables" / "contest.csv")
    fig = score_figure.draw({"score": score, "contest": contest}, parse_style(TINY_STYLE))
    ax = fig.axes[1]
    labels = [t.get_text().split("\n") for t in ax.get_xticklabels()]
    # the table's formula, written out: per seed, a variant's largest max_score over the baseline's of the same
    # seed, then the geometric mean over seeds (the ledger's number), 3 significant digits
    top = score.groupby(["variant", "seed"]).max_score.max().unstack("seed")
    ratio = np.exp(np.log(top.div(top.loc["softmax"], axis=1)).mean(axis=1))
    expected = {v: "baseline" if v == "softmax" else f"{ratio[v]:,.3g}× softmax" for v in top.index}
    assert {name: ratio for name, ratio in labels} == expected
    assert {name: ratio for name, ratio in labels if name != "softmax"} == {
        v: f"{scale.times(r)} softmax" for v, r in scale.max_score_ratios(score).items() if v != "softmax"}
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in ax.get_xticklabels()]
    for line in ax.lines:
        points = line.get_transform().transform(np.column_stack([line.get_xdata(), line.get_ydata()]))
        for box in boxes:
            assert not any(box.contains(x, y) for x, y in points), "a ratio label covers a marker"
    plt.close(fig)


def test_the_entropy_figure_draws_the_seed_mean_and_prints_the_tables_means(tiny_tables):
    tables = tiny_tables / "tables"
    runs = pd.read_csv(tables / "runs.csv")
    contest = pd.read_csv(tables / "contest.csv")
    table = pd.read_csv(tables / "entropy.csv")
    entries = entropy.load_histograms(runs, contest, table)
    from attnlab.pipeline.ground.bundle_reader import read_arrays

    for entry in entries:
        cells = contest_cells(runs, contest)
        cells = cells[cells.variant == entry["variant"]]
        assert entry["seeds"] == [0, 1]
        per_seed = [entropy.shares(read_arrays(path, "telemetry.npz")["entropy_hist"])[0] for path in cells.path]
        assert not np.allclose(per_seed[0], per_seed[1]), "the fixture's seeds must differ"
        assert entry["overall"] == pytest.approx(np.mean(per_seed, axis=0))
        mine = table[table.variant == entry["variant"]]
        assert entry["mean"] == pytest.approx(mine["mean"].mean())
        assert entry["sharp"] == pytest.approx(mine[contract.SHARE_SHARP].mean())
    fig = entropy.draw({"entries": entries, "order": list(contest.variant)}, parse_style(TINY_STYLE))
    top = fig.axes[0]
    drawn = [np.asarray(patch.get_data().values) for patch in top.patches if hasattr(patch, "get_data")]
    for entry in entries:
        assert any(np.allclose(values, entry["overall"]) for values in drawn), entry["variant"]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    softmax = table[table.variant == "softmax"]
    assert any(text.startswith("softmax") and "mean of 2 seeds" in text
               and f"mean {softmax['mean'].mean():.3f}" in text
               and f"sharp {softmax[contract.SHARE_SHARP].mean():.1%}" in text for text in legend), legend
    assert "seed" in fig._suptitle.get_text() and "mean over the contest seeds" in fig._suptitle.get_text()
    close(fig)


def test_the_mass_figure_prints_the_tables_aurocs(tiny_tables):
    tables = tiny_tables / "tables"
    runs, contest = pd.read_csv(tables / "runs.csv"), pd.read_csv(tables / "contest.csv")
    table = pd.read_csv(tables / "mass_auroc.csv")
    entries = mass_auroc.load_mass(runs, contest, table)
    assert sorted((e["variant"], e["seed"], e["auroc"]) for e in entries) == sorted(
        zip(table.variant, table.seed, table.mass_auroc))
    fig = mass_auroc.draw({"entries": entries, "order": list(contest.variant), "table": table},
                          parse_style(TINY_STYLE))
    legends = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert "yat seed 1: AUROC 0.510" in legends
    assert any(text.startswith("correct") and "mean 21.5" in text for text in legends), legends
    close(fig)


def test_a3_gates_shows_the_net_effect_on_entropy_not_only_the_gate(tiny_tables):
    from attnlab.pipeline.figures import a3_gates

    tables = tiny_tables / "tables"
    gates = a3_gates.load_gates(pd.read_csv(tables / "a3_gates.csv"), pd.read_csv(tables / "contest.csv"))
    assert gates["a3_entropy"].shape == gates["softmax_entropy"].shape == (2, 2, 2)
    assert gates["seeds"] == [0, 1] and gates["lr"] == 0.01
    fig = a3_gates.draw(gates, parse_style(TINY_STYLE))
    titles = [ax.get_title() for ax in fig.axes]
    assert any("entropy A³ − softmax" in t for t in titles), titles
    assert "softer" not in fig._suptitle.get_text(), "the title must not read the gate alone as softer rows"
    assert "mean over seeds 0, 1" in fig._suptitle.get_text()
    close(fig)


def test_the_forest_plot_draws_each_interval_and_says_when_there_is_none():
    from attnlab.pipeline.ground import statistics
    from attnlab.pipeline.figures import paired_differences

    contest = pd.DataFrame({"variant": ["softmax", "yat", "a3"], "lr": [3e-3, 3e-3, 1e-2],
                            "lr_choice": ["given", "given", "auto"], "delta_vs_softmax": [0.0, 0.05, -0.03],
                            "delta_ci_low": [0.0, 0.02, np.nan], "delta_ci_high": [0.0, 0.08, np.nan],
                            "wins": ["0/3", "0/3", "1/1"]})
    fig = paired_differences.draw({"contest": contest, "best": None, "dots": {"yat": (0.04, 0.05, 0.06)}},
                                  parse_style(TINY_STYLE))
    ax = fig.axes[0]
    bars = [line for line in ax.lines if list(line.get_xdata()) == [0.02, 0.08]]
    assert len(bars) == 1, "yat's interval is drawn from the contest table's bounds"
    texts = [t.get_text() for t in ax.texts]
    assert "wins 0/3 seeds" in texts and statistics.ONE_SEED in texts
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["yat\ncontest LR 0.003", "a3\ncontest LR 0.01 (auto)"], "softmax is the zero line, not a row"
    close(fig)


# ---- the catalog, its captions and the modules it names


def test_the_catalog_names_real_modules_tables_and_captions():
    names = [entry.name for entry in catalog.FIGURES]
    assert len(set(names)) == len(names)
    outputs = [name for entry in catalog.FIGURES for name in entry.outputs]
    assert len(set(outputs)) == len(outputs), "two figures write one file"
    for entry in catalog.FIGURES:
        assert set(entry.tables) <= set(contract.TABLES), entry.tables
        assert (REPO / entry.caption).is_file(), entry.caption
        assert entry.file in entry.outputs
    captions = {path.name for path in (REPO / catalog.CAPTIONS).glob("*.rst")}
    assert captions == {entry.caption.name for entry in catalog.FIGURES}, "a caption without a figure"


def test_each_figure_module_reads_exactly_the_tables_the_catalog_gives_it():
    """A table name in load() that the rule does not pass would fail at build time; one passed and unread is noise."""
    for entry in catalog.FIGURES:
        source = (REPO / "src" / (entry.module.replace(".", "/") + ".py")).read_text()
        load = next(node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)
                    and node.name == "load")
        read = {node.slice.value for node in ast.walk(load) if isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Name) and node.value.id == "tables"
                and isinstance(node.slice, ast.Constant)}
        assert read == set(entry.tables), entry.name


def test_captions_state_a_data_scope_and_name_no_config_keys():
    defaults = default_style()
    for entry in catalog.FIGURES:
        text = " ".join((REPO / entry.caption).read_text().split())
        assert not re.search(r"\bfigures\.\w+", text), f"{entry.caption} prints a config key"
        assert re.search(r"seed|analytic", text, re.IGNORECASE), f"{entry.caption} does not say whose data it shows"
        for layer, head in re.findall(r"layer (\d+), head (\d+)", text):
            assert (int(layer), int(head)) == (defaults["map_layer"], defaults["map_head"]), entry.caption
    entropy_caption = (REPO / catalog.BY_NAME["entropy"].caption).read_text()
    assert "mean over the contest seeds" in " ".join(entropy_caption.split())


def test_no_figure_module_imports_the_model():
    """Figures read bundles; importing the model (or training) would tie them to retraining edits."""
    folder = REPO / "src" / "attnlab" / "pipeline" / "figures"
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert node.module.split(".")[:2] not in (["attnlab", "training"], ["attnlab", "config"]), path


def test_the_catalog_loads_no_drawing_code():
    """The Snakefile and the writeup read the catalog: it must not pull in matplotlib or pandas."""
    from processes import run

    code = ("import sys; import attnlab.pipeline.ground.figure_catalog; "
            "print(sorted(m for m in ('matplotlib', 'pandas') if m in sys.modules))")
    result = run(["-c", code], cwd=REPO, env={"PYTHONPATH": REPO / "src"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.slow
def test_the_figure_rules_are_the_catalogs(tmp_path, corpus_path):
    """figures.smk generates one local rule per catalog entry, writing exactly its outputs."""
    from processes import snakemake
    from workspace import make_workspace

    ws = make_workspace(tmp_path)
    result = snakemake(ws, "--list-rules", "--configfile", "config/smoke.yaml", corpus=corpus_path)
    assert result.returncode == 0, result.stderr[-2000:]
    rules = {line.strip() for line in result.stdout.splitlines() if line.strip().startswith("figure_")}
    assert rules == {entry.rule for entry in catalog.FIGURES}
    targets = [str(path) for entry in catalog.FIGURES for path in entry.output_paths().values()]
    result = snakemake(ws, "-n", *targets, "--configfile", "config/smoke.yaml", corpus=corpus_path)
    assert result.returncode == 0, result.stderr[-2000:]
    for entry in catalog.FIGURES:
        assert entry.rule in result.stdout, entry.rule


BEHAVIOUR_EDIT = "\n\ndef _added_by_the_rerun_matrix_test():\n    return 1\n"


@pytest.mark.slow
@pytest.mark.parametrize("module,redrawn", [
    ("entropy", {"figure_entropy"}),
    ("score_orbit", {"figure_score_orbit"}),
    ("style", {entry.rule for entry in catalog.FIGURES}),  # what every figure imports redraws every figure
])
def test_a_figure_edit_redraws_only_the_figures_that_import_it(smoke_workspace, corpus_path, module, redrawn):
    from workspace import WRITEUP_RULES, edited, plan

    with edited(smoke_workspace / "src" / "attnlab" / "pipeline" / "figures" / f"{module}.py", BEHAVIOUR_EDIT):
        planned = plan(smoke_workspace, corpus=corpus_path)
    assert set(planned) == redrawn | WRITEUP_RULES, sorted(planned)
