"""Collection takes only what the grid expects, bundles hold only their own files, the writeup follows the environment.

A bundle's recorded config slice and code fingerprint must be the ones the grid
computes for its cell (attnlab.pipeline.tables.check_expected, fed by the
Snakefile's expectation file); a stale bundle stops collection by name. The quick
tests use small synthetic bundles; the slow ones run Snakemake on a one-cell grid
(and the shared smoke build for the writeup).
"""

from __future__ import annotations

import hashlib
import json
import re
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from attnlab.core import fingerprint
from attnlab.core.bundle_format import BUNDLE_FILE, SELF_KEY, BundleError, cell_dir, sealed, sha256_file
from attnlab.core.config import cell_slice, validate_config
from attnlab.pipeline.ground.bundle_reader import read_bundle, read_curve, verified_file
from attnlab.pipeline.ground.grid import grid
from attnlab.pipeline.tables import check_bundles, check_expected, collect, load_runs
from attnlab.pipeline.tables import main as tables_main
from conftest import REPO
from processes import attnlab, refused, run, snakemake
from workspace import WRITEUP_RULES, make_workspace, plan

STEPS = 20
CODE = "c0de0000c0de0000"


def tiny(**train) -> dict:
    """The smoke config cut to one softmax cell of 20 steps (and one GQA run for the composability table).

    The smoke model, batches and 20 steps between stops: its cells load the
    smoke build's compiled programs from the run's XLA cache.
    """
    cfg = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    cfg["name"] = "tiny"
    cfg["train"].update({"steps": STEPS, "eval_every": STEPS, **train})
    cfg["telemetry"]["snapshot_fractions"] = [0.0, 1.0]
    cfg["variants"] = ["softmax"]
    cfg["contest"] = {"seeds": [0], "lr": {"softmax": 3.0e-3}}
    cfg["sweep"] = {"seed": 0, "lrs": [3.0e-3]}
    cfg["studies"] = [{"name": "composability", "model": {"kv_heads": [1], "attention_impl": ["dense"]}}]
    return cfg


GQA = Path("studies") / "composability" / "kv_heads=1+attention_impl=dense"  # the composability study's folder


def the_slice(**train) -> dict:
    return json.loads(json.dumps(cell_slice(validate_config(tiny(**train)))))


def the_grid():
    """What the Snakefile hands the collect step for the tiny config (attnlab.pipeline.ground.grid)."""
    return grid(validate_config(tiny()))


def make_bundle(root: Path, config: dict, code: str = CODE, variant="softmax", lr=3e-3, seed=0, **scalars) -> Path:
    """A small, whole bundle (every listed file hashed) with what the tables read from a softmax contest cell."""
    folder = cell_dir(root, variant, lr, seed)
    (folder / "params").mkdir(parents=True)
    (folder / "params" / "weights.bin").write_bytes(b"\x01" * 16)
    pd.DataFrame({"step": [0, 10, 20], "train_loss": [np.nan, 3.0, 2.5], "val_loss": [4.2, 3.1, 2.6],
                  "elapsed_s": [0.0, 0.1, 0.2], "val_loss_select": [4.21, 3.12, 2.61],
                  "val_loss_report": [4.19, 3.08, 2.59]}).to_csv(folder / "curve.csv", index=False)
    np.savez(folder / "telemetry.npz", max_score=np.ones((1, 1)), correct=np.ones((1, 1, 4), dtype=bool))
    np.savez(folder / "attention.npz", steps=np.array([0]), weights=np.ones((1, 1, 2, 4, 4), dtype=np.float16))
    files = {name: sha256_file(folder / name) for name in ("curve.csv", "telemetry.npz", "attention.npz",
                                                            "params/weights.bin")}
    summary = {
        "variant": variant, "lr": lr, "seed": seed, "config": dict(config, variant=variant, lr=lr, seed=seed),
        "provenance": {"code_fingerprint": code}, "n_params": 100, "best_val_loss": 2.6, "final_val_loss": 2.6,
        "best_val_loss_select": 2.61, "best_val_loss_heldout": 2.59, "best_step_select": 20,
        "best_val_bpc": 3.75, "diverged": False, "diverged_step": None, "wall_time_s": 0.2, "steps_per_s": 100.0,
        "telemetry": {"max_score_per_layer": [5.0], "mean_max_score_per_layer": [4.0],
                      "entropy": {"mean": 0.6, "share_sharp": 0.1, "share_diffuse": 0.3,
                                  "mean_per_layer_head": [[0.6, 0.6]], "mean_per_layer": [0.6]}},
        "files": files, **scalars,
    }
    (folder / BUNDLE_FILE).write_text(json.dumps(sealed(summary)))
    return folder


