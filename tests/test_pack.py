"""A pack (attnlab.training.pack): cells trained one after another in one process give, bit for bit, the numbers
each gives alone, each in its own bundle, with the pack in its provenance."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from attnlab.core.bundle_format import cell_dir
from processes import CODE_FINGERPRINT, run, trainer_args

NUMBERS = ("best_val_loss", "final_val_loss", "best_val_loss_whole_split", "best_val_loss_select",
           "best_val_loss_heldout", "best_step_select", "n_params", "telemetry", "learned")


def same_cell(a, b) -> list[str]:
    """What differs between two bundles' numbers: curve, summary numbers, telemetry and attention arrays."""
    found = []
    curve_a, curve_b = (pd.read_csv(p / "curve.csv")[["step", "train_loss", "val_loss", "val_loss_select",
                                                       "val_loss_report"]] for p in (a, b))
    if not curve_a.equals(curve_b):
        found.append("curve.csv")
    ja, jb = (json.loads((p / "bundle.json").read_text()) for p in (a, b))
    found += [key for key in NUMBERS if ja.get(key) != jb.get(key)]
    for name in ("telemetry.npz", "attention.npz"):
        with np.load(a / name) as x, np.load(b / name) as y:
            if set(x.files) != set(y.files) or not all(np.array_equal(x[f], y[f]) for f in x.files):
                found.append(name)
    return found


@pytest.fixture
def pack_cfg(tiny_cfg, small_corpus):
    corpus, sha256 = small_corpus
    cfg = copy.deepcopy(tiny_cfg)
    cfg["data"]["sha256"] = sha256
    cfg["train"].update(steps=20, eval_every=10)
    return cfg, corpus


@pytest.mark.parametrize("variant", ["softmax", "yat_b"])  # yat_b amplifies any rounding difference
@pytest.mark.slow
def test_a_cell_trained_second_in_a_pack_is_the_cell_trained_alone(pack_cfg, tmp_path, variant):
    """The second cell runs the program compiled for the first, at another LR and seed."""
    cfg, corpus = pack_cfg
    packed = run(["-m", "attnlab.training.pack", "--cell-config", json.dumps(cfg), "--variant", variant,
                  "--cell", "0.01,0", "--cell", "0.003,1", "--corpus", corpus, "--out-root", tmp_path / "pack",
                  "--code-fingerprint", CODE_FINGERPRINT])
    assert packed.returncode == 0, packed.stderr[-3000:]
    alone = run(trainer_args(cfg, tmp_path / "alone", corpus, variant, "0.003", 1))
    assert alone.returncode == 0, alone.stderr[-3000:]
    second = cell_dir(tmp_path / "pack", variant, 0.003, 1)
    assert same_cell(second, tmp_path / "alone") == []
    pack = json.loads((second / "bundle.json").read_text())["provenance"]["pack"]
    assert pack["index"] == 1 and pack["size"] == 2 and len(pack["cells"]) == 2
    alone_pack = json.loads((tmp_path / "alone" / "bundle.json").read_text())["provenance"]["pack"]
    assert alone_pack["index"] == 0 and alone_pack["size"] == 1  # alone: a pack of one, the same trainer


def test_a_pack_shares_the_process_so_its_later_cells_start_and_compile_for_less(pack_cfg, tmp_path, monkeypatch):
    from attnlab.core.cell_key import CellKey
    from attnlab.training import train
    from attnlab.training.pack import run_pack

    monkeypatch.setattr(train, "_CHUNKS", {})  # as in a fresh process: nothing compiled by earlier tests

    cfg, corpus = pack_cfg
    keys = [CellKey.of("softmax", 3e-3, seed) for seed in (0, 1)]
    (first, first_phases), (_, later) = run_pack(cfg, keys, corpus, tmp_path / "pack", log=lambda *_: None)
    assert later.seconds["start_up"] == 0.0
    assert later.seconds["compile"] < first_phases.seconds["compile"] / 10  # the first cell's program, reused
    assert set(first["timings"]) == set(first_phases.seconds) - {"writing"}


