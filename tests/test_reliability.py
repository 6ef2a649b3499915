"""Fault matrix: kills, divergence, bad input, corrupt bundles, determinism.

Process faults are real processes killed on the trainer's own events (a
checkpoint committed, the staging folder of its bundle appearing), never on a
timer; divergence runs in this process through `run_pack`, which is what the
trainer's command line calls.
"""

from __future__ import annotations

import copy
import json
import signal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from attnlab.core.bundle_format import BundleError
from attnlab.core.config import ConfigError, cell_slice, load_config, validate_config
from attnlab.pipeline.ground.bundle_reader import read_arrays, read_bundle, read_curve
from attnlab.pipeline.tables import collect
from conftest import REPO
from processes import (QUICK_COMPILE_FLAGS, attnlab, build_xla_flags, refused, run, snakemake, start, trainer_args,
                       wait_for)
from workspace import make_workspace

# elapsed_s is wall clock, never reproducible
CURVE_NUMBERS = ["step", "train_loss", "val_loss", "val_loss_select", "val_loss_report"]
METRICS = ["best_val_loss", "final_val_loss", "best_step", "diverged", "diverged_step", "steps_done", "n_params",
           "best_val_loss_whole_split", "best_val_loss_select", "best_val_loss_heldout", "best_step_select"]