def expectation(root: Path, code: str = CODE, **train) -> dict:
    return {"code": {"softmax": code}, "slices": {str(root): the_slice(**train)}}


def bundles_of(*folders) -> list[dict]:
    return load_runs(list(folders))[1]


# ---- the grid's expectation: config slice and code fingerprint


def test_a_bundle_trained_as_the_grid_expects_is_collected(tmp_path):
    root = tmp_path / "runs"
    folder = make_bundle(root, the_slice())
    tables = collect([folder], the_grid(), tmp_path / "tables", expectation(root))
    assert list(tables["contest"].variant) == ["softmax"]
    assert (tmp_path / "tables" / "contest.csv").is_file()


def test_a_bundle_from_another_config_is_refused_naming_the_key(tmp_path):
    root = tmp_path / "runs"
    folder = make_bundle(root, the_slice(steps=40))  # trained by hand with a 40-step copy of the config
    with pytest.raises(BundleError) as err:
        collect([folder], the_grid(), tmp_path / "tables", expectation(root))
    message = str(err.value)
    assert "train.steps 40 in the bundle, 20 expected" in message
    assert str(folder) in message and "softmax lr=0.003 seed=0" in message
    assert f"rm -rf {folder}" in message and "--forcerun train_cell" in message
    assert "code fingerprint" not in message  # only what differs is named
    assert not (tmp_path / "tables").exists(), "a refused collection wrote tables"


def test_a_bundle_from_other_code_is_refused_naming_both_fingerprints(tmp_path):
    root = tmp_path / "runs"
    folder = make_bundle(root, the_slice(), code="0ldc0de0ldc0de00")
    with pytest.raises(BundleError, match="code fingerprint 0ldc0de0ldc0de00 in the bundle, c0de0000c0de0000 "
                                          "expected"):
        collect([folder], the_grid(), tmp_path / "tables", expectation(root))
    assert not (tmp_path / "tables").exists()


def test_every_differing_key_is_named_and_a_missing_one_reads_absent(tmp_path):
    root = tmp_path / "runs"
    config = the_slice(steps=40)
    config["model"]["d_model"] = 48
    del config["telemetry"]["entropy_min_keys"]
    folder = make_bundle(root, config)
    with pytest.raises(BundleError) as err:
        check_expected(bundles_of(folder), expectation(root))
    message = str(err.value)
    for named in ("model.d_model 48 in the bundle, 32 expected", "train.steps 40 in the bundle, 20 expected",
                  "telemetry.entropy_min_keys absent in the bundle, 16 expected"):
        assert named in message, message


def test_true_is_not_the_number_one(tmp_path):
    root = tmp_path / "runs"
    config = the_slice(eval_batches=1)
    config["train"]["eval_batches"] = True  # JSON's true == 1 in Python
    folder = make_bundle(root, config)
    with pytest.raises(BundleError, match="train.eval_batches true in the bundle, 1 expected"):
        check_expected(bundles_of(folder), expectation(root, eval_batches=1))