def test_a_pack_refuses_a_cell_given_twice(pack_cfg, tmp_path):
    cfg, corpus = pack_cfg
    result = run(["-m", "attnlab.training.pack", "--cell-config", json.dumps(cfg), "--variant", "softmax",
                  "--cell", "0.003,0", "--cell", "0.003,0", "--corpus", corpus, "--out-root", tmp_path / "pack"])
    assert result.returncode == 2 and "given twice" in result.stderr and not (tmp_path / "pack").exists()


FINGERPRINT = "a" * 16


def bundle_bytes(folder) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_pack_run_again_leaves_its_current_bundles_and_retrains_what_other_code_made(pack_cfg, tmp_path):
    """A pack's job reruns when it gains a cell; only the cell without a current bundle trains."""
    from attnlab.core.cell_key import CellKey
    from attnlab.training.current import current_bundle
    from attnlab.training.pack import run_pack

    cfg, corpus = pack_cfg
    root, quiet = tmp_path / "pack", (lambda *_: None)
    keys = [CellKey.of("softmax", 3e-3, seed) for seed in (0, 1)]
    run_pack(cfg, keys[:1], corpus, root, code_fingerprint=FINGERPRINT, log=quiet)
    first = cell_dir(root, "softmax", 0.003, 0)
    before = bundle_bytes(first)
    shutil.copytree(first, tmp_path / "original")
    assert current_bundle(first, cfg, keys[0], FINGERPRINT)
    done = run_pack(cfg, keys, corpus, root, code_fingerprint=FINGERPRINT, log=quiet)
    assert [summary["seed"] for summary, _ in done] == [1]
    assert bundle_bytes(first) == before
    # another config, another cell, other code, or a bundle changed since: not current
    longer = dict(cfg, train=dict(cfg["train"], steps=30))
    assert not current_bundle(first, longer, keys[0], FINGERPRINT)
    assert not current_bundle(first, cfg, keys[1], FINGERPRINT)
    assert not current_bundle(first, cfg, keys[0], "b" * 16)
    edited = Path(shutil.copytree(first, tmp_path / "edited"))
    (edited / "curve.csv").write_text((edited / "curve.csv").read_text() + "\n")
    assert current_bundle(tmp_path / "edited", cfg, keys[0], FINGERPRINT) is False
    done = run_pack(cfg, keys[:1], corpus, root, code_fingerprint="b" * 16, log=quiet)  # other code: retrained
    assert [summary["seed"] for summary, _ in done] == [0]
    assert json.loads((first / "bundle.json").read_text())["provenance"]["code_fingerprint"] == "b" * 16
    assert same_cell(first, tmp_path / "original") == []  # the same numbers: only the code's name changed


@pytest.mark.slow
def test_a_failed_pack_puts_back_the_cells_it_had_finished(pack_cfg, tmp_path):
    """Snakemake removes a failed job's new outputs; the pack's next run puts the finished cell back, untrained."""
    from attnlab.core.cell_key import CellKey
    from attnlab.core.errors import ConfigError
    from attnlab.training.files import finished
    from attnlab.training.pack import run_pack

    cfg, corpus = pack_cfg
    root, checkpoints, quiet = tmp_path / "pack", tmp_path / "checkpoints", (lambda *_: None)
    keys = [CellKey.of("yat_b", 3e-3, seed) for seed in (0, 1)]
    blocked = cell_dir(root, "yat_b", 0.003, 1)
    blocked.mkdir(parents=True)
    (blocked / "notes.txt").write_text("not the trainer's")  # the second cell refuses this folder
    with pytest.raises(ConfigError, match="already exists"):
        run_pack(cfg, keys, corpus, root, checkpoint_dir=checkpoints, code_fingerprint=FINGERPRINT, log=quiet)
    first = cell_dir(root, "yat_b", 0.003, 0)
    trained = bundle_bytes(first)
    assert finished.kept_path(checkpoints, keys[0]).is_dir()
    shutil.rmtree(first)  # what Snakemake does with the outputs a failed job made
    shutil.rmtree(blocked)
    done = run_pack(cfg, keys, corpus, root, checkpoint_dir=checkpoints, code_fingerprint=FINGERPRINT, log=quiet)
    assert [summary["seed"] for summary, _ in done] == [1]
    assert bundle_bytes(first) == trained
    assert not (checkpoints / finished.FINISHED).exists()  # the pack ended well: nothing kept


