"""The planning the rule files call (attnlab.pipeline.plan.rules): what each rule reads, worked out from a config.

Ordinary Python, so it is tested here without Snakemake: building a plan writes
nothing, its outputs are the contract's, its expectation files are named by
their content, and the 'auto' contest LRs come from the select_lr checkpoints.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from attnlab.core.config import load_config
from attnlab.core.errors import ConfigError
from attnlab.core.studies import CONTEST, SWEEP
from attnlab.pipeline.ground import contract
from attnlab.pipeline.ground.design import design_of
from attnlab.pipeline.plan import device, expectation
from attnlab.pipeline.ground import paths
from attnlab.pipeline.plan.rules import Plan
import decision_files
from conftest import REPO
from processes import run
from workspace import make_workspace

SRC = REPO / "src"


@pytest.fixture
def workspace(tmp_path, monkeypatch, corpus_path):
    """An empty workspace with the corpus where the build keeps it, as the working directory."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ATTNLAB_CORPUS", str(corpus_path))
    return tmp_path


def config_file(workspace: Path, name: str = "smoke", **changes) -> Path:
    """A copy of config/<name>.yaml with top-level sections updated by `changes` ({section: {key: value}})."""
    cfg = yaml.safe_load((REPO / "config" / f"{name}.yaml").read_text())
    for section, values in changes.items():
        cfg[section] = {**cfg.get(section, {}), **values} if isinstance(values, dict) else values
    path = workspace / f"{name}-{len(list(workspace.glob('*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


class Checkpoints:
    """What Snakemake's `checkpoints.select_lr.get(variant=...)` gives once the checkpoint ran: its output file;
    the variant's extend_sweep steps (sweep.extend) ran with it and added no LR."""

    def __init__(self, folder: Path, chosen: dict[str, float], config: Path):
        self.select_lr, self.folder, self.chosen = self, folder, chosen
        self.extend_sweep = SimpleNamespace(get=self.step)
        self.grids, self.limit = decision_files.grids(load_config(config))

    def step(self, variant, step):
        self.get(variant)  # run (or not) as the variant's select_lr
        path = self.folder / f"{variant}-step{step}.json"
        path.write_text(json.dumps(decision_files.step(variant, self.grids[variant], [], self.limit, step)))
        return SimpleNamespace(output=[str(path)])

    def get(self, variant):
        path = self.folder / f"{variant}.json"
        path.write_text(json.dumps(decision_files.choice(variant, self.chosen[variant], self.grids[variant])))
        return SimpleNamespace(output=[str(path)])


def one_word(text: str) -> str:
    """The one shell word a param is (the rules pass JSON params to commands as such)."""
    words = shlex.split(text)
    assert len(words) == 1
    return words[0]


def files_under(folder: Path) -> set[Path]:
    return {p.relative_to(folder) for p in folder.rglob("*")}


def test_building_a_plan_writes_nothing(workspace):
    path = config_file(workspace)
    before = files_under(workspace)
    plan = Plan(path, SRC)
    assert files_under(workspace) == before
    assert plan.expected_runs.startswith(str(expectation.EXPECTED)) and not Path(plan.expected_runs).exists()


def test_the_outputs_are_the_contracts_tables(workspace):
    plan = Plan(config_file(workspace), SRC)
    assert plan.tables == [str(paths.TABLES / f) for name in contract.COLLECTED for f in contract.files(name)]
    assert plan.ledger == [str(paths.table("ledger", ext)) for ext in contract.DISPLAYED]
    assert plan.ladder == ("ladder" in plan.studies)
    assert bool(plan.ladder_outputs) == plan.ladder
    assert all(Path(t).name in {f for n in ("ladder", "ladder_seeds", "ladder_claims") for f in contract.files(n)}
               for t in plan.ladder_outputs)
    assert plan.figures and all(f.startswith(str(paths.FIGURES)) for f in plan.figures)


def test_a_plan_without_studies_has_no_study_outputs(workspace):
    plan = Plan(config_file(workspace, studies=[]), SRC)
    assert plan.studies == [] and plan.study_tables == [] and plan.ladder_outputs == []
    assert plan.composability_tables == [] and plan.composability_expectation() == []
    # the step timing is no study: a build that trains softmax and A3 times their steps
    assert plan.optional_tables == ["step_times"] and plan.ledger_optional == ["step_times"]
    without_a3 = Plan(config_file(workspace, studies=[], variants=["softmax", "yat"],
                                  contest={"lr": {"softmax": 3e-3, "yat": 3e-3}}), SRC)
    assert without_a3.step_times == [] and without_a3.optional_tables == []


