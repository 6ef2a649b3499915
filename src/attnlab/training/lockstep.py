"""A pack's cells trained in lockstep: one compiled program (steps.train_chunks) runs every cell's chunk at once.

The `vmap` pack mode, for accelerators, where one 2.7 M-parameter model leaves most of the device idle. The
cells share a variant and a config slice, so they share every shape; their parameters, optimiser states
(their LRs included), batch offsets and seeds are stacked on a leading axis. Between chunks each cell takes
its own stops (evaluation, snapshot, checkpoint, divergence) exactly as it does alone (train.Stops), and
each writes its own bundle. A cell that diverges, or that a checkpoint put at another step, leaves the group:
cells at one step run together, so a resumed pack still ends every cell where it would have.

The numbers are close to, not the same as, the cell trained alone: a batched matmul may sum in another
order. tests/test_lockstep.py measures how close, on the softmax curve and the first steps of yat_b.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from attnlab.core.cell_key import CellKey
from attnlab.core.errors import ConfigError
from attnlab.core.estimate import device_memory
from attnlab.training.phases import Phases
from attnlab.training.steps import train_chunks
from attnlab.training.train import Stops, compiled_chunk, open_cell


def run_lockstep(cfg: dict, keys: list[CellKey], corpus_path: Path, outs: list[Path],
                 checkpoint_dir: Path | None = None, code_fingerprint: str = "unrecorded", log=print,
                 pack: dict | None = None, kept: list[Path | None] | None = None,
                 indices: list[int] | None = None) -> list[tuple[dict, Phases]]:
    """Train every cell of `keys` (one variant, one config slice) into its folder of `outs`, as many at once as
    the device's memory holds; returns each one's bundle summary and where its wall time went (the shared chunks
    counted in full for each). `kept`: where the pack keeps each finished bundle (attnlab.training.files.finished);
    `indices`: each cell's place in its pack, for the provenance."""
    kept = kept or [None] * len(keys)
    indices = indices if indices is not None else list(range(len(keys)))
    if len({key.variant for key in keys}) != 1:
        raise ConfigError("a vmapped pack holds cells of one variant; give each variant its own pack")
    at_once = cells_at_once(cfg, len(keys))
    if at_once < len(keys):
        log(f"the device's memory holds {at_once} of these {len(keys)} cells at once: training them in groups")
    done = []
    for start in range(0, len(keys), at_once):
        group = slice(start, start + at_once)
        done += _in_lockstep(cfg, keys[group], corpus_path, outs[group], checkpoint_dir, code_fingerprint, log,
                             pack, kept[group], indices[group], first_in_process=start == 0)
    return done


def cells_at_once(cfg: dict, wanted: int) -> int:
    """How many of the cells fit the device's allocator at once (its limit honours XLA_PYTHON_CLIENT_MEM_FRACTION),
    from the cell's estimated device memory (attnlab.core.estimate); all of them where the device gives no limit
    (a CPU)."""
    stats = jax.devices()[0].memory_stats() or {}
    if not stats.get("bytes_limit"):
        return wanted
    free = stats["bytes_limit"] - stats.get("bytes_in_use", 0)
    need, _ = device_memory(cfg)
    # a margin for what the estimate leaves out: each cell's unstacked state beside the stacked one, its best
    # and last finite parameters
    return max(1, min(wanted, int(free // (MARGIN * need))))


MARGIN = 1.5


def _in_lockstep(cfg, keys, corpus_path, outs, checkpoint_dir, code_fingerprint, log, pack, kept, indices,
                 first_in_process: bool):
    with contextlib.ExitStack() as held:
        phases = [Phases() if i == 0 and first_in_process else Phases(start_up=0.0) for i in range(len(keys))]
        opened = [open_cell(held, cfg, key, corpus_path, out, checkpoint_dir, code_fingerprint, log, phase,
                            compile_alone=False) for key, out, phase in zip(keys, outs, phases)]
        check_shared_state([o.cell.rest for o in opened])
        runs = [Stops(o.cell, *o.state, o.checkpoints) for o in opened]
        while any(run.running for run in runs):
            at = min(run.step for run in runs if run.running)
            train_group([run for run in runs if run.running and run.step == at])
        return [(o.finish(run.result(), dict(pack or {}, mode="vmap", index=index), keep), phase)
                for o, run, phase, keep, index in zip(opened, runs, phases, kept, indices)]


def train_group(group: list[Stops]) -> None:
    """One chunk for cells at the same step: stacked in, run as one program, each cell's outcome taken apart."""
    first = group[0].cell
    target = group[0].next_stop()
    params = stack([run.params for run in group])
    opt_state = stack([run.opt_state for run in group])
    offsets = jnp.asarray(np.stack([run.offsets(target) for run in group]))
    seeds = jnp.stack([run.cell.seed_arr for run in group])
    started = time.perf_counter()
    program = compiled_chunk(first.graphdef, first.rest, first.optimizer, params, opt_state, first.tokens, offsets,
                             seeds, first.mcfg.block_size, first.bos, program=train_chunks)
    compiled = time.perf_counter() - started
    for run in group:
        run.cell.phases.add("compile", compiled)
        run.cell.compile_s += compiled
    started = time.perf_counter()
    params, opt_state, losses = program(first.rest, params, opt_state, first.tokens, offsets, seeds, group[0].step,
                                        target - group[0].step)
    losses = np.asarray(losses)
    seconds = time.perf_counter() - started
    for i, run in enumerate(group):
        run.advance(target, unstack(params, i), unstack(opt_state, i), losses[i], seconds)


def check_shared_state(rests: list) -> None:
    """The one program runs every cell with the first cell's non-parameter state: it must be the same in all."""
    first = jax.tree.leaves(rests[0])
    for rest in rests[1:]:
        leaves = jax.tree.leaves(rest)
        if jax.tree.structure(rest) != jax.tree.structure(rests[0]) or not all(
                np.array_equal(a, b) for a, b in zip(leaves, first)):
            raise ConfigError("the cells of this pack differ in their models' non-parameter state, so one program "
                              "cannot train them all; train them with --mode sequential")


def stack(trees: list):
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *trees)


def unstack(tree, i: int):
    return jax.tree.map(lambda leaf: leaf[i], tree)
