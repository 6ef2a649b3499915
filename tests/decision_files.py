"""Decision files as the build's checkpoints write them (select_lr's choice, extend_sweep's steps): sealed and
consistent with themselves, for tests that stand in for those checkpoints (attnlab.pipeline.ground.sealed_files)."""

from __future__ import annotations

from attnlab.core.bundle_format import format_lr, sealed
from attnlab.core import studies
from attnlab.pipeline.ground import sweep_extension


def candidates(lrs, best: float) -> dict[str, float]:
    """Select-half means over `lrs` whose lowest is `best`'s, rising with the distance from it."""
    return {format_lr(float(lr)): 1.0 + abs(float(lr) - best) / best for lr in sorted(map(float, lrs))}


def choice(variant: str, lr: float, lrs) -> dict:
    """select_lr's sealed choice of `lr` among the sweep LRs `lrs`."""
    lrs = sorted({float(x) for x in lrs} | {float(lr)})
    return sealed({"variant": variant, "lr": float(lr), "best_val_loss_select": 1.0, "best_val_loss": 1.0,
                   "candidates": candidates(lrs, float(lr)), "excluded": []})


def step(variant: str, grid, added: list[float], limit: int, index: int) -> dict:
    """extend_sweep's sealed step `index` of a sweep over `grid` that adds `added` in turn: it read the grid and
    the LRs added before it, and asks for the next one (or none once `added` is used up)."""
    read = sorted({float(x) for x in grid} | {float(x) for x in added[:index]})
    following = added[index] if index < len(added) else None
    if following is not None:
        best = read[-1] if following > read[-1] else read[0]
    elif added and len(added) >= limit:
        best = added[-1]  # still at the edge, at the limit
    else:
        best = read[len(read) // 2]  # bracketed: inside
    asked, where = sweep_extension.next_lr(grid, read, best, limit)
    assert asked == following, (asked, following, read, best)
    return sealed({"variant": variant, "step": index, "grid": sorted(float(x) for x in grid), "lrs": read,
                   "best": best, "candidates": candidates(read, best), "excluded": [], "where": where,
                   "next": following, "limit": limit})


def grids(cfg: dict) -> tuple[dict[str, list[float]], int]:
    """Each variant's sweep grid and the sweep's limit, as a config gives them."""
    return {v: list(lrs) for v, lrs in studies.sweep_lrs(cfg).items()}, sweep_extension.limit(cfg)
