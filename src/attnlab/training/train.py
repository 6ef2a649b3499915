"""Train one cell (variant, lr, seed) and write its bundle; also `python -m attnlab.training.train`.

Three steps around a small Progress record: restore_or_start, train_until_done,
write_cell_bundle. The loop runs many optimiser steps per jitted call (a
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

import argparse
import contextlib
import dataclasses
import hashlib
import json
import math
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from attnlab.core.bundle_format import cell_dir
from attnlab.core.cell import at_least_one, check_cell, checkpoint_root_problem
from attnlab.core.config_types import model_config, telemetry_config, to_json, train_config
from attnlab.core.corpus import CorpusError, check_fits, load_corpus
from attnlab.core.errors import ConfigError
from attnlab.core.telemetry_stats import entropy_histograms, summarise
from attnlab.core.variants import NORMALISER_TWINS, NORMALISERS, UnknownVariantError
from attnlab.training import provenance
from attnlab.training.batches import (TELEMETRY_STREAM, VALIDATION_STREAM, held_out_batches, map_window,
                                      train_offsets, whole_split_batches)
from attnlab.training.bundle_writer import check_out_dir, write_bundle
from attnlab.training.checkpoint import ResumeCheckpoints, save_params
from attnlab.training.disk_full import DiskFullError
from attnlab.training.folder_lock import FolderLock, release_locks
from attnlab.training.model import GPT, count_params
from attnlab.training.steps import (evaluate, evaluate_normalised, evaluate_windows, make_optimizer, probe,
                                   train_chunk, window_attention)

LN2 = math.log(2.0)


@dataclass
class Progress:
    """Where a cell stands; saved with every checkpoint as JSON."""

    cell: str  # the cell's identity (config slice, cell, code fingerprint)
    step: int = 0
    curve: list = field(default_factory=list)  # [step, mean train loss since last eval, val loss, elapsed s]
    pending_losses: list = field(default_factory=list)  # train losses since the last evaluation
    elapsed_s: float = 0.0
    diverged_step: int | None = None
    resumed_from: list = field(default_factory=list)

    @classmethod
    def from_json(cls, data: dict) -> "Progress":
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Train one cell and write its bundle.")
    parser.add_argument("--cell-config", required=True, help="JSON config slice (attnlab.core.config.cell_slice)")
    parser.add_argument("--variant", required=True)
    parser.add_argument("--lr", required=True, type=float)
    parser.add_argument("--seed", required=True, type=int)
    parser.add_argument("--corpus", required=True, type=Path, help="verified corpus file")
    parser.add_argument("--out", required=True, type=Path, help="bundle folder to create (absent, or this cell's)")
    parser.add_argument("--code-fingerprint", required=True,
                        help="fingerprint of the code this cell runs (attnlab.core.fingerprint); part of its identity")
    parser.add_argument("--checkpoint-dir", type=Path, default=None,
                        help="root of resumable checkpoints; the cell's own folder is made and removed inside it")
    parser.add_argument("--compile-cache", type=Path, default=None, help="JAX persistent compilation cache")
    parser.add_argument("--threads", type=at_least_one("threads"), default=1,
                        help="CPU threads (the rule passes its threads:)")
    parser.add_argument("--watch-pid", type=int, default=None,
                        help="exit when this process (the Snakemake that started the job) is gone")
    args = parser.parse_args(argv)
    if args.checkpoint_dir is not None and (problem := checkpoint_root_problem(args.checkpoint_dir)):
        parser.error(f"--checkpoint-dir {args.checkpoint_dir}: {problem}")
    configure_runtime(args.threads, args.compile_cache)
    if args.watch_pid:
        exit_with_parent(args.watch_pid)
    try:
        check_cell(args.variant, args.lr, args.seed)
        summary = run_cell(json.loads(args.cell_config), args.variant, args.lr, args.seed, args.corpus, args.out,
                           checkpoint_dir=args.checkpoint_dir, code_fingerprint=args.code_fingerprint)
    except (CorpusError, ConfigError, UnknownVariantError, DiskFullError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(
        f"done {args.variant} lr={args.lr:g} seed={args.seed}: best val {summary['best_val_loss']:.4f} "
        f"({summary['best_val_bpc']:.3f} bits/char), {summary['steps_per_s']:.1f} steps/s"
        + (f", DIVERGED at step {summary['diverged_step']}" if summary["diverged"] else "")
    )
    return 0


COMPILE_CACHE_ENV = "JAX_COMPILATION_CACHE_DIR"  # JAX's own variable for its persistent cache
SINGLE_THREAD_FLAG = "--xla_cpu_multi_thread_eigen=false"  # added once: XLA_FLAGS is part of every cache key


def configure_runtime(threads: int, compile_cache: Path | None) -> None:
    """Pin XLA's CPU parallelism and the compilation cache before JAX starts.

    The cache (--compile-cache, else $JAX_COMPILATION_CACHE_DIR) is named by its
    resolved path. JAX writes the cache folder's name into every program's
    compile options, which are part of each entry's key, so one folder reached
    by two spellings (`results/jax-cache` from the workflow, an absolute path
    or a link from elsewhere) would otherwise hold two keys per program and
    never serve one process what another compiled.
    """
    flags = os.environ.get("XLA_FLAGS", "")
    if threads == 1 and SINGLE_THREAD_FLAG not in flags.split():
        os.environ["XLA_FLAGS"] = f"{flags} {SINGLE_THREAD_FLAG}".strip()
    cache = compile_cache if compile_cache is not None else os.environ.get(COMPILE_CACHE_ENV)
    if cache:
        jax.config.update("jax_compilation_cache_dir", str(Path(cache).resolve()))
    if compile_cache is not None:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def exit_with_parent(pid: int, poll_s: float = 1.0) -> None:
    """Die with the Snakemake that started this job, so no orphan trainer writes a bundle later.

    A daemon thread polls the process; checkpoints already written stay for
    the rerun to resume from.
    """
    def watch():
        while True:
            time.sleep(poll_s)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                print(f"the parent process {pid} is gone; stopping this training job", file=sys.stderr, flush=True)
                release_locks()  # os._exit runs no `finally`
                os._exit(3)
            except PermissionError:
                pass  # alive, owned by someone else

    threading.Thread(target=watch, daemon=True, name="exit-with-parent").start()


def cell_identity(cfg: dict, variant: str, lr: float, seed: int, code_fingerprint: str) -> str:
    """What a checkpoint must match to be resumed: the config slice, the cell and the code it runs."""
    return hashlib.sha256(to_json([cfg, variant, float(lr), int(seed), code_fingerprint]).encode()).hexdigest()


def snapshot_steps(steps: int, fractions) -> list[int]:
    """The seed's snapshot schedule: after 0 updates, floor(f * steps) + 1 updates, and all of them."""
    chosen = {0}
    for f in fractions:
        exact = Fraction(str(f))
        chosen.add(0 if exact == 0 else steps if exact == 1 else min(steps, math.floor(exact * steps) + 1))
    return sorted(chosen)


