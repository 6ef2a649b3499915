"""Data loss and bad input, tried as a hostile user would: each ends in a clear refusal or a correct result.

Process faults run as real subprocesses (`python -m attnlab.cli`, `python -m
attnlab.training.pack`, the rules' trainer). Each refusal is exit code 2 with the named message
and no traceback, and each test snapshots a directory tree (paths and sha256)
before and after, so that nothing outside the run's own folders changed.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from attnlab.core.bundle_format import BUNDLE_FILE, BundleError, cell_dir, sealed
from attnlab.core.config import cell_slice, load_config, parse_yaml, schema, validate_config
from attnlab.core.errors import ConfigError
from attnlab.pipeline.ground.bundle_reader import read_arrays, read_bundle, read_curve
from attnlab.pipeline.ground.grid import grid
from attnlab.pipeline.tables import collect
from conftest import REPO
from processes import attnlab, refused, run, snakemake, start, trainer_args, wait_for
from workspace import make_workspace

CELL = ("softmax", 3e-3, 0)


# ---- helpers


def tree(root: Path) -> dict[str, str]:
    """relative path -> sha256 of a regular file, or what else it is; every folder and link included."""
    root = Path(root)
    state = {}
    for here, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            path = Path(here) / name
            rel = str(path.relative_to(root))
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                state[rel] = f"link -> {os.readlink(path)}"
            elif stat.S_ISDIR(mode):
                state[rel] = "dir"
            elif stat.S_ISREG(mode):
                state[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                state[rel] = "special"
    return state


def changed(before: dict, after: dict) -> set[str]:
    return {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}


def assert_only_changed(before: dict, after: dict, *allowed: str) -> None:
    """Every added, removed or edited path lies inside one of `allowed` (paths relative to the snapshot)."""
    def inside(path: str) -> bool:
        if any(path == a or path.startswith(a.rstrip("/") + "/") for a in allowed):
            return True
        made_to_hold_one = path not in before and after.get(path) == "dir"
        return made_to_hold_one and any(a.startswith(path + "/") for a in allowed)

    outside = sorted(p for p in changed(before, after) if not inside(p))
    assert not outside, f"changed outside the run's own folders: {outside}"


def tiny_config(**sections) -> dict:
    """The smoke config at 40 steps, with sections updated.

    Every trainer these tests start keeps the smoke config's steps between
    stops (its eval_every), as the smoke build's cells do, so it loads their
    compiled programs from the run's XLA cache (conftest's `cache`, outside
    every snapshot) instead of compiling its own.
    """
    cfg = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    cfg["train"].update(steps=40)
    for section, values in sections.items():
        if isinstance(values, dict):
            cfg.setdefault(section, {}).update(values)
        else:
            cfg[section] = values
    return cfg


def write_config(path: Path, cfg: dict | str) -> Path:
    path.write_text(cfg if isinstance(cfg, str) else yaml.safe_dump(cfg, sort_keys=False))
    return path


def train_args(config: Path, out, corpus: Path, cache: Path, variant="softmax", lr="0.003", seed="0", *extra):
    return ["train", "--config", config, "--variant", variant, "--lr", lr, "--seed", seed, "--out", out,
            "--corpus", corpus, "--compile-cache", cache, *extra]


# ---- fixtures


@pytest.fixture(scope="module")
def corpus_copy(tmp_path_factory, corpus_path) -> Path:
    """A verified corpus to pass as --corpus: reused as it is, never written (outside every snapshot)."""
    dest = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    shutil.copyfile(corpus_path, dest)
    return dest


@pytest.fixture
def ws(tmp_path) -> Path:
    """A user's working folder, with files the project did not make."""
    ws = tmp_path / "ws"
    (ws / "mine" / "sub").mkdir(parents=True)
    (ws / "mine" / "notes.txt").write_text("my notes\n")
    (ws / "mine" / "sub" / "keep.txt").write_text("keep me\n")
    write_config(ws / "tiny.yaml", tiny_config())
    return ws