def test_a_kept_bundle_replaces_the_stale_one_snakemake_put_back(pack_cfg, tmp_path):
    """A stale bundle retrained in a pack that then failed: Snakemake restores the stale one from its backup,
    with its own marker file in the folder; the next run puts the kept, current bundle in its place."""
    from attnlab.core.cell_key import CellKey
    from attnlab.training.files import finished
    from attnlab.training.pack import run_pack

    cfg, corpus = pack_cfg
    root, checkpoints, quiet = tmp_path / "pack", tmp_path / "checkpoints", (lambda *_: None)
    key = CellKey.of("softmax", 3e-3, 0)
    bundle = cell_dir(root, "softmax", 0.003, 0)
    run_pack(cfg, [key], corpus, root, code_fingerprint="b" * 16, log=quiet)  # trained by other code: stale
    stale = bundle_bytes(bundle)
    (bundle / ".snakemake_timestamp").touch()  # Snakemake marks every directory output it made
    run_pack(cfg, [key], corpus, root, checkpoint_dir=checkpoints, code_fingerprint=FINGERPRINT, log=quiet)
    current = bundle_bytes(bundle)
    assert current != stale and not (bundle / ".snakemake_timestamp").exists()  # replaced, marker and all
    finished.keep(bundle, finished.kept_path(checkpoints, key))  # as the failed pack had kept it
    shutil.rmtree(bundle)
    run_pack(cfg, [key], corpus, root / "other", code_fingerprint="b" * 16, log=quiet)
    shutil.copytree(cell_dir(root / "other", "softmax", 0.003, 0), bundle)  # the stale one, put back
    logged = []
    done = run_pack(cfg, [key], corpus, root, checkpoint_dir=checkpoints, code_fingerprint=FINGERPRINT,
                    log=logged.append)
    assert done == [] and any("put back the bundle it finished" in line for line in logged), logged
    assert bundle_bytes(bundle) == current


def test_forgetting_a_kept_bundle_removes_only_what_it_kept(tmp_path):
    """A file someone put in a kept cell's folder stays when the pack ends, and keeping the cell again there is
    refused naming it, rather than deleting or overwriting it."""
    from attnlab.core.cell_key import CellKey
    from attnlab.core.errors import ConfigError
    from attnlab.training.files import finished

    bundle = tmp_path / "bundle"
    (bundle / "params").mkdir(parents=True)
    (bundle / "curve.csv").write_text("step\n0\n")
    (bundle / "params" / "state").write_text("weights")
    (bundle / "bundle.json").write_text(json.dumps({"files": {"curve.csv": "0" * 64, "params/state": "1" * 64}}))
    kept = finished.kept_path(tmp_path / "checkpoints", CellKey.of("softmax", 3e-3, 0))
    finished.keep(bundle, kept)
    (kept / "params" / "mine.txt").write_text("a user's notes")
    finished.forget(kept)
    assert sorted(str(p.relative_to(kept)) for p in kept.rglob("*")) == ["params", "params/mine.txt"]
    with pytest.raises(ConfigError, match="params/mine.txt"):
        finished.keep(bundle, kept)
    assert (kept / "params" / "mine.txt").read_text() == "a user's notes"
    (kept / "params" / "mine.txt").unlink()
    finished.forget(kept)
    assert not (tmp_path / "checkpoints" / finished.FINISHED).exists()  # emptied: every folder it made is gone
