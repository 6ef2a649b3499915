"""Resumable training checkpoints (Orbax) in a per-cell folder the trainer creates and removes alone.

The folder is <root>/<variant>/lr<lr>/seed<seed>/, marked as attnlab's by a
small file, so removing it when the bundle is whole never touches anything
else under root (other cells' state, a user's files). It lives outside the
bundle, so Snakemake does not delete it when a job fails. One trainer uses a
cell's folder at a time (a lock file beside it), and a disk that fills during
a save ends in one line with Orbax's temporary folders removed.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import orbax.checkpoint as ocp

from attnlab.core.bundle_format import cell_dir
from attnlab.core.cell_key import CellKey
from attnlab.core.errors import ConfigError
from attnlab.training.files.disk_full import DiskFullError, disk_full_reason, is_disk_full, orbax_writes
from attnlab.training.files.folder_lock import FolderLock

MARKER = ".attnlab-checkpoints"
ROOT_MARKER = ".attnlab-checkpoint-root"
ABANDON_WAIT_S = 10.0  # the longest a failed save's unfinished folders are waited for and removed
TMP_SUFFIX = ".orbax-checkpoint-tmp"  # how Orbax names a checkpoint still being written: <step>.orbax-checkpoint-tmp*


class ResumeCheckpoints:
    def __init__(self, root: Path | None, key: CellKey):
        self.root = Path(root).resolve() if root else None
        self.directory = cell_dir(self.root, key.variant, key.lr, key.seed) if self.root else None
        self._manager = None
        self._lock = None
        if self.directory is None:
            return
        try:  # trainers that start together race here: the first makes the root, the others find it
            self.root.mkdir(parents=True)
            (self.root / ROOT_MARKER).touch()  # made by the trainer: removed again once it holds nothing else
        except FileExistsError:
            pass
        try:
            self._lock = FolderLock(self.directory, "--checkpoint-dir")
            self._lock.acquire()  # before looking at the folder: another trainer may be writing it
            self._open()
        except BaseException:
            self.release()
            tidy_root(self.root)
            raise

    def _open(self) -> None:
        if self.directory.exists() and not (self.directory / MARKER).is_file():
            raise ConfigError(f"--checkpoint-dir: {self.directory} exists and was not made by attnlab's trainer; "
                              "move it away or pass another --checkpoint-dir (nothing was trained)")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            (self.directory / MARKER).touch()
        except OSError as err:
            raise ConfigError(f"--checkpoint-dir {self.root}: cannot make {self.directory} ({err.strerror}); pass a "
                              "folder (it may hold other files) or a path that does not exist yet") from None
        self._manager = ocp.CheckpointManager(
            self.directory / "orbax",
            options=ocp.CheckpointManagerOptions(max_to_keep=1, create=True),
            item_names=("state", "snapshots", "progress"),
        )

    def __enter__(self) -> "ResumeCheckpoints":
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def release(self) -> None:
        """Give up this cell's folder (its lock file goes; the checkpoints stay for a rerun to resume)."""
        if self._lock is not None:
            self._lock.release()

    def latest(self, like):
        """(state, snapshots, progress) of the newest complete checkpoint, or None.

        `like` is a state of the same structure (the fresh one): restoring into
        it gives back the same pytree types the compiled step was built for.
        """
        if self._manager is None or self._manager.latest_step() is None:
            return None
        step = self._manager.latest_step()
        restored = self._manager.restore(step, args=ocp.args.Composite(
            state=ocp.args.StandardRestore(like),
            snapshots=ocp.args.StandardRestore(),
            progress=ocp.args.JsonRestore(),
        ))
        return restored["state"], restored["snapshots"], restored["progress"]

    def save(self, step: int, state, snapshots: dict, progress: dict) -> None:
        """snapshots: attention maps so far, {step as text: array}; never empty (step 0 is always kept)."""
        if self._manager is None:
            return
        try:
            with orbax_writes():
                self._manager.save(step, args=ocp.args.Composite(
                    state=ocp.args.StandardSave(state),
                    snapshots=ocp.args.StandardSave(snapshots),
                    progress=ocp.args.JsonSave(progress),
                ))
                self._manager.wait_until_finished()
        except Exception as err:
            if not is_disk_full(err):
                raise
            self._abandon()
            raise DiskFullError(f"the disk is full: cannot write the checkpoint of step {step} in {self.directory} "
                                f"({disk_full_reason(err)}); free space on that disk and run again (the last "
                                "complete checkpoint there is kept and resumed from)") from None

    def _abandon(self) -> None:
        """After a failed save: stop Orbax and remove its unfinished (temporary) checkpoint folders."""
        manager, self._manager = self._manager, None
        try:
            with orbax_writes():
                manager.close()
        except Exception:  # it raises the failed save's error again, which the caller reports
            pass
        # Orbax's own folders, inside this trainer's folder. A writer thread of the failed save may still make a
        # folder in one just removed, so remove until none has appeared for a while (bounded).
        quiet, deadline = 0, time.monotonic() + ABANDON_WAIT_S
        while quiet < 3 and time.monotonic() < deadline:
            partials = list((self.directory / "orbax").glob(f"*{TMP_SUFFIX}*"))
            for partial in partials:
                shutil.rmtree(partial, ignore_errors=True)
            quiet = 0 if partials else quiet + 1
            time.sleep(0.05)

    def clear(self) -> None:
        """Forget every checkpoint (they belong to another config or other code)."""
        if self._manager is not None:
            for step in self._manager.all_steps():
                self._manager.delete(step)

    def remove(self) -> None:
        """Remove this cell's folder and its lock, then the parents up to root left empty (never a non-empty one)."""
        if self._manager is None:
            return
        self._manager.close()
        shutil.rmtree(self.directory, ignore_errors=True)
        self.release()
        prune(self.directory, self.root)


def prune(directory: Path, root: Path) -> None:
    """Remove the parents of a removed cell folder up to root that it left empty (never a non-empty one), then
    root itself when the trainer made it and it holds nothing but its marker. Trainers ending together may prune
    at once: whichever comes second finds the folder or the marker gone, which is the same end."""
    parent = Path(directory).parent
    while parent != root and root in parent.parents:
        try:
            os.rmdir(parent)
        except FileNotFoundError:
            pass
        except OSError:
            return
        parent = parent.parent
    tidy_root(root)


def tidy_root(root: Path) -> None:
    """Remove root when the trainer made it and it holds nothing but its marker."""
    marker = root / ROOT_MARKER
    try:
        if marker.is_file() and [p.name for p in root.iterdir()] == [ROOT_MARKER]:
            marker.unlink(missing_ok=True)
            os.rmdir(root)
    except OSError:  # gone already, or another trainer put its folder there meanwhile: it stays
        pass


def save_params(directory: Path, params) -> None:
    """The final parameters, restorable without retraining (Orbax StandardCheckpointer)."""
    with ocp.StandardCheckpointer() as checkpointer:
        checkpointer.save(Path(directory).resolve(), params)

