"""`python benchmarks/step_profile.py`: where one training step's time goes, op by op, as XLA ran it.

Traces a chunk of the project's training loop with JAX's profiler (with the
XLA flags a build's training job runs with) and sums the device time of every
compiled op per step, grouped by the op's kind (its name less the numeric
suffix XLA gives each instance: `dot`, `transpose_copy_fusion`, a YNNPACK
`ynn_fusion` holding matrix products and what XLA fused into them, ...). It
prints the groups, the ops per step, and the step's matmul FLOPs over its time
beside the fp32 GEMM rate measured in the same process, which is what
bounds the step: the gap between the two is time spent outside matrix
products (copies, transposes, elementwise kernels, the per-op overhead of
some 1,800 small ops).
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import re
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script: its sibling benchmarks import as benchmarks.*
from attnlab.training.runtime import configure_runtime  # noqa: E402

configure_runtime(1, None)  # a build job's runtime: the one-thread flag and a CPU pool of one thread

import jax  # noqa: E402  (after XLA_FLAGS, which JAX reads once)
import numpy as np  # noqa: E402

from attnlab.core.config import load_config  # noqa: E402
from attnlab.core.config_types import model_config  # noqa: E402
from attnlab.core.constants import TINYSHAKESPEARE_VOCAB  # noqa: E402
from attnlab.training.flops import matmul_rate, step_flops  # noqa: E402
from benchmarks.train_step import ProjectLoop  # noqa: E402

RUNTIME_EVENTS = ("Thunk", "$", "Pjit", "ThreadPool", "end: ")  # the runtime's own spans, not compiled ops


def op_times(loop: ProjectLoop, steps: int) -> tuple[dict[str, float], dict[str, int]]:
    """Seconds and op counts per step of each op kind, from one traced chunk of `steps` steps."""
    loop.run(steps)  # warm
    with tempfile.TemporaryDirectory() as folder:
        with jax.profiler.trace(folder, create_perfetto_trace=True):
            loop.run(steps)
        traces = sorted(Path(folder).glob("**/*.trace.json.gz"))
        if not traces:
            raise SystemExit("the profiler wrote no perfetto trace: this JAX cannot be profiled this way")
        events = json.loads(gzip.decompress(traces[-1].read_bytes()))
    events = events["traceEvents"] if isinstance(events, dict) else events
    seconds, counts = collections.Counter(), collections.Counter()
    for event in events:
        name = event.get("name", "")
        if event.get("ph") != "X" or any(marker in name for marker in RUNTIME_EVENTS):
            continue
        kind = re.sub(r"\.\d+$", "", name)
        seconds[kind] += event["dur"] / 1e6 / steps
        counts[kind] += 1
    return dict(seconds), {k: round(v / steps) for k, v in counts.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="default", help="the model size (a config name under config/)")
    parser.add_argument("--variant", default="softmax")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--top", type=int, default=12, help="op kinds to list")
    args = parser.parse_args(argv)
    cfg = load_config(REPO / "config" / f"{args.config}.yaml")
    mcfg = model_config(cfg, args.variant, TINYSHAKESPEARE_VOCAB)
    batch = cfg["train"]["batch_size"]
    tokens = np.random.default_rng(0).integers(0, TINYSHAKESPEARE_VOCAB, 200_000, dtype=np.int32)
    loop = ProjectLoop(mcfg, tokens, batch, max_steps=args.steps)
    loop.run(args.steps)
    start = time.perf_counter()
    loop.run(args.steps)
    step_s = (time.perf_counter() - start) / args.steps
    seconds, counts = op_times(loop, args.steps)
    traced = sum(seconds.values())
    print(f"{args.config} {args.variant}: {1e3 * step_s:.2f} ms per step untraced, {1e3 * traced:.2f} ms in "
          f"{sum(counts.values())} compiled ops traced")
    print(f"{'op kind':<32}{'ms/step':>9}{'ops':>6}{'share':>8}")
    for kind, s in sorted(seconds.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"{kind:<32}{1e3 * s:>9.3f}{counts[kind]:>6}{s / traced:>8.1%}")
    products = sum(s for kind, s in seconds.items() if kind.startswith(("ynn_fusion", "dot")))
    print(f"matrix products (YNNPACK fusions and dots) {1e3 * products:.2f} ms/step ({products / traced:.0%}); "
          f"everything else {1e3 * (traced - products):.2f} ms")
    flops = step_flops(mcfg, batch)
    best_gemm = matmul_rate()  # a 1024^3 fp32 product, the best shape for this CPU's GEMM
    print(f"matmul FLOPs per step {flops / 1e9:.2f} G: {flops / step_s / 1e9:.1f} GFLOP/s over the step, "
          f"{flops / products / 1e9:.1f} over its matrix products alone, against the best fp32 GEMM "
          f"{best_gemm:.1f} GFLOP/s ({flops / step_s / 1e9 / best_gemm:.0%} and "
          f"{flops / products / 1e9 / best_gemm:.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
