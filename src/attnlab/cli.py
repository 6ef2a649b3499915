"""`attnlab`: the command line for users; Snakemake rules call the same module mains.

Every subcommand loads its config through attnlab.core.config, the same loader
the Snakefile uses, so one file means one thing everywhere.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from attnlab.core.cell import at_least_one, checkpoint_root_problem
from attnlab.core.variants import BASELINE


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="attnlab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("params", help="print each variant's parameter count at a config")
    p.add_argument("--config", required=True, type=Path)

    t = sub.add_parser("train", help="train one cell and write its bundle")
    t.add_argument("--config", required=True, type=Path)
    t.add_argument("--variant", required=True)
    t.add_argument("--lr", required=True, type=float)
    t.add_argument("--seed", required=True, type=int)
    t.add_argument("--out", required=True, type=Path, help="bundle folder to create (must not exist yet, "
                   "or hold only an earlier bundle of the same cell: any other file there is refused)")
    t.add_argument("--corpus", type=Path, default=Path("results/data/corpus.txt"),
                   help="where the verified corpus is kept (fetched there if absent; an existing file with "
                        "another checksum is refused, never replaced)")
    t.add_argument("--checkpoint-dir", type=Path, default=None,
                   help="root of resumable checkpoints; this cell's own folder is made and removed inside it")
    t.add_argument("--compile-cache", type=Path, default=Path("results/jax-cache"))
    t.add_argument("--threads", type=at_least_one("threads"), default=1, help="CPU threads for XLA (default 1)")

    f = sub.add_parser("fetch", help="download (or copy a local) corpus and verify its sha256")
    f.add_argument("--config", required=True, type=Path)
    f.add_argument("--out", type=Path, default=Path("results/data/corpus.txt"))

    args = parser.parse_args(argv)
    if getattr(args, "checkpoint_dir", None) is not None and (problem := checkpoint_root_problem(args.checkpoint_dir)):
        parser.error(f"--checkpoint-dir {args.checkpoint_dir}: {problem}")
    from attnlab.core.config import load_config
    from attnlab.core.corpus import CorpusError
    from attnlab.core.errors import ConfigError
    from attnlab.core.variants import UnknownVariantError

    try:
        cfg = load_config(args.config)
        if args.command == "params":
            return print_params(cfg)
        if args.command == "fetch":
            from attnlab.core.corpus import fetch_corpus

            print(f"corpus ready at {fetch_corpus(cfg['data'], args.out)}")
            return 0
        return train(cfg, args)
    except (ConfigError, CorpusError, UnknownVariantError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def print_params(cfg: dict) -> int:
    from attnlab.training.params import parameter_counts

    counts = parameter_counts(cfg)
    base = counts.get(BASELINE)
    for variant, n in counts.items():
        extra = f"  ({n - base:+,d} vs {BASELINE})" if base is not None and variant != BASELINE else ""
        print(f"{variant:10s} {n:>12,d}{extra}")
    return 0


def train(cfg: dict, args) -> int:
    """One cell as a pack of one (attnlab.training.pack.run_pack, the rules' trainer). Checks the cell and --out
    first: nothing is fetched or computed for a command that would be refused."""
    from attnlab.core.cell import check_cell
    from attnlab.core.config import cell_slice, variant_slice
    from attnlab.core.corpus import fetch_corpus
    from attnlab.core.fingerprint import training_fingerprint
    from attnlab.core.switches import CPU_SLOTS_ENV, settle_folder_switch
    from attnlab.training.files.bundle_writer import check_out_dir  # JAX-free: a refusal never waits for JAX

    key = check_cell(args.variant, args.lr, args.seed)
    check_out_dir(args.out, key)
    settle_folder_switch(CPU_SLOTS_ENV)  # off, 0, false, any case: one spelling (attnlab.core.switches)
    corpus = fetch_corpus(cfg["data"], args.corpus)
    from attnlab.training.files.disk_full import DiskFullError
    from attnlab.training.pack import done_line, run_pack
    from attnlab.training.runtime import configure_runtime, settle_on_cpus

    configure_runtime(args.threads, args.compile_cache)
    settle_on_cpus(args.threads)
    try:
        done = run_pack(variant_slice(cell_slice(cfg), args.variant), [key], corpus, None,
                        checkpoint_dir=args.checkpoint_dir, code_fingerprint=training_fingerprint(args.variant),
                        outs=[args.out])
    except DiskFullError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for summary, phases in done:
        print(done_line(summary, phases))
    return 0


if __name__ == "__main__":
    sys.exit(main())