def test_an_expectation_is_named_by_its_content(workspace):
    first = Plan(config_file(workspace), SRC)
    again = Plan(config_file(workspace), SRC)
    longer = Plan(config_file(workspace, train={"steps": 80}), SRC)
    assert first.expected_runs == again.expected_runs
    assert first.expected_runs != longer.expected_runs
    content = first.expectation_content(CONTEST, SWEEP)
    assert Path(first.expected_runs).name == f"{expectation.RUNS}-{expectation.digest(content)}.json"
    slices = json.loads(content)["slices"]
    assert slices[str(paths.RUNS)]["train"]["steps"] == 60
    assert json.loads(longer.expectation_content(CONTEST, SWEEP))["slices"][str(paths.RUNS)]["train"]["steps"] == 80


def test_the_expectations_are_written_once_and_keep_their_time_while_unchanged(workspace):
    """The one write of the planning (the Snakefile makes it while it is read): the named content, once."""
    plan = Plan(config_file(workspace), SRC)
    plan.write_expectations()
    out = workspace / plan.expected_runs
    assert out.read_text() == plan.expectation_content(CONTEST, SWEEP)
    written = out.stat().st_mtime_ns
    again = Plan(config_file(workspace), SRC)
    again.write_expectations()
    assert again.expected_runs == plan.expected_runs and out.stat().st_mtime_ns == written
    longer = Plan(config_file(workspace, train={"steps": 80}), SRC)
    longer.write_expectations()
    assert (workspace / longer.expected_runs).is_file() and longer.expected_runs != plan.expected_runs


def test_auto_contest_lrs_come_from_the_select_lr_checkpoints(workspace):
    path = config_file(workspace, "default")
    plan = Plan(path, SRC, Checkpoints(workspace, {"softmax": 3e-3, "yat": 1e-2, "yat_b": 1e-2, "a3": 3e-3}, path))
    assert plan.selected_lrs() == {"softmax": 3e-3, "yat": 1e-2, "yat_b": 1e-2, "a3": 3e-3}
    known, auto = plan.known_cells(), plan.auto_cells()
    assert not set(known) & set(auto)
    assert str(paths.RUNS / "yat" / "lr0.01" / "seed1") in auto  # a contest seed the sweep does not train
    grid = json.loads(one_word(plan.grid_json()))
    assert grid["contest_lr"]["yat"] == 1e-2


class NotYetRun(Exception):
    """Stands for Snakemake's IncompleteCheckpointException: that variant's select_lr has not run."""


class PartlyRun(Checkpoints):
    """select_lr has run for the variants in `chosen` alone."""

    def get(self, variant):
        if variant not in self.chosen:
            raise NotYetRun(variant)
        return super().get(variant)


def test_each_variants_contest_is_asked_for_on_its_own_once_its_sweep_is_chosen_from(workspace):
    """collect_tables asks one input function per 'auto' variant, so the contest of a variant whose sweep is
    done is known (and trains) while another's sweep is still running, instead of every contest waiting for
    the slowest sweep."""
    path = config_file(workspace, "default")
    plan = Plan(path, SRC, PartlyRun(workspace, {"yat_b": 1e-2}, path))
    inputs = plan.auto_cell_inputs()
    assert list(inputs) == [f"auto_{v}" for v in plan.auto_variants()] and "auto_yat_b" in inputs
    yat_b = inputs["auto_yat_b"](SimpleNamespace())
    assert yat_b and all(Path(b).parts[-3:-1] == ("yat_b", "lr0.01") for b in yat_b)
    with pytest.raises(NotYetRun, match="softmax"):
        inputs["auto_softmax"](SimpleNamespace())
    default = config_file(workspace, "default")
    every = Plan(default, SRC,
                 Checkpoints(workspace, {"softmax": 3e-3, "yat": 1e-2, "yat_b": 1e-2, "a3": 3e-3}, default))
    split = [b for f in every.auto_cell_inputs().values() for b in f(SimpleNamespace())]
    assert sorted(split) == sorted(every.auto_cells())


def test_with_rounds_collection_asks_for_every_later_contest_cell_through_one_function(workspace):
    """Seeds added in rounds: a later round adds fixed-LR variants' cells too, and collection's grid depends on
    the seed_round checkpoints, so one function asks for every contest cell not known up front (Snakemake then
    makes collection wait for those checkpoints), as a build without auto variants needs as well."""
    rounds = {"rounds": {"max_seeds": 6, "round_size": 2}}
    plan = Plan(config_file(workspace, "default", contest=rounds), SRC)
    assert plan.auto_cell_inputs() == {"auto": plan.auto_cells}
    fixed = Plan(config_file(workspace, "default", contest={**rounds, "lr": {v: 3e-3 for v in plan.auto_variants()}}),
                 SRC)
    assert not fixed.auto_variants() and list(fixed.auto_cell_inputs()) == ["auto"]