@pytest.fixture(scope="module")
def trained(tmp_path_factory, corpus_path, cache):
    """One successful `attnlab train` with --checkpoint-dir at a folder holding other files and other cells' state."""
    ws = tmp_path_factory.mktemp("trained")
    write_config(ws / "tiny.yaml", tiny_config())
    ckpt = ws / "checkpoints"
    (ckpt / "softmax").mkdir(parents=True)  # a folder on the cell's own path, holding a user's file
    (ckpt / "softmax" / "keep.txt").write_text("mine\n")
    (ckpt / "notes.txt").write_text("not attnlab's\n")
    other = cell_dir(ckpt, "yat", 3e-3, 0)  # another cell's resumable state
    other.mkdir(parents=True)
    (other / ".attnlab-checkpoints").touch()
    (other / "state.bin").write_bytes(b"\x00" * 64)
    before = tree(ws)
    out = cell_dir(ws / "runs", *CELL)
    result = attnlab(*train_args(ws / "tiny.yaml", out, ws / "data" / "corpus.txt", cache, "softmax", "0.003", "0",
                                 "--checkpoint-dir", ckpt), cwd=ws, env={"ATTNLAB_CORPUS": str(corpus_path)})
    assert result.returncode == 0, result.stderr[-3000:]
    return {"ws": ws, "out": out, "ckpt": ckpt, "before": before, "after": tree(ws), "result": result}


@pytest.fixture
def bundle_copy(trained, tmp_path):
    """A copy of the trained bundle at its cell's place under tmp_path/runs."""
    dest = cell_dir(tmp_path / "runs", *CELL)
    shutil.copytree(trained["out"], dest)
    return dest


# ---- data loss: outputs are created, never cleared


def test_checkpoint_dir_with_other_files_survives_a_successful_run(trained):
    ckpt = trained["ckpt"]
    assert_only_changed(trained["before"], trained["after"], "runs/softmax/lr0.003/seed0", "data/corpus.txt")
    for path, state in trained["before"].items():
        if path.startswith("checkpoints"):
            assert trained["after"].get(path) == state, f"{path} changed"
    assert (ckpt / "notes.txt").read_text() == "not attnlab's\n"
    assert (ckpt / "softmax" / "keep.txt").read_text() == "mine\n"
    assert (cell_dir(ckpt, "yat", 3e-3, 0) / "state.bin").is_file()
    assert not (ckpt / "softmax" / "lr0.003").exists(), "the cell's own checkpoint folder outlived its bundle"
    assert read_bundle(trained["out"])["steps_done"] == 40


@pytest.mark.parametrize("where,named", [
    ("mine", "mine"),  # a user's folder
    ("runs", "runs"),  # a folder of bundles (--out results/runs)
    (".", "already exists"),  # the working folder itself
    ("other-cell", "not an earlier bundle of yat"),  # another cell's bundle
])
def test_out_over_anything_but_this_cells_bundle_is_refused_before_training(ws, trained, corpus_copy, cache,
                                                                             where, named):
    shutil.copytree(trained["out"], cell_dir(ws / "runs", *CELL))
    out = {"mine": ws / "mine", "runs": ws / "runs", ".": Path("."),
           "other-cell": cell_dir(ws / "runs", *CELL)}[where]
    before = tree(ws)
    started = time.monotonic()
    result = attnlab(*train_args(ws / "tiny.yaml", out, corpus_copy, cache, "yat"), cwd=ws)
    refused(result, named, "nothing was trained")
    assert "step 0/" not in result.stdout and time.monotonic() - started < 60
    assert tree(ws) == before
    assert (ws / "mine" / "sub" / "keep.txt").read_text() == "keep me\n"


