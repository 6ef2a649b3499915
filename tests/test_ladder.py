"""The scale ladder on synthetic cells: its tables, the trend test, each claim's smallest rung, the ledger rows.

Each case is built so that a wrong computation gives another answer: rungs
given out of order must come back by size, a difference paired with the wrong
seed or the wrong point changes the interval, a trend whose sign is flipped
flips the verdict, and a claim that holds only from the second rung must say so.
"""

from __future__ import annotations

import importlib
import json
import math

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from attnlab.core import studies
from attnlab.core.bundle_format import BUNDLE_FILE, BundleError, sealed
from attnlab.core.config import cell_slice, load_config, validate_config
from attnlab.core.errors import ConfigError
from attnlab.pipeline import claims
from attnlab.pipeline.ground import contract, statistics, verdicts
from attnlab.pipeline.ground.bundle_reader import read_bundle
from attnlab.pipeline.claims import ladder_points, ladder_rows
from attnlab.pipeline.ground import figure_catalog as catalog
from attnlab.pipeline.figures.style import parse_style
from attnlab.pipeline.ground.grid import CellKey
from attnlab.pipeline.report import ladder as report_ladder
from attnlab.pipeline.ground.verdicts import CONTRADICTED, HOLDS, INCONCLUSIVE
from attnlab.pipeline.tables import ladder
from conftest import REPO
from test_contract import synthetic_bundle

PUB = claims.published()
VARIANTS = ("softmax", "yat", "yat_b", "a3")
SEEDS = (0, 1, 2)
# (d_model, layers, heads) -> parameters of softmax; the other variants add a few
RUNGS = {(32, 2, 2): 31_745, (48, 3, 3): 94_289, (80, 4, 5): 327_105, (128, 4, 8): 818_241}
EXTRA = {"softmax": 0, "yat": 0, "yat_b": 8, "a3": 161}


def model(rung):
    d, layers, heads = rung
    return {"d_model": d, "layers": layers, "heads": heads, "d_ff": 4 * d, "block_size": 64, "dropout": 0.1}


def point_of(rung, steps=None):
    point = tuple((f"model.{k}", v) for k, v in zip(("d_model", "layers", "heads", "d_ff"), (*rung, 4 * rung[0])))
    return point + ((("train.steps", steps),) if steps is not None else ())


def loss(rung, variant, seed, steps=1000):
    """Softmax improves with size; a3 gains less at each rung, the kernels lose less; seeds shift all alike."""
    size = math.log10(RUNGS[rung])
    gap = {"softmax": 0.0, "yat": 0.30 - 0.05 * size, "yat_b": 0.25 - 0.04 * size, "a3": -0.20 + 0.03 * size}
    noise = 0.002 * ((seed * 7 + len(variant)) % 3 - 1)
    return 3.5 - 0.3 * size + gap[variant] + 0.05 * seed + noise - (0.1 if steps > 1000 else 0.0)


def bundle(rung, variant, seed, steps=1000, **telemetry):
    cfg = {"name": "synthetic", "variant": variant, "lr": 3e-3, "seed": seed, "model": model(rung),
           "train": {"steps": steps, "batch_size": 16}}
    tel = {"max_score": {"softmax": 10.0, "yat": 1e4, "yat_b": 2e3, "a3": 12.0}[variant] * (1 + 0.1 * seed),
           "entropy": {"mean": {"softmax": 0.5, "yat": 0.75, "yat_b": 0.7, "a3": 0.45}[variant] + 0.01 * seed}}
    if variant == "a3":
        tel["a3_gate_mean"] = [[0.9 + 0.01 * seed, 0.92], [0.94, 0.96]]
    tel.update(telemetry)
    return {"variant": variant, "lr": 3e-3, "seed": seed, "n_params": RUNGS[rung] + EXTRA[variant],
            "best_val_loss": loss(rung, variant, seed, steps), "diverged": False, "config": cfg, "telemetry": tel}