def test_a_training_cell_gets_its_folders_slice_and_a_memory_that_grows_with_the_model(workspace):
    plan = Plan(config_file(workspace), SRC)
    cell = SimpleNamespace(place="runs", variant="softmax", lr="0.003", seed="0")
    assert plan.cell_slice(cell)["train"]["steps"] == 60
    assert json.loads(one_word(plan.cell_config(cell))) == plan.cell_slice(cell)
    bigger = Plan(config_file(workspace, model={"block_size": 128}), SRC)
    assert bigger.train_mem_mb(cell) > plan.train_mem_mb(cell) >= 1000
    assert plan.train_mem_mb(cell, attempt=2) == 2 * plan.train_mem_mb(cell)
    with pytest.raises(LookupError, match="no folder of this config's studies"):
        plan.cell_slice(SimpleNamespace(place="studies/nowhere/x=1"))


def test_a_training_cells_code_is_its_variants(workspace):
    plan = Plan(config_file(workspace), SRC)
    softmax, yat = (plan.training_code(SimpleNamespace(variant=v)) for v in ("softmax", "yat"))
    assert softmax != yat and len(softmax) == 16 and int(softmax, 16) >= 0


# ---- one GPU shared by several training jobs (attnlab.pipeline.plan.device)


def test_without_a_gpu_training_claims_none_and_no_memory_share(workspace, monkeypatch):
    monkeypatch.setenv(device.GPUS_ENV, "0")
    plan = Plan(config_file(workspace), SRC)
    assert plan.gpus == () and plan.gpu_slots == 0 and plan.train_gpu() == 0
    assert device.MEM_FRACTION_ENV not in plan.environment()


def test_on_a_gpu_jobs_per_gpu_training_jobs_share_it_each_with_its_own_memory(workspace, monkeypatch):
    monkeypatch.setenv(device.GPUS_ENV, "81559")
    monkeypatch.delenv(device.MEM_FRACTION_ENV, raising=False)
    plan = Plan(config_file(workspace, "paper"), SRC)
    assert plan.gpus == (81559,) and plan.train_gpu() == 1 and plan.gpu_slots == 4  # the default jobs_per_gpu
    assert float(plan.environment()[device.MEM_FRACTION_ENV]) * plan.gpu_slots <= 0.9
    two = Plan(config_file(workspace, "paper", execution={"jobs_per_gpu": 2}), SRC)
    assert two.gpu_slots == 2 and float(two.environment()[device.MEM_FRACTION_ENV]) == 0.45
    monkeypatch.setenv(device.MEM_FRACTION_ENV, "0.3")  # the user's own share stands
    assert device.MEM_FRACTION_ENV not in Plan(config_file(workspace, "paper"), SRC).environment()


def test_a_cell_too_large_for_its_share_of_the_gpu_is_refused_before_any_job(workspace, monkeypatch):
    monkeypatch.setenv(device.GPUS_ENV, "4000")  # 4 GB, in four shares of 0.9 GB
    with pytest.raises(ConfigError, match=r"GPU memory.*execution\.jobs_per_gpu 4; lower execution\.jobs_per_gpu"):
        Plan(config_file(workspace, "paper"), SRC)
    assert Plan(config_file(workspace, "paper", execution={"jobs_per_gpu": 1}), SRC).gpu_slots == 1


@pytest.mark.parametrize("text,memory", [("81559", (81559,)), ("40960, 40960", (40960, 40960)), ("0", ()),
                                         ("", ())])
def test_a_stated_gpu_list_reads_as_each_gpus_memory(text, memory):
    assert device.parse_gpus(text) == memory


@pytest.mark.parametrize("text", ["H100", "1_000", "\u0661\u0662\u0663", "-5", "99999999999999999999999"])
def test_a_stated_gpu_list_that_is_not_one_is_refused(text):
    with pytest.raises(ConfigError, match="MiB"):
        device.parse_gpus(text)


