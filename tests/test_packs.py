"""The planning's packs (attnlab.pipeline.plan.packs): every cell of every config is made by exactly one pack
rule, whatever LRs the sweeps choose, and a pack never mixes folders or variants."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from attnlab.core import studies
from attnlab.core.config import AUTO, validate_config
from attnlab.pipeline.plan import packs
from attnlab.pipeline.ground.grid import Grid
from attnlab.pipeline.plan.common import bundles
from attnlab.pipeline.plan.rules import Plan
from conftest import REPO

CONFIGS = sorted(p.name for p in (REPO / "config").glob("*.yaml"))


def plan_of(tmp_path: Path, name: str, **execution) -> Plan:
    cfg = yaml.safe_load((REPO / "config" / name).read_text())
    cfg.setdefault("execution", {}).update(execution)
    (tmp_path / name).write_text(yaml.safe_dump(cfg))
    return Plan(tmp_path / name, REPO / "src")


@pytest.mark.parametrize("name", CONFIGS)
def test_every_cell_is_made_by_exactly_one_pack_whatever_the_sweeps_choose(tmp_path, name):
    built = plan_of(tmp_path, name)
    cfg = built.config
    auto = [v for v in cfg["variants"] if cfg["contest"]["lr"][v] == AUTO]
    sweep = studies.sweep_lrs(cfg)
    choices = [{v: sweep[v][min(i, len(sweep[v]) - 1)] for v in auto} for i in range(max(map(len, sweep.values())))]
    for chosen in choices:
        packs.check_covers(built.packs, bundles(Grid(cfg, chosen).trained()))
    for pack in built.packs:
        assert 1 <= len(pack.cells) <= built.pack_size
    assert len({pack.rule for pack in built.packs}) == len(built.packs)


def test_a_pack_holds_one_folder_and_one_variant_up_to_its_size(tmp_path):
    built = plan_of(tmp_path, "paper.yaml", pack_size=3)
    assert {(p.place, p.variant) for p in built.packs if p.variant == "softmax"} == {("runs", "softmax")}
    softmax = [p for p in built.packs if p.variant == "softmax"]
    # softmax: the contest's 3 seeds at its fixed LR and the sweep's 3 other LRs, in (LR, seed) order
    assert [p.cells for p in softmax] == [(("0.0003", 0), ("0.0003", 1), ("0.0003", 2)),
                                          (("0.001", 0), ("0.003", 0), ("0.01", 0))]
    a3 = [p for p in built.packs if p.variant == "a3"]
    pending = [p for p in a3 if p.pending]
    # the 'auto' contest's seeds 1 and 2 wait for the sweep; seed 0 at the chosen LR is the sweep's own cell
    assert [p.cells for p in pending] == [(("{lr}", 1), ("{lr}", 2))]
    assert pending[0].outputs() == ["results/runs/a3/lr{lr}/seed1", "results/runs/a3/lr{lr}/seed2"]
    assert pending[0].cell_arguments(type("W", (), {"lr": "0.001"})()) == "--cell 0.001,1 --cell 0.001,2"


def test_pack_size_one_trains_a_cell_per_job_with_the_one_rule(tmp_path):
    assert plan_of(tmp_path, "smoke.yaml", pack_size=1).packs == []
    assert plan_of(tmp_path, "smoke.yaml").packs  # the default packs


def test_the_pack_size_is_an_execution_setting_never_a_cell_identity(tmp_path):
    one, eight = plan_of(tmp_path, "default.yaml", pack_size=1), plan_of(tmp_path, "default.yaml", pack_size=8)
    assert one.grid.slices() == eight.grid.slices()
    cfg = validate_config(copy.deepcopy(yaml.safe_load((REPO / "config" / "default.yaml").read_text())))
    assert cfg["execution"]["pack_size"] == 8