def cells(rungs=tuple(RUNGS), variants=VARIANTS, seeds=SEEDS, longer=None):
    """Every rung at 1,000 steps (the points set only the model), and `longer` also at 4,000 steps."""
    out = []
    for rung in rungs:
        for steps in (1000, 4000) if rung == longer else (1000,):
            point = point_of(rung, steps if rung == longer else None)
            out += [(CellKey.of(v, 3e-3, s, "ladder", point), bundle(rung, v, s, steps)) for v in variants
                    for s in seeds]
    return out


# ---- the tables


def test_rungs_are_numbered_by_size_whatever_order_the_config_lists_them():
    seeds = ladder.seed_table(cells(rungs=tuple(reversed(list(RUNGS)))))
    by_rung = seeds[seeds.variant == "softmax"].groupby("rung").n_params.first()
    assert list(by_rung.index) == [1, 2, 3, 4] and list(by_rung) == sorted(RUNGS.values())
    assert list(seeds.columns[:6]) == ["rung", "d_model", "layers", "heads", "d_ff", "steps"]


def test_a_paired_value_is_taken_against_the_baseline_of_the_same_seed_and_point():
    rung = (48, 3, 3)
    seeds = ladder.seed_table(cells(longer=rung))
    row = seeds[(seeds.variant == "a3") & (seeds.d_model == 48) & (seeds.steps == 4000) & (seeds.seed == 2)].iloc[0]
    assert row.delta_vs_softmax == pytest.approx(loss(rung, "a3", 2, 4000) - loss(rung, "softmax", 2, 4000))
    yat = seeds[(seeds.variant == "yat") & (seeds.rung == 1) & (seeds.seed == 1)].iloc[0]
    assert yat.max_score_ratio == pytest.approx(1e4 / 10.0)
    assert yat.entropy_gap == pytest.approx(0.25)
    assert seeds[seeds.variant == "softmax"].delta_vs_softmax.eq(0).all()


def test_the_ladder_length_is_what_most_rungs_trained_and_the_other_length_is_the_length_series():
    table = ladder.ladder_table(ladder.seed_table(cells(longer=(48, 3, 3))))
    assert set(table[table.steps == 4000].series) == {ladder.LENGTH}
    assert set(table[table.steps == 1000].series) == {ladder.SIZE}
    assert len(ladder.size_series(table)) == 4 * len(VARIANTS)
    length = ladder.length_series(table)
    assert set(length.rung) == {2} and list(length[length.variant == "a3"].steps) == [1000, 4000]


def test_the_ladder_row_carries_scipys_intervals_over_the_seeds():
    rung = (80, 4, 5)
    table = ladder.ladder_table(ladder.seed_table(cells()))
    row = table[(table.rung == 3) & (table.variant == "yat_b")].iloc[0]
    own = [loss(rung, "yat_b", s) for s in SEEDS]
    base = [loss(rung, "softmax", s) for s in SEEDS]
    low, high = stats.ttest_rel(own, base).confidence_interval(0.95)
    assert (row.delta_ci_low, row.delta_ci_high) == pytest.approx((low, high))
    assert row.delta_vs_softmax == pytest.approx(np.mean(np.subtract(own, base)))
    low, high = stats.t.interval(0.95, 2, loc=np.mean(own), scale=stats.sem(own))
    assert (row.best_val_ci_low, row.best_val_ci_high) == pytest.approx((low, high))
    assert row.n_params == RUNGS[rung] + EXTRA["yat_b"] and row.wins == "0/3"
    gate = table[(table.rung == 3) & (table.variant == "a3")].iloc[0]
    assert gate.a3_gate_mean == pytest.approx(np.mean([np.mean([[0.9 + 0.01 * s, 0.92], [0.94, 0.96]]) for s in SEEDS]))
    assert math.isnan(row.a3_gate_mean)
    assert list(table.columns) == ladder.ladder_columns(["d_model", "layers", "heads", "d_ff"])


