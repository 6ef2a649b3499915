"""Train one cell (a CellKey: variant, LR, seed) and write its bundle (run by attnlab.training.pack).

Three steps around a small Progress record: restore_or_start, train_until_done,
write_cell_bundle (attnlab.training.summary). The loop runs many optimiser steps per jitted call (a
fori_loop whose batches are sliced on the device from offsets computed on the
host), so there is no host round trip per step. LR, seed and step counters are
runtime values and a chunk's length is set by eval_every alone, so cells that
differ only in those (or in their number of steps) share one compiled
executable through JAX's persistent compilation cache. Checkpoints (Orbax)
live outside the bundle, so a killed job resumes where it stopped and ends
with the same numbers; a checkpoint written by another config or other code
is discarded.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import math
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from attnlab.core.bundle_format import cell_dir
from attnlab.core.cell_key import CellKey
from attnlab.core.config_types import (JAX_PRECISION, bos_token, model_config, telemetry_config, to_json,
                                       train_config)
from attnlab.core.corpus import check_fits, load_corpus
from attnlab.core.errors import ConfigError
from attnlab.training.batches import (TELEMETRY_STREAM, VALIDATION_STREAM, held_out_batches, map_window,
                                      train_offsets, whole_split_batches)
from attnlab.training.files import finished
from attnlab.training.files.bundle_writer import check_out_dir
from attnlab.training.files.checkpoint import ResumeCheckpoints
from attnlab.training.files.folder_lock import FolderLock
from attnlab.training.model import GPT
from attnlab.training.phases import Phases
from attnlab.training.progress import SELECT, VAL, Progress
from attnlab.training.schedule import plateaued, schedule
from attnlab.training.steps import evaluate, evaluate_windows, make_optimizer, train_chunk, window_attention
from attnlab.training.summary import write_cell_bundle


def cell_identity(cfg: dict, key: CellKey, code_fingerprint: str) -> str:
    """What a checkpoint must match to be resumed: the config slice, the cell and the code it runs."""
    return hashlib.sha256(to_json([cfg, key.variant, key.lr_value, key.seed, code_fingerprint]).encode()).hexdigest()


class Cell:
    """Everything one training run needs, built once: model, optimiser, corpus streams, compiled step."""

    def __init__(self, cfg: dict, key: CellKey, corpus_path: Path, log, phases: Phases | None = None,
                 compile_alone: bool = True):
        self.cfg, self.key, self.log = cfg, key, log
        self.phases = phases if phases is not None else Phases()
        set_up_started = time.perf_counter()
        self.variant, self.lr, self.seed = key.variant, key.lr_value, key.seed
        self.tcfg, self.telemetry = train_config(cfg), telemetry_config(cfg)
        self.corpus = load_corpus(corpus_path, cfg["data"]["train_fraction"], cfg["data"].get("sha256"))
        self.mcfg = model_config(cfg, self.variant, self.corpus.vocab_size)
        self.bos = bos_token(cfg, self.corpus.vocab_size)
        check_fits(self.corpus, self.mcfg.block_size, self.tcfg.batch_size, self.telemetry.window_offset,
                   max(self.tcfg.context_multiples, default=1))
        self.plan = schedule(self.tcfg.steps, self.tcfg.eval_every, self.tcfg.checkpoint_every,
                             self.telemetry.snapshot_fractions)
        self.stops = sorted(set(self.plan["eval"]) | set(self.plan["snapshot"]) | set(self.plan["checkpoint"]))
        # Every chunk's offsets are padded to one length that depends on eval_every alone (no two stops are
        # further apart, evaluations being stops), not on where snapshots and checkpoints fall, so cells that
        # differ only in their steps share one compiled loop. The loop runs n_steps; padding is never read.
        self.chunk_rows = min(self.tcfg.eval_every, self.tcfg.steps)
        self.model = GPT(self.mcfg, rngs=nnx.Rngs(params=self.seed))
        self.graphdef, self.params, self.rest = nnx.split(self.model, nnx.Param, ...)
        self.optimizer = make_optimizer(self.lr, self.tcfg.weight_decay)
        self.opt_state = self.optimizer.init(self.params)
        self.tokens = jnp.asarray(self.corpus.train)
        T, B = self.mcfg.block_size, self.tcfg.batch_size
        self.val_x, self.val_y = held_out_batches(self.corpus.val, VALIDATION_STREAM, T, B, self.tcfg.eval_batches,
                                                  self.bos)
        self.probe_x, self.probe_y = held_out_batches(self.corpus.val, TELEMETRY_STREAM, T, B, self.telemetry.batches,
                                                      self.bos)
        # Every validation character once, for the best checkpoint's one evaluation on the whole split: the seed's
        # metric is the minimum over evaluations of eval_batches sampled batches, which stays the cell's best loss.
        self.whole_x, self.whole_y, self.whole_weight = whole_split_batches(self.corpus.val, T, B, self.bos)
        self.window = map_window(self.corpus.val, T, self.telemetry.window_offset, self.bos)
        self.seed_arr = jnp.asarray(self.seed, dtype=jnp.uint32)
        started = time.perf_counter()
        # A cell of a vmapped pack runs its pack's program instead (attnlab.training.lockstep), compiled there.
        self.chunk = compiled_chunk(self.graphdef, self.rest, self.optimizer, self.params, self.opt_state,
                                    self.tokens, jnp.asarray(self.offsets(0, 1)), self.seed_arr, T, self.bos) \
            if compile_alone else None
        self.compile_s = time.perf_counter() - started
        self.phases.add("compile", self.compile_s)
        self.phases.add("set_up", started - set_up_started)

    def offsets(self, start: int, n_steps: int) -> np.ndarray:
        return train_offsets(self.seed, start, n_steps, len(self.corpus.train), self.mcfg.block_size,
                             self.tcfg.batch_size, pad_to=self.chunk_rows)

    def label(self) -> str:
        return self.key.label()

    def evaluate(self, params) -> tuple[float, float, float]:
        """The validation loss of `params` over every window and over its select and report halves
        (attnlab.training.steps.Reading): on the whole split, or on the fixed sampled batches."""
        if self.tcfg.eval_whole_split:
            reading = evaluate_windows(self.graphdef, self.rest, params, self.whole_x, self.whole_y, self.whole_weight)
        else:
            reading = evaluate(self.graphdef, self.rest, params, self.val_x, self.val_y)
        return tuple(map(float, reading))

    def attention_map(self, params) -> np.ndarray:
        return np.asarray(window_attention(self.graphdef, self.rest, params, jnp.asarray(self.window)),
                          dtype=np.float16)


# The compiled training chunk of each program this process has built (a pack's later cells reuse it). The key
# is everything the program depends on: the model's graph, the optimiser's structure (its LR and weight decay are
# runtime values in its state), the shapes and dtypes of every argument, the block size, the beginning-of-sequence
# token and the matmul precision.
_CHUNKS: dict = {}


def compiled_chunk(graphdef, rest, optimizer, params, opt_state, tokens, offsets, seed, block_size: int,
                   bos: int | None = None, program=train_chunk):
    """train_chunk (or train_chunks, for a stacked pack) compiled ahead of time for these arguments, once per
    process per program."""
    shapes = jax.tree.map(lambda x: (jnp.shape(x), jnp.result_type(x)), (rest, params, opt_state, tokens, offsets,
                                                                          seed))
    key = (program, graphdef, jax.tree.structure(opt_state), str(shapes), block_size, bos,
           jax.config.jax_default_matmul_precision)
    if key not in _CHUNKS:
        _CHUNKS[key] = program.lower(graphdef, rest, optimizer, params, opt_state, tokens, offsets, seed, 0, 1,
                                     block_size=block_size, bos=bos).compile()
    return _CHUNKS[key]


def run_cell(cfg: dict, key: CellKey, corpus_path: Path, out: Path, checkpoint_dir: Path | None = None,
             code_fingerprint: str = "unrecorded", log=print, phases: Phases | None = None,
             pack: dict | None = None, kept: Path | None = None) -> dict:
    """Train one cell from its config slice and write its bundle; returns bundle.json's content.

    The key comes from attnlab.core.cell.check_cell: both command lines check the cell before they train.
    `phases` collects where the wall time goes (a fresh record, from this process's start, by default);
    `pack` says which cells this process trains with it (attnlab.training.pack), for the provenance, and
    `kept` where the pack keeps the finished bundle until it ends (attnlab.training.files.finished).
    """
    with contextlib.ExitStack() as held:  # one trainer per --out and per checkpoint folder; released on any exit
        opened = open_cell(held, cfg, key, corpus_path, out, checkpoint_dir, code_fingerprint, log, phases)
        trained = train_until_done(opened.cell, *opened.state, opened.checkpoints)
        return opened.finish(trained, pack, kept)


@dataclasses.dataclass
class OpenCell:
    """A cell ready to train: its Cell, its bundle folder (locked), its checkpoints and the state it starts from
    (params, optimiser state, best params, progress, attention maps: fresh, or its newest checkpoint's)."""

    cell: Cell
    out: Path
    checkpoints: ResumeCheckpoints
    code_fingerprint: str
    state: tuple

    def finish(self, trained: tuple, pack: dict | None, kept: Path | None = None) -> dict:
        """Write the bundle from (final params, best params, progress, maps), keep it at `kept` when a pack asks,
        then drop the checkpoints (only now: until the bundle is safe somewhere, they are what resumes it)."""
        params, best, progress, maps = trained
        summary = write_cell_bundle(self.cell, params, best, progress, maps, self.out, self.code_fingerprint, pack)
        if kept is not None:
            finished.keep(self.out, kept)
        self.checkpoints.remove()
        return summary


def open_cell(held: contextlib.ExitStack, cfg: dict, key: CellKey, corpus_path: Path, out: Path,
              checkpoint_dir: Path | None, code_fingerprint: str, log, phases: Phases | None,
              compile_alone: bool = True) -> OpenCell:
    """Check the bundle folder, lock it and the cell's checkpoints (released with `held`), build the cell at the
    config's matmul precision and restore its newest checkpoint. Refuses a bad --out before any compute."""
    out = check_out_dir(out, key)
    own = cell_dir(Path(checkpoint_dir).resolve(), key.variant, key.lr, key.seed) if checkpoint_dir is not None \
        else None
    if own is not None and (own == out or out in own.parents or own in out.parents):
        raise ConfigError(f"--checkpoint-dir {checkpoint_dir} would put this cell's checkpoints at {own}, which "
                          f"overlaps --out {out}; keep checkpoints outside the bundle (nothing was trained)")
    held.enter_context(FolderLock(out, "--out"))
    checkpoints = held.enter_context(ResumeCheckpoints(checkpoint_dir, key))
    # Every matmul compiled below (the training chunk, evaluations, the probe) at the config's precision.
    held.enter_context(jax.default_matmul_precision(JAX_PRECISION[train_config(cfg).matmul_precision]))
    cell = Cell(cfg, key, corpus_path, log, phases, compile_alone)
    state = restore_or_start(cell, checkpoints, cell_identity(cfg, key, code_fingerprint))
    return OpenCell(cell, out, checkpoints, code_fingerprint, state)


def restore_or_start(cell: Cell, checkpoints: ResumeCheckpoints, identity: str):
    """The newest checkpoint of this very cell and code, else the fresh state: (params, optimiser state, the
    parameters of the best evaluation so far, progress, attention maps)."""
    fresh = (cell.params, cell.opt_state, cell.params, Progress(cell=identity), {})
    try:
        restored = checkpoints.latest({"params": cell.params, "opt_state": cell.opt_state, "best": cell.params})
    except Exception as err:  # a checkpoint Orbax cannot read is as good as none
        cell.log(f"ignoring the unreadable checkpoint in {checkpoints.directory} ({type(err).__name__}: {err})")
        checkpoints.clear()
        return fresh
    if restored is None:
        return fresh
    state, snapshots, saved = restored
    if saved.get("cell") != identity:
        cell.log(f"ignoring the checkpoint in {checkpoints.directory}: it was written by another config or "
                 "other code for this cell; starting afresh")
        checkpoints.clear()
        return fresh
    progress = Progress.from_json(saved)
    progress.resumed_from.append(progress.step)
    cell.log(f"resuming {cell.label()} from step {progress.step}")
    maps = {int(k): np.asarray(v) for k, v in snapshots.items()}
    return state["params"], state["opt_state"], state["best"], progress, maps


def train_until_done(cell: Cell, params, opt_state, best, progress: Progress, maps: dict, checkpoints):
    """Run chunks of steps between stops; on divergence, roll back to the last finite stop. `best` follows the
    parameters of the lowest full-window validation loss so far (Stops.take_stop; checkpointed with the state,
    so a resumed run keeps it)."""
    run = Stops(cell, params, opt_state, best, progress, maps, checkpoints)
    while run.running:
        target = run.next_stop()
        started = time.perf_counter()
        params, opt_state, losses = cell.chunk(cell.rest, run.params, run.opt_state, cell.tokens,
                                               jnp.asarray(run.offsets(target)), cell.seed_arr, run.step,
                                               target - run.step)
        losses = np.asarray(losses)
        run.advance(target, params, opt_state, losses, time.perf_counter() - started)
    return run.result()


class Stops:
    """One cell's training between its stops: what happens after each chunk of steps (evaluation, snapshot,
    checkpoint, divergence), whoever ran the chunk (this cell's own program, or one vmapped over a pack)."""

    def __init__(self, cell: Cell, params, opt_state, best, progress: Progress, maps: dict, checkpoints):
        self.cell, self.progress, self.maps, self.checkpoints = cell, progress, maps, checkpoints
        self.params, self.opt_state, self.best = params, opt_state, best
        self.step = progress.step
        if self.step == 0 and not progress.curve:
            self.take_stop(0, params)
        # The state at the last finite stop: what a diverged cell keeps. Every stop (checkpoints
        # included) refreshes it, so a resumed run rolls back exactly as an uninterrupted one.
        self.last_good, self.last_good_step = jax.tree.map(jnp.copy, params), self.step

    @property
    def running(self) -> bool:
        return (self.step < self.cell.tcfg.steps and self.progress.diverged_step is None
                and self.progress.plateau_step is None)

    def next_stop(self) -> int:
        return min(s for s in self.cell.stops if s > self.step)

    def offsets(self, target: int) -> np.ndarray:
        return self.cell.offsets(self.step, target - self.step)

    def take_stop(self, step: int, params) -> bool:
        """Evaluate/snapshot at a stop; False if the model is no longer finite (divergence).

        The best checkpoint follows the full-window loss, as it did before the
        halves: the whole-split and longer-context evaluations of the best
        checkpoint (attnlab.training.summary) read the same parameters as
        before. The plateau rule reads the select half, a choice like an LR's,
        so the report half stays a reading no choice has seen.
        """
        cell, progress, plan = self.cell, self.progress, self.cell.plan
        if not all_finite(params):
            return False
        if step in plan["eval"]:
            with cell.phases("evaluation"):
                val, select, report = cell.evaluate(params)
            if not math.isfinite(val):
                return False
            if not progress.curve or val < min(row[VAL] for row in progress.curve):
                self.best = jax.tree.map(jnp.copy, params)
            pending = progress.pending_losses
            train_loss = float(np.mean(pending)) if pending else float("nan")
            progress.curve.append([step, train_loss, val, progress.elapsed_s, select, report])
            progress.pending_losses = []
            rule = cell.tcfg.plateau
            if rule is not None and step >= rule.min_steps and plateaued(
                    [(row[0], row[SELECT]) for row in progress.curve], rule.patience, rule.tolerance):
                progress.plateau_step = step
            shown = f"{train_loss:.4f}" if pending else "—"
            cell.log(f"{cell.label()} step {step}/{cell.tcfg.steps} train {shown} val {val:.4f} "
                     f"({step / max(progress.elapsed_s, 1e-9):.1f} steps/s)")
        # A cell stopped by its plateau rule keeps its last map where it stopped (its snapshot fractions are
        # of the ceiling, train.steps, so the later ones may never be reached).
        if step in plan["snapshot"] or step == progress.plateau_step:
            with cell.phases("telemetry"):
                self.maps[step] = cell.attention_map(params)
        return True

    def advance(self, target: int, params, opt_state, losses: np.ndarray, seconds: float) -> None:
        """Take one chunk's outcome (from self.step to target, its losses on the host, its wall time)."""
        cell, progress = self.cell, self.progress
        losses = losses[: target - self.step]
        progress.elapsed_s += seconds
        cell.phases.add("training", seconds)
        bad = np.flatnonzero(~np.isfinite(losses) | (losses > cell.tcfg.diverge_loss))
        if bad.size:
            progress.pending_losses += losses[: bad[0]].tolist()
            self.diverge(self.step + bad[0], f"training loss {losses[bad[0]]}")
            return
        progress.pending_losses += losses.tolist()
        if not self.take_stop(target, params):
            self.diverge(target, "non-finite parameters or validation loss")
            return
        self.step = progress.step = target
        self.params, self.opt_state = params, opt_state
        self.last_good, self.last_good_step = jax.tree.map(jnp.copy, params), target
        if target in cell.plan["checkpoint"]:
            self.checkpoints.save(target, {"params": params, "opt_state": opt_state, "best": self.best},
                                  {str(k): v for k, v in self.maps.items()}, dataclasses.asdict(progress))

    def diverge(self, at_step: int, why: str) -> None:
        self.progress.diverged_step = int(at_step)
        self.cell.log(f"{self.cell.label()} DIVERGED at step {at_step} ({why}); keeping the metrics from before")

    def result(self):
        """(final parameters, best parameters, progress, attention maps); a diverged cell's last finite state."""
        params = self.params
        if self.progress.diverged_step is not None:
            params = self.last_good
            if self.last_good_step not in self.maps:
                self.maps[self.last_good_step] = self.cell.attention_map(params)
        return params, self.best, self.progress, self.maps


def all_finite(tree) -> bool:
    """One compiled reduction and one host read, not one eager op per leaf at every stop."""
    return bool(_all_finite(tree))


@jax.jit
def _all_finite(tree):
    return jnp.all(jnp.stack([jnp.isfinite(leaf).all() for leaf in jax.tree.leaves(tree)]))
