"""The select_lr checkpoint's choice: a variant's best sweep LR, from its sweep bundles."""

from __future__ import annotations

from pathlib import Path

from attnlab.core.bundle_format import BundleError
from attnlab.pipeline.tables.runs import load_runs
from attnlab.pipeline.tables.sweep import best_sweep_lr


def best_lr(bundle_dirs: list[Path]) -> dict:
    """The sweep LR with the lowest mean select-half loss over the sweep seeds, among the LRs where no seed
    diverged (best_sweep_lr)."""
    runs, _ = load_runs(bundle_dirs)
    choice = best_sweep_lr(runs) if not runs.empty else None
    if choice is None:
        raise BundleError("every sweep LR had a diverged cell; no learning rate to select (lower the sweep LRs)")
    return {"variant": runs.variant.iloc[0], **choice}