def schedule(steps: int, eval_every: int, checkpoint_every: int, fractions) -> dict[str, list[int]]:
    """The steps at which the loop stops to evaluate, snapshot attention or checkpoint."""
    return {
        "eval": sorted({0, steps, *range(eval_every, steps + 1, eval_every)}),
        "snapshot": snapshot_steps(steps, fractions),
        "checkpoint": list(range(checkpoint_every, steps, checkpoint_every)),
    }


class Cell:
    """Everything one training run needs, built once: model, optimiser, corpus streams, compiled step."""

    def __init__(self, cfg: dict, variant: str, lr: float, seed: int, corpus_path: Path, log):
        self.cfg, self.variant, self.lr, self.seed, self.log = cfg, variant, float(lr), int(seed), log
        self.tcfg, self.telemetry = train_config(cfg), telemetry_config(cfg)
        self.corpus = load_corpus(corpus_path, cfg["data"]["train_fraction"], cfg["data"].get("sha256"))
        self.mcfg = model_config(cfg, variant, self.corpus.vocab_size)
        check_fits(self.corpus, self.mcfg.block_size, self.tcfg.batch_size, self.telemetry.window_offset)
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
        self.val_x, self.val_y = held_out_batches(self.corpus.val, VALIDATION_STREAM, T, B, self.tcfg.eval_batches)
        self.probe_x, self.probe_y = held_out_batches(self.corpus.val, TELEMETRY_STREAM, T, B, self.telemetry.batches)
        # Every validation character once, for the best checkpoint's one evaluation on the whole split: the seed's
        # metric is the minimum over evaluations of eval_batches sampled batches, which stays the cell's best loss.
        self.whole_x, self.whole_y, self.whole_weight = whole_split_batches(self.corpus.val, T, B)
        self.window = map_window(self.corpus.val, T, self.telemetry.window_offset)
        self.seed_arr = jnp.asarray(self.seed, dtype=jnp.uint32)
        started = time.perf_counter()
        self.chunk = train_chunk.lower(
            self.graphdef, self.rest, self.optimizer, self.params, self.opt_state, self.tokens,
            jnp.asarray(self.offsets(0, 1)), self.seed_arr, 0, 1, block_size=T,
        ).compile()
        self.compile_s = time.perf_counter() - started

    def offsets(self, start: int, n_steps: int) -> np.ndarray:
        return train_offsets(self.seed, start, n_steps, len(self.corpus.train), self.mcfg.block_size,
                             self.tcfg.batch_size, pad_to=self.chunk_rows)

    def label(self) -> str:
        return f"{self.variant} lr={self.lr:g} seed={self.seed}"

    def attention_map(self, params) -> np.ndarray:
        return np.asarray(window_attention(self.graphdef, self.rest, params, jnp.asarray(self.window)),
                          dtype=np.float16)


