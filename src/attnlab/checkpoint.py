"""Resumable training checkpoints (Orbax): arrays in one item, progress as JSON in another.

They live outside the bundle, under results/checkpoints/, so Snakemake does not
delete them when a job fails, and they are removed once the bundle is whole.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import orbax.checkpoint as ocp


class ResumeCheckpoints:
    def __init__(self, directory: Path | None):
        self.directory = Path(directory).resolve() if directory else None
        self._manager = None
        if self.directory is not None:
            self._manager = ocp.CheckpointManager(
                self.directory,
                options=ocp.CheckpointManagerOptions(max_to_keep=1, create=True),
                item_names=("state", "snapshots", "progress"),
            )

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
        self._manager.save(step, args=ocp.args.Composite(
            state=ocp.args.StandardSave(state),
            snapshots=ocp.args.StandardSave(snapshots),
            progress=ocp.args.JsonSave(progress),
        ))
        self._manager.wait_until_finished()

    def clear(self) -> None:
        """Forget every checkpoint (they belong to another config)."""
        if self._manager is not None:
            for step in self._manager.all_steps():
                self._manager.delete(step)

    def remove(self) -> None:
        if self._manager is not None:
            self._manager.close()
            shutil.rmtree(self.directory, ignore_errors=True)


def save_params(directory: Path, params) -> None:
    """The final parameters, restorable without retraining (Orbax StandardCheckpointer)."""
    with ocp.StandardCheckpointer() as checkpointer:
        checkpointer.save(Path(directory).resolve(), params)


def load_params(directory: Path, like=None):
    with ocp.StandardCheckpointer() as checkpointer:
        return checkpointer.restore(Path(directory).resolve(), like)
