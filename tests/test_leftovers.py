"""What killed runs leave beside a cell is removed once its pack ends well (attnlab.training.files.leftovers), and a
training job's log is the job's own while it runs (attnlab.training.files.job_log)."""

from __future__ import annotations

import copy
import fcntl
import json
import os
from pathlib import Path

import pytest

from attnlab.core.bundle_format import BUNDLE_FILE, cell_dir
from attnlab.core.cell_key import CellKey
from attnlab.training.files import checkpoint, finished
from attnlab.training.files.folder_lock import FolderLock
from attnlab.training.pack import run_pack
from processes import CODE_FINGERPRINT, refused, run

KEY = CellKey.of("softmax", 3e-3, 0)


@pytest.fixture
def one_cell(tiny_cfg, small_corpus, tmp_path):
    """A tiny softmax cell trained by a pack with checkpoints, as the workflow trains it."""
    corpus, sha256 = small_corpus
    cfg = copy.deepcopy(tiny_cfg)
    cfg["data"]["sha256"] = sha256
    cfg["train"].update(steps=10, eval_every=5)
    root, checkpoints = tmp_path / "runs", tmp_path / "checkpoints"
    run_pack(cfg, [KEY], corpus, root, checkpoints, CODE_FINGERPRINT, log=lambda *_: None)
    return cfg, corpus, root, checkpoints


def plant_what_kills_leave(out: Path, checkpoints: Path) -> list[Path]:
    """A killed trainer's leftovers, named as the trainer names them: stale locks (a dead pid in them), staging
    and moved-aside folders, a checkpoint folder with an Orbax step, a kept bundle's staging folder."""
    own = cell_dir(checkpoints.resolve(), KEY.variant, KEY.lr, KEY.seed)
    kept = finished.kept_path(checkpoints, KEY)
    planted = [out.parent / f".{out.name}.lock", own.parent / f".{own.name}.lock",
               out.parent / f".{out.name}.partial-k1ll3d", out.parent / f".{out.name}.old-k1ll3d",
               kept.parent / f".{kept.name}.partial-k1ll3d", own]
    for lock in planted[:2]:
        lock.parent.mkdir(parents=True, exist_ok=True)
        lock.write_text("999999999 elsewhere\n")
    for folder in planted[2:5]:
        (folder / "bundle").mkdir(parents=True)
        (folder / "bundle" / "curve.csv").write_text("step,train_loss,val_loss\n")
    (own / "orbax" / "1400" / "state").mkdir(parents=True)
    (own / "orbax" / "1400" / "state" / "data").write_bytes(b"\0" * 64)
    (own / checkpoint.MARKER).touch()
    (checkpoints / checkpoint.ROOT_MARKER).touch()  # the killed trainer made the root
    return planted


@pytest.mark.slow
def test_a_pack_that_ends_well_removes_what_killed_runs_left_and_nothing_else(one_cell):
    cfg, corpus, root, checkpoints = one_cell
    out = cell_dir(root, KEY.variant, KEY.lr, KEY.seed)
    sealed = (out / BUNDLE_FILE).read_bytes()
    planted = plant_what_kills_leave(out, checkpoints)
    notes = out.parent / "notes.txt"  # a user's file beside the bundles
    notes.write_text("mine\n")
    said = []
    run_pack(cfg, [KEY], corpus, root, checkpoints, CODE_FINGERPRINT, log=said.append)
    assert [p for p in planted if os.path.lexists(p)] == []
    assert (out / BUNDLE_FILE).read_bytes() == sealed  # current: left as it was, not trained again
    assert notes.read_text() == "mine\n"
    assert not checkpoints.exists()  # made by the trainer, and empty once the cell's folder went
    assert any("removed what a killed run left" in line for line in said)


def test_a_file_of_someone_elses_in_the_checkpoint_folder_stays_with_its_folder(one_cell):
    cfg, corpus, root, checkpoints = one_cell
    out = cell_dir(root, KEY.variant, KEY.lr, KEY.seed)
    plant_what_kills_leave(out, checkpoints)
    own = cell_dir(checkpoints.resolve(), KEY.variant, KEY.lr, KEY.seed)
    (own / "my-notes.md").write_text("mine\n")
    run_pack(cfg, [KEY], corpus, root, checkpoints, CODE_FINGERPRINT, log=lambda *_: None)
    assert (own / "my-notes.md").read_text() == "mine\n"
    assert not (own / "orbax").exists() and not (own / checkpoint.MARKER).exists()


def test_a_users_file_in_a_moved_aside_bundle_stays_while_the_bundles_own_files_go(one_cell):
    """The writer keeps a user's file of an earlier bundle in its .old-* folder and says so: tidying keeps it too."""
    cfg, corpus, root, checkpoints = one_cell
    out = cell_dir(root, KEY.variant, KEY.lr, KEY.seed)
    planted = plant_what_kills_leave(out, checkpoints)
    aside = out.parent / f".{out.name}.old-k1ll3d"
    (aside / "bundle" / "notes.md").write_text("mine\n")
    said = []
    run_pack(cfg, [KEY], corpus, root, checkpoints, CODE_FINGERPRINT, log=said.append)
    assert (aside / "bundle" / "notes.md").read_text() == "mine\n"
    assert sorted(p.name for p in (aside / "bundle").iterdir()) == ["notes.md"]  # its curve.csv went
    assert [p for p in planted if os.path.lexists(p) and p != aside] == []
    assert any(f"{aside} holds files attnlab did not make (bundle/notes.md)" in line for line in said)


