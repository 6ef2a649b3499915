"""Every file a decision reads is sealed and checked against what it says it was derived from: a variant's LR
choice (select_lr) and a sweep's extension steps (extend_sweep), as a round's decision already was. An edited,
foreign or self-contradicting one stops the build naming the file and the command that writes it anew."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from attnlab.core.bundle_format import SELF_KEY, sealed
from attnlab.core.errors import ConfigError
from attnlab.pipeline.ground import sweep_extension
from attnlab.pipeline.ground.sealed_files import read_choice
import decision_files
from processes import snakemake

GRID = [3e-3, 1e-2]


def written(tmp_path: Path, decision: dict, name: str = "decision.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(decision))
    return path


def edited(decision: dict, reseal: bool = False, **values) -> dict:
    """The decision with `values` written over it by hand, its old checksum kept or (a forgery) made anew."""
    changed = {k: v for k, v in decision.items() if k != SELF_KEY} | values
    return sealed(changed) if reseal else changed | {SELF_KEY: decision[SELF_KEY]}


def test_a_choice_as_select_lr_wrote_it_is_read(tmp_path):
    path = written(tmp_path, decision_files.choice("a3", 3e-3, GRID))
    assert read_choice(path, "a3", GRID) == 3e-3


@pytest.mark.parametrize("change, reseal, said", [
    ({"lr": 0.01}, False, "changed after the select_lr rule wrote it"),  # an LR edited by hand
    ({"lr": 0.01}, True, "its lr 0.01 is not the best of its own candidates (0.003)"),  # and its checksum forged
    ({"lr": 0.03}, True, "its lr 0.03 is not the best"),  # an LR outside the sweep: no bare MissingInputException
    ({"candidates": {"0.003": 1.0, "0.01": 1.2, "0.03": 1.1}}, True, "are not this sweep's LRs"),
    ({"variant": "softmax"}, True, "it chose for 'softmax', not 'a3'"),  # another variant's file
])
def test_an_edited_foreign_or_inconsistent_choice_is_refused_naming_the_file_and_the_fix(tmp_path, change, reseal,
                                                                                          said):
    path = written(tmp_path, edited(decision_files.choice("a3", 3e-3, GRID), reseal, **change))
    with pytest.raises(ConfigError) as err:
        read_choice(path, "a3", GRID)
    assert str(err.value).startswith(f"{path}: ") and said in str(err.value)
    assert f"remove it and build again (rm {path})" in str(err.value)


def test_a_choice_written_before_choices_were_sealed_is_refused_as_another_version(tmp_path):
    path = written(tmp_path, {"variant": "a3", "lr": 3e-3, "candidates": {"0.003": 1.0, "0.01": 1.1}})
    with pytest.raises(ConfigError, match="of this version"):
        read_choice(path, "a3", GRID)


def step_file(tmp_path: Path, added=(), index: int = 0, limit: int = 1, **change) -> Path:
    made = decision_files.step("a3", GRID, list(added), limit, index)
    return written(tmp_path, edited(made, **change) if change else made, f"step{index}.json")


def test_a_step_as_extend_sweep_wrote_it_is_read_with_the_lr_it_asks_for(tmp_path):
    step = sweep_extension.read_step(step_file(tmp_path, added=[3e-2]), GRID, 1)
    assert (step["next"], step["where"], step["best"]) == (3e-2, "highest", 1e-2)


@pytest.mark.parametrize("change, said", [
    ({"next": None, "where": "inside"}, "changed after the extend_sweep rule wrote it"),  # the edit the review made
    ({"next": None, "where": "inside", "reseal": True}, "it says next None (inside), where its best 0.01 among its "
                                                         "LRs gives 0.03 (highest)"),
    ({"best": 3e-3, "reseal": True}, "its best 0.003 is not the best of its own candidates (0.01)"),
    ({"lrs": [1e-2, 3e-2], "reseal": True}, "leave out some of its grid's"),
])
def test_an_edited_or_self_contradicting_step_is_refused_naming_the_file(tmp_path, change, said):
    reseal = change.pop("reseal", False)
    made = decision_files.step("a3", GRID, [3e-2], 1, 0)
    path = written(tmp_path, edited(made, reseal, **change))
    with pytest.raises(ConfigError) as err:
        sweep_extension.read_step(path, GRID, 1)
    assert str(err.value).startswith(f"{path}: ") and said in str(err.value)


def test_a_step_of_another_grid_or_limit_is_refused(tmp_path):
    path = step_file(tmp_path, added=[3e-2])
    with pytest.raises(ConfigError, match=r"made for the grid \['0.003', '0.01'\], not this config's \['0.001', "):
        sweep_extension.read_step(path, [1e-3, 1e-2], 1)
    with pytest.raises(ConfigError, match="made for sweep.extend 1, not this config's 2"):
        sweep_extension.read_step(path, GRID, 2)


# ---- on a built smoke workspace: the build stops before any job, naming the file


def copied(smoke_workspace: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(smoke_workspace, tmp_path / "ws", symlinks=True))


def stopped(ws: Path, corpus_path, named: Path, said: str) -> None:
    """`snakemake tables` refuses, one line naming the file, with nothing run and every table as it was."""
    tables = {p: p.read_bytes() for p in (ws / "results" / "tables").glob("*.csv")}
    result = snakemake(ws, "tables", "--cores", "1", "--configfile", "config/smoke.yaml", corpus=corpus_path)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-3000:]
    assert f"{named}: " in output and said in output and f"rm {named}" in output, output[-3000:]
    assert tables == {p: p.read_bytes() for p in (ws / "results" / "tables").glob("*.csv")}


@pytest.mark.slow
def test_a_hand_edited_lr_choice_stops_the_build_naming_it(smoke_workspace, corpus_path, tmp_path):
    """The smoke build chose a3's contest LR; changing it by hand used to train and report a3 at the edited LR,
    labelled 'auto', while best_lr and the file's own candidates said otherwise."""
    ws = copied(smoke_workspace, tmp_path)
    path = Path("results") / "selected_lr" / "a3.json"
    choice = json.loads((ws / path).read_text())
    other = next(lr for lr in choice["candidates"] if float(lr) != choice["lr"])
    (ws / path).write_text(json.dumps(choice | {"lr": float(other)}))
    stopped(ws, corpus_path, path, "changed after the select_lr rule wrote it")


@pytest.mark.slow
def test_a_hand_edited_sweep_step_stops_the_build_naming_it(smoke_workspace, corpus_path, tmp_path):
    """Clearing a step's `next` used to drop the cell it had asked for from the choice, silently."""
    ws = copied(smoke_workspace, tmp_path)
    path = Path("results") / "sweep_steps" / "a3" / "step0.json"
    step = json.loads((ws / path).read_text())
    flipped = {"next": None, "where": "inside"} if step["next"] is not None else {"next": 0.1, "where": "highest"}
    (ws / path).write_text(json.dumps(step | flipped))
    stopped(ws, corpus_path, path, "changed after the extend_sweep rule wrote it")