def run_train(cfg: dict, out: Path, corpus: Path, variant="softmax", lr="0.003", seed=0, checkpoints=None,
              code="test-code", env: dict | None = None) -> dict:
    result = run(trainer_args(cfg, out, corpus, variant, lr, seed, checkpoints, code), env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    return read_bundle(out)


def train_here(cfg: dict, out: Path, corpus: Path, variant="softmax", lr=3e-3) -> dict:
    """The trainer's work in this process (a pack of one), for tests about numbers, not processes."""
    from attnlab.core.cell_key import CellKey
    from pack_of_one import train_alone

    train_alone(cfg, CellKey.of(variant, lr, 0), corpus, out, log=lambda *_: None)
    return read_bundle(out)


def long_cfg(tiny_cfg, steps=400, every=20):
    cfg = copy.deepcopy(tiny_cfg)
    cfg["train"].update(steps=steps, eval_every=every, checkpoint_every=every)
    return cfg


def same_numbers(a: dict, b: dict, folder_a: Path, folder_b: Path):
    for key in METRICS:
        assert a[key] == b[key], key
    assert a["telemetry"] == b["telemetry"]
    pd.testing.assert_frame_equal(read_curve(folder_a)[CURVE_NUMBERS], read_curve(folder_b)[CURVE_NUMBERS])
    for name in ("telemetry.npz", "attention.npz"):
        first, second = read_arrays(folder_a, name), read_arrays(folder_b, name)
        assert first.keys() == second.keys()
        for key in first:
            np.testing.assert_array_equal(first[key], second[key], err_msg=f"{name}:{key}")
    assert _same_param_arrays(folder_a, folder_b), "final parameters differ"


def load_params(directory: Path):
    """A bundle's saved parameters, as Orbax restores what the trainer's save_params wrote (the build reads none:
    the tests compare them)."""
    import orbax.checkpoint as ocp

    with ocp.StandardCheckpointer() as checkpointer:
        return checkpointer.restore(Path(directory).resolve())


def _same_param_arrays(folder_a: Path, folder_b: Path) -> bool:
    import jax
    leaves_a = jax.tree.leaves(load_params(folder_a / "params"))
    leaves_b = jax.tree.leaves(load_params(folder_b / "params"))
    return len(leaves_a) == len(leaves_b) and all(np.array_equal(x, y) for x, y in zip(leaves_a, leaves_b))


def checkpoint_steps(root: Path) -> list[int]:
    """Steps of the committed Orbax checkpoints under a --checkpoint-dir root (any cell)."""
    steps = []
    for orbax in root.glob("*/*/*/orbax"):  # <root>/<variant>/lr<lr>/seed<seed>/orbax/<step>
        try:
            steps += [int(path.name) for path in orbax.iterdir() if path.name.isdigit()]
        except FileNotFoundError:  # Orbax renames and deletes while we look
            pass
    return steps


def staging_folders(out: Path) -> list[Path]:
    """The writer's staging folders for `out` (bundle_writer: .<name>.partial-* beside it)."""
    return sorted(out.parent.glob(f".{out.name}.partial-*")) if out.parent.is_dir() else []


def kill_on(event, args, out: Path) -> str:
    """Start the trainer, SIGKILL it the moment `event()` holds; 'absent' or 'complete' for what is at out."""
    proc = start(args)
    try:
        seen = wait_for(event, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert seen, f"the trainer exited (rc {proc.returncode}) before the event it was to be killed on"
    if not out.exists():
        return "absent"
    read_bundle(out)  # a bundle that is there is whole: every listed file matches its hash
    return "complete"


@pytest.mark.slow
def test_kills_at_any_moment_leave_nothing_or_a_whole_bundle_and_the_cell_resumes_to_identical_numbers(
        tiny_cfg, corpus_path, tmp_path):
    """One cell killed at every stage of its life, each restart resuming, against an uninterrupted run.

    Killed: at start-up (nothing written), once a checkpoint past the first is
    committed (mid-training), and once its bundle's staging folder exists
    (mid-write, before the rename). Each kill leaves no bundle at all, and the
    run that finally completes has the uninterrupted run's numbers exactly.
    """
    cfg = long_cfg(tiny_cfg)
    reference = run_train(cfg, tmp_path / "reference", corpus_path)

    out, ckpt = tmp_path / "killed", tmp_path / "ckpt"
    args = trainer_args(cfg, out, corpus_path, checkpoints=ckpt)
    outcomes = [
        kill_on(lambda: True, args, out),  # before JAX has even started
        kill_on(lambda: any(step >= 40 for step in checkpoint_steps(ckpt)), args, out),
    ]
    assert max(checkpoint_steps(ckpt)) < cfg["train"]["steps"]
    outcomes.append(kill_on(lambda: bool(staging_folders(out)), args, out))
    assert outcomes == ["absent"] * 3, outcomes
    assert staging_folders(out), "the mid-write kill left the staging folder it interrupted"

    resumed = run_train(cfg, out, corpus_path, checkpoints=ckpt)
    assert resumed["resumed_from"] and min(resumed["resumed_from"]) >= 40
    same_numbers(reference, resumed, tmp_path / "reference", out)
    assert not ckpt.exists(), "checkpoints (and the folders the trainer made) must go once the bundle is whole"


@pytest.mark.slow
def test_a_checkpoint_from_another_config_is_not_resumed(tiny_cfg, corpus_path, tmp_path):
    cfg = long_cfg(tiny_cfg, steps=2000)
    out, ckpt = tmp_path / "cell", tmp_path / "ckpt"
    kill_on(lambda: bool(checkpoint_steps(ckpt)), trainer_args(cfg, out, corpus_path, checkpoints=ckpt), out)
    changed = copy.deepcopy(cfg)
    changed["train"].update(steps=40, weight_decay=0.1)
    result = run(trainer_args(changed, out, corpus_path, checkpoints=ckpt))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "another config or other code" in result.stdout
    bundle = read_bundle(out)
    assert bundle["resumed_from"] == [] and bundle["config"]["train"]["weight_decay"] == 0.1


CACHE_SPELLINGS = """
import os, sys
from pathlib import Path
import jax
from attnlab.training.runtime import COMPILE_CACHE_ENV, configure_runtime
for given in sys.argv[1:]:
    if given.startswith("env:"):
        os.environ[COMPILE_CACHE_ENV] = given[4:]
        configure_runtime(1, None)
    else:
        configure_runtime(1, Path(given))
    print(jax.config.jax_compilation_cache_dir)
"""


def test_every_spelling_of_the_compile_cache_names_one_folder(tmp_path):
    """JAX keys each cached program by the cache folder's name too, so the trainer names it one way only.

    The workflow passes `results/jax-cache` (relative, and in the tests a link
    to the run's cache); a trainer started elsewhere gets the absolute path or
    $JAX_COMPILATION_CACHE_DIR. Every spelling must reach JAX as one path, or no
    process loads what another compiled.
    """
    (tmp_path / "cache").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "cache", target_is_directory=True)
    spellings = ["cache", "./cache", str(tmp_path / "cache"), "link", f"env:{tmp_path / 'link'}", "env:cache"]
    result = run(["-c", CACHE_SPELLINGS, *spellings], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == [str((tmp_path / "cache").resolve())] * len(spellings)


@pytest.mark.slow
def test_same_cell_twice_gives_identical_numbers(tiny_cfg, corpus_path, tmp_path):
    """Under the flags a build compiles with, not the test run's quick ones: the determinism users get.

    One layer: this compile is the run's only one at full optimisation, and depth changes nothing here.
    """
    as_built = build_xla_flags()
    cfg = {**tiny_cfg, "model": {**tiny_cfg["model"], "layers": 1}}
    a = run_train(cfg, tmp_path / "a", corpus_path, variant="yat_b", env=as_built)
    b = run_train(cfg, tmp_path / "b", corpus_path, variant="yat_b", env=as_built)
    assert not set(QUICK_COMPILE_FLAGS) & set(a["provenance"]["xla_flags"].split())
    same_numbers(a, b, tmp_path / "a", tmp_path / "b")
    assert a["learned"] == b["learned"]


@pytest.mark.slow
def test_nonfinite_loss_is_divergence(tiny_cfg, corpus_path, tmp_path):
    bundle = train_here(tiny_cfg, tmp_path / "inf", corpus_path, lr=1e4)
    assert bundle["diverged"] is True and np.isfinite(bundle["best_val_loss"])


@pytest.mark.slow
def test_divergence_stops_the_cell_and_keeps_earlier_metrics(tiny_cfg, corpus_path, tmp_path):
    cfg = copy.deepcopy(tiny_cfg)
    cfg["train"]["diverge_loss"] = 3.3  # the loss starts above this: diverges on step 0's loss
    cfg["train"]["steps"] = 60
    bundle = train_here(cfg, tmp_path / "div", corpus_path)
    assert bundle["diverged"] is True
    assert bundle["diverged_step"] == 0
    curve = read_curve(tmp_path / "div")
    assert list(curve.step) == [0], "only the evaluation before divergence is kept"
    assert bundle["best_val_loss"] == pytest.approx(curve.val_loss.iloc[0])


@pytest.mark.slow
def test_divergence_mid_run_rolls_back_to_the_last_finite_stop(tiny_cfg, corpus_path, tmp_path):
    import jax

    cfg = copy.deepcopy(tiny_cfg)
    cfg["train"].update(steps=60, eval_every=1, diverge_loss=6.0)  # at LR 0.3 the loss passes 6 after a few steps
    bundle = train_here(cfg, tmp_path / "nan", corpus_path, lr=0.3)
    assert bundle["diverged"] is True and bundle["diverged_step"] > 0
    curve = read_curve(tmp_path / "nan")
    last_stop = int(curve.step.max())
    assert len(curve) >= 2 and last_stop <= bundle["diverged_step"], "a stop after step 0 came before divergence"
    assert bundle["diverged_step"] < 60, "the divergence must come mid-run"
    assert np.isfinite(curve.val_loss).all() and np.isfinite(bundle["best_val_loss"])
    assert bundle["steps_done"] == bundle["diverged_step"]
    leaves = jax.tree.leaves(load_params(tmp_path / "nan" / "params"))
    assert all(np.isfinite(np.asarray(x)).all() for x in leaves), "the kept parameters are the last finite ones"
    maps = read_arrays(tmp_path / "nan", "attention.npz")
    assert last_stop in set(maps["steps"].tolist()) and np.isfinite(maps["weights"].astype(np.float32)).all()


# ---- bad input fails before compute, naming the key and the fix


def config_with(smoke_config, path, value):
    cfg = copy.deepcopy(smoke_config)
    node = cfg
    for key in path[:-1]:
        node = node[key]
    if value is DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return cfg


DELETE = object()
BAD_CONFIGS = [
    (("train", "stepz"), 5, "stepz"),
    (("contest", "lr", "softmax"), -1.0, "contest.lr.softmax"),
    (("contest", "lr", "softmax"), "3e-4", "decimal point"),
    (("sweep", "lrs"), [0.0], "sweep.lrs.0"),
    (("contest", "seeds"), [], "contest.seeds"),
    (("train", "eval_every"), 1000, "eval_every"),
    (("model", "heads"), 3, "model.heads"),
    (("name",), "../../etc", "name"),
]


@pytest.mark.parametrize("path,value,named", BAD_CONFIGS)
def test_bad_config_is_refused_with_the_key_named(smoke_config, path, value, named):
    with pytest.raises(ConfigError) as err:
        validate_config(config_with(smoke_config, path, value))
    assert named in str(err.value)


def test_unknown_variant_is_named_and_the_valid_ones_listed(smoke_config):
    """The config's refusal; the registry's own (score_class) and the CLI's are tested beside their code."""
    with pytest.raises(ConfigError) as err:
        validate_config(config_with(smoke_config, ("variants",), ["softmax", "cosine"]))
    assert "'cosine'" in str(err.value) and "softmax, yat, yat_b, a3" in str(err.value)


def test_yaml_is_read_safely(tmp_path):
    evil = tmp_path / "evil.yaml"
    evil.write_text("name: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(evil)


@pytest.mark.slow
def test_snakemake_refuses_a_bad_config_before_any_job(tmp_path, smoke_config, corpus_path):
    ws = make_workspace(tmp_path)
    bad = config_with(smoke_config, ("train", "eval_every"), 1000)
    (ws / "config" / "bad.yaml").write_text(yaml.safe_dump(bad))
    result = snakemake(ws, "-n", "--configfile", "config/bad.yaml", corpus=corpus_path)
    assert result.returncode != 0
    assert "eval_every" in result.stdout + result.stderr
    assert not (ws / "results").exists()


def test_wrong_corpus_checksum_fails_before_training(tiny_cfg, small_corpus, tmp_path):
    path, _ = small_corpus
    result = run(trainer_args(tiny_cfg, tmp_path / "x", path))
    refused(result, "checksum mismatch", str(path))
    assert not (tmp_path / "x").exists()


# ---- bundles: collect never drops a cell silently


@pytest.fixture(scope="module")
def two_bundles(tmp_path_factory, corpus_path):
    smoke = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    cfg = cell_slice(validate_config(smoke))
    cfg["train"]["steps"] = 40  # 20 steps between stops, as every in-process cell here: one compiled step each
    root = tmp_path_factory.mktemp("bundles")
    for variant in ("softmax", "yat"):
        train_here(cfg, root / variant, corpus_path, variant=variant)
    return root


GRID = {"variants": ["softmax", "yat"], "contest_lr": {"softmax": 3e-3, "yat": 3e-3}, "contest_seeds": [0],
        "sweep_lrs": [3e-3], "sweep_seed": 0, "sweep_seeds": [0], "cells": [["softmax", 3e-3, 0], ["yat", 3e-3, 0]]}


def copy_bundles(src: Path, dest: Path) -> Path:
    import shutil
    shutil.copytree(src, dest)
    return dest


@pytest.mark.slow  # two trained cells; the quick lane's collect refusals run on one (test_faults, test_collection)
@pytest.mark.parametrize("damage,named", [
    (lambda d: (d / "yat" / "bundle.json").unlink(), "bundle.json"),
    (lambda d: (d / "yat" / "bundle.json").write_text("{not json"), "bundle.json"),
    (lambda d: (d / "yat" / "curve.csv").write_text("step\n1\n"), "curve.csv"),
    (lambda d: (d / "yat" / "telemetry.npz").unlink(), "telemetry.npz"),
    (lambda d: next(f for f in sorted((d / "yat" / "params").rglob("*")) if f.is_file()).write_bytes(b"x"),
     "params"),
])
def test_collect_stops_on_a_missing_or_corrupt_bundle_naming_the_file(two_bundles, tmp_path, damage, named):
    root = copy_bundles(two_bundles, tmp_path / "b")
    damage(root)
    with pytest.raises(BundleError) as err:
        collect([root / "softmax", root / "yat"], GRID, tmp_path / "tables")
    assert named in str(err.value) and str(root / "yat") in str(err.value)
    assert not (tmp_path / "tables" / "contest.csv").exists()


@pytest.mark.slow
def test_collect_cli_reports_the_path_without_a_traceback(two_bundles, tmp_path):
    root = copy_bundles(two_bundles, tmp_path / "b")
    (root / "yat" / "attention.npz").write_bytes(b"garbage")
    result = run(["-m", "attnlab.pipeline.tables", "collect", "--grid", json.dumps(GRID), "--out", tmp_path / "t",
                  root / "softmax", root / "yat"])
    refused(result, "attention.npz")


@pytest.mark.parametrize("args,named", [
    (["--variant", "cosine", "--lr", "3e-3"], "valid variants are"),
    (["--variant", "yat", "--lr", "-1"], "positive"),
    (["--variant", "yat", "--lr", "nan"], "positive"),
])
def test_cli_refuses_bad_cells_before_touching_the_corpus(tmp_path, args, named):
    result = attnlab("train", "--config", REPO / "config" / "smoke.yaml", "--seed", "0", "--out", tmp_path / "x",
                     "--corpus", tmp_path / "corpus.txt", *args, env={"ATTNLAB_CORPUS": "<unset>"}, timeout=120)
    refused(result, named)
    assert not (tmp_path / "corpus.txt").exists()
