"""A sweep that brackets (sweep.extend; attnlab.pipeline.ground.sweep_extension): where a variant's best LR sits at an
edge of its grid, the build's extend_sweep step asks for one more LR past that edge, until the best is inside or
the limit is reached, and the ledger says which."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml

from attnlab.core import studies
from attnlab.core.config import cell_slice, load_config, validate_config
from attnlab.core.errors import ConfigError
from attnlab.pipeline.claims.protocol import inside_grid
from attnlab.pipeline.plan import packs
from attnlab.pipeline.ground import sweep_extension
from attnlab.pipeline.ground.grid import Grid
from attnlab.pipeline.plan.common import bundles
from attnlab.pipeline.plan.rules import Plan
from attnlab.pipeline.tables.cli import main as tables_main
import decision_files
from conftest import REPO
from test_collection import make_bundle

SRC = REPO / "src"


def config(tmp_path: Path, name: str = "default", extend: int = 2, **sweep) -> Path:
    cfg = yaml.safe_load((REPO / "config" / f"{name}.yaml").read_text())
    cfg["sweep"].update(extend=extend, **sweep)
    path = tmp_path / f"{name}-extend{extend}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_each_step_goes_one_grid_step_past_the_edge_it_extends():
    found = sweep_extension.candidates([1e-3, 3e-3, 1e-2, 3e-2], 2)
    assert found == {"highest": [9e-2, 3e-1], "lowest": [3e-4, 9e-5]}
    # where one significant digit would land back on the edge, the step keeps two
    assert sweep_extension.one_step(1.1e-3, 1e-3) == 1.2e-3


@pytest.mark.parametrize("losses, limit, expected", [
    ({3e-3: 2.9, 1e-2: 2.8}, 2, (3e-2, "highest")),  # best at the top: one step up
    ({3e-3: 2.7, 1e-2: 2.8}, 2, (9e-4, "lowest")),  # best at the bottom: one step down
    ({3e-3: 2.9, 1e-2: 2.8, 3e-2: 2.7}, 2, (9e-2, "highest")),  # still at the top after one step, room for another
    ({3e-3: 2.9, 1e-2: 2.8, 3e-2: 2.7}, 1, (None, "limit")),  # ... but not at a limit of one
    ({3e-3: 2.9, 1e-2: 2.8, 3e-2: 2.85}, 2, (None, "inside")),  # the step bracketed the best
    ({3e-3: 2.9, 1e-2: 2.8, 3e-2: None}, 2, (None, "inside")),  # a diverged LR above is worse: bracketed
])
def test_the_build_step_reads_the_cells_and_asks_for_the_next_lr(tmp_path, losses, limit, expected):
    """The extend_sweep rule's command on bundles: the best (on the select half, as select_lr chooses) and the
    LR the next step trains."""
    folders = []
    for lr, loss in losses.items():
        scalars = {"diverged": True, "best_val_loss_select": float("nan")} if loss is None \
            else {"best_val_loss_select": loss}
        folders.append(make_bundle(tmp_path / "runs", {}, variant="yat", lr=lr, **scalars))
    out = tmp_path / "step.json"
    grid = json.dumps({"lrs": [3e-3, 1e-2], "limit": limit})
    assert tables_main(["extend-sweep", "--grid", grid, "--step", "0", "--out", str(out), *map(str, folders)]) == 0
    step = sweep_extension.read_step(out)
    assert (step["next"], step["where"]) == expected


def test_an_extension_with_no_step_to_take_is_refused_before_compute(tmp_path):
    path = config(tmp_path, "default", lrs={"softmax": [1e-3, 3e-3, 1e-2], "yat": [1e-2],
                                            "yat_b": [3e-3, 1e-2], "a3": [1e-3, 3e-3]})
    with pytest.raises(ConfigError, match=r"sweep\.extend: 2 .* yat has one LR.*sweep\.extend: 0"):
        Plan(path, SRC)


@pytest.mark.parametrize("grid, reached", [
    ([1e299, 1e300], "1e+299"),  # past the top a step overflows to inf: two packs named ...lrinf
    ([1e-320, 1e-319], "1e-320"),  # subnormal: past the bottom a step underflows to 0 and the next divides by it
    ([1e-29, 1e-28], "1e-31"),  # inside the range, but two steps down leave it
])
def test_lrs_whose_extension_leaves_the_range_an_lr_may_take_are_refused_naming_it(tmp_path, grid, reached):
    path = config(tmp_path, "default", lrs={v: grid for v in ("softmax", "yat", "yat_b", "a3")})
    with pytest.raises(ConfigError) as err:
        Plan(path, SRC)
    said = str(err.value)
    assert said.startswith(f"{path}: sweep.lrs: softmax's grid") and f"reaches {reached}" in said
    assert "outside the LRs a sweep may reach (1e-30 to 1e+30)" in said and "lower sweep.extend" in said


class Steps:
    """Snakemake's checkpoints once the extend_sweep steps ran and wrote `following[variant]` in turn (then null),
    and select_lr chose `chosen`."""

    def __init__(self, folder: Path, following: dict[str, list[float]], chosen: dict[str, float], config: Path):
        self.extend_sweep = SimpleNamespace(get=self.step)
        self.select_lr = SimpleNamespace(get=self.choice)
        self.folder, self.following, self.chosen = folder, following, chosen
        self.grids, self.limit = decision_files.grids(load_config(config))

    def step(self, variant, step):
        path = self.folder / f"{variant}-{step}.json"
        path.write_text(json.dumps(decision_files.step(variant, self.grids[variant], self.following.get(variant, []),
                                                       self.limit, step)))
        return SimpleNamespace(output=[str(path)])

    def choice(self, variant):
        path = self.folder / f"{variant}.json"
        lrs = self.grids[variant] + self.following.get(variant, [])
        path.write_text(json.dumps(decision_files.choice(variant, self.chosen[variant], lrs)))
        return SimpleNamespace(output=[str(path)])


def test_the_plan_reads_the_lrs_the_steps_added_into_the_sweep_the_contest_and_the_tables(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    yat_up = sweep_extension.candidates([3e-3, 1e-2, 3e-2], 2)["highest"]
    path = config(tmp_path)
    plan = Plan(path, SRC, Steps(tmp_path, {"yat": yat_up}, {"softmax": 3e-3, "yat": yat_up[-1], "yat_b": 1e-2,
                                                             "a3": 3e-3}, path))
    assert plan.sweep_added("yat") == yat_up and plan.sweep_added("yat_b") == []
    # each step reads the grid and the LRs the steps before it added
    assert not any("lr0.09" in b for b in plan.step_cells(SimpleNamespace(variant="yat", step="1"))[:-1])
    assert any("yat/lr0.09/seed0" in b for b in plan.step_cells(SimpleNamespace(variant="yat", step="2")))
    assert any("yat/lr0.3/seed0" in b for b in plan.sweep_cells(SimpleNamespace(variant="yat")))
    # the contest at the added LR and the added sweep cells are collected; the grid tells the tables what was added
    collected = plan.auto_cells()
    assert "results/runs/yat/lr0.3/seed1" in collected and "results/runs/yat/lr0.09/seed0" in collected
    grid = json.loads(shlex.split(plan.grid_json())[0])
    assert grid["sweep_lrs_by_variant"]["yat"] == [3e-3, 1e-2, 3e-2, 9e-2, 3e-1]
    assert grid["sweep_given"]["yat"] == [3e-3, 1e-2, 3e-2] and grid["sweep_extend"] == 2


@pytest.mark.parametrize("name", ["default", "settle", "smoke"])
@pytest.mark.slow
def test_every_lr_a_sweep_may_add_has_one_pack_whatever_the_steps_decide(tmp_path, name):
    """The packs are named when the Snakefile is read: every cell of every outcome (no LR added, or any number
    past either edge, and the contest at any of them) is made by exactly one pack."""
    plan = Plan(config(tmp_path, name, extend=2), SRC)
    cfg = plan.config
    grids = {v: sweep_extension.candidates(studies.sweep_lrs(cfg)[v], 2) for v in plan.beyond_grid}
    for edge in ("highest", "lowest"):
        for count in range(3):
            added = {v: found[edge][:count] for v, found in grids.items()}
            extended = sweep_extension.with_sweep_lrs(cfg, added)
            for v in plan.beyond_grid:
                for lr in studies.sweep_lrs(extended)[v]:
                    chosen = {u: (lr if u == v else studies.sweep_lrs(extended)[u][0]) for u in plan.beyond_grid}
                    packs.check_covers(plan.packs, bundles(Grid(extended, chosen).trained()))
    assert all(p.cells[0][1] == cfg["sweep"]["seed"] for p in plan.packs if "beyond" in p.rule)


def test_a_best_lr_the_limit_stopped_says_so_in_the_ledger():
    best = pd.DataFrame([{"variant": "yat", "best_lr": 3e-1, "lr_edge": "highest", "lrs_added": 2, "extend_limit": 2},
                         {"variant": "softmax", "best_lr": 1e-2, "lr_edge": "", "lrs_added": 0, "extend_limit": 2}])
    held = inside_grid({"best_lr": best}, ["softmax", "yat"])
    assert not held.met and "extended by 2 LRs, the limit (sweep.extend)" in held.detail
    best.loc[0, ["best_lr", "lr_edge"]] = [9e-2, ""]
    held = inside_grid({"best_lr": best}, ["softmax", "yat"])
    assert held.met and "yat's sweep extended by 2 LRs past its grid's edge" in held.detail


def test_a_config_without_extend_keeps_its_grid_and_its_collect_params(tmp_path):
    """sweep.extend 0 (the schema's default): no step, no extra pack, and the grid the collect step reads is
    the one it read before the key existed (so no table reruns)."""
    cfg = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    del cfg["sweep"]["extend"]
    cfg = validate_config(cfg)
    assert sweep_extension.limit(cfg) == 0 and sweep_extension.all_candidates(cfg) == {}
    from attnlab.pipeline.ground.grid import grid

    assert "sweep_extend" not in grid(cfg).to_json() and cell_slice(cfg)


def test_an_edit_of_the_sweep_names_new_settings_files_so_steps_and_collection_rerun(tmp_path, monkeypatch):
    """Snakemake compares no params of a job downstream of a checkpoint: an edit of sweep.extend (or of a grid)
    must reach the extend_sweep steps and the collect step as a new input file, named by its content."""
    monkeypatch.chdir(tmp_path)
    one, again, two = (Plan(config(tmp_path, "smoke", extend=n), SRC) for n in (1, 1, 2))
    assert one.contest_settings == again.contest_settings and one.sweep_settings == again.sweep_settings
    assert one.contest_settings != two.contest_settings
    assert one.sweep_settings["a3"] != two.sweep_settings["a3"] and set(one.sweep_settings) == {"a3"}
    one.write_expectations()
    assert json.loads(Path(one.sweep_settings["a3"]).read_text()) == {"lrs": [3e-3, 1e-2], "limit": 1}
    assert one.step_settings(SimpleNamespace(variant="a3")) == one.sweep_settings["a3"]


def test_the_best_lr_table_says_where_each_best_sits_and_what_the_sweep_added():
    from attnlab.pipeline.tables.display import where_best

    def row(lr, edge, added, limit):
        return SimpleNamespace(best_lr=lr, lr_edge=edge, lrs_added=added, extend_limit=limit)

    assert where_best(row(1e-2, "", 0, 0)) == "0.01"
    assert where_best(row(1e-2, "highest", 0, 0)) == "0.01 (highest of its sweep)"
    assert where_best(row(3e-2, "", 1, 2)) == "0.03 (1 LR added past its grid)"
    assert where_best(row(9e-2, "highest", 2, 2)) == "0.09 (highest of its sweep after 2 LRs added past its grid, " \
                                                     "the limit)"