@pytest.mark.parametrize("gpus,limit", [("81559", "4"), ("0", None)])
@pytest.mark.slow
def test_a_build_on_a_gpu_runs_at_most_jobs_per_gpu_training_jobs_at_once(tmp_path, corpus_path, gpus, limit):
    """Snakemake itself holds the limit: the build's `gpu` resource is the plan's slots (none without a GPU)."""
    (tmp_path / "ws").mkdir()
    ws = make_workspace(tmp_path / "ws")
    result = run(["-m", "snakemake", "--cores", "2", str(paths.CORPUS), "--config", "file=config/paper.yaml"], ws,
                 {"PYTHONPATH": ws / "src", "ATTNLAB_CORPUS": corpus_path, device.GPUS_ENV: gpus}, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    provided = [line for line in (result.stdout + result.stderr).splitlines() if "Provided resources" in line]
    if limit is None:
        assert not any("gpu" in line for line in provided)
    else:
        assert provided and re.search(rf"gpu\W+(?:Resource\(\W*gpu\W+)?{limit}\b", provided[0]), provided


def test_the_catalogs_studies_of_twice_the_heads_and_of_fox_without_positions_feed_the_ledger(workspace):
    """The catalog's study `heads` (softmax with twice the heads) and `positions` (fox without position
    embeddings): their cells' tables are inputs of the ledger and among the optional tables it reads, so the
    selective-attention row and forgetting attention's row on position embeddings can compare with them."""
    plan = Plan(config_file(workspace, "catalog"), SRC)
    studies = ("heads", "positions", "slay_small", "slay_large")  # and SLAY at fewer and more features
    assert plan.ledger_study_tables == [str(paths.study_runs(name)) for name in studies]
    for table in (f"runs_{name}" for name in studies):
        assert table in plan.ledger_optional and table in plan.optional_tables
    heads, positions, small, large = plan.config["studies"]
    assert {small["model"]["variant_options"]["slay"]["features"], large["model"]["variant_options"]["slay"][
        "features"]} == {2, 32} and small["variants"] == large["variants"] == ["slay"]
    assert heads["model"]["heads"] == 2 * plan.config["model"]["heads"] and heads["variants"] == ["softmax"]
    assert positions["model"] == {"position": "none"} and positions["variants"] == ["fox"]
    assert plan.config["model"].get("position", "learned") == "learned"
    assert Plan(config_file(workspace), SRC).ledger_study_tables == []


def test_longer_training_starts_first_and_the_runs_animation_before_other_figures(workspace):
    """Snakemake starts the ready job of highest priority first: a pack's priority is its steps, so the longest
    pack is never the one left running alone at the end, and training outranks every figure."""
    from attnlab.pipeline.ground.figure_catalog import FIGURES

    plan = Plan(config_file(workspace, "default"), SRC)
    steps = plan.cell_slice(SimpleNamespace(place="runs"))["train"]["steps"]
    assert {plan.pack_priority(p) for p in plan.packs} == {len(p.cells) * steps for p in plan.packs}
    assert plan.cell_priority(SimpleNamespace(place="runs")) == steps
    figures = {f.name: plan.figure_priority(f) for f in FIGURES}
    assert figures["reading"] == 1 and figures["score_orbit"] == 0 and figures["loss_curves"] == 0
    assert min(plan.pack_priority(p) for p in plan.packs) > max(figures.values())


class Written:
    """Checkpoints whose outputs are already on disk as given (select_lr's choices, seed_round's decisions)."""

    def __init__(self, folder: Path, text: str, config: Path | None = None):
        self.select_lr = self.seed_round = self
        self.extend_sweep = SimpleNamespace(get=self.step)
        self.grids, self.limit = decision_files.grids(load_config(config)) if config else ({}, 0)
        self.folder, self.text = folder, text

    def step(self, variant, step):
        """A step that added no LR (the config's grid, read whole, its best inside)."""
        path = self.folder / f"{variant}-step{step}.json"
        path.write_text(json.dumps(decision_files.step(variant, self.grids[variant], [], self.limit, step)))
        return SimpleNamespace(output=[str(path)])

    def get(self, **wildcards):
        path = self.folder / f"{'_'.join(map(str, wildcards.values()))}.json"
        path.write_text(self.text)
        return SimpleNamespace(output=[str(path)])


@pytest.mark.parametrize("text", ['{"version": 1, "round": 0, "seeds": [0, 1], "next_se', '{"next_seeds": []}',
                                  '{"version": 1, "seeds": [0, 1], "next_seeds": "none"}'])
def test_a_cut_short_or_edited_round_decision_stops_with_one_line_naming_it(workspace, text):
    """A truncated or hand-edited decision is refused by name with what to do, not read (a JSONDecodeError, or
    a KeyError, from deep in the planner) and not trusted."""
    rounds = {"rounds": {"max_seeds": 6, "round_size": 2}}
    path = config_file(workspace, "default", contest=rounds)
    plan = Plan(path, SRC, Written(workspace, text, path))
    with pytest.raises(ConfigError, match=r"round_0\.json|0\.json.*remove it and build again"):
        plan.decided_rounds()


@pytest.mark.parametrize("text", ['{"lr": 0.0', '{"learning_rate": 0.003}', '{"lr": -1}', '{"lr": "0.003"}'])
def test_a_cut_short_or_edited_lr_choice_stops_with_one_line_naming_it(workspace, text):
    path = config_file(workspace, "default")
    plan = Plan(path, SRC, Written(workspace, text, path))
    with pytest.raises(ConfigError, match=r"\.json: .*remove it and build again"):
        plan.selected_lrs()


def test_the_rule_that_adds_seeds_numbers_a_round_as_the_plan_trains_it(workspace):
    """With a study of its own seeds beside contest.rounds, the decision (from the config the seed_round rule is
    given) names the seeds the plan's next round trains: the study's seed is skipped by both."""
    import json
    import shlex

    from attnlab.pipeline.ground import rounds as planned
    from attnlab.pipeline.tables import rounds as rule

    contest = {"seeds": [0, 1], "rounds": {"max_seeds": 4, "round_size": 1, "reach": None}}
    studies = [{"name": "extra", "model": {"dropout": [0.0]}, "variants": ["softmax"], "seeds": [2]}]
    plan = Plan(config_file(workspace, "default", contest=contest, studies=studies), SRC)
    given = json.loads(shlex.split(plan.rounds_config())[0])
    losses = {v: {0: 2.0, 1: 2.1} if v == "softmax" else {0: 2.01, 1: 2.08} for v in plan.config["variants"]}
    decision = rule.decide(losses, given, 0)
    assert decision["next_seeds"] == list(planned.round_seeds(plan.config)[1]) == [3]


@pytest.mark.parametrize("asked, named", [([3], True), ([], False)])
def test_a_round_the_decisions_on_disk_ask_for_and_no_build_made_is_named_by_all(workspace, asked, named):
    """Snakemake does not make a checkpoint's output that only a rerun checkpoint's new content asks for: the
    plan names that round's decision as a target of `all` (the next build trains it), and the build that left
    it says so at its end."""
    from attnlab.core.bundle_format import sealed
    from attnlab.pipeline.ground import rounds as planned

    rounds = {"seeds": [0, 1], "rounds": {"max_seeds": 6, "round_size": 1, "reach": None}}
    plan = Plan(config_file(workspace, "default", contest=rounds), SRC)
    folder = workspace / paths.ROUNDS
    folder.mkdir(parents=True)
    for index, (seeds, following) in enumerate([([0, 1], [2]), ([0, 1, 2], asked)]):
        decision = {"version": planned.FILE_VERSION, "round": index, "seeds": seeds, "next_seeds": following,
                    "next_variants": ["softmax", "yat_b"] if following else [],
                    "design": design_of(plan.config).to_json()}
        (folder / f"round{index}.json").write_text(json.dumps(sealed(decision)))
    assert plan.missing_decisions() == [], "before any table is made, the build plans every round as it runs"
    for table in plan.rounds_tables:
        Path(table).parent.mkdir(parents=True, exist_ok=True)
        Path(table).write_text("")
    assert plan.missing_decisions() == ([str(paths.ROUNDS / "round2.json")] if named else [])
    assert ("run the build again" in plan.unfinished_rounds()) == named


def test_a_decision_left_from_another_design_is_refused_by_name(workspace):
    """A later round's decision that no rule reran after the design changed (Snakemake compares no params
    downstream of a checkpoint) is not read as this design's: the plan names it and says what to do."""
    from attnlab.core.bundle_format import sealed
    from attnlab.pipeline.ground import rounds as planned

    def with_budget(budget):
        rounds = {"seeds": [0, 1], "rounds": {"max_seeds": budget, "round_size": 1, "reach": None}}
        path = config_file(workspace, "default", contest=rounds)
        return Plan(path, SRC, Written(workspace, "", path))

    old, new = with_budget(4), with_budget(6)
    decision = {"version": planned.FILE_VERSION, "round": 0, "seeds": [0, 1], "next_seeds": [2],
                "next_variants": ["softmax", "yat_b"], "design": design_of(old.config).to_json()}
    new.checkpoints.text = old.checkpoints.text = json.dumps(sealed(decision))
    assert old.decisions(1)[0]["next_seeds"] == [2]
    with pytest.raises(ConfigError, match=r"0\.json: a decision made under another design.*remove it and every "
                                          r"later round's decision"):
        new.decisions(1)