def test_one_seed_gives_values_and_says_it_has_no_interval():
    table = ladder.ladder_table(ladder.seed_table(cells(seeds=(0,))))
    row = table[table.variant == "yat"].iloc[0]
    assert np.isfinite(row.delta_vs_softmax) and math.isnan(row.delta_ci_low)
    assert row.interval_note == statistics.ONE_SEED
    shown = ladder.ladder_display(table)
    assert shown[shown.variant == "yat"].iloc[0]["Δ vs softmax [95% CI]"] == f"{row.delta_vs_softmax:+.4f}"


def test_a_variant_at_two_lrs_is_refused_naming_it(tmp_path):
    two = cells(rungs=((32, 2, 2),))
    key, b = two[-1]
    two[-1] = (CellKey.of(key.variant, 1e-2, key.seed, key.study, key.point), b)
    with pytest.raises(BundleError, match="a3 at .*0.003.*0.01.*one LR per variant"):
        ladder.write_ladder(two, tmp_path)


def test_two_points_at_one_rung_and_length_are_refused():
    mixed = cells(rungs=((32, 2, 2),), seeds=(0,))
    key, b = mixed[0]
    other = json.loads(json.dumps(b))
    other["config"]["train"]["batch_size"] = 32
    mixed.append((CellKey.of("softmax", 3e-3, 1, "ladder", key.point + (("train.batch_size", 32),)), other))
    with pytest.raises(BundleError, match="several points at rung 1 and 1000 steps"):
        ladder.seed_table(mixed)


def test_the_files_are_the_contracts(tmp_path):
    ladder.write_ladder(cells(longer=(32, 2, 2)), tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        contract.files("ladder") + contract.files("ladder_seeds"))
    written = pd.read_csv(tmp_path / "ladder.csv")
    assert set(contract.columns("ladder")) <= set(written.columns) and len(written) == 5 * len(VARIANTS)
    assert "[" in (tmp_path / "ladder.md").read_text()


# ---- the trend


def seeds_frame(a3_slope, noise=0.0, rungs=4):
    """ladder_seeds with A³'s paired difference (a3 − softmax) changing by a3_slope per decade of parameters."""
    rows = []
    for rung, n in enumerate(sorted(RUNGS.values())[:rungs], start=1):
        for seed in SEEDS:
            jitter = noise * (1 if (seed + rung) % 2 else -1)
            for variant, delta in (("softmax", 0.0), ("a3", -0.2 + a3_slope * (math.log10(n) - 4) + jitter),
                                   ("yat", 0.3 - 0.05 * math.log10(n) + 0.001 * seed),
                                   ("yat_b", 0.1 + 0.0 * n + 0.001 * ((seed + rung) % 3))):
                rows.append({"rung": rung, "steps": 1000, "variant": variant, "lr": "0.003", "seed": seed,
                             "n_params": n, "log10_n_params": math.log10(n), "delta_vs_softmax": delta,
                             "series": ladder.SIZE})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("slope,noise,verdict", [(0.04, 0.0005, HOLDS), (-0.04, 0.0005, CONTRADICTED),
                                                 (0.0, 0.02, INCONCLUSIVE)])
def test_a3s_benefit_shrinks_holds_when_its_gain_falls_with_size_and_not_otherwise(slope, noise, verdict):
    row = ladder_rows.a3_benefit_shrinks({"ladder_seeds": seeds_frame(slope, noise)}, PUB, "synthetic")
    assert row.verdict == verdict, row
    assert row.seeds == 3 and "slope" in row.interval and "synthetic (scale ladder: 4 rungs" in row.protocol
    assert float(row.measured.split()[1]) == pytest.approx(-slope, abs=0.01)  # the gain is minus a3's delta


def test_the_kernel_gap_closes_for_yat_and_is_inconclusive_for_a_flat_yat_b():
    frame = seeds_frame(0.03, 0.001)
    yat, yat_b = (check({"ladder_seeds": frame}, PUB, "synthetic") for check in ladder_rows.TRENDS[1:])
    assert (yat.claim, yat.verdict) == ("yat's gap to softmax closes with scale", HOLDS)
    assert yat_b.verdict == INCONCLUSIVE
    assert "+0.0208 nats at 2.72 M (LR 0.0003)" in yat.published


