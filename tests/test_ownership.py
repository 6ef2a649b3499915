"""The trainer writes only what it owns: --out keeps a user's files, one trainer per folder, a full disk is one line.

An existing --out is replaced only while it holds nothing but its earlier
bundle's own files; a second trainer on the same --out or checkpoint folder
is refused naming the first's pid; a disk that fills during a checkpoint or
the bundle write ends in one line with the temporary folders removed. Each
test snapshots the victim files (paths and sha256) before and after.
"""

from __future__ import annotations

import copy
import errno
import json
import logging
import os
import signal
import socket
import sys
from pathlib import Path

import numpy as np
import pytest

from attnlab.core.bundle_format import BUNDLE_FILE, cell_dir
from attnlab.core.cell_key import CellKey
from attnlab.core.config import cell_slice, validate_config
from attnlab.core.corpus import CorpusError
from attnlab.core.errors import ConfigError
from attnlab.training.files import bundle_writer, disk_full
from attnlab.training.files.bundle_writer import check_out_dir, write_bundle
from attnlab.training.files.disk_full import DiskFullError
from attnlab.training.files.folder_lock import FolderLock
from conftest import REPO
from processes import attnlab, refused, run, start, trainer_args, wait_for
from test_faults import tiny_config, tree, write_config

CELL = CellKey.of("softmax", 0.003, 0)
TMP_SUFFIX = ".orbax-checkpoint-tmp"
ENOSPC_TEXT = os.strerror(errno.ENOSPC)


# ---- helpers


def stand_in_bundle(out: Path, variant="softmax", lr=0.003, seed=0, log=print) -> Path:
    """A bundle written by the real writer, with small stand-ins for the arrays and the Orbax parameters."""
    # rows of CURVE_COLUMNS, as the trainer keeps them
    curve = [[0, np.nan, 4.0, 0.0, 4.1, 3.9], [10, 3.5, 3.4, 1.0, 3.5, 3.3]]

    def save_params(folder: Path) -> None:
        (folder / "d").mkdir(parents=True)
        (folder / "_METADATA").write_text("{}")
        (folder / "d" / "0123abcd").write_bytes(b"\x01" * 64)

    summary = {"variant": variant, "lr": lr, "seed": seed, "steps_done": 10}
    return write_bundle(out, summary, curve, {"max_score": np.ones(2)}, {"steps": np.arange(2)}, save_params,
                        log=log)


def _replace_with_link(path: Path, target: Path) -> None:
    path.unlink()
    path.symlink_to(target)


def cli_train(config: Path, out, corpus: Path, cache: Path, *extra):
    return ["train", "--config", config, "--variant", "softmax", "--lr", "0.003", "--seed", "0", "--out", out,
            "--corpus", corpus, "--compile-cache", cache, *extra]