@pytest.mark.slow
def test_out_over_an_earlier_bundle_of_the_same_cell_is_replaced_whole(ws, trained, corpus_copy, cache):
    out = cell_dir(ws / "runs", *CELL)
    shutil.copytree(trained["out"], out)
    cfg = tiny_config(train={"steps": 60})
    write_config(ws / "sixty.yaml", cfg)
    before = tree(ws)
    result = attnlab(*train_args(ws / "sixty.yaml", out, corpus_copy, cache), cwd=ws)
    assert result.returncode == 0, result.stderr[-3000:]
    assert read_bundle(out)["steps_done"] == 60
    assert_only_changed(before, tree(ws), "runs/softmax/lr0.003/seed0")
    assert sorted(p.name for p in out.parent.iterdir()) == ["seed0"], "staging or old folders left behind"


def test_checkpoint_dir_that_is_a_file_is_refused(ws, corpus_copy, cache):
    before = tree(ws)
    result = attnlab(*train_args(ws / "tiny.yaml", ws / "out", corpus_copy, cache,
                                 "softmax", "0.003", "0", "--checkpoint-dir", ws / "mine" / "notes.txt"), cwd=ws)
    refused(result, "--checkpoint-dir", "notes.txt")
    assert tree(ws) == before


def test_checkpoint_dir_overlapping_out_is_refused_before_training(ws, corpus_copy, cache):
    before = tree(ws)
    out = cell_dir(ws / "runs", *CELL)
    result = attnlab(*train_args(ws / "tiny.yaml", out, corpus_copy, cache,
                                 "softmax", "0.003", "0", "--checkpoint-dir", ws / "runs"), cwd=ws)
    refused(result, "overlaps --out", "nothing was trained")
    assert tree(ws) == before


@pytest.mark.parametrize("command", ["train", "fetch"])
def test_corpus_path_holding_another_file_is_refused_never_replaced(ws, cache, corpus_path, command):
    mine = ws / "mine" / "notes.txt"
    before = tree(ws)
    if command == "train":
        args = train_args(ws / "tiny.yaml", ws / "out", mine, cache)
    else:
        args = ["fetch", "--config", ws / "tiny.yaml", "--out", mine]
    result = attnlab(*args, cwd=ws, env={"ATTNLAB_CORPUS": str(corpus_path)})
    refused(result, str(mine), "left untouched")
    assert mine.read_text() == "my notes\n"
    assert tree(ws) == before


# ---- a result always matches its code and its place


@pytest.mark.slow
def test_a_checkpoint_from_other_code_is_discarded_with_a_log_line(tmp_path, trained, corpus_path, cache):
    ws = tmp_path / "ws"
    ws.mkdir()
    cfg = cell_slice(validate_config(tiny_config(train={"steps": 400, "checkpoint_every": 100})))
    ckpt, out = ws / "checkpoints", ws / "out"
    shutil.copytree(trained["out"], out)  # an earlier bundle of this cell: replaced at the end

    def trainer(fingerprint):
        return trainer_args(cfg, out, corpus_path, "softmax", "0.003", 0, ckpt, fingerprint, "--compile-cache", cache)

    orbax = cell_dir(ckpt, *CELL) / "orbax"
    first = start(trainer("old-code"), cwd=ws, log=ws / "train.log")
    committed = wait_for(lambda: orbax.is_dir() and any(p.name.isdigit() for p in orbax.iterdir()), first)
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert committed, "the first run ended before its first checkpoint: " + (ws / "train.log").read_text()[-3000:]
    assert read_bundle(out)["steps_done"] == 40, "a killed run touched the earlier bundle"
    assert any(p.name.isdigit() for p in orbax.iterdir())
    result = run(trainer("new-code"), cwd=ws)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ignoring the checkpoint" in result.stdout and "other code" in result.stdout
    assert "resuming" not in result.stdout
    bundle = read_bundle(out)
    assert bundle["resumed_from"] == [] and bundle["steps_done"] == 400
    assert bundle["provenance"]["code_fingerprint"] == "new-code"
    assert not ckpt.exists() or not any(ckpt.iterdir()), "the cell's checkpoint folder outlived its bundle"
    assert sorted(p.name for p in ws.iterdir() if p.name != "checkpoints") == ["out", "train.log"]