def test_a_trend_needs_two_rungs_and_a_ladder():
    one = ladder_rows.a3_benefit_shrinks({"ladder_seeds": seeds_frame(0.04, rungs=1)}, PUB, "synthetic")
    assert one.verdict.startswith("not testable") and "two" in one.interval
    verdicts = [c.verdict for c in ladder_rows.scale_claims({}, PUB, "default")]
    assert verdicts == ["not testable at default"] * len(ladder_rows.TRENDS)


# ---- each claim at each rung


SCORE_SEEDS = tuple(range(6))  # the fewest seeds whose median the score scale's exact 95% interval bounds


def disk_cells(root, max_yat):
    """Bundles on disk of softmax and yat at two rungs, 6 seeds; yat's max score at each rung is max_yat[i]."""
    out = []
    for i, rung in enumerate(list(RUNGS)[:2]):
        for variant in ("softmax", "yat"):
            for seed in SCORE_SEEDS:
                folder = synthetic_bundle(root / f"rung{i}", variant, 3e-3, seed)
                summary = json.loads((folder / BUNDLE_FILE).read_text())
                score = (max_yat[i] if variant == "yat" else 10.0) * (1 + 0.05 * seed)
                summary.update({k: v for k, v in bundle(rung, variant, seed).items() if k != "telemetry"})
                summary["telemetry"].update(max_score=score, max_score_per_layer=[score, score / 2],
                                            mean_max_score_per_layer=[score, score / 2])
                (folder / BUNDLE_FILE).write_text(json.dumps(sealed(summary)))
                out.append((CellKey.of(variant, 3e-3, seed, "ladder", point_of(rung)), read_bundle(folder)))
    return out


def test_every_check_runs_at_every_rung_and_a_claim_can_start_to_hold_at_the_second(tmp_path):
    checked = ladder_points.rung_claims(disk_cells(tmp_path, max_yat=(50.0, 5000.0)), "synthetic", PUB)
    assert len(checked) == 2 * len(claims.CHECKS) and set(checked.rung) == {1, 2}
    # every variant trains at the ladder's one LR, not its own best: each rung's verdict is held back, and its
    # lean says what the data at that rung alone would say
    scores = checked[checked.check == "kernel_scores_larger"].set_index("rung")
    assert scores.verdict.str.startswith("inconclusive at synthetic (scale ladder rung").all()
    assert "would contradict" in scores.lean[1] and "would hold" in scores.lean[2]
    assert checked[checked.check == "kernel_lr_band"].verdict.str.startswith("not testable").all()
    row = ladder_rows.smallest_rung(checked, "kernel_scores_larger")
    assert row.measured == ("at no rung of this ladder; off the claim's protocol, the data alone would hold from "
                            "rung 2 of 2 (94.3 k parameters)")
    assert row.verdict.startswith("inconclusive at") and "would hold" in row.lean
    assert row.claim.startswith("on the scale ladder: kernel scores") and "31.7 k inconclusive" in row.note
    never = ladder_rows.smallest_rung(checked, "kernel_lr_band")
    assert never.measured == "not testable at any rung of this ladder"
    shown = ladder_points.claims_display(checked)
    assert list(shown.columns) == ["claim", "rung 1 (31.7 k, 1,000 steps)", "rung 2 (94.3 k, 1,000 steps)"]


def test_a_claim_that_holds_at_no_rung_says_so():
    checked = pd.DataFrame([{"rung": r, "steps": 1000, "n_params": n, "series": ladder.SIZE, "check": "kernel_gap",
                             "source": "kernel post", "claim": "softmax beats the kernel", "verdict": v,
                             "outcome": v, "off_protocol": False, "lean_side": v,
                             "measured": "", "interval": "95% CI [1, 2]", "seeds": 3, "protocol": f"p{r}"}
                            for r, n, v in ((1, 31_745, INCONCLUSIVE), (2, 94_289, CONTRADICTED))])
    row = ladder_rows.smallest_rung(checked, "kernel_gap")
    assert (row.measured, row.verdict, row.protocol) == ("at no rung of this ladder", CONTRADICTED, "p2")