def leftovers(root: Path) -> list[str]:
    """Lock files, staging and moved-aside folders, Orbax temporaries: what a finished run must not leave."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.name.endswith(".lock") or ".partial-" in p.name or ".old-" in p.name or TMP_SUFFIX in p.name)


def lock_holder(path: Path) -> str:
    try:
        return path.read_text().split()[0]
    except (OSError, IndexError):
        return ""


@pytest.fixture
def ws(tmp_path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    write_config(ws / "tiny.yaml", tiny_config())
    return ws


@pytest.fixture
def writer_logs_restored(monkeypatch):
    """A full disk quiets the writer loggers and closed-loop callbacks for the rest of a process: undo that here."""
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)
    saved = {name: list(logging.getLogger(name).filters) for name in disk_full.WRITER_LOGGERS}
    yield
    for name, filters in saved.items():
        logging.getLogger(name).filters[:] = filters


# ---- 1. --out writes only what it owns


def test_a_user_folder_with_a_copied_bundle_json_and_a_notebook_is_refused_before_training(ws, corpus_path, cache):
    """The reported loss: analysis/ holds bundle.json (same cell) and analysis.ipynb; --out analysis kept neither."""
    stand_in_bundle(ws / "made")
    analysis = ws / "analysis"
    analysis.mkdir()
    (analysis / BUNDLE_FILE).write_bytes((ws / "made" / BUNDLE_FILE).read_bytes())
    (analysis / "analysis.ipynb").write_text('{"cells": []}\n')
    before = tree(ws)
    result = attnlab(*cli_train(ws / "tiny.yaml", analysis, corpus_path, cache), cwd=ws)
    refused(result, str(analysis), "analysis.ipynb", "files it did not write", "nothing was trained")
    assert "step 0/" not in result.stdout
    assert tree(ws) == before


def test_notes_and_plots_added_to_an_earlier_bundle_are_refused_before_training(ws, tiny_cfg, corpus_path, cache):
    out = stand_in_bundle(ws / "runs" / "softmax")
    (out / "NOTES.md").write_text("what I saw\n")
    (out / "plots").mkdir()
    (out / "plots" / "loss.png").write_bytes(b"\x89PNG")
    before = tree(ws)
    result = run(trainer_args(tiny_cfg, out, corpus_path, "softmax", "0.003", 0, None, "x", "--compile-cache", cache),
                 ws)
    refused(result, "NOTES.md", "plots/", "nothing was trained")
    assert tree(ws) == before


@pytest.mark.parametrize("add,named", [
    (lambda out: (out / "analysis.ipynb").write_text("{}"), "analysis.ipynb"),
    (lambda out: (out / "params" / "mine.txt").write_text("x"), "params/mine.txt"),
    (lambda out: (out / "empty").mkdir(), "empty/"),
    (lambda out: (out / "curve.csv").write_text("step\n"), "curve.csv (changed since the bundle was written)"),
    (lambda out: (out / "link").symlink_to("/etc"), "link (a link)"),
    (lambda out: _replace_with_link(out / "params" / "d" / "0123abcd", out / "curve.csv"),
     "params/d/0123abcd (a link)"),
], ids=["notebook", "file-in-params", "empty-folder", "edited-curve", "link", "listed-name-now-a-link"])
def test_anything_but_the_bundles_own_unchanged_files_is_named(tmp_path, add, named):
    out = stand_in_bundle(tmp_path / "out")
    assert check_out_dir(out, CELL) == out  # its own files only: replaceable
    add(out)
    before = tree(tmp_path)
    with pytest.raises(ConfigError, match="files it did not write") as err:
        check_out_dir(out, CELL)
    assert named in str(err.value) and "nothing was trained" in str(err.value)
    assert tree(tmp_path) == before


def test_a_refusal_names_a_few_foreign_files_and_counts_the_rest(tmp_path):
    out = stand_in_bundle(tmp_path / "out")
    for i in range(10):
        (out / f"note{i}.txt").write_text(str(i))
    with pytest.raises(ConfigError, match=r"note0\.txt.* and 4 more"):
        check_out_dir(out, CELL)


def test_an_earlier_bundle_of_only_its_own_files_is_replaced_file_by_file(tmp_path):
    out = stand_in_bundle(tmp_path / "out")
    old_manifest = json.loads((out / BUNDLE_FILE).read_text())["files"]
    (out / "curve.csv").unlink()  # a listed file already gone is no obstacle
    lines = []
    stand_in_bundle(out, log=lines.append)
    assert lines == []
    assert json.loads((out / BUNDLE_FILE).read_text())["files"] == old_manifest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"], "staging or moved-aside folders left behind"


def test_a_file_added_while_the_cell_trained_is_refused_at_the_swap(tmp_path):
    """The check runs again just before the swap: a file that appeared meanwhile keeps the earlier bundle in place."""
    out = stand_in_bundle(tmp_path / "out")
    curve = [[0, np.nan, 4.0, 0.0]]

    def save_params_while_a_user_writes(folder: Path) -> None:
        (out / "NOTES.md").write_text("written during training\n")
        folder.mkdir()
        (folder / "_METADATA").write_text("{}")

    before = tree(tmp_path)
    with pytest.raises(ConfigError, match="NOTES.md") as err:
        write_bundle(out, {"variant": "softmax", "lr": 0.003, "seed": 0}, curve, {}, {},
                     save_params_while_a_user_writes)
    assert "the new bundle was not written" in str(err.value)
    after = tree(tmp_path)
    assert after.pop("out/NOTES.md") and after == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_the_swap_removes_only_listed_files_and_leaves_the_rest_where_it_says(tmp_path):
    """What appears between the last check and the swap is never removed: it stays in the moved-aside folder."""
    out = stand_in_bundle(tmp_path / "out")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "_METADATA").write_text("{}")  # the same name and bytes as a listed file, outside the bundle
    staging = stand_in_bundle(tmp_path / "new")
    (out / "late.txt").write_text("appeared after the check\n")
    os.rename(out / "params", tmp_path / "params-moved")
    (out / "params").symlink_to(elsewhere)  # a listed folder that became a link must not be followed
    lines = []
    bundle_writer.replace_bundle(staging, out, lines.append)
    assert (out / BUNDLE_FILE).is_file() and not staging.exists()
    (aside,) = tmp_path.glob(".out.old-*/bundle")
    assert sorted(p.name for p in aside.iterdir()) == ["late.txt", "params"]
    assert (elsewhere / "_METADATA").read_text() == "{}"
    assert len(lines) == 1 and "late.txt" in lines[0] and str(aside) in lines[0]


# ---- 2. one trainer per folder


def test_a_second_lock_on_a_folder_is_refused_naming_the_holders_pid(tmp_path):
    folder = tmp_path / "runs" / "seed0"
    with FolderLock(folder, "--out") as first:
        assert lock_holder(first.path) == str(os.getpid())
        before = tree(tmp_path)
        with pytest.raises(ConfigError, match=f"in use by another attnlab trainer \\(pid {os.getpid()}"):
            FolderLock(folder, "--out").acquire()
        assert tree(tmp_path) == before, "a refused lock touched the holder's lock file"
    assert not first.path.exists()
    assert not (tmp_path / "runs").exists(), "the folder made to hold the lock outlived it"


def test_a_stale_lock_of_a_dead_process_is_taken_over(tmp_path):
    dead = run(["-c", "import os; print(os.getpid())"]).stdout.strip()
    lock = tmp_path / ".out.lock"
    lock.write_text(f"{dead} {socket.gethostname()}\n")
    with FolderLock(tmp_path / "out", "--out"):
        assert lock_holder(lock) == str(os.getpid())
    assert not lock.exists()


def test_locks_are_removed_when_the_run_fails(tmp_path, tiny_cfg, corpus_path):
    from pack_of_one import train_alone

    cfg = copy.deepcopy(tiny_cfg)
    cfg["telemetry"]["window_offset"] = 10**9  # refused by the cell, after both locks are taken
    with pytest.raises(CorpusError, match="window_offset"):
        train_alone(cfg, CELL, corpus_path, tmp_path / "runs" / "out", checkpoint_dir=tmp_path / "ckpt",
                 log=lambda *_: None)
    assert leftovers(tmp_path) == []
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow
def test_a_second_trainer_on_the_same_out_or_checkpoint_folder_is_refused_naming_the_first(ws, corpus_path, cache):
    out = stand_in_bundle(ws / "runs" / "cell")  # the victim: an earlier bundle of this cell
    ckpt = ws / "ckpt"
    out_lock = ws / "runs" / ".cell.lock"
    ckpt_lock = cell_dir(ckpt, CELL.variant, CELL.lr, CELL.seed).parent / ".seed0.lock"
    long = cell_slice(validate_config(tiny_config(train={"steps": 200_000})))
    first = start(trainer_args(long, out, corpus_path, "softmax", "0.003", 0, ckpt, "first", "--compile-cache", cache),
                  cwd=ws, log=ws / "first.log")
    try:
        holds = wait_for(lambda: lock_holder(out_lock) == lock_holder(ckpt_lock) == str(first.pid), first)
        assert holds, (ws / "first.log").read_text()[-3000:]
        victim = tree(out)
        same_out = attnlab(*cli_train(ws / "tiny.yaml", out, corpus_path, cache, "--checkpoint-dir", ckpt), cwd=ws)
        refused(same_out, "--out", str(out), f"pid {first.pid}", "nothing was trained")
        other_out = attnlab(*cli_train(ws / "tiny.yaml", ws / "other", corpus_path, cache, "--checkpoint-dir", ckpt),
                            cwd=ws)
        refused(other_out, "--checkpoint-dir", f"pid {first.pid}", "nothing was trained")
        assert tree(out) == victim
        assert lock_holder(out_lock) == lock_holder(ckpt_lock) == str(first.pid), "a refused run took the locks"
        assert not (ws / "other").exists() and not (ws / ".other.lock").exists()
        assert first.poll() is None, "the first trainer was disturbed"
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    # killed: its lock files stay behind, and the next run takes them over
    assert out_lock.exists() and ckpt_lock.exists()
    result = attnlab(*cli_train(ws / "tiny.yaml", out, corpus_path, cache, "--checkpoint-dir", ckpt), cwd=ws)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((out / BUNDLE_FILE).read_text())["steps_done"] == 40
    assert leftovers(ws) == [] and not ckpt.exists()


# ---- 3. a full disk is one line, its temporary folders removed


def _fail_writes_under(monkeypatch, marker: str) -> None:
    """Orbax's Python-side writes (metadata, JSON) under `marker` fail as a full disk makes them fail."""
    from etils.epath import abstract_path

    real = abstract_path.Path.write_text

    def write_text(self, *args, **kwargs):
        if marker in str(self):
            raise OSError(errno.ENOSPC, ENOSPC_TEXT)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(abstract_path.Path, "write_text", write_text)