def _grid(variants=("softmax", "yat"), contest_lr=None, sweep_lrs=(3e-3,)):
    """The grid the Snakefile hands the collect step (attnlab.pipeline.ground.grid) for the smoke config cut down."""
    cfg = load_config(REPO / "config" / "smoke.yaml")
    cfg.update(variants=list(variants), sweep={"lrs": list(sweep_lrs), "seed": 0},
               contest={"lr": contest_lr or {v: 3e-3 for v in variants}, "seeds": [0, 1]})
    return grid(cfg)


@pytest.mark.parametrize("folder,named", [
    (("yat", 3e-3, 0), "not the cell its folder names"),  # a softmax bundle in a yat cell's folder
    (("softmax", 3e-3, 1), "not the cell its folder names"),  # seed 0 in seed 1's folder
    (("softmax", 1e-2, 0), "not the cell its folder names"),  # another LR's folder
])
def test_collect_refuses_a_bundle_in_another_cells_folder(bundle_copy, tmp_path, folder, named):
    wrong = cell_dir(tmp_path / "runs", *folder)
    shutil.copytree(bundle_copy, wrong)
    with pytest.raises(BundleError, match=named) as err:
        collect([bundle_copy, wrong], _grid(sweep_lrs=[3e-3, 1e-2]), tmp_path / "tables")
    assert str(wrong) in str(err.value)
    assert not (tmp_path / "tables").exists()


def test_collect_refuses_a_bundle_outside_the_grid_and_the_same_cell_twice(bundle_copy, tmp_path):
    with pytest.raises(BundleError, match="not a cell of this config's grid"):
        collect([bundle_copy], _grid(variants=["yat"], contest_lr={"yat": 3e-3}), tmp_path / "tables")
    with pytest.raises(BundleError, match="not a cell of this config's grid"):
        collect([bundle_copy], _grid(sweep_lrs=[1e-2], contest_lr={"softmax": 1e-2, "yat": 1e-2}),
                tmp_path / "tables")
    with pytest.raises(BundleError, match="same cell"):
        collect([bundle_copy, bundle_copy], _grid(), tmp_path / "tables")
    assert not (tmp_path / "tables").exists()
    collect([bundle_copy], _grid(), tmp_path / "tables")  # the right bundle in the right place is collected


def test_collect_cli_names_the_misplaced_bundle_without_a_traceback(bundle_copy, tmp_path):
    wrong = cell_dir(tmp_path / "runs", "yat", 3e-3, 0)
    shutil.copytree(bundle_copy, wrong)
    before = tree(tmp_path / "runs")
    result = run(["-m", "attnlab.pipeline.tables", "collect", "--grid", json.dumps(_grid().to_json()), "--out",
                  tmp_path / "tables", bundle_copy, wrong], tmp_path)
    refused(result, str(wrong))
    assert tree(tmp_path / "runs") == before and not (tmp_path / "tables").exists()


def test_two_close_sweep_lrs_are_two_cells_in_two_folders():
    cfg = validate_config(tiny_config(sweep={"lrs": [1.0e-3, 1.0000001e-3]}))
    folders = {cell_dir(Path("runs"), "softmax", lr, 0) for lr in cfg["sweep"]["lrs"]}
    assert len(folders) == 2


# ---- every reader checks hashes; the manifest names only the bundle's own files


def test_a_number_edited_in_bundle_json_by_hand_is_refused_naming_the_file(bundle_copy):
    read_bundle(bundle_copy)  # as the trainer wrote it: whole
    path = bundle_copy / BUNDLE_FILE
    text = path.read_text()
    summary = json.loads(text)
    edited = text.replace(json.dumps(summary["best_val_loss"]), json.dumps(summary["best_val_loss"] - 0.1), 1)
    assert edited != text
    path.write_text(edited)
    with pytest.raises(BundleError, match=r"bundle\.json was changed after training") as err:
        read_bundle(bundle_copy)
    assert str(path) in str(err.value) and "rerun that cell" in str(err.value)
    path.write_text(json.dumps({k: v for k, v in summary.items() if k != "content_sha256"}))
    with pytest.raises(BundleError, match="lacks content_sha256"):
        read_bundle(bundle_copy)


