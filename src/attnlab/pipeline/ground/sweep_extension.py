"""A sweep that brackets: where a variant's best LR sits at an edge of its grid, one more LR beyond that edge.

A one-seed sweep over a fixed grid cannot bracket a best LR that moves between
machines: a best at the grid's top holds back every verdict that needs the
best inside its grid. With `sweep.extend: N`, each 'auto' variant's sweep is
read in steps (the extend_sweep checkpoint): step k reads the grid and the k
LRs added so far, and where the best is at the lowest or highest LR it asks for
one more, one grid step past that edge (the edge times the ratio of the edge to
its neighbour, rounded to one significant digit), until the best is inside or N
LRs were added: the limit, which the tables and the ledger then name.

Every LR a step may add is known from the grid alone (`candidates`), so each
has a training pack of its own, named when the Snakefile is read; the steps
decide which of them train.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from attnlab.core import studies as studies_mod
from attnlab.core.bundle_format import format_lr
from attnlab.core.config import AUTO
from attnlab.core.errors import ConfigError
from attnlab.pipeline.ground import sealed_files

UP, DOWN = "highest", "lowest"  # the edge a step extends past (the words grid_edge uses)


def limit(cfg: dict) -> int:
    """How many LRs the sweep may add beyond a variant's grid (sweep.extend; 0: the grid as given)."""
    return int(cfg["sweep"].get("extend") or 0)


def extended_variants(cfg: dict) -> list[str]:
    """The variants whose sweep may be extended: those whose contest LR the sweep chooses ('auto')."""
    if not limit(cfg):
        return []
    return [v for v in cfg["variants"] if cfg["contest"]["lr"][v] == AUTO]


def one_step(edge: float, neighbour: float) -> float:
    """The LR one grid step past `edge`, away from `neighbour`: edge x (edge / neighbour), one significant digit
    (two, or the exact product, where fewer would land back on the edge)."""
    beyond = edge * edge / neighbour
    for digits in (0, 1):
        rounded = float(f"{beyond:.{digits}e}")
        if format_lr(rounded) != format_lr(edge) and (rounded > edge) == (beyond > edge):
            return rounded
    return beyond


def candidates(grid_lrs, steps: int) -> dict[str, list[float]]:
    """Every LR the sweep may add, per edge, in the order it would add them (`steps` of each)."""
    lrs = sorted(float(lr) for lr in grid_lrs)
    if len(lrs) < 2:
        raise ConfigError(f"a sweep grid of {len(lrs)} LR has no step to extend by; give it at least two LRs")
    found = {}
    for edge, (first, second) in ((UP, (lrs[-2], lrs[-1])), (DOWN, (lrs[1], lrs[0]))):
        made, near, far = [], first, second
        for _ in range(steps):
            near, far = far, one_step(far, near)
            made.append(far)
        found[edge] = made
    return found


def all_candidates(cfg: dict) -> dict[str, list[float]]:
    """Every LR any extended variant's sweep may add, per variant, ascending."""
    grids = studies_mod.sweep_lrs(cfg)
    return {v: sorted(lr for edge in candidates(grids[v], limit(cfg)).values() for lr in edge)
            for v in extended_variants(cfg)}


LR_RANGE = (1e-30, 1e30)  # the LRs an extension may reach: far past any that trains, yet never inf, 0 or subnormal


def check(cfg: dict, source: str = "config") -> None:
    """Refuse an extension that has no step to take, or whose steps would leave LR_RANGE (an LR that overflows to
    inf or underflows to 0 names no cell, and divides by zero a step later), before any compute."""
    grids = studies_mod.sweep_lrs(cfg)
    short = [v for v in extended_variants(cfg) if len(grids[v]) < 2]
    if short:
        raise ConfigError(f"{source}: sweep.extend: {limit(cfg)} needs a step to extend by, and the sweep grid of "
                          f"{', '.join(short)} has one LR; give it at least two (sweep.lrs) or set sweep.extend: 0")
    low, high = LR_RANGE
    for variant in extended_variants(cfg):
        grid = sorted(float(lr) for lr in grids[variant])
        with np.errstate(over="ignore", under="ignore"):
            try:
                reached = [lr for edge in candidates(grid, limit(cfg)).values() for lr in edge]
            except (ZeroDivisionError, OverflowError):
                reached = [0.0]
        outside = [lr for lr in grid + reached if not (math.isfinite(lr) and low <= lr <= high)]
        if outside:
            raise ConfigError(f"{source}: sweep.lrs: {variant}'s grid {[format_lr(lr) for lr in grid]}, with the "
                              f"{limit(cfg)} LR(s) per edge sweep.extend may add past it, reaches "
                              f"{format_lr(outside[0])}, outside the LRs a sweep may reach ({low:g} to {high:g}); "
                              "give the grid LRs inside that range, or lower sweep.extend")


