"""`python benchmarks/slay.py`: SLAY's linear path against exact softmax and exact spherical Yat, over the context.

For each context length T it compiles one attention call with the gradient of
a loss on its output w.r.t. q, k and v (what a training step does with it;
benchmarks/attention.py's measure) for exact softmax and the exact spherical
Yat kernel (the dense T x T path) and for SLAY's causal linear path
(attnlab.training.attention.slay.causal_linear_attention), and prints the
compiled executable's scratch memory (XLA's temp_size_in_bytes) and the best
wall time of a few calls. SLAY's feature width F = R·P·M is printed beside
every figure. The crossover is the first T at which SLAY's time (or memory) is
below the exact path's and stays below at every longer T measured. Figures are
this machine's: state `python benchmarks/cores.py` beside them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: its siblings import as benchmarks.*
from attnlab.training.attention import slay  # noqa: E402
from benchmarks.attention import measure  # noqa: E402

LENGTHS = (128, 256, 512, 1024, 2048, 4096, 8192)
EXACT = ("softmax", "spherical_yat")
WIDTH = slay.QUADRATURE_NODES * slay.ANCHORS * slay.RANDOM_FEATURES


def crossover(table: pd.DataFrame, exact: str, unit: str) -> str:
    """The first T from which SLAY's `unit` (ms or MiB) stays below `exact`'s, or why there is none."""
    below = (table[f"slay linear {unit}"] < table[f"{exact} dense {unit}"]).tolist()
    for index in range(len(below)):
        if all(below[index:]):
            return f"from T = {table['T'].iloc[index]:,}"
    return f"at none of these lengths (up to T = {table['T'].iloc[-1]:,})"


def run(lengths, batch: int, heads: int, d_head: int, repeats: int, log=print) -> pd.DataFrame:
    rows = []
    for length in lengths:
        row = {"T": length, "F": WIDTH}
        for variant, impl in [(name, "dense") for name in EXACT] + [("slay", "linear")]:
            mib, ms = measure(variant, impl, length, batch, heads, heads, d_head, 64, True, repeats)
            row[f"{variant} {impl} MiB"], row[f"{variant} {impl} ms"] = mib, ms
        rows.append(row)
        log(f"  T={length:5d}  " + "  ".join(f"{name}: {row[f'{name} ms']:.1f} ms, {row[f'{name} MiB']:.1f} MiB"
                                              for name in ("softmax dense", "spherical_yat dense", "slay linear"))
            + f"  (F = {WIDTH})", flush=True)
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/slay.py", description=__doc__)
    parser.add_argument("--lengths", nargs="+", type=int, default=list(LENGTHS))
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--d-head", type=int, default=16, help="the default and paper models' head width")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls after one warm-up; the best counts")
    parser.add_argument("--csv", default=None, help="also write the table here")
    args = parser.parse_args(argv)
    device = jax.devices()[0]
    print(f"device: {device.platform} {device.device_kind}; jax {jax.__version__}; batch {args.batch}, "
          f"{args.heads} heads of {args.d_head}, float32, forward and backward; SLAY's features: "
          f"R = {slay.QUADRATURE_NODES} nodes x P = {slay.ANCHORS} anchors x M = {slay.RANDOM_FEATURES} random "
          f"features, F = {WIDTH} per head, chunk {slay.LINEAR_CHUNK}")
    table = run(args.lengths, args.batch, args.heads, args.d_head, args.repeats)
    print()
    print(table.to_markdown(index=False, floatfmt=[",.0f", ",.0f"] + [",.1f"] * (table.shape[1] - 2)))
    if args.csv:
        table.to_csv(args.csv, index=False)
    for exact in EXACT:
        print(f"SLAY (F = {WIDTH}) is faster than exact {exact} {crossover(table, exact, 'ms')}, and needs less "
              f"scratch memory {crossover(table, exact, 'MiB')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