@pytest.mark.parametrize("field, value", [("seed", "0"), ("n_params", -5), ("steps_done", "60"), ("wall_time_s", -1),
                                          ("lr", "0.003"), ("diverged", "false")])
def test_a_resealed_bundle_with_a_wrong_typed_field_is_refused_naming_the_file_and_field(bundle_copy, field, value):
    summary = json.loads((bundle_copy / BUNDLE_FILE).read_text())
    summary[field] = value
    (bundle_copy / BUNDLE_FILE).write_text(json.dumps(sealed(summary)))
    with pytest.raises(BundleError, match=f"field {field} is {re.escape(repr(value))}") as err:
        read_bundle(bundle_copy)
    assert str(bundle_copy / BUNDLE_FILE) in str(err.value)


@pytest.mark.parametrize("edit, named", [
    (lambda s: dict(s, steps_done=s["config"]["train"]["steps"] * 58 // 100, plateau_step=None), "a cell cut short"),
    (lambda s: dict(s, steps_done=s["config"]["train"]["steps"] + 1), "is past train.steps"),
    (lambda s: dict(s, plateau_step=s["steps_done"] // 2), "is not the plateau stop"),
])
def test_a_resealed_bundle_whose_steps_do_not_add_up_is_refused(bundle_copy, edit, named):
    """Re-sealed with its steps cut short (no plateau stop, no divergence), past its ceiling, or stopped where no
    plateau fired: no finished cell looks like that, so the reader refuses it naming the file."""
    summary = json.loads((bundle_copy / BUNDLE_FILE).read_text())
    assert not summary["diverged"] and summary["steps_done"] == summary["config"]["train"]["steps"]
    (bundle_copy / BUNDLE_FILE).write_text(json.dumps(sealed(edit(summary))))
    with pytest.raises(BundleError, match=named) as err:
        read_bundle(bundle_copy)
    assert str(bundle_copy / BUNDLE_FILE) in str(err.value) and "rerun that cell" in str(err.value)


@pytest.mark.parametrize("name", ["../../etc/hostname", "/etc/passwd", "params/../../../etc/passwd"])
def test_manifest_naming_a_file_outside_the_bundle_is_refused(bundle_copy, name):
    summary = json.loads((bundle_copy / BUNDLE_FILE).read_text())
    summary["files"][name] = "0" * 64
    (bundle_copy / BUNDLE_FILE).write_text(json.dumps(sealed(summary)))
    with pytest.raises(BundleError, match="outside its folder"):
        read_bundle(bundle_copy)
    with pytest.raises(BundleError, match="outside its folder"):
        read_curve(bundle_copy)


def test_figures_refuse_a_hand_edited_curve(bundle_copy):
    curve = bundle_copy / "curve.csv"
    curve.write_text(curve.read_text() + "30,0.1,0.1,1.0\n")  # a better loss, by hand
    with pytest.raises(BundleError, match="curve.csv"):
        read_curve(bundle_copy)
    (bundle_copy / "attention.npz").write_bytes((bundle_copy / "attention.npz").read_bytes() + b"\0")
    with pytest.raises(BundleError, match="attention.npz"):
        read_arrays(bundle_copy, "attention.npz")

    import pandas as pd
    from attnlab.pipeline.figures.loss_curves import load_curves
    runs = pd.DataFrame([{"variant": "softmax", "lr": 3e-3, "seed": 0, "diverged": False, "diverged_step": None,
                          "path": str(bundle_copy)}])
    contest = pd.DataFrame([{"variant": "softmax", "lr": 3e-3, "seeds": "0"}])
    with pytest.raises(BundleError, match="curve.csv"):
        load_curves(runs, contest)


def test_figures_read_only_the_bundles_collection_checked(bundle_copy, tmp_path):
    """A bundle swapped in after the tables were collected (another config's, its times kept old, so Snakemake
    sees nothing new) stops every figure, which reads bundles through runs.csv, with the fix."""
    import pandas as pd
    from attnlab.pipeline.figures.cells import read_table

    summary = json.loads((bundle_copy / BUNDLE_FILE).read_text())
    runs = tmp_path / "runs.csv"
    pd.DataFrame([{"variant": "softmax", "path": str(bundle_copy), "content_sha256": summary["content_sha256"]}]
                 ).to_csv(runs, index=False)
    assert read_table("runs", runs).path.tolist() == [str(bundle_copy)]  # the collected bundle: read
    swapped = dict(summary, steps_done=1500,  # another config's whole cell: its steps add up
                   config=dict(summary["config"], train=dict(summary["config"]["train"], steps=1500)))
    (bundle_copy / BUNDLE_FILE).write_text(json.dumps(sealed(swapped)))
    with pytest.raises(BundleError, match="not the one the tables were collected from.*--forcerun collect_tables"):
        read_table("runs", runs)


# ---- bad values are refused where they enter, naming the key, before any compute

NAN, INF = float("nan"), float("inf")
BAD_VALUES = [
    ({"train": {"weight_decay": NAN}}, ["train.weight_decay", "finite"]),
    ({"train": {"weight_decay": INF}}, ["train.weight_decay", "finite"]),
    ({"model": {"dropout": NAN}}, ["model.dropout", "finite"]),
    ({"data": {"train_fraction": NAN}}, ["data.train_fraction", "finite"]),
    ({"telemetry": {"snapshot_fractions": [0.0, NAN, 1.0]}}, ["telemetry.snapshot_fractions[1]", "finite"]),
    ({"train": {"steps": 60.0}}, ["train.steps", "whole number"]),
    ({"train": {"checkpoint_every": 5.0}}, ["train.checkpoint_every", "whole number"]),
    ({"contest": {"seeds": [0, 2**32]}}, ["contest.seeds", "2^32"]),
    ({"sweep": {"seed": 2**32}}, ["sweep.seed", "2^32"]),
    ({"sweep": {"lrs": [1.0e-3, NAN]}}, ["sweep.lrs[1]", "finite"]),
    ({"contest": {"lr": {"softmax": 3.0e-3, "yat": INF, "yat_b": 3.0e-3, "a3": "auto"}}},
     ["contest.lr.yat", "finite"]),
    ({"telemetry": {"entropy_min_keys": 33}}, ["telemetry.entropy_min_keys", "block_size"]),
    ({"train": {"threads": 4}}, ["'threads' was unexpected", "allowed keys here"]),  # a runtime resource, not identity
    ({"train": {"mem_mb": 4000}}, ["'mem_mb' was unexpected", "allowed keys here"]),
]
BAD_TEXTS = [
    ("dup", lambda text: text + "train:\n  steps: 5\n", ["duplicate key 'train'"]),
    ("octal", lambda text: text.replace("seeds: [0, 1]", "seeds: [007, 1]"), ["'007'", "leading zeros"]),
]


def _bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("change,named", BAD_VALUES, ids=[str(n[0]) for _, n in BAD_VALUES])
def test_bad_config_values_are_refused_naming_the_key(ws, corpus_copy, cache, change, named):
    write_config(ws / "bad.yaml", tiny_config(**copy.deepcopy(change)))
    before = tree(ws)
    result = attnlab(*train_args(ws / "bad.yaml", ws / "out", corpus_copy, cache), cwd=ws, timeout=120)
    refused(result, *named)
    assert tree(ws) == before


@pytest.mark.parametrize("label,edit,named", BAD_TEXTS, ids=[t[0] for t in BAD_TEXTS])
def test_bad_yaml_is_refused_naming_the_line(ws, corpus_copy, cache, label, edit, named):
    original = (REPO / "config" / "smoke.yaml").read_text()
    text = edit(original)
    assert text != original
    write_config(ws / "bad.yaml", text)
    before = tree(ws)
    result = attnlab(*train_args(ws / "bad.yaml", ws / "out", corpus_copy, cache), cwd=ws, timeout=120)
    refused(result, "bad.yaml", *named)
    assert tree(ws) == before


def test_an_alias_bomb_is_refused_at_once(ws, corpus_copy, cache):
    text = (REPO / "config" / "smoke.yaml").read_text() + _bomb()
    started = time.monotonic()
    with pytest.raises(ConfigError, match="aliases"):
        parse_yaml(text, "bomb.yaml")
    assert time.monotonic() - started < 0.5
    write_config(ws / "bomb.yaml", text)
    before = tree(ws)
    started = time.monotonic()
    result = attnlab("params", "--config", ws / "bomb.yaml", cwd=ws, timeout=60)
    refused(result, "bomb.yaml", "aliases")
    assert time.monotonic() - started < 20  # interpreter start-up included; the old failure took 78 s and 4 GB
    assert tree(ws) == before


@pytest.mark.parametrize("seed,named", [("-1", "--seed"), (str(2**32), "--seed")])
def test_seeds_outside_range_on_the_command_line_are_refused(ws, corpus_copy, cache, seed, named):
    before = tree(ws)
    result = attnlab(*train_args(ws / "tiny.yaml", ws / "out", corpus_copy, cache, "softmax", "0.003", seed),
                     cwd=ws)
    refused(result, named, "2^32")
    assert tree(ws) == before


def test_the_trainer_module_refuses_a_negative_seed(ws, corpus_copy, tiny_cfg):
    before = tree(ws)
    result = run(trainer_args(tiny_cfg, ws / "out", corpus_copy, "softmax", "0.003", -1), ws)
    refused(result, "--seed")
    assert tree(ws) == before


def test_window_offset_past_the_validation_split_is_refused_before_training(ws, corpus_copy, cache):
    write_config(ws / "bad.yaml", tiny_config(telemetry={"window_offset": 10**9}))
    before = tree(ws)
    result = attnlab(*train_args(ws / "bad.yaml", ws / "out", corpus_copy, cache), cwd=ws)
    refused(result, "telemetry.window_offset", "validation split")
    assert "step 0/" not in result.stdout
    assert tree(ws) == before


def test_a_one_symbol_corpus_is_refused(ws, cache):
    text = "a" * 5000
    one = ws / "one.txt"
    one.write_text(text)
    write_config(ws / "bad.yaml", tiny_config(data={"path": str(one),
                                                    "sha256": hashlib.sha256(text.encode()).hexdigest()}))
    before = tree(ws)
    result = attnlab(*train_args(ws / "bad.yaml", ws / "out", ws / "data" / "corpus.txt", cache), cwd=ws)
    refused(result, "1 distinct character", "at least 2")
    assert "step 0/" not in result.stdout
    assert_only_changed(before, tree(ws), "data")  # the project's own fetch destination, nothing else


@pytest.mark.parametrize("kind,named", [("directory", "is a directory"), ("fifo", "FIFO")])
def test_attnlab_corpus_that_is_not_a_file_is_named_for_what_it_is(ws, cache, kind, named):
    target = ws / "corpus-thing"
    if kind == "directory":
        target.mkdir()
    else:
        os.mkfifo(target)
    before = tree(ws)
    result = attnlab(*train_args(ws / "tiny.yaml", ws / "out", ws / "data" / "corpus.txt", cache), cwd=ws,
                     env={"ATTNLAB_CORPUS": str(target)}, timeout=120)
    refused(result, str(target), named)
    assert "does not exist" not in result.stderr
    assert tree(ws) == before


# ---- no orphan trainer


@pytest.mark.slow
def test_the_trainer_exits_when_the_process_it_watches_dies(tmp_path, tiny_cfg, corpus_copy, cache):
    cfg = copy.deepcopy(tiny_cfg)
    cfg["train"].update(steps=200_000)  # 20 steps between stops, as the smoke build's cells
    parent = subprocess.Popen(["sleep", "600"])
    log = tmp_path / "train.log"
    out = tmp_path / "out"
    trainer = start(trainer_args(cfg, out, corpus_copy, "softmax", "0.003", 0, None, "x", "--compile-cache", cache,
                                 "--watch-pid", parent.pid), cwd=tmp_path, log=log)
    try:
        # step 0's line is printed just before the first chunk of steps starts
        assert wait_for(lambda: "step 0/" in log.read_text(), trainer), log.read_text()[-3000:]
        parent.kill()
        parent.wait()  # reaped: the pid is gone, as Snakemake's is after a SIGKILL
        killed = time.monotonic()
        trainer.wait(timeout=30)
        took = time.monotonic() - killed
    finally:
        for proc in (trainer, parent):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    text = log.read_text()
    assert took < 5, f"the trainer outlived its parent by {took:.1f} s"
    assert trainer.returncode != 0
    assert f"parent process {parent.pid} is gone" in text and "Traceback" not in text
    assert not out.exists() and not list(tmp_path.glob(".out.*")), "an orphan left a bundle behind"


# ---- one meaning per config file: the CLI and the DAG resolve a partial file the same way


PARTIAL = """\
name: partial
model: {d_model: 32, layers: 1, heads: 2, block_size: 32, d_ff: 64}
train: {steps: 20, batch_size: 8, eval_every: 10}
variants: [softmax, yat]
contest: {seeds: [0], lr: {softmax: 3.0e-3, yat: 3.0e-3}}
sweep: {seed: 0, lrs: [1.0e-3]}
"""


def test_a_partial_config_is_filled_from_the_schema_not_from_default_yaml(tmp_path):
    cfg = load_config(write_config(tmp_path / "partial.yaml", PARTIAL))
    default_yaml = yaml.safe_load((REPO / "config" / "default.yaml").read_text())
    schema_default = schema()["properties"]["train"]["properties"]["eval_batches"]["default"]
    assert cfg["train"]["eval_batches"] == schema_default
    assert schema_default != default_yaml["train"]["eval_batches"], "the test cannot tell the two apart"
    assert cfg["variants"] == ["softmax", "yat"]


@pytest.mark.slow
def test_snakemake_and_the_cli_resolve_a_partial_config_identically(tmp_path):
    (tmp_path / "ws").mkdir()
    ws = make_workspace(tmp_path / "ws")
    write_config(ws / "partial.yaml", PARTIAL)
    result = snakemake(ws, "-n", "-p", "--cores", "1", "--configfile", "partial.yaml", timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert set(re.findall(r"--variant (\w+) ", output)) == {"softmax", "yat"}
    slices = [json.loads(s) for s in re.findall(r"--cell-config '([^']*)'", output)]
    assert slices, output[-4000:]
    expected = cell_slice(load_config(ws / "partial.yaml"))
    assert all(s == expected for s in slices)
    assert expected["train"]["eval_batches"] == schema()["properties"]["train"]["properties"]["eval_batches"][
        "default"]
    assert not (ws / "results").exists()


@pytest.mark.slow
def test_snakemake_names_a_nan_lr_key_not_a_missing_folder(tmp_path):
    (tmp_path / "ws").mkdir()
    ws = make_workspace(tmp_path / "ws")
    write_config(ws / "bad.yaml", PARTIAL.replace("lrs: [1.0e-3]", "lrs: [1.0e-3, .nan]"))
    result = snakemake(ws, "-n", "--cores", "1", "--configfile", "bad.yaml", timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "sweep.lrs[1]" in output and "finite" in output
    assert "MissingInputException" not in output and "lrnan" not in output
    assert not (ws / "results").exists()