def next_lr(grid_lrs, read_lrs, best: float, steps: int) -> tuple[float | None, str]:
    """The LR the next step adds (None: none) and where the best stands: 'inside', 'highest' or 'lowest' with
    room left, or 'limit' (at an edge after `steps` LRs were added)."""
    lrs = sorted(float(lr) for lr in read_lrs)
    text = format_lr(best)
    edge = UP if text == format_lr(lrs[-1]) else DOWN if text == format_lr(lrs[0]) else None
    if edge is None:
        return None, "inside"
    added = len(lrs) - len(set(map(format_lr, grid_lrs)))
    if added >= steps:
        return None, "limit"
    read = set(map(format_lr, lrs))
    beyond = [lr for lr in candidates(grid_lrs, steps)[edge] if format_lr(lr) not in read]
    return beyond[0], edge


def with_sweep_lrs(cfg: dict, added: dict[str, list[float]]) -> dict:
    """The config whose sweep grids hold the LRs the steps added (a mapping of every variant's list)."""
    if not any(added.values()):
        return cfg
    grids = studies_mod.sweep_lrs(cfg)
    lrs = {v: sorted(set(grids[v]) | set(added.get(v, ()))) for v in cfg["variants"]}
    return {**cfg, "sweep": {**cfg["sweep"], "lrs": lrs}}


def read_step(path: Path, grid=None, steps: int | None = None) -> dict:
    """One extend_sweep decision as the checkpoint wrote it: sealed (attnlab.pipeline.ground.sealed_files), made for
    the variant's `grid` and limit `steps` (where the reader knows them), its best the best of its own candidates
    (the LRs it read), and its `next` and `where` what that best and those LRs give (next_lr). A hand edit, a
    step of another grid, or a step that contradicts itself stops the build naming the file."""
    step = sealed_files.read_sealed(path, "a sweep step written by extend_sweep", "extend_sweep")
    try:
        step["lrs"] = [float(lr) for lr in step["lrs"]]
        written_grid = [float(lr) for lr in step["grid"]]
        limit, following = int(step["limit"]), step["next"]
    except (KeyError, TypeError, ValueError) as err:
        raise sealed_files.refusal(path, f"not a sweep step of this version ({type(err).__name__}: {err})") from None
    if following is not None and (isinstance(following, bool) or not isinstance(following, (int, float))
                                  or not following > 0):
        raise sealed_files.refusal(path, f"its next LR {following!r} is no positive number")
    texts = {format_lr(lr) for lr in written_grid}
    if grid is not None and texts != {format_lr(float(lr)) for lr in grid}:
        raise sealed_files.refusal(path, f"it was made for the grid {sorted(texts, key=float)}, not this config's "
                                         f"{sorted({format_lr(float(lr)) for lr in grid}, key=float)}")
    if steps is not None and limit != steps:
        raise sealed_files.refusal(path, f"it was made for sweep.extend {limit}, not this config's {steps}")
    if not texts <= {format_lr(lr) for lr in step["lrs"]}:
        raise sealed_files.refusal(path, "the LRs it read leave out some of its grid's")
    sealed_files.check_best(path, step, "best", step["lrs"])
    expected = next_lr(written_grid, step["lrs"], float(step["best"]), limit)
    if (following, step.get("where")) != expected:
        raise sealed_files.refusal(path, f"it says next {following!r} ({step.get('where')}), where its best "
                                         f"{format_lr(float(step['best']))} among its LRs gives {expected[0]!r} "
                                         f"({expected[1]})")
    return step


def chain(read, count: int) -> list[dict]:
    """Steps 0, 1, ... read by `read(index)` until one asks for no further LR, `count` are read, or `read` gives
    None (a step not made yet)."""
    steps = []
    for index in range(count):
        step = read(index)
        if step is None:
            break
        steps.append(step)
        if step["next"] is None:
            break
    return steps


def added_lrs(steps: list[dict]) -> list[float]:
    """The LRs a chain of steps added, in order."""
    return [float(step["next"]) for step in steps if step["next"] is not None]