def test_the_ledger_adds_the_ladder_rows_only_where_the_build_has_a_ladder(tmp_path):
    checked = ladder_points.rung_claims(disk_cells(tmp_path, max_yat=(50.0, 5000.0)), "synthetic", PUB)
    tables = {"ladder_seeds": seeds_frame(0.04, 0.0005), "ladder_claims": checked}
    with_ladder = claims.ledger(tables, PUB)
    without = claims.ledger({}, PUB)
    assert len(with_ladder) == len(without) + len(claims.CHECKS)  # the trends' rows are in both
    assert list(with_ladder.columns) == contract.columns("ledger")
    assert with_ladder.claim.iloc[len(claims.CHECKS)] == "A³'s benefits shrink as models scale up"
    assert with_ladder.claim.iloc[len(without)].startswith("on the scale ladder: ")


# ---- the config: points whose keys move together


def ladder_config(points, name="ladder", **study):
    raw = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    raw["studies"] = [{"name": name, "points": points, **study}]
    return raw


def test_points_cross_the_axes_and_each_sets_its_keys_together():
    """In any study but the ladder (whose points vary model size alone), points cross the axes."""
    points = [{"model": {"d_model": 32, "heads": 2}, "train": {"steps": 60}},
              {"model": {"d_model": 48, "heads": 3}, "train": {"steps": 120}}]
    with pytest.raises(ConfigError, match=r"studies\.ladder: its points differ in model\.dropout"):
        validate_config(ladder_config(points, model={"dropout": [0.0, 0.1]}))
    cfg = validate_config(ladder_config(points, name="sizes", model={"dropout": [0.0, 0.1]}))
    study = studies.studies(cfg)[-1]
    assert study.size() == 2 * 2 * len(cfg["variants"]) * len(cfg["contest"]["seeds"])
    assert study.axis_keys == ("model.d_model", "model.heads", "train.steps", "model.dropout")
    assert study.points()[2] == (("model.d_model", 48), ("model.heads", 3), ("train.steps", 120),
                                 ("model.dropout", 0.0))
    assert studies.point_text(study.points()[0]) == "d_model=32+heads=2+steps=60+dropout=0.0"


@pytest.mark.parametrize("points,study,refusal", [
    ([], {}, r"studies\.ladder\.points: a list of at least one point"),
    ([{"model": {"d_model": [32, 48]}}], {}, r"points\[0\]\.model\.d_model: a point sets one value per key"),
    ([{"model": {"d_model": 32}}, {"model": {"d_model": 48, "heads": 3}}], {},
     r"points\[1\]: sets model\.d_model, model\.heads, but points\[0\] sets model\.d_model; every point sets the "
     r"same keys"),
    ([{"model": {"d_model": 32}}, {"model": {"d_model": 32}}], {}, r"points\[1\]: the same point is listed twice"),
    ([{"model": {"d_model": 32}}], {"model": {"d_model": 64}}, r"model\.d_model is also set by the study outside"),
    ([{"model": {"d_modle": 32}}], {}, r"points\[0\]\.model\.d_modle: unknown key"),
    ([{"data": {"train_fraction": 0.5}}], {}, r"points\[0\]\.data: a point sets model and train keys only"),
    ([{"model": {"d_model": 30, "heads": 4}}], {}, r"studies\.ladder at d_model=30\+heads=4: model\.heads: 4 does not "
                                                    r"divide model\.d_model 30"),
    (["rung"], {}, r"points\[0\]: a point is a mapping of model and train values"),
])
def test_a_bad_point_is_refused_before_any_job_naming_the_study_and_the_key(points, study, refusal):
    with pytest.raises(ConfigError, match=refusal):
        validate_config(ladder_config(points, **study))


