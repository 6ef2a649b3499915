"""A³ per layer x head: the learned gate, the key bias's spread, and the net effect on row entropy against softmax.

The gate G multiplies the logits, so G below its init cools them; the key bias B
is added per key, so a wide spread of B over the keys sharpens the rows. Which
one wins is read off the third panel, A³'s row entropy minus softmax's, not off
either mechanism alone.
"""

from __future__ import annotations

import math
import sys

import matplotlib.pyplot as plt
import numpy as np

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.bundle_reader import read_bundle
from attnlab.pipeline.figures import cli, contest_cells, empty_note, parse_style, read_tables, save_figure
from attnlab.pipeline.figures._heatmap import bounded_norm, centred_norm, layer_head_heatmap

VARIANT = "a3"
BASELINE = "softmax"
GATE_INIT = 1.0 / (1.0 + math.exp(-3.0))  # σ(b_g = 3)
KEYS = ("a3_gate_mean", "a3_bias_std")


def load_gates(runs, contest) -> dict:
    """A³'s gate mean and bias spread per contest seed, and both variants' row entropy per layer x head.

    {'a3_gate_mean', 'a3_bias_std', 'a3_entropy', 'softmax_entropy': (seeds, L, H), 'seeds', 'lr'}.
    """
    cells = contest_cells(runs, contest)
    mine, base = cells[cells.variant == VARIANT], cells[cells.variant == BASELINE]
    telemetry = [read_bundle(path).get("telemetry", {}) for path in mine.path]
    found = {key: np.array([np.asarray(t[key], dtype=float) for t in telemetry if key in t]) for key in KEYS}
    found["a3_entropy"] = _entropy(telemetry)
    found["softmax_entropy"] = _entropy([read_bundle(path).get("telemetry", {}) for path in base.path])
    return dict(found, seeds=[int(s) for s in mine.seed], lr=float(mine.lr.iloc[0]) if len(mine) else None,
                baseline_lr=float(base.lr.iloc[0]) if len(base) else None)


def _entropy(telemetry: list[dict]) -> np.ndarray:
    grids = [t.get("entropy", {}).get("mean_per_layer_head") for t in telemetry]
    return np.array([np.asarray(g, dtype=float) for g in grids if g is not None])


def draw(gates: dict, style: dict):
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.9), dpi=style["dpi"], layout="constrained")
    if gates["lr"] is None or any(gates[key].size == 0 for key in KEYS):
        for ax in axes:
            empty_note(ax, f"no {VARIANT} contest cell with gate telemetry in runs.csv")
        fig.suptitle("A³ gates")
        return fig
    gate, spread = gates["a3_gate_mean"].mean(axis=0), gates["a3_bias_std"].mean(axis=0)
    image = layer_head_heatmap(axes[0], gate, None, bounded_norm(gate, GATE_INIT, 0.0, 1.0), "PuOr_r",
                               f"gate G (white: init {GATE_INIT:.3f};\nbelow init cools the logits)")
    fig.colorbar(image, ax=axes[0], shrink=0.9, label="gate G, mean over tokens")
    image = layer_head_heatmap(axes[1], spread, None, plt.Normalize(0, max(float(spread.max()), 1e-6)), "Greens",
                               "key bias B: spread over keys\n(0 at init; a wider spread sharpens)")
    fig.colorbar(image, ax=axes[1], shrink=0.9, label="std of B over keys (logit units)")
    a3_entropy, base_entropy = gates["a3_entropy"], gates["softmax_entropy"]
    if a3_entropy.size and base_entropy.size and a3_entropy.shape[1:] == base_entropy.shape[1:]:
        diff = a3_entropy.mean(axis=0) - base_entropy.mean(axis=0)
        image = layer_head_heatmap(axes[2], diff, None, centred_norm(diff, 0.0), "RdBu", signed=True,
                                   title=f"net: row entropy A³ − {BASELINE}\n(below 0: A³ sharper)")
        fig.colorbar(image, ax=axes[2], shrink=0.9, label="difference in normalised row entropy")
    else:
        empty_note(axes[2], f"no {BASELINE} contest cell of the same shape to compare with")
    n = len(gates["seeds"])
    seeds = f"mean over seeds {', '.join(map(str, gates['seeds']))}" if n > 1 else f"seed {gates['seeds'][0]}"
    against = f" vs {BASELINE} at {format_lr(gates['baseline_lr'])}" if gates["baseline_lr"] is not None else ""
    fig.suptitle(f"A³ per layer × head at contest LR {format_lr(gates['lr'])}{against} ({seeds})")
    return fig


def main(argv: list[str] | None = None) -> int:
    args = cli(__doc__.splitlines()[0]).parse_args(argv)
    style = parse_style(args.style)
    runs, contest = read_tables(args.runs, args.contest)
    save_figure(draw(load_gates(runs, contest), style), args.out, style["dpi"])
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
