"""Studies: the loader's refusals, the grid's cells (each trained once), the cell key, the identity of a cell
when a key is added, and one study's table; on the smoke scale, a study added by config lines alone."""

from __future__ import annotations

import copy
import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from attnlab.core.config import ConfigError, cell_slice, load_config, schema, validate_config
from attnlab.core.studies import point_text
from attnlab.pipeline.ground import statistics
from attnlab.pipeline.ground import paths
from attnlab.core.cell_key import CellKey
from attnlab.pipeline.ground.grid import Grid, check_corpus_room
from attnlab.pipeline.tables.study import study_table, write_study
from conftest import REPO
from processes import snakemake
from workspace import WRITEUP_RULES, make_workspace, plan, training_outputs

SMOKE = REPO / "config" / "smoke.yaml"
DROPOUT_STUDY = {"name": "dropout", "model": {"dropout": [0.0, 0.1]}, "variants": ["softmax", "yat"], "seeds": [0, 1]}
# The study the smoke build gains: weight decay is a runtime value of the optimiser state, so its cells load the
# contest's compiled programs from the run's XLA cache instead of compiling new ones.
DECAY_STUDY = {"name": "decay", "train": {"weight_decay": [0.0, 0.01]}, "variants": ["softmax", "yat"],
               "seeds": [0, 1]}


def smoke(*studies, **top) -> dict:
    cfg = yaml.safe_load(SMOKE.read_text())
    cfg["studies"] = [copy.deepcopy(s) for s in studies]
    cfg.update(top)
    return cfg


# ---- refused before compute, naming the study and the key


@pytest.mark.parametrize("study,named", [
    ({"name": "gqa", "model": {"kvheads": [1]}}, "studies.gqa.model.kvheads: unknown key"),
    ({"name": "gqa", "model": {"kv_heads": [2, 3]}}, "studies.gqa at kv_heads=3: model.kv_heads: kv_heads 3 does "
                                                     "not divide heads 2"),
    ({"name": "gqa", "model": {"kv_heads": []}}, "studies.gqa.model.kv_heads: an axis with no values"),
    ({"name": "gqa", "model": {"kv_heads": [1, 1]}}, "studies.gqa.model.kv_heads: 1 is listed twice"),
    ({"name": "gqa", "model": {"kv_heads": [0]}}, "studies.gqa.model.kv_heads[0]: 0 is less than the minimum"),
    ({"name": "gqa", "model": {"attention_impl": ["flash"]}}, "studies.gqa.model.attention_impl[0]: 'flash' is not"),
    ({"name": "probe", "telemetry": {"batches": [1, 2]}}, "studies.probe.telemetry: a study sets only model and "
                                                         "train keys"),
    ({"name": "corpus", "data": {"train_fraction": [0.8]}}, "studies.corpus.data: a study sets only model and train"),
    ({"name": "short", "train": {"steps": [10, 60]}}, "studies.short at steps=10: train.eval_every: 20 is larger "
                                                      "than train.steps 10"),
    ({"name": "wide", "model": {"block_size": [10**6]}}, "studies.wide at block_size=1000000: model.block_size: "
                                                          "1,000,000 is too large"),
    ({"name": "arms", "variants": ["yat_exp"]}, "studies.arms.variants: ['yat_exp'] are not in this file's variants"),
    ({"name": "contest"}, "studies.contest: the name 'contest' is taken by a built-in study"),
    ({"name": "Dropout"}, "studies.0.name: 'Dropout' does not match"),
    ({"name": "huge", "model": {"dropout": [0.0, 0.1, 0.2]}, "train": {"steps": [20, 40, 60]},
      "seeds": list(range(10))}, "studies.huge: 360 cells, more than max_cells 300"),
    ({"name": "n" * 65}, "is too long"),
    ({"name": "wordy", "points": [{"model": {"d_model": 32, "layers": 2, "heads": 2, "kv_heads": 2, "block_size": 32,
                                              "d_ff": 64, "dropout": 0.12345678901234568, "attention_block": 32,
                                              "a3_embed_dim": 16},
                                    "train": {"steps": 60, "batch_size": 8, "eval_every": 20, "eval_batches": 2,
                                              "weight_decay": 0.012345678901234568}}]},
     "studies.wordy: a point's folder name would be 208 characters"),
    ({"name": "ladder", "lrs": [1e-3, 3e-3], "points": [{"model": {"d_model": 32}}, {"model": {"d_model": 48}}]},
     "studies.ladder.lrs: a ladder trains each variant at one LR, not 2"),
    ({"name": "ladder", "points": [{"model": {"d_model": 32}, "train": {"weight_decay": 0.01}},
                                   {"model": {"d_model": 48}, "train": {"weight_decay": 0.1}}]},
     "studies.ladder: its points differ in train.weight_decay"),
    ({"name": "ladder", "model": {"dropout": [0.0, 0.1]}}, "studies.ladder: its points differ in model.dropout"),
])
def test_a_bad_study_is_refused_naming_its_key(study, named):
    with pytest.raises(ConfigError) as err:
        validate_config(smoke(study), "cfg.yaml")
    message = str(err.value)
    assert message.startswith("cfg.yaml: ") and named in message, message
    assert "\n" not in message


