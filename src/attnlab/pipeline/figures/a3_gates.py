"""A³'s learned gate (per-row inverse temperature) and key bias per layer x head, from the bundles' gate telemetry."""

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
GATE_INIT = 1.0 / (1.0 + math.exp(-3.0))  # σ(b_g = 3)
KEYS = ("a3_gate_mean", "a3_gate_std", "a3_bias_mean", "a3_bias_std")


def load_gates(runs, contest) -> dict:
    """Every a3 contest seed's gate/bias summaries stacked: {key: (seeds, L, H), 'seeds', 'lr'}."""
    cells = contest_cells(runs, contest)
    cells = cells[cells.variant == VARIANT]
    telemetry = [read_bundle(path).get("telemetry", {}) for path in cells.path]
    found = {key: np.array([np.asarray(t[key], dtype=float) for t in telemetry if key in t]) for key in KEYS}
    return dict(found, seeds=[int(s) for s in cells.seed], lr=float(cells.lr.iloc[0]) if len(cells) else None)


def draw(gates: dict, style: dict):
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.4), dpi=style["dpi"], layout="constrained")
    if gates["lr"] is None or any(gates[key].size == 0 for key in KEYS):
        for ax in axes:
            empty_note(ax, f"no {VARIANT} contest cell with gate telemetry in runs.csv")
        fig.suptitle("A³ gates")
        return fig
    mean = {key: gates[key].mean(axis=0) for key in KEYS}  # mean over seeds of each seed's token statistic
    gate_norm = bounded_norm(gates["a3_gate_mean"], GATE_INIT, 0.0, 1.0)
    image = layer_head_heatmap(ax := axes[0], mean["a3_gate_mean"], mean["a3_gate_std"], gate_norm, "PuOr_r",
                               "gate G: mean ± std over tokens")
    fig.colorbar(image, ax=ax, shrink=0.9, label=f"gate (inverse temperature; white = init σ(3) ≈ {GATE_INIT:.3f})")
    std = mean["a3_gate_std"]
    image = layer_head_heatmap(axes[1], std, None, plt.Normalize(0, max(float(std.max()), 1e-6)), "Greens",
                               "gate G: std over tokens (how much it adapts)")
    fig.colorbar(image, ax=axes[1], shrink=0.9, label="gate std (unitless)")
    bias_norm = centred_norm(gates["a3_bias_mean"], 0.0)
    image = layer_head_heatmap(axes[2], mean["a3_bias_mean"], mean["a3_bias_std"], bias_norm, "RdBu_r",
                               "key bias B: mean ± std over keys")
    fig.colorbar(image, ax=axes[2], shrink=0.9, label="bias (logit units; white = init 0)")
    n = len(gates["seeds"])
    seeds = f"mean over seeds {', '.join(map(str, gates['seeds']))}" if n > 1 else f"seed {gates['seeds'][0]}"
    fig.suptitle(f"A³ per layer × head at contest LR {format_lr(gates['lr'])} ({seeds}); "
                 "gate < init: softer rows, > init: sharper")
    return fig


def main(argv: list[str] | None = None) -> int:
    args = cli(__doc__).parse_args(argv)
    style = parse_style(args.style)
    runs, contest = read_tables(args.runs, args.contest)
    save_figure(draw(load_gates(runs, contest), style), args.out, style["dpi"])
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
