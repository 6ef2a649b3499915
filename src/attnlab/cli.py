"""`attnlab`: the command line for users; Snakemake rules call the same module mains."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:  # the benchmark has its own options (attnlab bench --help)
        from attnlab import bench

        return bench.main(argv[1:])
    parser = argparse.ArgumentParser(prog="attnlab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("params", help="print each variant's parameter count at a config")
    p.add_argument("--config", required=True, type=Path)

    t = sub.add_parser("train", help="train one cell and write its bundle")
    t.add_argument("--config", required=True, type=Path)
    t.add_argument("--variant", required=True)
    t.add_argument("--lr", required=True, type=float)
    t.add_argument("--seed", required=True, type=int)
    t.add_argument("--out", required=True, type=Path, help="bundle folder to create")
    t.add_argument("--corpus", type=Path, default=Path("results/data/corpus.txt"),
                   help="where the verified corpus is kept (fetched there if absent)")
    t.add_argument("--checkpoint-dir", type=Path, default=None)
    t.add_argument("--compile-cache", type=Path, default=Path("results/jax-cache"))

    f = sub.add_parser("fetch", help="download (or copy a local) corpus and verify its sha256")
    f.add_argument("--config", required=True, type=Path)
    f.add_argument("--out", type=Path, default=Path("results/data/corpus.txt"))

    sub.add_parser("bench", help="time training steps against a plain loop (attnlab bench --help)")

    args = parser.parse_args(argv)
    from attnlab.attention import UnknownVariantError
    from attnlab.config import ConfigError, load_config
    from attnlab.data import CorpusError

    try:
        cfg = load_config(args.config)
        if args.command == "params":
            return print_params(cfg)
        if args.command == "fetch":
            from attnlab.data import fetch_corpus

            print(f"corpus ready at {fetch_corpus(cfg['data'], args.out)}")
            return 0
        return train(cfg, args)
    except (ConfigError, CorpusError, UnknownVariantError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def print_params(cfg: dict) -> int:
    from attnlab.params import parameter_counts

    counts = parameter_counts(cfg)
    base = counts.get("softmax")
    for variant, n in counts.items():
        extra = f"  ({n - base:+,d} vs softmax)" if base is not None and variant != "softmax" else ""
        print(f"{variant:10s} {n:>12,d}{extra}")
    return 0


def train(cfg: dict, args) -> int:
    from attnlab.attention import check_variant
    from attnlab.config import cell_slice
    from attnlab.data import fetch_corpus
    from attnlab.train import check_lr, configure_runtime, run_cell

    check_variant(args.variant)  # before any download or compute
    check_lr(args.lr)
    configure_runtime(cfg["train"]["threads"], args.compile_cache)
    corpus = fetch_corpus(cfg["data"], args.corpus)
    run_cell(cell_slice(cfg), args.variant, args.lr, args.seed, corpus, args.out,
             checkpoint_dir=args.checkpoint_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