def _tensorstore_full(self, step, args=None):
    """What TensorStore raises when a write hits a full disk, after Orbax has made the step's temporary folder."""
    partial = Path(self.directory) / f"{step}{TMP_SUFFIX}" / f"state{TMP_SUFFIX}" / "ocdbt.process_0" / "d"
    partial.mkdir(parents=True)
    (partial / "0a1b").write_bytes(b"\0" * 16)
    raise ValueError(f'RESOURCE_EXHAUSTED: Error writing local file "{partial}/0a1b": Failed to write 16 bytes to '
                     f"file 7: {ENOSPC_TEXT} [os_error_code='28']")


@pytest.mark.parametrize("how", ["os-error", "tensorstore"])
def test_a_disk_that_fills_during_a_checkpoint_is_one_line_and_leaves_no_temporary_folder(
        tmp_path, monkeypatch, capfd, writer_logs_restored, how):
    import orbax.checkpoint as ocp

    from attnlab.training.files.checkpoint import ResumeCheckpoints

    state = {"params": np.arange(6, dtype=np.float32), "opt_state": np.zeros(3, np.float32)}
    checkpoints = ResumeCheckpoints(tmp_path / "ckpt", CELL)
    try:
        checkpoints.save(10, state, {"0": np.ones(2, np.float16)}, {"cell": "x", "step": 10})
        orbax = checkpoints.directory / "orbax"
        committed = tree(orbax)
        if how == "os-error":
            _fail_writes_under(monkeypatch, TMP_SUFFIX)
        else:
            monkeypatch.setattr(ocp.CheckpointManager, "save", _tensorstore_full)
        capfd.readouterr()
        with pytest.raises(DiskFullError) as err:
            checkpoints.save(20, state, {"0": np.ones(2, np.float16)}, {"cell": "x", "step": 20})
        message = str(err.value)
        assert "\n" not in message and "the disk is full" in message and str(checkpoints.directory) in message
        assert not list(orbax.glob(f"*{TMP_SUFFIX}*")), "the failed save's temporary folder is still there"
        assert tree(orbax) == committed, "the last complete checkpoint changed"
        assert "Traceback" not in capfd.readouterr().err
    finally:
        checkpoints.release()
    assert leftovers(tmp_path) == []
    restored = ResumeCheckpoints(tmp_path / "ckpt", CELL)
    try:
        assert restored.latest(state)[2]["step"] == 10, "the earlier checkpoint no longer resumes"
    finally:
        restored.release()