def run_cell(cfg: dict, variant: str, lr: float, seed: int, corpus_path: Path, out: Path,
             checkpoint_dir: Path | None = None, code_fingerprint: str = "unrecorded", log=print) -> dict:
    """Train one cell from its config slice and write its bundle; returns bundle.json's content.

    The cell itself (variant, lr, seed) is the caller's to check first (attnlab.core.cell.check_cell): both
    command lines do, before they train.
    """
    out = check_out_dir(out, variant, lr, seed)  # refuse a bad --out before any compute
    own = cell_dir(Path(checkpoint_dir).resolve(), variant, lr, seed) if checkpoint_dir is not None else None
    if own is not None and (own == out or out in own.parents or own in out.parents):
        raise ConfigError(f"--checkpoint-dir {checkpoint_dir} would put this cell's checkpoints at {own}, which "
                          f"overlaps --out {out}; keep checkpoints outside the bundle (nothing was trained)")
    with contextlib.ExitStack() as held:  # one trainer per --out and per checkpoint folder; released on any exit
        held.enter_context(FolderLock(out, "--out"))
        checkpoints = held.enter_context(ResumeCheckpoints(checkpoint_dir, variant, lr, seed))
        cell = Cell(cfg, variant, lr, seed, corpus_path, log)
        identity = cell_identity(cfg, variant, lr, seed, code_fingerprint)
        params, opt_state, best, progress, maps = restore_or_start(cell, checkpoints, identity)
        params, best, progress, maps = train_until_done(cell, params, opt_state, best, progress, maps, checkpoints)
        summary = write_cell_bundle(cell, params, best, progress, maps, out, code_fingerprint)
        checkpoints.remove()
    return summary


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
    parameters of the lowest validation loss so far (checkpointed with the state, so a resumed run keeps it)."""
    plan, tcfg = cell.plan, cell.tcfg
    kept = {"best": best}

    def take_stop(step, params) -> bool:
        """Evaluate/snapshot at a stop; False if the model is no longer finite (divergence)."""
        if not all_finite(params):
            return False
        if step in plan["eval"]:
            val = float(evaluate(cell.graphdef, cell.rest, params, cell.val_x, cell.val_y))
            if not math.isfinite(val):
                return False
            if not progress.curve or val < min(row[2] for row in progress.curve):
                kept["best"] = jax.tree.map(jnp.copy, params)
            pending = progress.pending_losses
            train_loss = float(np.mean(pending)) if pending else float("nan")
            progress.curve.append([step, train_loss, val, progress.elapsed_s])
            progress.pending_losses = []
            shown = f"{train_loss:.4f}" if pending else "—"
            cell.log(f"{cell.label()} step {step}/{tcfg.steps} train {shown} val {val:.4f} "
                     f"({step / max(progress.elapsed_s, 1e-9):.1f} steps/s)")
        if step in plan["snapshot"]:
            maps[step] = cell.attention_map(params)
        return True

    def diverge(at_step: int, why: str):
        progress.diverged_step = int(at_step)
        cell.log(f"{cell.label()} DIVERGED at step {at_step} ({why}); keeping the metrics from before")

    step = progress.step
    if step == 0 and not progress.curve:
        take_stop(0, params)
    # The state at the last finite stop: what a diverged cell keeps. Every stop (checkpoints
    # included) refreshes it, so a resumed run rolls back exactly as an uninterrupted one.
    last_good, last_good_step = jax.tree.map(jnp.copy, params), step
    while step < tcfg.steps and progress.diverged_step is None:
        target = min(s for s in cell.stops if s > step)
        started = time.perf_counter()
        offsets = jnp.asarray(cell.offsets(step, target - step))
        params, opt_state, losses = cell.chunk(cell.rest, params, opt_state, cell.tokens, offsets, cell.seed_arr,
                                               step, target - step)
        losses = np.asarray(losses)[: target - step]
        progress.elapsed_s += time.perf_counter() - started
        bad = np.flatnonzero(~np.isfinite(losses) | (losses > tcfg.diverge_loss))
        if bad.size:
            progress.pending_losses += losses[: bad[0]].tolist()
            diverge(step + bad[0], f"training loss {losses[bad[0]]}")
            break
        progress.pending_losses += losses.tolist()
        if not take_stop(target, params):
            diverge(target, "non-finite parameters or validation loss")
            break
        step = progress.step = target
        last_good, last_good_step = jax.tree.map(jnp.copy, params), step
        if step in plan["checkpoint"]:
            checkpoints.save(step, {"params": params, "opt_state": opt_state, "best": kept["best"]},
                             {str(k): v for k, v in maps.items()}, dataclasses.asdict(progress))
    if progress.diverged_step is not None:
        params = last_good
        if last_good_step not in maps:
            maps[last_good_step] = cell.attention_map(params)
    return params, kept["best"], progress, maps


def write_cell_bundle(cell: Cell, params, best, progress: Progress, maps: dict, out: Path,
                      code_fingerprint: str) -> dict:
    """Probe the final weights on the telemetry batches, evaluate the best checkpoint once on the whole
    validation split, and write the bundle in one step."""
    arrays = jax.tree.map(np.asarray, probe(cell.graphdef, cell.rest, params, cell.probe_x, cell.probe_y,
                                            min_keys=cell.telemetry.entropy_min_keys))
    summary = bundle_summary(cell, params, progress, arrays, code_fingerprint)
    whole = float(evaluate_windows(cell.graphdef, cell.rest, best, cell.whole_x, cell.whole_y, cell.whole_weight))
    summary["best_val_loss_whole_split"] = whole
    summary["whole_split_chars"] = int(float(cell.whole_weight.sum()) * cell.mcfg.block_size)
    telemetry = {k: v for k, v in arrays.items() if k in ("max_score", "mass", "correct")}
    telemetry["entropy_hist"] = entropy_histograms(arrays["entropy"])
    snap_steps = sorted(maps)
    attention = {"steps": np.asarray(snap_steps), "tokens": np.asarray(cell.window),
                 "text": np.asarray(cell.corpus.decode(cell.window)),
                 "weights": np.stack([maps[s] for s in snap_steps])}
    write_bundle(out, summary, progress.curve, telemetry, attention, lambda d: save_params(d, params), log=cell.log)
    return summary


def all_finite(tree) -> bool:
    """One compiled reduction and one host read, not one eager op per leaf at every stop."""
    return bool(_all_finite(tree))


@jax.jit
def _all_finite(tree):
    return jnp.all(jnp.stack([jnp.isfinite(leaf).all() for leaf in jax.tree.leaves(tree)]))


def bundle_summary(cell: Cell, params, progress: Progress, arrays, code_fingerprint: str) -> dict:
    vals = [row[2] for row in progress.curve]
    best = float(np.nanmin(vals)) if vals else float("nan")
    nnx.update(cell.model, params)
    steps_done = progress.diverged_step if progress.diverged_step is not None else progress.step
    tcfg, elapsed = cell.tcfg, progress.elapsed_s
    summary = {
        "variant": cell.variant, "lr": cell.lr, "seed": cell.seed,
        "config": dict(cell.cfg, variant=cell.variant, lr=cell.lr, seed=cell.seed),
        "provenance": dict(provenance.collect(), code_fingerprint=code_fingerprint),
        "n_params": count_params(cell.model),
        "best_val_loss": best, "best_val_bpc": best / LN2,
        "best_step": int(progress.curve[int(np.nanargmin(vals))][0]) if vals else None,
        "final_val_loss": float(vals[-1]) if vals else float("nan"),
        "diverged": progress.diverged_step is not None,
        "diverged_step": progress.diverged_step,
        "steps_done": int(steps_done),
        "wall_time_s": elapsed,
        "steps_per_s": steps_done / elapsed if elapsed > 0 else float("nan"),
        "tokens_per_s": steps_done * tcfg.batch_size * cell.mcfg.block_size / max(elapsed, 1e-9),
        "compile_s": cell.compile_s,
        "resumed_from": progress.resumed_from,
        "telemetry": summarise(arrays, arrays["correct"].shape[1] * arrays["correct"].shape[2]),
    }
    if hasattr(cell.model.score, "scalars"):
        summary["learned"] = {k: np.asarray(v).tolist() for k, v in cell.model.score.scalars().items()}
    swap = normaliser_crossover(cell, params)
    if swap is not None:
        summary["normswap"] = swap
    return summary


def normaliser_crossover(cell: Cell, params) -> dict | None:
    """A kernel-family cell's final weights on the validation batches under its own and the other normaliser.

    The same kappa, the same weights, the same batches: native_loss is
    evaluate()'s, swapped_loss the loss with kappa normalised the other way
    (l1 <-> softmax, attention.normalisers), which is what the twin variant
    `swapped_to` computes with these weights. None for variants without a twin.
    """
    if cell.variant not in NORMALISER_TWINS:
        return None
    native = NORMALISERS[cell.variant]
    swapped = "softmax" if native == "kernel" else "kernel"
    native_loss = float(evaluate(cell.graphdef, cell.rest, params, cell.val_x, cell.val_y))
    swapped_loss = float(evaluate_normalised(cell.graphdef, cell.rest, params, cell.val_x, cell.val_y,
                                             normaliser=swapped))
    return {"native_normaliser": native, "native_loss": native_loss, "swapped_to": NORMALISER_TWINS[cell.variant],
            "swapped_normaliser": swapped, "swapped_loss": swapped_loss}


if __name__ == "__main__":
    sys.exit(main())
