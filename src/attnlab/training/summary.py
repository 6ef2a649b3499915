"""What a trained cell's bundle says about it: the summary, the telemetry probe and the normaliser crossover.

Run once, after the loop, on the final weights (and the best checkpoint's, for
the whole-split evaluation); the bundle writer stores it in one step. `cell` is
the trainer's attnlab.training.train.Cell: its model, batches and key.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import jax
import numpy as np
from flax import nnx

from attnlab.core.telemetry_stats import entropy_histograms, summarise
from attnlab.core.variants import NORMALISER_TWINS, NORMALISERS
from attnlab.training import provenance
from attnlab.training.batches import whole_split_batches
from attnlab.training.files.bundle_writer import write_bundle
from attnlab.training.files.checkpoint import save_params
from attnlab.training.model import count_params
from attnlab.training.progress import REPORT, SELECT, VAL, Progress
from attnlab.training.steps import evaluate, evaluate_normalised, evaluate_windows, probe

LN2 = math.log(2.0)


def write_cell_bundle(cell, params, best, progress: Progress, maps: dict, out: Path,
                      code_fingerprint: str, pack: dict | None = None) -> dict:
    """Probe the final weights on the telemetry batches, evaluate the best checkpoint (the lowest full-window
    loss) once on the whole validation split, and write the bundle in one step."""
    with cell.phases("telemetry"):
        arrays = jax.tree.map(np.asarray, probe(cell.graphdef, cell.rest, params, cell.probe_x, cell.probe_y,
                                                min_keys=cell.telemetry.entropy_min_keys))
        summary = bundle_summary(cell, params, progress, arrays, code_fingerprint)
        if pack is not None:
            summary["provenance"]["pack"] = pack
    with cell.phases("evaluation"):
        whole = float(evaluate_windows(cell.graphdef, cell.rest, best, cell.whole_x, cell.whole_y,
                                       cell.whole_weight).full)
        if cell.tcfg.context_multiples:
            summary["val_loss_at_context"] = {"1": whole, **longer_context_losses(cell, best)}
    summary["best_val_loss_whole_split"] = whole
    summary["whole_split_chars"] = int(float(cell.whole_weight.sum()) * cell.mcfg.block_size)
    telemetry = {k: v for k, v in arrays.items() if k in ("max_score", "mass", "correct")}
    telemetry["entropy_hist"] = entropy_histograms(arrays["entropy"])
    snap_steps = sorted(maps)
    attention = {"steps": np.asarray(snap_steps), "tokens": np.asarray(cell.window),
                 "text": np.asarray(cell.corpus.decode(cell.window)),
                 "weights": np.stack([maps[s] for s in snap_steps])}
    started = time.perf_counter()
    # Every phase but the writing itself, which ends after bundle.json is sealed (the caller's Phases has it).
    summary["timings"] = {phase: s for phase, s in cell.phases.seconds.items() if phase != "writing"}
    write_bundle(out, summary, progress.curve, telemetry, attention, lambda d: save_params(d, params), log=cell.log)
    cell.phases.add("writing", time.perf_counter() - started)
    return summary


def longer_context_losses(cell, best) -> dict[str, float]:
    """The best checkpoint's loss on the whole validation split in windows of each train.eval_context_multiples
    multiple of the block it trained on ({"2": loss, ...}); a model without position embeddings reads any
    length. Batches shrink by the multiple, so a batch holds as many characters as at the trained block."""
    losses = {}
    for multiple in cell.tcfg.context_multiples:
        length = multiple * cell.mcfg.block_size
        x, y, weight = whole_split_batches(cell.corpus.val, length, max(1, cell.tcfg.batch_size // multiple),
                                           cell.bos)
        losses[str(multiple)] = float(evaluate_windows(cell.graphdef, cell.rest, best, x, y, weight).full)
    return losses


def bundle_config(cfg: dict, key) -> dict:
    """bundle.json's `config`: the cell's config slice with its variant, LR and seed (a CellKey's)."""
    return dict(cfg, variant=key.variant, lr=key.lr_value, seed=key.seed)


def held_out(curve: list) -> dict:
    """The best loss chosen on one half of the validation windows and read on the other: the evaluation whose
    select-half loss is lowest (its step, `best_step_select`, the earliest on a tie; that loss,
    `best_val_loss_select`) and the report half's loss there (`best_val_loss_heldout`). best_val_loss, the
    minimum over evaluations of the same windows it is read on, is biased low by the choice; this is not."""
    if not curve:
        return {"best_val_loss_select": float("nan"), "best_val_loss_heldout": float("nan"), "best_step_select": None}
    at = int(np.nanargmin([row[SELECT] for row in curve]))
    return {"best_val_loss_select": float(curve[at][SELECT]), "best_val_loss_heldout": float(curve[at][REPORT]),
            "best_step_select": int(curve[at][0])}


def bundle_summary(cell, params, progress: Progress, arrays, code_fingerprint: str) -> dict:
    vals = [row[VAL] for row in progress.curve]
    best = float(np.nanmin(vals)) if vals else float("nan")
    nnx.update(cell.model, params)
    steps_done = progress.diverged_step if progress.diverged_step is not None else progress.step
    tcfg, elapsed = cell.tcfg, progress.elapsed_s
    summary = {
        "variant": cell.variant, "lr": cell.lr, "seed": cell.seed,
        "config": bundle_config(cell.cfg, cell.key),
        "provenance": dict(provenance.collect(), code_fingerprint=code_fingerprint,
                           matmul_precision=tcfg.matmul_precision),
        "n_params": count_params(cell.model),
        "best_val_loss": best, "best_val_bpc": best / LN2,
        "best_step": int(progress.curve[int(np.nanargmin(vals))][0]) if vals else None,
        **held_out(progress.curve),
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
    if tcfg.plateau is not None:  # None: the plateau rule never fired, so the cell ran to its ceiling (or diverged)
        summary["plateau_step"] = progress.plateau_step
    if hasattr(cell.model.score, "scalars"):
        summary["learned"] = {k: np.asarray(v).tolist() for k, v in cell.model.score.scalars().items()}
    swap = normaliser_crossover(cell, params)
    if swap is not None:
        summary["normswap"] = swap
    return summary


def normaliser_crossover(cell, params) -> dict | None:
    """A kernel-family cell's final weights on the validation batches under its own and the other normaliser.

    The same kappa, the same weights, the same batches: native_loss is
    evaluate()'s full loss, swapped_loss the loss with kappa normalised the other way
    (l1 <-> softmax, attention.normalisers), which is what the twin variant
    `swapped_to` computes with these weights. None for variants without a twin.
    """
    if cell.variant not in NORMALISER_TWINS:
        return None
    native = NORMALISERS[cell.variant]
    swapped = "softmax" if native == "kernel" else "kernel"
    native_loss = float(evaluate(cell.graphdef, cell.rest, params, cell.val_x, cell.val_y).full)
    swapped_loss = float(evaluate_normalised(cell.graphdef, cell.rest, params, cell.val_x, cell.val_y,
                                             normaliser=swapped))
    return {"native_normaliser": native, "native_loss": native_loss, "swapped_to": NORMALISER_TWINS[cell.variant],
            "swapped_normaliser": swapped, "swapped_loss": swapped_loss}