def test_a_disk_that_fills_during_the_bundle_write_is_one_line_and_keeps_the_earlier_bundle(tmp_path):
    out = stand_in_bundle(tmp_path / "out")
    before = tree(tmp_path)
    curve = [[0, np.nan, 4.0, 0.0]]

    def save_params_on_a_full_disk(folder: Path) -> None:
        folder.mkdir()
        (folder / "_METADATA").write_text("{")
        raise OSError(errno.ENOSPC, ENOSPC_TEXT, str(folder / "_METADATA"))

    with pytest.raises(DiskFullError) as err:
        write_bundle(out, {"variant": "softmax", "lr": 0.003, "seed": 0}, curve, {}, {}, save_params_on_a_full_disk)
    assert "\n" not in str(err.value) and f"the disk is full: cannot write the bundle {out}" in str(err.value)
    assert tree(tmp_path) == before, "the partial bundle was left, or the earlier one changed"


FULL_DISK_RUN = """\
import errno, os, runpy, sys
from etils.epath import abstract_path
marker, argv = sys.argv[1], sys.argv[2:]
real = abstract_path.Path.write_text
def write_text(self, *args, **kwargs):
    if marker in str(self):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return real(self, *args, **kwargs)
abstract_path.Path.write_text = write_text
sys.argv = ["attnlab", *argv]
runpy.run_module("attnlab.cli", run_name="__main__")
"""