def test_two_studies_of_one_name_and_max_cells_are_refused_and_max_cells_can_be_raised():
    with pytest.raises(ConfigError, match="studies.gqa: the name 'gqa' is taken by another study"):
        validate_config(smoke({"name": "gqa"}, {"name": "gqa"}))
    ten = {"name": "ten", "model": {"dropout": [0.0, 0.1]}, "seeds": [0, 1, 2, 3, 4]}  # 2 x 4 variants x 5 seeds
    with pytest.raises(ConfigError, match="studies.ten: 40 cells, more than max_cells 39"):
        validate_config(smoke(ten, max_cells=39))
    assert len(Grid(validate_config(smoke(ten, max_cells=40)), {"a3": 0.01}).cells("ten")) == 40
    with pytest.raises(ConfigError, match="sweep: 8 cells, more than max_cells 7"):
        validate_config(smoke(max_cells=7))  # the built-in studies count too
    many = [{"name": f"s{i}", "model": {"dropout": [0.0, 0.1]}} for i in range(30)]  # 30 x 16 cells, each allowed
    with pytest.raises(ConfigError, match="studies: 496 cells in all, more than max_total_cells 495"):
        validate_config(smoke(*many, max_total_cells=495))
    assert validate_config(smoke(*many))["max_total_cells"] == 2000


def test_the_dag_refuses_a_bad_study_before_any_job(tmp_path, corpus_path):
    ws = make_workspace(tmp_path)
    (ws / "config" / "bad.yaml").write_text(yaml.safe_dump(smoke({"name": "gqa", "model": {"kv_heads": [3]}})))
    result = snakemake(ws, "-n", "--configfile", "config/bad.yaml", corpus=corpus_path)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "config/bad.yaml: studies.gqa at kv_heads=3: model.kv_heads: kv_heads 3 does not divide heads 2" in output
    assert "Traceback" not in output and not (ws / "results" / "studies").exists()