def test_the_fix_names_this_builds_snakemake_command(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    folder = make_bundle(root, the_slice(steps=40))
    monkeypatch.setenv("ATTNLAB_SNAKEMAKE_COMMAND", "snakemake --cores 2 --config file=my.yaml")
    with pytest.raises(BundleError, match="`snakemake --cores 2 --config file=my.yaml --forcerun train_cell`"):
        check_expected(bundles_of(folder), expectation(root))


def test_many_stale_bundles_are_counted_and_every_one_is_in_the_fix(tmp_path):
    root = tmp_path / "runs"
    lrs = (1e-3, 2e-3, 3e-3, 4e-3, 5e-3, 6e-3, 7e-3)
    folders = [make_bundle(root, the_slice(), code="0" * 16, lr=lr) for lr in lrs]
    with pytest.raises(BundleError) as err:
        check_expected(bundles_of(*folders), expectation(root))
    message = str(err.value)
    assert message.startswith("7 bundle(s)") and "and 2 more" in message
    assert all(str(f) in message.split("rm -rf ")[1] for f in folders)


def test_composability_runs_are_held_to_their_own_slice(tmp_path):
    results = tmp_path / "results"
    grid_slice = the_slice()
    gqa = dict(grid_slice, model=dict(grid_slice["model"], kv_heads=1, attention_impl="dense"))
    expected = {"code": {"softmax": CODE}, "slices": {str(results / "runs"): grid_slice, str(results / GQA): gqa}}
    run_bundle = make_bundle(results / "runs", grid_slice)
    gqa_bundle = make_bundle(results / GQA, gqa)
    assert len(check_bundles([run_bundle, gqa_bundle], expected)) == 2  # the same cell, in two grids
    with pytest.raises(BundleError, match="--forcerun train_cell"):
        check_expected(bundles_of(gqa_bundle), dict(expected, code={"softmax": "0" * 16}, rule="train_cell"))
    # trained in packs (no one rule): forcing the stale folder reruns its pack, which retrains only that cell
    fix = f"retrain them with your snakemake command with `--forcerun {gqa_bundle}`"
    with pytest.raises(BundleError, match=re.escape(fix)):
        check_expected(bundles_of(gqa_bundle), dict(expected, code={"softmax": "0" * 16}, rule=None))
    misplaced = make_bundle(results / "studies" / "composability" / "kv_heads=2+attention_impl=dense", gqa)
    with pytest.raises(BundleError, match="not in a folder this grid trains into"):
        check_expected(bundles_of(misplaced), expected)
    shutil.rmtree(run_bundle)
    shutil.copytree(gqa_bundle, run_bundle)  # a GQA run put where the contest cell belongs
    with pytest.raises(BundleError, match="model.kv_heads 1 in the bundle, null expected"):
        check_expected(bundles_of(run_bundle), expected)


def test_the_composability_check_still_refuses_a_run_in_another_cells_folder(tmp_path):
    root = tmp_path / GQA
    gqa = the_slice()
    gqa["model"].update(kv_heads=1, attention_impl="dense")
    folder = make_bundle(root, gqa)
    moved = cell_dir(root, "softmax", 1e-3, 0)
    shutil.copytree(folder, moved)
    with pytest.raises(BundleError, match="not the cell its folder names"):
        check_bundles([folder, moved], {"code": {"softmax": CODE}, "slices": {str(root): gqa}})


def test_a_variant_the_grid_does_not_train_is_refused(tmp_path):
    root = tmp_path / "runs"
    folder = make_bundle(root, the_slice(), variant="yat")
    with pytest.raises(BundleError, match="variant 'yat', which this grid does not train"):
        check_expected(bundles_of(folder), expectation(root))


def test_the_cli_refuses_a_stale_bundle_in_one_line(tmp_path):
    root = tmp_path / "runs"
    folder = make_bundle(root, the_slice(steps=40))
    expect = tmp_path / "expected.json"
    expect.write_text(json.dumps(expectation(root)))
    before = sha256_file(folder / BUNDLE_FILE)
    result = run(["-m", "attnlab.pipeline.tables", "collect", "--grid", json.dumps(the_grid().to_json()),
                  "--expect", expect, "--out", tmp_path / "tables", folder], tmp_path)
    refused(result, "train.steps 40 in the bundle, 20 expected", str(folder), "--forcerun train_cell")
    assert len(result.stderr.strip().splitlines()) == 1
    assert sha256_file(folder / BUNDLE_FILE) == before and not (tmp_path / "tables").exists()



def test_check_passes_what_the_expectation_says_and_refuses_the_rest(tmp_path, capsys):
    root = tmp_path / "runs"
    folder = make_bundle(root, the_slice(steps=40))
    expect = tmp_path / "expected.json"
    expect.write_text(json.dumps(expectation(root)))
    assert tables_main(["check", "--expect", str(expect), str(folder)]) == 2
    assert "train.steps 40 in the bundle, 20 expected" in capsys.readouterr().err
    expect.write_text(json.dumps(expectation(root, steps=40)))
    assert tables_main(["check", "--expect", str(expect), str(folder)]) == 0
    assert "1 bundle(s) were trained" in capsys.readouterr().out


@pytest.mark.parametrize("content,named", [("{not json", "cannot read the grid's expectation"),
                                           ("[]", "is not a grid expectation")])
def test_a_broken_expectation_file_is_refused(tmp_path, capsys, content, named):
    folder = make_bundle(tmp_path / "runs", the_slice())
    expect = tmp_path / "expected.json"
    expect.write_text(content)
    assert tables_main(["check", "--expect", str(expect), str(folder)]) == 2
    assert tables_main(["collect", "--grid", json.dumps(the_grid().to_json()), "--expect", str(expect), "--out",
                        str(tmp_path / "tables"), str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count(named) == 2 and "run snakemake again" in err
    assert not (tmp_path / "tables").exists()


# ---- a bundle holds only its own files


def link_params_out(folder: Path, tmp_path: Path) -> None:
    """Move params/ out of the bundle and leave a link to it: every hash still matches."""
    outside = tmp_path / "elsewhere"
    shutil.move(folder / "params", outside)
    (folder / "params").symlink_to(outside, target_is_directory=True)


def test_a_symlinked_params_folder_is_refused(tmp_path):
    folder = make_bundle(tmp_path / "runs", the_slice())
    link_params_out(folder, tmp_path)
    with pytest.raises(BundleError, match=r"holds a symbolic link \(params\)"):
        read_bundle(folder)
    with pytest.raises(BundleError, match=r"symbolic link \(params\)"):
        verified_file(folder, "params/weights.bin")


@pytest.mark.parametrize("name", ["curve.csv", BUNDLE_FILE, "params/weights.bin", "notes.txt"])
def test_a_symlinked_file_anywhere_in_a_bundle_is_refused(tmp_path, name):
    folder = make_bundle(tmp_path / "runs", the_slice())
    target = tmp_path / "outside"
    if (folder / name).exists():
        shutil.move(folder / name, target)
    else:
        target.write_text("not the bundle's\n")  # a link the manifest does not even list
    (folder / name).symlink_to(target)
    with pytest.raises(BundleError, match=rf"symbolic link \({name}\)"):
        read_bundle(folder)
    if name == "curve.csv":
        with pytest.raises(BundleError, match=r"symbolic link \(curve.csv\)"):
            read_curve(folder)


def test_a_bundle_reached_through_a_linked_results_folder_is_read(tmp_path):
    folder = make_bundle(tmp_path / "disk" / "runs", the_slice())
    (tmp_path / "results").symlink_to(tmp_path / "disk", target_is_directory=True)
    linked = tmp_path / "results" / folder.relative_to(tmp_path / "disk")
    assert read_bundle(linked)["variant"] == "softmax"
    check_expected(bundles_of(linked), expectation(tmp_path / "results" / "runs"))
    check_expected(bundles_of(linked), expectation(tmp_path / "disk" / "runs"))


# ---- Snakemake: a stale bundle stops the build even when .snakemake/ is gone


@pytest.fixture(scope="module")
def one_cell(tmp_path_factory, corpus_path):
    """A workspace whose one-cell grid is trained and collected (its tables and its composability table)."""
    ws = make_workspace(tmp_path_factory.mktemp("one-cell"), share_compile_cache=True)
    (ws / "config" / "tiny.yaml").write_text(yaml.safe_dump(tiny(), sort_keys=False))
    result = build(ws, corpus_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return ws


TARGETS = ("results/tables/runs.csv", "results/tables/composability.csv")
BEHAVIOUR_EDIT = "\n\ndef _an_edit_that_changes_behaviour():\n    return 1\n"


def build(ws: Path, corpus: Path, *extra: str):
    return snakemake(ws, "--cores", "1", "--configfile", "config/tiny.yaml", "--keep-going", *extra, *TARGETS,
                     corpus=corpus)


def pending(ws: Path, corpus: Path, configfile: str, *targets: str, env: dict | None = None) -> set[str]:
    """The rules Snakemake's `--summary` would run for `targets` (everything when none are given)."""
    result = run(["-m", "snakemake", "--summary", *targets, "--configfile", configfile], ws,
                 env={"PYTHONPATH": ws / "src", "ATTNLAB_CORPUS": corpus, **(env or {})})
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line.split("\t") for line in result.stdout.splitlines() if "\t" in line]
    return {record["rule"] for record in (dict(zip(rows[0], row)) for row in rows[1:])
            if record["plan"] != "no update"}


def copy_of(ws: Path, dest: Path) -> Path:
    """The built workspace elsewhere, times kept (Snakemake compares them)."""
    shutil.copytree(ws, dest, symlinks=True)
    return dest


def collect_log(ws: Path, name="collect_tables") -> str:
    return (ws / "results" / "logs" / f"{name}.log").read_text()


def bundle_of(ws: Path) -> Path:
    return ws / "results" / "runs" / "softmax" / "lr0.003" / "seed0"


def digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_lost_records_a_new_train_steps_and_a_model_edit_stop_collection_naming_each(one_cell, tmp_path, corpus_path):
    """One build for both kinds of staleness: each must be named on its own (the key, and both fingerprints)."""
    ws = copy_of(one_cell, tmp_path / "ws")
    before = digests(bundle_of(ws))
    trained_with = read_bundle(bundle_of(ws))["provenance"]["code_fingerprint"]
    shutil.rmtree(ws / ".snakemake")
    (ws / "config" / "tiny.yaml").write_text(yaml.safe_dump(tiny(steps=30), sort_keys=False))
    model = ws / "src" / "attnlab" / "training" / "model.py"
    model.write_text(model.read_text() + BEHAVIOUR_EDIT)
    now = fingerprint.training_fingerprint("softmax", src=ws / "src")
    assert now != trained_with
    result = build(ws, corpus_path)
    assert result.returncode != 0
    for name in ("collect_tables", "composability_table"):
        log = collect_log(ws, name)
        assert "train.steps 20 in the bundle, 30 expected" in log, log[-2000:]
        # packs train this grid: the fix forces the stale folders, not a pack rule that holds current cells too
        assert "--forcerun results/" in log and "rm -rf results/" in log
    assert f"code fingerprint {trained_with} in the bundle, {now} expected" in collect_log(ws)
    assert "--configfile config/tiny.yaml" in collect_log(ws)  # the fix is this build's own command
    assert digests(bundle_of(ws)) == before, "the stale bundle was changed"


@pytest.mark.slow
def test_a_hand_trained_bundle_with_another_config_stops_collection(one_cell, tmp_path, corpus_path):
    ws = copy_of(one_cell, tmp_path / "ws")
    (ws / "config" / "forty.yaml").write_text(yaml.safe_dump(tiny(steps=40), sort_keys=False))
    hand = tmp_path / "hand"
    trained = attnlab("train", "--config", ws / "config" / "forty.yaml", "--variant", "softmax", "--lr", "0.003",
                      "--seed", "0", "--out", hand, "--corpus", ws / "results" / "data" / "corpus.txt",
                      cwd=ws, env={"PYTHONPATH": ws / "src"})
    assert trained.returncode == 0, trained.stderr[-3000:]
    shutil.rmtree(bundle_of(ws))
    shutil.move(hand, bundle_of(ws))  # put where the grid's cell lives, Snakemake's records intact
    result = build(ws, corpus_path)
    assert result.returncode != 0
    assert "train.steps 40 in the bundle, 20 expected" in collect_log(ws)


@pytest.mark.slow
def test_lost_records_alone_recheck_and_pass_and_a_reverted_edit_plans_nothing(one_cell, tmp_path, corpus_path):
    ws = copy_of(one_cell, tmp_path / "ws")
    shutil.rmtree(ws / ".snakemake")
    result = build(ws, corpus_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Collecting every bundle" in result.stdout + result.stderr  # checked again, and whole
    assert "Training" not in result.stdout + result.stderr
    assert pending(ws, corpus_path, "config/tiny.yaml", *TARGETS) == set()
    model = ws / "src" / "attnlab" / "training" / "model.py"
    original = model.read_text()
    model.write_text(original + BEHAVIOUR_EDIT)
    # Snakemake has no records of the training (none ran since), so only collection sees the edit ...
    assert pending(ws, corpus_path, "config/tiny.yaml", *TARGETS) == {"collect_tables", "composability_table"}
    model.write_text(original)
    assert pending(ws, corpus_path, "config/tiny.yaml", *TARGETS) == set()  # ... and leaves nothing once undone


# ---- the writeup follows the lock and the installed versions


@pytest.mark.slow
def test_editing_the_lock_reruns_the_writeup(smoke_workspace, corpus_path):
    lock = smoke_workspace / "constraints.txt"
    original = lock.read_text()
    assert "writeup" not in plan(smoke_workspace, corpus=corpus_path)
    try:
        lock.write_text(original.replace("\nflax==", "\nflax==0.0.1\n# was flax==", 1))
        planned = plan(smoke_workspace, corpus=corpus_path)
    finally:
        lock.write_text(original)
        os.utime(lock, (0, 0))  # older than the writeup again: restoring the text must not leave a rerun
    assert set(planned) == WRITEUP_RULES, planned.keys()


@pytest.mark.slow
def test_installing_another_version_of_a_locked_package_reruns_the_writeup(smoke_workspace, corpus_path, tmp_path):
    site = tmp_path / "site"
    (site / "flax-0.0.1.dist-info").mkdir(parents=True)  # found first on the path, as pip's would be
    (site / "flax-0.0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: flax\nVersion: 0.0.1\n")
    assert pending(smoke_workspace, corpus_path, "config/smoke.yaml") == set()
    planned = pending(smoke_workspace, corpus_path, "config/smoke.yaml",
                      env={"PYTHONPATH": f"{site}{os.pathsep}{smoke_workspace / 'src'}"})
    assert planned == WRITEUP_RULES


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_bundle_with_a_non_finite_loss_that_says_it_did_not_diverge_stops_collection(tmp_path, value):
    folder = make_bundle(tmp_path / "runs", tiny(), best_val_loss=value)
    with pytest.raises(BundleError, match="best_val_loss .* is not a finite number, while its diverged flag is false"):
        load_runs([folder])
    diverged = make_bundle(tmp_path / "other", tiny(), best_val_loss=value, diverged=True, diverged_step=3)
    runs, _ = load_runs([diverged])
    assert bool(runs.diverged.iloc[0])  # a diverged cell may hold any loss: it is counted, never judged


@pytest.mark.slow
def test_a_copied_workspace_has_nothing_to_do(smoke_workspace, corpus_path, tmp_path):
    """cp -a of a built workspace: the same inputs by the same relative names, so nothing reruns, the writeup
    (which reads the lock) included."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(smoke_workspace, copy, symlinks=True)
    assert plan(copy, corpus=corpus_path) == {}


def test_results_as_a_file_is_refused_in_one_line(tmp_path, corpus_path):
    from processes import snakemake

    ws = make_workspace(tmp_path)
    (ws / "results").write_text("someone's notes")
    result = snakemake(ws, "-n", "--configfile", "config/smoke.yaml", corpus=corpus_path)
    said = result.stdout + result.stderr
    assert result.returncode != 0 and "results is a file, not a folder" in said, said[-2000:]
    assert "Traceback" not in said and "NotADirectoryError" not in said
    assert (ws / "results").read_text() == "someone's notes"


# ---- one pack mode per comparison


def with_pack(folder: Path, mode) -> Path:
    """The bundle re-sealed with a pack record of `mode` (as attnlab.training.pack writes it)."""
    summary = json.loads((folder / BUNDLE_FILE).read_text())
    summary["provenance"]["pack"] = {"size": 2, "cells": ["a", "b"], "mode": mode}
    (folder / BUNDLE_FILE).write_text(json.dumps(sealed({k: v for k, v in summary.items() if k != SELF_KEY})))
    return folder


def test_bundles_of_two_pack_modes_are_refused_naming_each_modes_cells_and_the_fix(tmp_path):
    """A vmapped seed beside sequential ones would enter a paired difference silently: refused, by path."""
    root = tmp_path / "runs"
    folders = [make_bundle(root, the_slice(), seed=s) for s in (0, 1, 2)]
    with_pack(folders[1], "sequential")  # a sequential pack and a cell alone are the same numerics
    assert len(bundles_of(*folders)) == 3
    with_pack(folders[2], "vmap")
    for read in (lambda: bundles_of(*folders), lambda: check_bundles(folders, expectation(root))):
        with pytest.raises(BundleError) as err:
            read()
        message = str(err.value)
        assert "2 sequential, 1 vmap" in message and "execution.pack_mode: sequential" in message
        # each mode's cells, the fewer first: which to delete is the user's choice, never guessed from a count
        assert f"The cells of each: vmap: {folders[2]}; sequential: " in message and str(folders[0]) in message


def test_one_mode_throughout_is_collected_and_the_mode_is_in_runs_csv(tmp_path):
    root = tmp_path / "runs"
    folder = with_pack(make_bundle(root, the_slice()), "vmap")
    collect([folder], the_grid(), tmp_path / "tables", expectation(root))
    assert list(pd.read_csv(tmp_path / "tables" / "runs.csv")["provenance.pack.mode"]) == ["vmap"]


@pytest.mark.parametrize("mode", ["lockstep", 3, None])
def test_an_unknown_pack_mode_is_refused_naming_the_file(tmp_path, mode):
    folder = with_pack(make_bundle(tmp_path / "runs", the_slice()), mode)
    with pytest.raises(BundleError, match=r"bundle\.json has provenance\.pack\.mode"):
        bundles_of(folder)


def test_the_seed_round_rule_refuses_a_stale_bundle_before_writing_a_decision(tmp_path, capsys):
    """A later round's cell trained with another config stops the rule that adds seeds, as it stops collection,
    and no decision is written from it."""
    from attnlab.pipeline.tables import rounds

    root = tmp_path / "runs"
    folder = make_bundle(root, the_slice(steps=40))
    expect = tmp_path / "expected.json"
    expect.write_text(json.dumps(expectation(root)))
    cfg = {"variants": ["softmax", "a3"], "contest": {"seeds": [0], "lr": {},
                                                      "rounds": {"max_seeds": 3, "round_size": 1}},
           "sweep": {"seeds": [0]}}
    out = tmp_path / "round0.json"
    argv = ["decide", "--config-json", json.dumps(cfg), "--round", "0", "--out", str(out), str(folder)]
    assert rounds.main(argv[:-1] + ["--expect", str(expect), str(folder)]) == 2
    assert "train.steps 40 in the bundle, 20 expected" in capsys.readouterr().err and not out.exists()
    expect.write_text(json.dumps(expectation(root, steps=40)))
    assert rounds.main(argv[:-1] + ["--expect", str(expect), str(folder)]) == 0 and out.is_file()


@pytest.mark.slow
def test_a_failed_collection_keeps_the_last_good_tables(smoke_workspace, corpus_path, tmp_path):
    """A bundle edited on disk is refused when the tables are collected again; Snakemake used to remove the failed
    job's outputs first, so contest.csv and runs.csv were gone (every table after a second failure) while the
    figures and the writeup made from them stayed. Now the last good tables are put back, whole, each time."""
    ws = Path(shutil.copytree(smoke_workspace, tmp_path / "ws", symlinks=True))
    tables = {p: p.read_bytes() for p in sorted((ws / "results" / "tables").iterdir()) if p.is_file()}
    bundle = next((ws / "results" / "runs" / "softmax").glob(f"lr*/seed0/{BUNDLE_FILE}"))
    summary = json.loads(bundle.read_text())
    bundle.write_text(json.dumps(summary | {"best_val_loss": summary["best_val_loss"] - 0.1}))
    for _ in range(2):
        result = snakemake(ws, "tables", "--cores", "1", "--configfile", "config/smoke.yaml", "--forcerun",
                           "collect_tables", corpus=corpus_path)
        said = result.stdout + result.stderr
        assert result.returncode != 0 and str(bundle.parent.relative_to(ws)) in said, said[-3000:]
        now = {p: p.read_bytes() for p in sorted((ws / "results" / "tables").iterdir()) if p.is_file()}
        assert now == tables, "every table as the last good collection wrote it"
    assert (ws / "results" / "writeup" / "writeup.html").is_file()


@pytest.mark.slow
def test_a_thread_count_for_one_pack_retrains_its_cells_and_removing_it_retrains_them_back(smoke_workspace,
                                                                                             corpus_path, tmp_path):
    """A job's threads are its cells' XLA pool. --set-threads for one pack used to train its cells at that pool,
    then collection refused two pools side by side, and removing the flag retrained nothing, so every later
    build failed too. The threads are now a param of the training rules: the pack runs again either way, and the
    refusal names each pool's cells."""
    ws = Path(shutil.copytree(smoke_workspace, tmp_path / "ws", symlinks=True))
    build = ("tables", "--cores", "2", "--configfile", "config/smoke.yaml")
    started = time.time()
    wider = snakemake(ws, *build, "--set-threads", "train_pack_softmax_runs_0=2", corpus=corpus_path)
    # a table job's refusal is in its log: whichever reading job the scheduler ran first (collection, a study's
    # table, the ladder's claims) refuses the two pools and stops the build, so every log this run wrote is read
    logs = "".join(path.read_text() for path in sorted((ws / "results" / "logs").rglob("*.log"))
                   if path.stat().st_mtime >= started - 1)
    said = wider.stdout + wider.stderr + logs
    assert wider.returncode != 0 and "more than one CPU thread pool" in said, said[-3000:]
    assert "The cells of each: 2: " in said and "/softmax/" in said.split("The cells of each: 2: ")[1].split(";")[0]
    back = snakemake(ws, *build, corpus=corpus_path)
    assert back.returncode == 0, (back.stdout + back.stderr)[-3000:]
    assert "train_pack_softmax_runs_0" in back.stdout + back.stderr, "the pack ran again at one thread"
    pools = {json.loads(b.read_text())["provenance"]["device"]["cpu_pool"]
             for b in (ws / "results" / "runs").glob(f"*/lr*/seed*/{BUNDLE_FILE}")}
    assert pools == {1}