@pytest.mark.slow
@pytest.mark.parametrize("where", ["checkpoint", "bundle"])
def test_attnlab_train_on_a_full_disk_says_so_in_one_line(ws, corpus_path, cache, where):
    """The real trainer and Orbax, with every Orbax metadata write in the failing folder refused as ENOSPC."""
    write_config(ws / "tiny.yaml", tiny_config(train={"checkpoint_every": 20}))
    out = stand_in_bundle(ws / "out")  # the victim: an earlier bundle of this cell
    ckpt = ws / "ckpt"
    own = cell_dir(ckpt, CELL.variant, CELL.lr, CELL.seed)
    marker = f"{own}/" if where == "checkpoint" else f"/.{out.name}.partial-"
    victim = tree(out)
    result = run(["-c", FULL_DISK_RUN, marker, *cli_train(ws / "tiny.yaml", out, corpus_path, cache,
                                                          "--checkpoint-dir", ckpt)], ws)
    refused(result, "the disk is full")
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("error: the disk is full"), result.stderr[-3000:]
    named = cell_dir(ckpt, CELL.variant, CELL.lr, CELL.seed) if where == "checkpoint" else out
    assert str(named) in errors[0]
    assert tree(out) == victim
    assert leftovers(ws) == [], "temporary folders or locks left behind"
    if where == "bundle":  # the checkpoints stay, so the rerun resumes instead of starting over
        rerun = attnlab(*cli_train(ws / "tiny.yaml", out, corpus_path, cache, "--checkpoint-dir", ckpt), cwd=ws)
        assert rerun.returncode == 0 and "resuming" in rerun.stdout, rerun.stderr[-3000:]
        assert leftovers(ws) == [] and not ckpt.exists()


def test_trainers_starting_and_ending_together_on_a_fresh_checkpoint_root_never_collide(tmp_path):
    """Several trainers' checkpoint folders made at the same moment under a root that does not exist yet, then
    removed at the same moment, over and over: no error, and no cell's folder is left behind."""
    import threading

    from attnlab.training.files.checkpoint import ResumeCheckpoints

    cells, rounds, errors = 6, 20, []
    for round_ in range(rounds):
        root = tmp_path / f"round{round_}" / "checkpoints"
        start, end = threading.Barrier(cells), threading.Barrier(cells)

        def trainer(seed):
            try:
                start.wait()
                checkpoints = ResumeCheckpoints(root, CellKey.of("softmax", 3e-3, seed))
                end.wait()
                checkpoints.remove()
            except Exception as err:  # noqa: BLE001  (collected and reported below)
                errors.append(f"round {round_}, seed {seed}: {type(err).__name__}: {err}")
                start.abort(), end.abort()

        threads = [threading.Thread(target=trainer, args=(seed,)) for seed in range(cells)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, "\n".join(errors)
        assert not list(root.glob("softmax/*/seed*")), "a cell's checkpoint folder was left behind"


@pytest.mark.parametrize("extra, named", [
    (["--threads", "-3"], "--threads: must be at least 1, not -3"),
    (["--threads", "two"], "not a whole number of threads"),
    (["--checkpoint-dir", "/"], "--checkpoint-dir /: the filesystem root"),
])
@pytest.mark.slow
def test_the_trainers_command_lines_refuse_threads_below_one_and_the_filesystem_root(tmp_path, extra, named):
    out = tmp_path / "out"
    cli = attnlab("train", "--config", REPO / "config" / "smoke.yaml", "--variant", "softmax", "--lr", "3e-3",
                  "--seed", "0", "--out", out, *extra, cwd=tmp_path, timeout=60)
    module = run(["-m", "attnlab.training.pack", "--cell-config", "{}", "--variant", "softmax", "--cell", "3e-3,0",
                  "--corpus", tmp_path / "none.txt", "--out", out, "--code-fingerprint", "x", *extra],
                 tmp_path, None, 120)
    for result in (cli, module):
        refused(result, named)
    assert not out.exists()
