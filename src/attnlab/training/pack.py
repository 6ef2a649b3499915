"""The trainer's one command line: cells of one variant and one config slice, trained in one process.

`python -m attnlab.training.pack --cell-config JSON --variant V --cell LR,SEED [--cell LR,SEED ...]
--corpus FILE --out-root DIR`: each cell writes its own bundle, at DIR/<variant>/lr<lr>/seed<seed>, in the
format and with the numbers it has when trained alone (tests/test_pack.py holds it bit for bit); the pack is
recorded in each bundle's provenance. `--out DIR` in place of `--out-root` puts a pack of one cell's bundle
in DIR itself: `attnlab train` runs that pack through `run_pack`, and the fault, kill and resume tests drive
this command line, so every path that trains is the one the build's rules run.

What the cells share is the process: its imports, JAX's runtime and the programs it has compiled (the
training chunk, the evaluations, the probe), which on a CPU are most of a small cell's wall time
(benchmarks/throughput.py prints the split).

A pack is an execution choice, never part of a cell's identity: the config slice, variant, LR and seed are
the cell's, and a pack may hold any of them. The Snakemake workflow runs one pack per job
(attnlab.pipeline.plan.packs). A cell whose bundle is already current (attnlab.training.current) is left as
it is, so a pack that runs again because it gained a cell trains that cell alone. With --checkpoint-dir,
each finished cell's bundle is also kept there until the whole pack has ended (attnlab.training.files.finished),
so a failed pack's next run trains only the cells it had not finished. A pack that ends well also removes what
killed runs left beside its cells (attnlab.training.files.leftovers).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from attnlab.core.bundle_format import cell_dir
from attnlab.core.cell import at_least_one, check_cell, checkpoint_root_problem
from attnlab.core.cell_key import CellKey
from attnlab.core.config_types import PACK_MODE_ENV, PACK_MODES
from attnlab.core.corpus import CorpusError
from attnlab.core.errors import ConfigError
from attnlab.core.switches import CPU_SLOTS_ENV, settle_folder_switch
from attnlab.core.variants import UnknownVariantError
from attnlab.training.files import checkpoint, finished, job_log, leftovers
from attnlab.training.current import current_bundle
from attnlab.training.files.disk_full import DiskFullError
from attnlab.training.lockstep import run_lockstep
from attnlab.training.phases import Phases
from attnlab.training.runtime import configure_runtime, exit_with_parent, settle_on_cpus
from attnlab.training.train import run_cell


def resolved_mode(mode: str | None) -> str:
    """sequential or vmap: `auto` (the default) is vmap on an accelerator, sequential on a CPU, where one
    vmapped program is no faster than the cells one after another and its numbers are not bit for bit."""
    mode = mode or os.environ.get(PACK_MODE_ENV) or "auto"
    if mode == "auto":
        import jax

        return "sequential" if jax.default_backend() == "cpu" else "vmap"
    if mode not in PACK_MODES:
        raise ConfigError(f"pack mode {mode!r}: use one of auto, {', '.join(PACK_MODES)}")
    return mode


def run_pack(cfg: dict, keys: list[CellKey], corpus_path: Path, out_root: Path | None,
             checkpoint_dir: Path | None = None, code_fingerprint: str = "unrecorded", log=print,
             mode: str = "sequential", outs: list[Path] | None = None) -> list[tuple[dict, Phases]]:
    """Train the cells that have no current bundle yet, one after another or (mode vmap) in lockstep; returns
    the summary of each cell trained here and where its wall time went. Each cell's bundle goes to its folder
    under `out_root`, or to its entry of `outs` where given."""
    if outs is None:
        outs = [cell_dir(Path(out_root), key.variant, key.lr, key.seed) for key in keys]
    if len(outs) != len(keys):
        raise ConfigError(f"{len(keys)} cells and {len(outs)} bundle folders: give each cell one folder")
    todo = []  # (place in the pack, key, bundle folder, where it is kept)
    for index, (key, out) in enumerate(zip(keys, outs)):
        kept = finished.kept_path(checkpoint_dir, key) if checkpoint_dir is not None else None
        if current_bundle(out, cfg, key, code_fingerprint):
            log(f"{key.label()}: its bundle {out} is current (this config, cell and code); left as it is")
        elif kept is not None and current_bundle(kept, cfg, key, code_fingerprint):
            finished.restore(kept, out, key, log)  # in place of a missing bundle, or of a stale one put back
            log(f"{key.label()}: put back the bundle it finished in an earlier run of this pack, from {kept}")
        else:
            todo.append((index, key, out, kept))
    pack = {"size": len(keys), "cells": [k.label() for k in keys], "mode": mode}
    done = []
    if mode == "vmap" and todo:
        indices, todo_keys, outs, kept = (list(column) for column in zip(*todo))
        done = run_lockstep(cfg, todo_keys, corpus_path, outs, checkpoint_dir, code_fingerprint, log, pack, kept,
                            indices)
    elif mode != "vmap":
        for i, (index, key, out, kept) in enumerate(todo):
            phases = Phases() if i == 0 else Phases(start_up=0.0)
            summary = run_cell(cfg, key, corpus_path, out, checkpoint_dir=checkpoint_dir,
                               code_fingerprint=code_fingerprint, log=log, phases=phases,
                               pack=dict(pack, index=index), kept=kept)
            done.append((summary, phases))
    if checkpoint_dir is not None:  # the pack ended well: Snakemake keeps every bundle now
        for key, out in zip(keys, outs):
            kept = finished.kept_path(checkpoint_dir, key)
            finished.forget(kept)
            leftovers.tidy(out, checkpoint_dir, key, kept, log)
        checkpoint.tidy_root(Path(checkpoint_dir).resolve())  # its cells' kept bundles were what held it
    return done


def parse_cell(text: str) -> tuple[float, int]:
    try:
        lr, seed = text.split(",")
        return float(lr), int(seed)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not LR,SEED (e.g. 0.003,1)") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cell-config", required=True, help="JSON config slice the cells share")
    parser.add_argument("--variant", required=True)
    parser.add_argument("--cell", required=True, action="append", type=parse_cell, help="LR,SEED (repeat)")
    parser.add_argument("--corpus", required=True, type=Path)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--out-root", type=Path, help="each bundle goes to <root>/<variant>/lr<lr>/seed<seed>")
    where.add_argument("--out", type=Path, help="a pack of one cell: its bundle folder (absent, or this cell's)")
    parser.add_argument("--checkpoint-dir", type=Path, default=None)
    parser.add_argument("--code-fingerprint", default="unrecorded",
                        help="fingerprint of the code the cells run (attnlab.core.fingerprint); part of their identity")
    parser.add_argument("--compile-cache", type=Path, default=None)
    parser.add_argument("--threads", type=at_least_one("threads"), default=1)
    parser.add_argument("--mode", choices=("auto", *PACK_MODES), default=None,
                        help=f"sequential (CPU) or vmap (accelerators); default ${PACK_MODE_ENV}, else auto")
    parser.add_argument("--watch-pid", type=int, default=None,
                        help="exit when this process (the Snakemake that started the job) is gone")
    parser.add_argument("--log", type=Path, default=None,
                        help="also write stdout and stderr here, held for the whole run (a second run is refused)")
    args = parser.parse_args(argv)
    if args.log is not None:
        try:
            job_log.tee_into(args.log)
        except ConfigError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    if args.checkpoint_dir is not None and (problem := checkpoint_root_problem(args.checkpoint_dir)):
        parser.error(f"--checkpoint-dir {args.checkpoint_dir}: {problem}")
    if args.out is not None and len(args.cell) != 1:
        parser.error(f"--out names one bundle folder, and {len(args.cell)} cells were given: use --out-root")
    configure_runtime(args.threads, args.compile_cache)
    if args.watch_pid:
        exit_with_parent(args.watch_pid)
    try:
        keys = [check_cell(args.variant, lr, seed) for lr, seed in args.cell]
        if len(set(keys)) != len(keys):
            raise ConfigError("a --cell is given twice; give each LR,SEED once")
        mode = resolved_mode(args.mode)
        settle_folder_switch(CPU_SLOTS_ENV)  # off, 0, false, any case: one spelling (attnlab.core.switches)
        settle_on_cpus(args.threads)
        done = run_pack(json.loads(args.cell_config), keys, args.corpus, args.out_root, args.checkpoint_dir,
                        args.code_fingerprint, mode=mode, outs=None if args.out is None else [args.out])
    except (CorpusError, ConfigError, UnknownVariantError, DiskFullError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for summary, phases in done:
        print(done_line(summary, phases))
    return 0


def done_line(summary: dict, phases: Phases) -> str:
    """What a trained cell ends with: its best validation loss, its speed, a divergence, where the time went."""
    spent = ", ".join(f"{k} {v:.1f}s" for k, v in phases.seconds.items())
    diverged = f", DIVERGED at step {summary['diverged_step']}" if summary["diverged"] else ""
    return (f"done {summary['variant']} lr={summary['lr']!r} seed={summary['seed']}: best val "
            f"{summary['best_val_loss']:.4f} ({summary['best_val_bpc']:.3f} bits/char), "
            f"{summary['steps_per_s']:.1f} steps/s{diverged}; {spent}")


if __name__ == "__main__":
    sys.exit(main())