def test_the_ladder_config_spans_25x_from_about_30k_with_every_rung_trained_to_its_plateau():
    cfg = load_config(REPO / "config" / "ladder.yaml")
    settle = load_config(REPO / "config" / "settle.yaml")
    study = studies.studies(cfg)[-1]
    assert study.name == ladder.LADDER and set(study.variants) == set(VARIANTS) and len(study.seeds) == 3
    rungs = {}
    for point in study.points():
        values = dict(point)
        d_model = values["model.d_model"]
        assert values["model.d_ff"] == 4 * d_model and d_model // values["model.heads"] == 16
        train = studies.resolved(cfg, study.fixed + point)["train"]
        # the settle build's stopping rule at every rung, on the whole validation split and at its batch
        assert train["plateau"] == settle["train"]["plateau"] and train["eval_whole_split"]
        assert (train["batch_size"], train["eval_every"]) == (settle["train"]["batch_size"],
                                                              settle["train"]["eval_every"])
        rungs.setdefault((d_model, values["model.layers"], values["model.heads"]), set()).add(train["steps"])
    sizes = {rung: RUNGS[rung] for rung in rungs}  # the counts `attnlab params` prints at each rung
    assert len(rungs) >= 4 and max(sizes.values()) / min(sizes.values()) >= 25 and min(sizes.values()) < 40_000
    assert all(len(steps) == 1 for steps in rungs.values()), "one ceiling per rung: no length axis at a plateau"
    assert len({lr for v, lr in cfg["contest"]["lr"].items()}) == 1, "one LR for every variant"


def plateau_cells(stops):
    """cells() trained to a plateau with a 10,000-step ceiling: cell i stops at stops[i % len(stops)]."""
    out = []
    for i, (key, summary) in enumerate(cells(rungs=tuple(RUNGS)[:2])):
        summary = json.loads(json.dumps(summary))
        summary["config"]["train"].update(steps=10_000, plateau={"patience": 1000, "tolerance": 0.005})
        summary.update(steps_done=stops[i % len(stops)], plateau_step=stops[i % len(stops)])
        out.append((key, summary))
    return out


def test_a_ladder_at_its_plateau_says_how_long_its_cells_trained_where_it_names_its_protocol(tmp_path):
    stops = (3750, 6000, 10_000)
    seeds = ladder.seed_table(plateau_cells(stops))
    assert seeds.to_plateau.all() and set(seeds.trained_steps) == set(stops) and set(seeds.steps) == {10_000}
    table = ladder.ladder_table(seeds)
    assert table.trained_steps_min.eq(3750).all() and table.trained_steps_max.eq(10_000).all()
    assert table.to_plateau.all()
    assert set(table.series) == {ladder.SIZE}, "one ceiling: every rung is in the size series"
    text = "each cell to its plateau (3,750–10,000 steps, at most 10,000)"
    assert ladder.length_text(seeds) == text
    assert ladder.length_text(table, "trained_steps_min", "trained_steps_max") == text
    trend = ladder_rows.a3_benefit_shrinks({"ladder_seeds": seeds}, PUB, "synthetic")
    assert trend.protocol == f"synthetic (scale ladder: 2 rungs, 31.7 k–94.3 k parameters, {text})"
    shown = ladder.ladder_display(table)
    assert list(shown.trained) == ["3,750–10,000"] * len(table)
    # a fixed-step ladder names its steps, as before
    fixed = ladder.seed_table(cells(rungs=tuple(RUNGS)[:2]))
    assert not fixed.to_plateau.any() and set(fixed.trained_steps) == {1000}
    assert ladder.length_text(fixed) == "1,000 steps" and "trained" not in ladder.ladder_display(
        ladder.ladder_table(fixed))


def test_the_smoke_config_has_a_two_rung_ladder_whose_first_rung_is_its_contest():
    cfg = load_config(REPO / "config" / "smoke.yaml")
    study = studies.studies(cfg)[-1]
    assert study.name == ladder.LADDER and len(study.points()) == 2
    first = studies.resolved(cfg, study.fixed + study.points()[0])
    assert cell_slice(first) == cell_slice(cfg), "the first rung is the contest's model: its cells train once"


