"""Fault matrix: kills, divergence, bad input, corrupt bundles, determinism — with real processes."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

import numpy as np

from attnlab.core.bundle_format import BundleError
from attnlab.pipeline.bundle_reader import read_arrays, read_bundle, read_curve
from attnlab.core.config import ConfigError, cell_slice, load_config, validate_config
from attnlab.pipeline.tables import collect
from conftest import REPO
from workspace import make_workspace, snakemake

CURVE_NUMBERS = ["step", "train_loss", "val_loss"]  # elapsed_s is wall clock, never reproducible
METRICS = ["best_val_loss", "final_val_loss", "best_step", "diverged", "diverged_step", "steps_done", "n_params"]


def train_cmd(cfg: dict, out: Path, corpus: Path, variant="softmax", lr=3e-3, seed=0, checkpoints=None,
              code="test-code"):
    cmd = [sys.executable, "-m", "attnlab.training.train", "--cell-config", json.dumps(cfg), "--variant", variant,
           "--lr", str(lr), "--seed", str(seed), "--corpus", str(corpus), "--out", str(out),
           "--code-fingerprint", code]
    if checkpoints is not None:
        cmd += ["--checkpoint-dir", str(checkpoints)]
    return cmd


def run_train(*args, **kwargs):
    result = subprocess.run(train_cmd(*args, **kwargs), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return read_bundle(args[1])


def long_cfg(tiny_cfg, steps=1500, every=20):
    cfg = copy.deepcopy(tiny_cfg)
    cfg["train"].update(steps=steps, eval_every=every * 5, checkpoint_every=every)
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


def _same_param_arrays(folder_a: Path, folder_b: Path) -> bool:
    from attnlab.training.checkpoint import load_params
    import jax
    leaves_a = jax.tree.leaves(load_params(folder_a / "params"))
    leaves_b = jax.tree.leaves(load_params(folder_b / "params"))
    return len(leaves_a) == len(leaves_b) and all(np.array_equal(x, y) for x, y in zip(leaves_a, leaves_b))


def checkpoint_steps(root: Path) -> list[int]:
    """Steps of the committed Orbax checkpoints under a --checkpoint-dir root (any cell)."""
    steps = []
    for orbax in root.glob("*/*/*/orbax"):  # <root>/<variant>/lr<lr>/seed<seed>/orbax/<step>
        try:
            steps += [int(name) for name in os.listdir(orbax) if name.isdigit()]
        except FileNotFoundError:  # Orbax renames and deletes while we look
            pass
    return steps


def wait_for(predicate, timeout=120.0, interval=0.01):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False


@pytest.mark.slow
def test_sigkill_then_restart_resumes_to_identical_numbers(tiny_cfg, corpus_path, tmp_path):
    cfg = long_cfg(tiny_cfg)
    reference = run_train(cfg, tmp_path / "reference", corpus_path)

    out, ckpt = tmp_path / "killed", tmp_path / "ckpt"
    proc = subprocess.Popen(train_cmd(cfg, out, corpus_path, checkpoints=ckpt),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # kill once a checkpoint beyond the first has been committed, i.e. mid-run
    assert wait_for(lambda: any(step >= 200 for step in checkpoint_steps(ckpt)))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not out.exists(), "the run finished before it could be killed; lengthen it"

    resumed = run_train(cfg, out, corpus_path, checkpoints=ckpt)
    assert resumed["resumed_from"] and resumed["resumed_from"][0] >= 200
    same_numbers(reference, resumed, tmp_path / "reference", out)
    assert not ckpt.exists(), "checkpoints (and the folders the trainer made) must go once the bundle is whole"


@pytest.mark.slow
def test_a_checkpoint_from_another_config_is_not_resumed(tiny_cfg, corpus_path, tmp_path):
    cfg = long_cfg(tiny_cfg)
    out, ckpt = tmp_path / "cell", tmp_path / "ckpt"
    proc = subprocess.Popen(train_cmd(cfg, out, corpus_path, checkpoints=ckpt),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert wait_for(lambda: bool(checkpoint_steps(ckpt)))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    changed = copy.deepcopy(cfg)
    changed["train"].update(steps=100, weight_decay=0.1)
    result = subprocess.run(train_cmd(changed, out, corpus_path, checkpoints=ckpt),
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "another config or other code" in result.stdout
    bundle = read_bundle(out)
    assert bundle["resumed_from"] == [] and bundle["config"]["train"]["weight_decay"] == 0.1


@pytest.mark.slow
def test_kills_at_any_moment_never_leave_a_readable_partial_bundle(tiny_cfg, corpus_path, tmp_path):
    cfg = long_cfg(tiny_cfg, steps=300)
    outcomes = []
    for i, delay in enumerate([0.5, 2.0, 3.5, 5.0, 6.5, 8.0, 12.0, 20.0, 40.0, 80.0]):
        out = tmp_path / f"cell{i}"
        proc = subprocess.Popen(train_cmd(cfg, out, corpus_path, checkpoints=tmp_path / f"ck{i}"),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if out.exists():
            read_bundle(out)  # a bundle that is there is whole: every listed file matches its hash
            outcomes.append("complete")
        else:
            outcomes.append("absent")
        assert not any(p.name == "bundle.json" for p in tmp_path.glob(f".cell{i}*/*")) or not out.exists()
        if outcomes[-1] == "complete":
            break
    # both outcomes must have been seen: a kill before the rename leaves nothing, one after leaves a whole bundle
    assert outcomes[0] == "absent" and outcomes[-1] == "complete", outcomes


@pytest.mark.slow
def test_same_cell_twice_gives_identical_numbers(tiny_cfg, corpus_path, tmp_path):
    a = run_train(tiny_cfg, tmp_path / "a", corpus_path, variant="yat_b")
    b = run_train(tiny_cfg, tmp_path / "b", corpus_path, variant="yat_b")
    same_numbers(a, b, tmp_path / "a", tmp_path / "b")
    assert a["learned"] == b["learned"]


@pytest.mark.slow
def test_nonfinite_loss_is_divergence(tiny_cfg, corpus_path, tmp_path):
    bundle = run_train(tiny_cfg, tmp_path / "inf", corpus_path, variant="softmax", lr=1e4)
    assert bundle["diverged"] is True and np.isfinite(bundle["best_val_loss"])


@pytest.mark.slow
def test_divergence_stops_the_cell_and_keeps_earlier_metrics(tiny_cfg, corpus_path, tmp_path):
    cfg = copy.deepcopy(tiny_cfg)
    cfg["train"]["diverge_loss"] = 3.3  # the loss starts above this: diverges on step 0's loss
    cfg["train"]["steps"] = 60
    bundle = run_train(cfg, tmp_path / "div", corpus_path, lr=3e-3)
    assert bundle["diverged"] is True
    assert bundle["diverged_step"] == 0
    curve = read_curve(tmp_path / "div")
    assert list(curve.step) == [0], "only the evaluation before divergence is kept"
    assert bundle["best_val_loss"] == pytest.approx(curve.val_loss.iloc[0])


@pytest.mark.slow
def test_divergence_mid_run_rolls_back_to_the_last_finite_stop(tiny_cfg, corpus_path, tmp_path):
    import jax

    from attnlab.training.checkpoint import load_params

    cfg = copy.deepcopy(tiny_cfg)
    cfg["train"].update(steps=60, eval_every=1, diverge_loss=6.0)  # at LR 0.3 the loss passes 6 after a few steps
    bundle = run_train(cfg, tmp_path / "nan", corpus_path, variant="softmax", lr=0.3)
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
    (("variants",), ["softmax", "cosine"], "cosine"),
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


def test_unknown_variant_error_lists_valid_ones(smoke_config):
    with pytest.raises(ConfigError, match="softmax, yat, yat_b, a3"):
        validate_config(config_with(smoke_config, ("variants",), ["cosine"]))


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


def test_block_larger_than_validation_split_fails_before_training(tiny_cfg, small_corpus, tmp_path):
    path, digest = small_corpus
    cfg = copy.deepcopy(tiny_cfg)
    cfg["data"]["sha256"] = digest
    cfg["model"]["block_size"] = 100_000
    result = subprocess.run(train_cmd(cfg, tmp_path / "x", path), capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert "block_size" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "x").exists()


def test_wrong_corpus_checksum_fails_before_training(tiny_cfg, small_corpus, tmp_path):
    path, _ = small_corpus
    result = subprocess.run(train_cmd(tiny_cfg, tmp_path / "x", path), capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert "checksum mismatch" in result.stderr and str(path) in result.stderr


# ---- bundles: collect never drops a cell silently


@pytest.fixture(scope="module")
def two_bundles(tmp_path_factory, corpus_path):
    smoke = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    cfg = cell_slice(validate_config(smoke))
    cfg["train"]["steps"] = 20
    root = tmp_path_factory.mktemp("bundles")
    for variant in ("softmax", "yat"):
        run_train(cfg, root / variant, corpus_path, variant=variant)
    return root


GRID = {"variants": ["softmax", "yat"], "contest_lr": {"softmax": 3e-3, "yat": 3e-3}, "contest_seeds": [0],
        "sweep_lrs": [3e-3], "sweep_seed": 0}


def copy_bundles(src: Path, dest: Path) -> Path:
    import shutil
    shutil.copytree(src, dest)
    return dest


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


def test_collect_cli_reports_the_path_without_a_traceback(two_bundles, tmp_path):
    root = copy_bundles(two_bundles, tmp_path / "b")
    (root / "yat" / "attention.npz").write_bytes(b"garbage")
    result = subprocess.run([sys.executable, "-m", "attnlab.pipeline.tables", "collect", "--grid", json.dumps(GRID),
                             "--out", str(tmp_path / "t"), str(root / "softmax"), str(root / "yat")],
                            capture_output=True, text=True, env=dict(os.environ))
    assert result.returncode == 2
    assert "attention.npz" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("args,named", [
    (["--variant", "cosine", "--lr", "3e-3"], "valid variants are"),
    (["--variant", "yat", "--lr", "-1"], "positive"),
    (["--variant", "yat", "--lr", "nan"], "positive"),
])
def test_cli_refuses_bad_cells_before_touching_the_corpus(tmp_path, args, named):
    env = {k: v for k, v in os.environ.items() if k != "ATTNLAB_CORPUS"}
    result = subprocess.run([sys.executable, "-m", "attnlab.cli", "train", "--config",
                             str(REPO / "config" / "smoke.yaml"), "--seed", "0", "--out", str(tmp_path / "x"),
                             "--corpus", str(tmp_path / "corpus.txt"), *args],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 2
    assert named in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "corpus.txt").exists()