def test_a_context_the_corpus_cannot_supply_is_refused_naming_the_study(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("abcdefgh" * 50)  # 400 bytes: 40 in the validation split at 0.9
    cfg = validate_config(smoke({"name": "long", "model": {"block_size": [16, 64]}}))
    with pytest.raises(ConfigError) as err:
        check_corpus_room(Grid(cfg), corpus)
    assert str(err.value).startswith("studies.long at block_size=64: model.block_size: 64 needs at least 66")
    assert "block_size=16" not in str(err.value)
    check_corpus_room(Grid(validate_config(smoke({"name": "long", "model": {"block_size": [16]}}))), corpus)


# ---- the grid: every study's cells, each distinct cell trained once


def test_composability_is_a_study_with_the_cells_it_always_had():
    cfg = load_config(REPO / "config" / "composability.yaml")
    assert "composability" not in cfg
    built = Grid(cfg)
    study = built.cells("composability")
    assert len(study) == 8 * 3 * 2 and len(built.trained()) == 8 + 48  # none shared with the contest
    for key in study:
        sliced = built.slice_at(paths.place(key))
        base = cell_slice(cfg)
        assert sliced == dict(base, model=dict(base["model"], **key.axes))  # only kv_heads and the path differ
        assert paths.cell_bundle(key).as_posix().startswith(
            f"results/studies/composability/kv_heads={key.axes['kv_heads']}+attention_impl=")


def test_a_cell_two_studies_share_trains_once_in_the_first_studys_folder():
    cfg = validate_config(smoke(DROPOUT_STUDY, {"name": "again", "model": {"dropout": [0.0]},
                                                "variants": ["softmax"], "seeds": [0]}))
    built, plain = Grid(cfg), Grid(validate_config(smoke()))
    assert len(plain.trained()) == 11  # before the a3 contest LR is chosen: 8 sweep, 3 more contest (seed 1)
    new = [key for key in built.trained() if key not in plain.trained()]
    assert sorted(paths.cell_bundle(k).as_posix() for k in new) == sorted(
        f"results/studies/dropout/dropout=0.0/{v}/lr0.003/seed{s}" for v in ("softmax", "yat") for s in (0, 1))
    shared = {k: built.owner(k) for k in built.cells("dropout") if k.axes["dropout"] == 0.1}
    assert {paths.cell_bundle(owner).as_posix() for owner in shared.values()} == {
        f"results/runs/{v}/lr0.003/seed{s}" for v in ("softmax", "yat") for s in (0, 1)}
    again = built.cells("again")[0]
    assert built.owner(again) == CellKey.of("softmax", 3e-3, 0, "dropout", [("model.dropout", 0.0)])
    assert sorted(built.slices("dropout")) == ["runs", "studies/dropout/dropout=0.0", "studies/dropout/dropout=0.1"]


def test_listing_a_studys_keys_in_another_order_moves_no_cell():
    forward = {"name": "gqa", "model": {"kv_heads": [1, 2], "attention_impl": ["dense", "blockwise"]}}
    backward = {"name": "gqa", "model": {"attention_impl": ["dense", "blockwise"], "kv_heads": [1, 2]}}
    grids = [Grid(validate_config(smoke(s)), {"a3": 0.01}) for s in (forward, backward)]
    folders = [{paths.cell_bundle(k) for k in built.trained()} for built in grids]
    assert folders[0] == folders[1] and len(folders[0]) == 12 + 4 * 4 * 2  # 12 contest and sweep cells
    keys = [sorted(json.dumps(k.to_json()) for k in built.cells("gqa")) for built in grids]
    assert keys[0] == keys[1]  # the keys a study's table is handed (its params) do not move either


def test_a_study_at_auto_contest_lrs_waits_for_the_choice():
    cfg = validate_config(smoke({"name": "gqa", "model": {"kv_heads": [1]}, "variants": ["softmax", "a3"]}))
    assert {k.variant for k in Grid(cfg).cells("gqa")} == {"softmax"}
    chosen = Grid(cfg, {"a3": 0.01}).cells("gqa")
    assert {(k.variant, k.lr) for k in chosen} == {("softmax", "0.003"), ("a3", "0.01")}


def test_the_cell_key_keeps_an_lr_as_its_exact_text():
    near = CellKey.of("yat", 0.0010000001, 0)
    assert near.lr == "0.0010000001" and near != CellKey.of("yat", 1e-3, 0)
    assert CellKey.of("yat", "1.0e-3", 0) == CellKey.of("yat", 0.001, 0)
    key = CellKey.of("a3", 3e-3, 2, "gqa", [("model.kv_heads", None), ("model.attention_impl", "dense")])
    assert CellKey.from_json(json.loads(json.dumps(key.to_json()))) == key
    assert point_text(key.point) == "kv_heads=null+attention_impl=dense"
    assert key.label() == "a3 lr=0.003 seed=2 (gqa kv_heads=null+attention_impl=dense)"


# ---- a key added with a default that keeps the old behaviour changes no cell's identity


def test_adding_a_defaulted_key_leaves_every_identity_unchanged():
    wider = copy.deepcopy(schema())
    wider["properties"]["model"]["properties"]["label_smoothing"] = {"type": "number", "minimum": 0, "default": 0.0}
    cfg = yaml.safe_load(SMOKE.read_text())
    before = cell_slice(validate_config(cfg))
    after = validate_config(cfg, node_schema=wider)
    assert after["model"]["label_smoothing"] == 0.0
    assert cell_slice(after, node_schema=wider) == before
    set_away = validate_config(dict(cfg, model=dict(cfg["model"], label_smoothing=0.1)), node_schema=wider)
    assert cell_slice(set_away, node_schema=wider)["model"]["label_smoothing"] == 0.1
    # the keys every built cell has carried stay in its identity even at their defaults
    assert {"kv_heads", "attention_impl", "attention_block"} <= set(before["model"])


def test_the_identity_of_the_contest_and_sweep_cells_is_the_recorded_one():
    """The cell config the trainer receives for the smoke and default configs, as built workspaces recorded it."""
    recorded = json.loads((REPO / "tests" / "expected" / "train_commands.json").read_text())
    for name in ("smoke", "default"):
        cfg = load_config(REPO / "config" / f"{name}.yaml")
        built = Grid(cfg)
        assert built.slice_at("runs") == cell_slice(cfg) == recorded[name]["cell_config"]
        planned = sorted([paths.cell_bundle(k).as_posix(), k.variant, k.lr, k.seed] for k in built.trained()
                         if k.built_in)  # the config's own studies (smoke's ladder) train under results/studies
        assert planned == recorded[name]["cells"]


# ---- one study's table


def bundle(loss: float, diverged: bool = False) -> dict:
    return {"best_val_loss": loss, "final_val_loss": loss + 0.01, "diverged": diverged, "n_params": 1000,
            "config": {"model": {"dropout": 0.1}}}


def synthetic(seeds=(0, 1, 2)) -> list:
    """dropout 0.0 and 0.1 for softmax and yat: yat 0.05 above softmax, dropout 0.1 0.02 below 0.0."""
    cells = []
    for dropout in (0.0, 0.1):
        for variant, base in (("softmax", 1.60), ("yat", 1.65)):
            for seed in seeds:
                loss = base - (0.02 if dropout == 0.1 else 0.0) + 0.003 * seed
                cells.append((CellKey.of(variant, 3e-3, seed, "dropout", [("model.dropout", dropout)]), bundle(loss)))
    return cells


def test_a_study_table_pairs_by_seed_against_the_baseline_and_the_first_point(tmp_path):
    table = write_study(synthetic(), tmp_path, "dropout", at_contest_lr=True)
    assert list(table.columns[:4]) == ["study", "dropout", "variant", "lr"]
    assert [(r.dropout, r.variant) for r in table.itertuples()] == [(0.0, "softmax"), (0.0, "yat"), (0.1, "softmax"),
                                                                     (0.1, "yat")]
    yat = table[(table.variant == "yat") & (table.dropout == 0.1)].iloc[0]
    assert yat.n_seeds == 3 and yat.seeds == "0 1 2" and yat.lr == "0.003"
    assert yat.best_val_mean == pytest.approx(1.65 - 0.02 + 0.003)
    assert yat.delta_vs_softmax == pytest.approx(0.05) and yat.wins == "0/3"
    assert yat.delta_vs_first == pytest.approx(-0.02) and yat.first_wins == "3/3"
    # the same difference on every seed: degenerate evidence, never a zero-width interval
    assert math.isnan(yat.delta_ci_low) and math.isnan(yat.first_ci_high)
    assert yat.interval_note == statistics.ZERO_SPREAD
    runs = pd.read_csv(tmp_path / "runs_dropout.csv")
    assert list(runs.columns[:5]) == ["study", "dropout", "variant", "lr", "seed"] and len(runs) == 12
    shown = (tmp_path / "study_dropout.md").read_text()
    assert "+0.0500" in shown and "[+0.0500, +0.0500]" not in shown and "-0.0200" in shown and "| 0.1 " in shown
    assert "baseline" in shown and "first point" in shown
    for ext in ("csv", "tex"):
        assert (tmp_path / f"study_dropout.{ext}").stat().st_size > 0


def test_a_study_table_with_one_seed_says_it_has_no_interval():
    table = study_table(synthetic(seeds=(0,)))
    row = table[(table.variant == "yat") & (table.dropout == 0.1)].iloc[0]
    assert row.n_paired == 1 and math.isnan(row.delta_ci_low) and row.interval_note == "one seed: no interval"


# ---- on the smoke scale: a study added by config lines alone, and what reruns when it changes


@pytest.mark.slow
def test_a_new_study_needs_config_lines_only_and_its_edit_reruns_only_its_cells(smoke_workspace, corpus_path,
                                                                                 tmp_path):
    # a copy (times kept): the writeup this test rebuilds shows the study, so the shared build must not see it
    ws = Path(shutil.copytree(smoke_workspace, tmp_path / "ws", symlinks=True))
    with_study = yaml.safe_load(SMOKE.read_text())  # the smoke config's own studies kept, the new one added
    with_study["studies"] = with_study.get("studies", []) + [DECAY_STUDY]
    (ws / "config" / "decay.yaml").write_text(yaml.safe_dump(with_study))
    planned = plan(ws, "config/decay.yaml", corpus=corpus_path)
    new = {f"results/studies/decay/weight_decay=0.0/{v}/lr0.003/seed{s}" for v in ("softmax", "yat") for s in (0, 1)}
    assert training_outputs(planned) == new  # the weight decay 0.01 cells are the contest's, already built
    # the build's list of its tables gains the study's; the ledger, which reads no study table, is not redone
    assert {r for r in planned if not r.startswith("train_pack_")} == {"study_table", "build_manifest"} | WRITEUP_RULES
    result = snakemake(ws, "--cores", "2", "--configfile", "config/decay.yaml", corpus=corpus_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    table = pd.read_csv(ws / "results" / "tables" / "study_decay.csv")
    assert sorted(zip(table.weight_decay, table.variant)) == [(0.0, "softmax"), (0.0, "yat"), (0.01, "softmax"),
                                                              (0.01, "yat")]
    others = table[table.variant != "softmax"]  # softmax against itself has no spread, so no interval
    assert (table.n_seeds == 2).all() and (table.n_paired == 2).all() and others.delta_ci_low.notna().all()
    contest = pd.read_csv(ws / "results" / "tables" / "runs.csv")
    # the sweep includes every contest LR (a3's is the sweep's choice), so each seed-0 contest cell is a sweep cell
    assert set(contest.study) == {"contest", "sweep", "contest sweep"}
    assert set(contest[contest.study == "contest sweep"].variant) == {"softmax", "yat", "yat_b", "a3"}
    assert set(contest[contest.study == "contest"].seed) == {1}
    shared = table[table.weight_decay == 0.01].set_index("variant").best_val_mean
    at = contest[(contest.lr == 0.003) & contest.variant.isin(["softmax", "yat"])].groupby("variant").best_val_loss
    assert shared.to_dict() == pytest.approx(at.mean().to_dict())  # read from the contest's own bundles
    assert plan(ws, "config/decay.yaml", corpus=corpus_path) == {}
    with_study["studies"][-1] = dict(DECAY_STUDY, train={"weight_decay": [0.001, 0.01]})
    (ws / "config" / "decay.yaml").write_text(yaml.safe_dump(with_study))
    planned = plan(ws, "config/decay.yaml", corpus=corpus_path)
    assert training_outputs(planned) == {
        f"results/studies/decay/weight_decay=0.001/{v}/lr0.003/seed{s}" for v in ("softmax", "yat") for s in (0, 1)}
    assert {r for r in planned if not r.startswith("train_pack_")} == {"study_table"} | WRITEUP_RULES, planned.keys()
    # back to the config without the study: nothing trains and no table is redone, the writeup drops the study
    # (its table stays on disk, no longer listed as this build's)
    assert set(plan(ws, corpus=corpus_path)) == {"build_manifest"} | WRITEUP_RULES


def test_runs_csv_names_the_built_in_studies_of_each_cell():
    from attnlab.pipeline.ground.grid import grid
    from attnlab.pipeline.tables.study import built_in_study

    chosen = {"softmax": 0.003, "yat": 0.01, "yat_b": 0.01, "a3": 0.01}
    spec = json.loads(json.dumps(grid(load_config(REPO / "config" / "default.yaml"), chosen).to_json()))
    runs = pd.DataFrame({"variant": ["softmax", "softmax", "softmax", "a3", "a3"],
                         "lr": [0.003, 0.003, 0.001, 0.01, 0.01], "seed": [0, 1, 0, 0, 2]})
    assert built_in_study(runs, spec) == ["contest sweep", "contest", "sweep", "contest sweep", "contest"]


def test_a_point_copies_only_what_its_overrides_touch_and_leaves_the_config_alone():
    """Planning is linear in the points: each point's config shares every section it does not override."""
    from attnlab.core.studies import resolved

    cfg = validate_config(smoke())
    before = copy.deepcopy(cfg)
    point = resolved(cfg, [("model.dropout", 0.2), ("model.d_ff", 128)])
    assert point["model"]["dropout"] == 0.2 and point["model"]["d_ff"] == 128
    assert point["train"] is cfg["train"] and point["telemetry"] is cfg["telemetry"]
    assert point["model"] is not cfg["model"] and cfg == before


def test_a_diverged_study_cell_enters_no_comparison_and_is_counted():
    cells = synthetic()
    cells = [(key, bundle(4.17, diverged=True) if (key.variant == "yat" and key.seed == 2) else b) for key, b in cells]
    table = study_table(cells)
    yat = table[(table.variant == "yat") & (table.dropout == 0.1)].iloc[0]
    assert yat.n_diverged == 1 and yat.n_paired == 2 and yat.seeds == "0 1"
    assert yat.best_val_mean == pytest.approx(1.65 - 0.02 + 0.0015), "a diverged cell's loss entered the mean"
