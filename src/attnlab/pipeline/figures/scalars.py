"""yat_b's learned kernel scalars b and ε per layer x head (contest cells, mean over seeds) against their init."""

from __future__ import annotations

import math
import sys

import matplotlib.pyplot as plt
import numpy as np

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.bundle_reader import read_bundle
from attnlab.pipeline.figures import cli, contest_cells, empty_note, parse_style, read_tables, save_figure
from attnlab.pipeline.figures._heatmap import bounded_norm, layer_head_heatmap

VARIANT = "yat_b"
INIT = math.log(2.0)  # softplus(0): both scalars start here
SCALARS = (("b", "b (added to q·k)"), ("eps", "ε (added to ‖q−k‖²)"))


def load_scalars(runs, contest) -> dict:
    """Every contest seed's learned b and ε, stacked: {'b': (seeds, L, H), 'eps': ..., 'seeds', 'lr'}."""
    cells = contest_cells(runs, contest)
    cells = cells[cells.variant == VARIANT]
    learned = [read_bundle(path).get("learned", {}) for path in cells.path]
    found = {name: np.array([np.asarray(x[name], dtype=float) for x in learned if name in x])
             for name, _ in SCALARS}
    return dict(found, seeds=[int(s) for s in cells.seed], lr=float(cells.lr.iloc[0]) if len(cells) else None)


def draw(scalars: dict, style: dict):
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), dpi=style["dpi"], layout="constrained")
    if scalars["lr"] is None or any(scalars[name].size == 0 for name, _ in SCALARS):
        for ax in axes:
            empty_note(ax, f"no {VARIANT} contest cell with learned scalars in runs.csv")
        fig.suptitle(f"{VARIANT}: learned kernel scalars")
        return fig
    n = len(scalars["seeds"])
    for ax, (name, label) in zip(axes, SCALARS):
        values = scalars[name]
        mean = values.mean(axis=0)
        std = values.std(axis=0) if n > 1 else None
        norm = bounded_norm(values, INIT, 0.0, math.inf)  # softplus: positive
        image = layer_head_heatmap(ax, mean, std, norm, "RdBu_r", f"learned {label}")
        symbol = label.split()[0]
        fig.colorbar(image, ax=ax, shrink=0.9, label=f"{symbol} (unitless; white = init log 2 ≈ {INIT:.3f})")
    spread = "mean ± std over seeds " if n > 1 else "seed "
    fig.suptitle(f"{VARIANT} learned scalars per layer × head: {spread}{', '.join(map(str, scalars['seeds']))} "
                 f"at contest LR {format_lr(scalars['lr'])}")
    return fig


def main(argv: list[str] | None = None) -> int:
    args = cli(__doc__).parse_args(argv)
    style = parse_style(args.style)
    runs, contest = read_tables(args.runs, args.contest)
    save_figure(draw(load_scalars(runs, contest), style), args.out, style["dpi"])
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