def test_the_ladder_figures_are_drawn_only_for_a_build_with_a_ladder():
    drawn = [f.name for f in catalog.FIGURES if f.study == ladder.LADDER]
    assert drawn == ["ladder_gap", "ladder_telemetry", "ladder_length"]
    assert not any(catalog.BY_NAME[name].drawn_for(["composability"]) for name in drawn)
    assert all(catalog.BY_NAME[name].drawn_for(["composability", "ladder"]) for name in drawn)
    assert catalog.BY_NAME["lr_sweep"].drawn_for([])


# ---- the figures and the writeup's Scale section


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ladder")
    ladder.write_ladder(cells(longer=(48, 3, 3)), folder)
    return folder


@pytest.mark.parametrize("name", ["ladder_gap", "ladder_telemetry", "ladder_length"])
def test_each_ladder_figure_draws_its_lines_and_the_published_points(written, name):
    module = importlib.import_module(f"attnlab.pipeline.figures.{name}")
    tables = {t: pd.read_csv(written / f"{t}.csv") for t in ("ladder", "ladder_seeds")}
    fig = module.draw(module.load(tables, parse_style("{}")), parse_style("{}"))
    lines = [line for ax in fig.axes for line in ax.get_lines()]
    hollow = [line for line in lines if line.get_markerfacecolor() == "white"]
    if name == "ladder_length":
        assert {tuple(line.get_xdata()) for line in lines if len(line.get_xdata()) == 2} >= {(1000.0, 4000.0)} or \
            any(np.allclose(sorted(line.get_xdata()), [1000, 4000], rtol=0.05) for line in lines)
        assert not hollow
    else:
        assert hollow, "the posts' numbers at 2.72 M are drawn"
        assert all(line.get_xdata()[0] == pytest.approx(PUB["params"]["softmax"]) for line in hollow)


def test_a_figure_without_rows_says_so_instead_of_drawing_nothing():
    from attnlab.pipeline.figures import ladder_length

    empty = {"ladder": pd.DataFrame(columns=ladder.ladder_columns([])),
             "ladder_seeds": pd.DataFrame(columns=contract.columns("ladder_seeds"))}
    fig = ladder_length.draw(ladder_length.load(empty, parse_style("{}")), parse_style("{}"))
    assert "no rung at more than one length" in " ".join(t.get_text() for ax in fig.axes for t in ax.texts)


def test_the_scale_section_says_each_trend_and_names_the_lr_confound(written, tmp_path):
    table = pd.read_csv(written / "ladder.csv")
    checked = ladder_points.rung_claims(disk_cells(tmp_path, max_yat=(50.0, 5000.0)), "synthetic", PUB)
    ledger = claims.ledger({"ladder_seeds": pd.read_csv(written / "ladder_seeds.csv"), "ladder_claims": checked}, PUB)
    text = report_ladder.scale_results(table, ledger)
    assert "4 variants at 4 rungs from 31.7 k to 818 k parameters, 1,000 steps each, over 3 seeds" in text
    assert "A³'s benefits shrink as models scale up: holds (slope +" not in text
    assert "yat's gap to softmax closes with scale: holds" in text
    assert "Every variant trains at LR 0.003 at every rung" in text and "confound" in text
    assert "At rung 2, trained for 1,000 and 4,000 steps" in text
    assert ("would support: kernel scores are orders of magnitude larger than softmax logits (from rung 2 of 2"
            in text)
    mixed = table.assign(lr=np.where(table.variant == "softmax", 3e-4, table.lr))
    assert "different LRs (softmax at 0.0003, yat at 0.003" in report_ladder.lr_sentence(mixed)
    shown = report_ladder.claims_shown(checked)
    assert set(shown.iloc[:, 1:].stack()) <= set(verdicts.VERDICTS)
