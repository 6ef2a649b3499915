"""The select_lr checkpoint's choice: a variant's best sweep LR, from its sweep bundles; and the extend_sweep
checkpoint's step, whether that sweep needs one more LR beyond its grid."""

from __future__ import annotations

from pathlib import Path

from attnlab.core.bundle_format import BundleError
from attnlab.pipeline.ground import sweep_extension
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


def sweep_step(bundle_dirs: list[Path], grid_lrs: list[float], limit: int, step: int) -> dict:
    """One extend_sweep step: the best LR of the cells read so far and, where it sits at an edge with room
    left, the LR one grid step past that edge (`next`; null once the best is inside or `limit` LRs were added:
    attnlab.pipeline.ground.sweep_extension)."""
    choice = best_lr(bundle_dirs)
    read = sorted(float(lr) for lr in choice["candidates"])
    following, where = sweep_extension.next_lr(grid_lrs, read, choice["lr"], limit)
    return {"variant": choice["variant"], "step": step, "grid": sorted(float(lr) for lr in grid_lrs), "lrs": read,
            "best": choice["lr"], "candidates": choice["candidates"], "excluded": choice["excluded"],
            "where": where, "next": following, "limit": limit}
