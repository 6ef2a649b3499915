"""Train one cell (variant, lr, seed) and write its bundle; also `python -m attnlab.train`.

The loop runs many optimiser steps per jitted call (a fori_loop over steps
whose batches are sliced on the device from the token array), so there is no
host round trip per step. LR, seed and step counters are runtime values, so
cells that differ only in those share one compiled executable through JAX's
persistent compilation cache. Checkpoints (Orbax) live outside the bundle so a
killed job resumes where it stopped and ends with the same numbers.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from flax import nnx

from attnlab import provenance
from attnlab.attention import UnknownVariantError, check_variant
from attnlab.bundle import write_bundle
from attnlab.checkpoint import ResumeCheckpoints, save_params
from attnlab.config import ConfigError, model_config, to_json, train_config
from attnlab.data import CorpusError, check_fits, load_corpus, validation_batches
from attnlab.model import GPT, count_params
from attnlab.steps import evaluate, make_optimizer, probe, train_chunk, window_attention
from attnlab.telemetry import entropy_histograms, summarise

LN2 = math.log(2.0)


def configure_runtime(threads: int, compile_cache: Path | None) -> None:
    """Pin XLA's CPU parallelism and the compilation cache before JAX starts."""
    if threads == 1:
        flags = os.environ.get("XLA_FLAGS", "")
        os.environ["XLA_FLAGS"] = f"{flags} --xla_cpu_multi_thread_eigen=false".strip()
    if compile_cache is not None:
        jax.config.update("jax_compilation_cache_dir", str(compile_cache))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Train one cell and write its bundle.")
    parser.add_argument("--cell-config", required=True, help="JSON config slice (attnlab.config.cell_slice)")
    parser.add_argument("--variant", required=True)
    parser.add_argument("--lr", required=True, type=float)
    parser.add_argument("--seed", required=True, type=int)
    parser.add_argument("--corpus", required=True, type=Path, help="verified corpus file")
    parser.add_argument("--out", required=True, type=Path, help="bundle folder to create")
    parser.add_argument("--checkpoint-dir", type=Path, default=None, help="resumable checkpoints (default: none)")
    parser.add_argument("--compile-cache", type=Path, default=None, help="JAX persistent compilation cache")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default 1; the rule passes its threads:)")
    args = parser.parse_args(argv)
    cfg = json.loads(args.cell_config)
    configure_runtime(args.threads or 1, args.compile_cache)
    try:
        summary = run_cell(
            cfg, args.variant, args.lr, args.seed, args.corpus, args.out,
            checkpoint_dir=args.checkpoint_dir,
        )
    except (CorpusError, ConfigError, UnknownVariantError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(
        f"done {args.variant} lr={args.lr:g} seed={args.seed}: best val {summary['best_val_loss']:.4f} "
        f"({summary['best_val_bpc']:.3f} bits/char), {summary['steps_per_s']:.1f} steps/s"
        + (f", DIVERGED at step {summary['diverged_step']}" if summary["diverged"] else "")
    )
    return 0



def cell_identity(cfg: dict, variant: str, lr: float, seed: int) -> str:
    """What a checkpoint must match to be resumed: the config slice and the cell."""
    return hashlib.sha256(to_json([cfg, variant, float(lr), int(seed)]).encode()).hexdigest()


def all_finite(tree) -> bool:
    """One device reduction and one host read, not one per leaf."""
    return bool(jnp.all(jnp.stack([jnp.isfinite(leaf).all() for leaf in jax.tree.leaves(tree)])))


def check_lr(lr: float) -> None:
    if not (lr > 0 and math.isfinite(lr)):
        raise ConfigError(f"--lr must be a positive, finite number, got {lr}")


def schedule(steps: int, eval_every: int, checkpoint_every: int, fractions) -> dict[str, list[int]]:
    """The steps at which the loop stops to evaluate, snapshot attention or checkpoint."""
    evals = sorted({0, steps, *range(eval_every, steps + 1, eval_every)})
    # step 0 is always kept: the A3-at-init check and resumable checkpoints rely on it
    snapshots = sorted({0, *(min(steps, round(f * steps)) for f in fractions)})
    checkpoints = [s for s in range(checkpoint_every, steps, checkpoint_every)]
    return {"eval": evals, "snapshot": snapshots, "checkpoint": checkpoints}


def run_cell(cfg: dict, variant: str, lr: float, seed: int, corpus_path: Path, out: Path,
             checkpoint_dir: Path | None = None, log=print) -> dict:
    """Train one cell from its config slice and write its bundle; returns bundle.json's content."""
    check_variant(variant)
    check_lr(lr)
    tcfg = train_config(cfg)
    corpus = load_corpus(corpus_path, cfg["data"]["train_fraction"], cfg["data"].get("sha256"))
    mcfg = model_config(cfg, variant, corpus.vocab_size)
    check_fits(corpus, mcfg.block_size, tcfg.batch_size)
    telemetry_cfg = cfg.get("telemetry", {})
    plan = schedule(tcfg.steps, tcfg.eval_every, tcfg.checkpoint_every,
                    telemetry_cfg.get("snapshot_fractions", [0.0, 0.1, 0.5, 1.0]))
    stops = sorted(set(plan["eval"]) | set(plan["snapshot"]) | set(plan["checkpoint"]))
    max_chunk = max(b - a for a, b in zip(stops, stops[1:]))

    model = GPT(mcfg, rngs=nnx.Rngs(params=seed))
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    optimizer = make_optimizer(lr, tcfg.weight_decay)
    opt_state = optimizer.init(params)
    tokens = jnp.asarray(corpus.train)
    val_x, val_y = validation_batches(corpus.val, mcfg.block_size, tcfg.batch_size, tcfg.eval_batches)
    offset = telemetry_cfg.get("window_offset", 0)
    window = jnp.asarray(corpus.val[offset: offset + mcfg.block_size])
    seed_arr = jnp.asarray(seed, dtype=jnp.uint32)
    statics = dict(block_size=mcfg.block_size, batch_size=tcfg.batch_size, max_steps=max_chunk)

    compile_start = time.perf_counter()
    compiled_chunk = train_chunk.lower(
        graphdef, rest, optimizer, params, opt_state, tokens, seed_arr, 0, 1, **statics
    ).compile()
    compile_s = time.perf_counter() - compile_start

    checkpoints = ResumeCheckpoints(checkpoint_dir)
    identity = cell_identity(cfg, variant, lr, seed)
    progress = {"step": 0, "curve": [], "pending_losses": [], "elapsed_s": 0.0, "diverged_step": None,
                "resumed_from": [], "cell": identity}
    snapshot_maps: dict[int, np.ndarray] = {}
    restored = checkpoints.latest({"params": params, "opt_state": opt_state})
    if restored is not None and restored[2].get("cell") != identity:
        log(f"ignoring the checkpoint in {checkpoint_dir}: it belongs to another config of this cell")
        checkpoints.clear()
        restored = None
    if restored is not None:
        state, snapshots, progress = restored
        params, opt_state = state["params"], state["opt_state"]
        snapshot_maps = {int(k): np.asarray(v) for k, v in snapshots.items()}
        progress["resumed_from"] = progress.get("resumed_from", []) + [progress["step"]]
        log(f"resuming {variant} lr={lr:g} seed={seed} from step {progress['step']}")

    def take_stops(step, params) -> bool:
        """Evaluate/snapshot at a stop; False if the model is no longer finite (divergence)."""
        if not all_finite(params):
            return False
        if step in plan["eval"]:
            val = float(evaluate(graphdef, rest, params, val_x, val_y))
            if not math.isfinite(val):
                return False
            pending = progress["pending_losses"]
            train_loss = float(np.mean(pending)) if pending else float("nan")
            progress["curve"].append([step, train_loss, val, progress["elapsed_s"]])
            progress["pending_losses"] = []
            log(f"{variant} lr={lr:g} seed={seed} step {step}/{tcfg.steps} train {train_loss:.4f} "
                f"val {val:.4f} ({step / max(progress['elapsed_s'], 1e-9):.1f} steps/s)")
        if step in plan["snapshot"]:
            snapshot_maps[step] = np.asarray(window_attention(graphdef, rest, params, window), dtype=np.float16)
        return True

    def diverge(at_step: int, why: str):
        progress["diverged_step"] = int(at_step)
        log(f"{variant} lr={lr:g} seed={seed} DIVERGED at step {at_step} ({why}); keeping the metrics from before")

    step = progress["step"]
    if step == 0 and not progress["curve"]:
        take_stops(0, params)
    # The state at the last stop that was finite: what a diverged cell keeps. Every stop
    # (checkpoints included) refreshes it, so a resumed run rolls back exactly as an uninterrupted one.
    last_good, last_good_step = jax.tree.map(jnp.copy, params), step
    while step < tcfg.steps and progress["diverged_step"] is None:
        target = min(s for s in stops if s > step)
        started = time.perf_counter()
        params, opt_state, losses = compiled_chunk(rest, params, opt_state, tokens, seed_arr, step, target - step)
        losses = np.asarray(losses)[: target - step]
        progress["elapsed_s"] += time.perf_counter() - started
        bad = np.flatnonzero(~np.isfinite(losses) | (losses > tcfg.diverge_loss))
        if bad.size:
            progress["pending_losses"] += losses[: bad[0]].tolist()
            diverge(step + bad[0], f"training loss {losses[bad[0]]}")
            break
        progress["pending_losses"] += losses.tolist()
        if not take_stops(target, params):
            diverge(target, "non-finite parameters or validation loss")
            break
        step = progress["step"] = target
        last_good, last_good_step = jax.tree.map(jnp.copy, params), step
        if step in plan["checkpoint"]:
            checkpoints.save(step, {"params": params, "opt_state": opt_state},
                             {str(k): v for k, v in snapshot_maps.items()}, progress)
    if progress["diverged_step"] is not None:
        params = last_good
        if last_good_step not in snapshot_maps:
            snapshot_maps[last_good_step] = np.asarray(window_attention(graphdef, rest, params, window),
                                                       dtype=np.float16)

    arrays = jax.tree.map(np.asarray, probe(graphdef, rest, params, val_x, val_y,
                                            min_keys=telemetry_cfg.get("entropy_min_keys", 16)))
    summary = bundle_summary(cfg, variant, lr, seed, model, params, progress, arrays, compile_s,
                             tcfg, mcfg.block_size)
    curve = pd.DataFrame(progress["curve"], columns=["step", "train_loss", "val_loss", "elapsed_s"])
    telemetry = {k: v for k, v in arrays.items() if k in ("max_score", "mass", "correct")}
    telemetry["entropy_hist"] = entropy_histograms(arrays["entropy"])
    snap_steps = sorted(snapshot_maps)
    attention = {"steps": np.asarray(snap_steps), "tokens": np.asarray(window),
                 "text": np.asarray(corpus.decode(np.asarray(window))),
                 "weights": np.stack([snapshot_maps[s] for s in snap_steps])}
    write_bundle(out, summary, curve, telemetry, attention, lambda d: save_params(d, params))
    checkpoints.remove()
    return summary


def bundle_summary(cfg, variant, lr, seed, model, params, progress, arrays, compile_s, tcfg, block_size) -> dict:
    vals = [row[2] for row in progress["curve"]]
    best = float(np.nanmin(vals)) if vals else float("nan")
    nnx.update(model, params)
    steps_done = progress["diverged_step"] if progress["diverged_step"] is not None else progress["step"]
    summary = {
        "variant": variant, "lr": float(lr), "seed": int(seed),
        "config": dict(cfg, variant=variant, lr=float(lr), seed=int(seed)),
        "provenance": provenance.collect(),
        "n_params": count_params(model),
        "best_val_loss": best, "best_val_bpc": best / LN2,
        "best_step": int(progress["curve"][int(np.nanargmin(vals))][0]) if vals else None,
        "final_val_loss": float(vals[-1]) if vals else float("nan"),
        "diverged": progress["diverged_step"] is not None,
        "diverged_step": progress["diverged_step"],
        "steps_done": int(steps_done),
        "wall_time_s": progress["elapsed_s"],
        "steps_per_s": steps_done / progress["elapsed_s"] if progress["elapsed_s"] > 0 else float("nan"),
        "tokens_per_s": steps_done * tcfg.batch_size * block_size / max(progress["elapsed_s"], 1e-9),
        "compile_s": compile_s,
        "resumed_from": progress.get("resumed_from", []),
        "telemetry": summarise(arrays, arrays["correct"].shape[1] * arrays["correct"].shape[2]),
    }
    if hasattr(model.score, "scalars"):
        summary["learned"] = {k: np.asarray(v).tolist() for k, v in model.score.scalars().items()}
    return summary


if __name__ == "__main__":
    sys.exit(main())