def test_tidying_that_fails_leaves_the_pack_ended_well(one_cell, monkeypatch):
    """A full disk or an unreadable folder while tidying: what is left stays, and the trained pack is not failed."""
    from attnlab.training.files import leftovers
    from attnlab.training.files.disk_full import DiskFullError

    class FullDisk:
        def __init__(self, *args):
            pass

        def __enter__(self):
            raise DiskFullError("the disk is full")

        def __exit__(self, *exc):
            return False

    cfg, corpus, root, checkpoints = one_cell
    planted = plant_what_kills_leave(cell_dir(root, KEY.variant, KEY.lr, KEY.seed), checkpoints)
    monkeypatch.setattr(leftovers, "FolderLock", FullDisk)
    said = []
    run_pack(cfg, [KEY], corpus, root, checkpoints, CODE_FINGERPRINT, log=said.append)
    assert all(os.path.lexists(p) for p in planted[2:4])
    assert any("the disk is full" in line for line in said)


def test_a_cell_another_trainer_holds_keeps_everything(one_cell):
    """A live holder of the cell's lock may be writing its staging folder or checkpoints right now."""
    cfg, corpus, root, checkpoints = one_cell
    out = cell_dir(root, KEY.variant, KEY.lr, KEY.seed)
    planted = plant_what_kills_leave(out, checkpoints)
    (out.parent / f".{out.name}.lock").unlink()
    said = []
    with FolderLock(out, "--out"):
        run_pack(cfg, [KEY], corpus, root, checkpoints, CODE_FINGERPRINT, log=said.append)
        assert [p for p in planted[1:] if not os.path.lexists(p)] == []
    assert any("in use by another attnlab trainer" in line for line in said)


# ---- the job's log


def pack_command(cfg: dict, corpus: Path, root: Path, log: Path) -> list:
    return ["-m", "attnlab.training.pack", "--cell-config", json.dumps(cfg), "--variant", "softmax",
            "--cell", "0.003,0", "--corpus", corpus, "--out-root", root, "--code-fingerprint", CODE_FINGERPRINT,
            "--log", log]


def test_a_second_run_of_a_job_is_refused_and_leaves_the_first_ones_log_whole(tiny_cfg, small_corpus, tmp_path):
    """As a second build with --nolock starts the job the first is running: the first's log is not truncated."""
    corpus, sha256 = small_corpus
    cfg = copy.deepcopy(tiny_cfg)
    cfg["data"]["sha256"] = sha256
    log = tmp_path / "logs" / "train_pack_softmax.log"
    log.parent.mkdir()
    first = "softmax lr=0.003 seed=0 step 10/60 train 3.1 val 3.2\n" * 50
    log.write_text(first)
    with open(log, "a") as held:  # the first run's trainer holds it
        fcntl.flock(held, fcntl.LOCK_EX)
        result = run(pack_command(cfg, corpus, tmp_path / "runs", log))
    refused(result, str(log), "another run of this job", "--nolock")
    assert log.read_text() == first
    assert not (tmp_path / "runs").exists()  # nothing was trained


@pytest.mark.slow
def test_a_job_writes_its_whole_output_into_its_log_replacing_an_earlier_runs(tiny_cfg, small_corpus, tmp_path):
    corpus, sha256 = small_corpus
    cfg = copy.deepcopy(tiny_cfg)
    cfg["data"]["sha256"] = sha256
    cfg["train"].update(steps=10, eval_every=5)
    log = tmp_path / "logs" / "train_pack_softmax.log"
    log.parent.mkdir()
    log.write_text("an earlier run's log\n")
    result = run(pack_command(cfg, corpus, tmp_path / "runs", log))
    assert result.returncode == 0, result.stderr[-3000:]
    written = log.read_text()
    assert "an earlier run's log" not in written
    assert "done softmax lr=0.003 seed=0" in written  # the last line printed: the log got everything
    assert "done softmax lr=0.003 seed=0" in result.stdout  # and the job's output still shows


def test_a_log_on_a_file_system_without_flock_is_written_unlocked(tmp_path, monkeypatch, capsys):
    """Some network mounts refuse flock outright: the job still runs (its cells have their own locks)."""
    import errno

    from attnlab.training.files import job_log

    def no_flock(fd, operation):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(job_log.fcntl, "flock", no_flock)
    fd = job_log.hold(tmp_path / "logs" / "job.log")
    try:
        assert os.write(fd, b"written\n") == 8
    finally:
        os.close(fd)
    assert (tmp_path / "logs" / "job.log").read_text() == "written\n"
    assert "cannot be locked here" in capsys.readouterr().err


@pytest.mark.slow
def test_a_second_build_with_nolock_leaves_a_running_jobs_log_whole(tmp_path, corpus_path):
    """Snakemake removes a job's declared `log:` files when it starts the job: the trainer's log is a param, so
    the second build's job reaches the trainer, which finds the log held and is refused, and the log is whole."""
    from processes import snakemake
    from workspace import make_workspace

    ws = make_workspace(tmp_path)
    log = ws / "results" / "logs" / "train" / "runs" / "softmax" / "train_pack_softmax_runs_0.log"
    log.parent.mkdir(parents=True)
    first = "softmax lr=0.003 seed=0 step 20/60 train 3.1 val 3.2\n" * 20
    log.write_text(first)
    with open(log, "a") as held:  # the first build's trainer, still running
        fcntl.flock(held, fcntl.LOCK_EX)
        second = snakemake(ws, "results/runs/softmax/lr0.003/seed0", "--nolock", "--cores", "1",
                           "--configfile", "config/smoke.yaml", corpus=corpus_path)
    assert second.returncode != 0
    assert "is being written by another run of this job" in second.stdout + second.stderr
    assert log.read_text() == first
