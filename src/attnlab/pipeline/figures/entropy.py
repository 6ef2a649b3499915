"""Distribution of normalised attention-row entropy per variant (trained, held-out batches): the mean over the
contest seeds, overall and per layer, labelled with the entropy table's seed means."""

from __future__ import annotations

import sys

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnlab.core.bundle_format import format_lr
from attnlab.core.telemetry_stats import DIFFUSE_ABOVE, SHARP_BELOW
from attnlab.pipeline.ground.bundle_reader import read_arrays
from attnlab.pipeline.ground.contract import SHARE_DIFFUSE, SHARE_SHARP
from attnlab.pipeline.figures.cells import contest_cells, variant_order
from attnlab.pipeline.figures.main import figure_main
from attnlab.pipeline.figures.style import (MARKER_EDGE, MAX_HEIGHT, TEXT_WIDTH, empty_note, title, variant_color,
                                            variant_handle, variant_marker)

MARK_EVERY = 4  # bins between a variant's markers on its histogram
LAYERS_PER_ROW = 3  # per-layer panels side by side, each a third of the printed column at least


def load(tables, style) -> dict:
    runs, contest = tables["runs"], tables["contest"]
    return {"entries": load_histograms(runs, contest, tables["entropy"]), "order": variant_order(contest, runs)}


def shares(hist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One seed's (layers, bins) entropy counts as shares of rows: over all layers (bins,), per layer (layers, bins)."""
    hist = np.asarray(hist, dtype=float)
    overall = hist.sum(axis=0)
    per_layer = hist.sum(axis=1, keepdims=True)
    return (overall / overall.sum() if overall.sum() > 0 else overall,
            np.divide(hist, per_layer, out=np.zeros_like(hist), where=per_layer > 0))


def load_histograms(runs: pd.DataFrame, contest: pd.DataFrame, entropy: pd.DataFrame) -> list[dict]:
    """Per variant: its contest seeds' histogram shares averaged over the seeds, and the entropy table's seed means.

    Every seed weighs the same (each saw the same held-out batches), so the
    drawn distribution and the printed means describe the same seeds.
    """
    entries = []
    for variant, cells in contest_cells(runs, contest).groupby("variant", sort=False):
        per_seed = [shares(read_arrays(path, "telemetry.npz")["entropy_hist"]) for path in cells.path]
        rows = entropy[entropy.variant == variant]
        entries.append({"variant": variant, "lr": float(cells.lr.iloc[0]), "seeds": [int(s) for s in cells.seed],
                        "overall": np.mean([overall for overall, _ in per_seed], axis=0),
                        "per_layer": np.mean([layers for _, layers in per_seed], axis=0),
                        "mean": float(rows["mean"].mean()), "sharp": float(rows[SHARE_SHARP].mean()),
                        "diffuse": float(rows[SHARE_DIFFUSE].mean())})
    return entries


def legend_label(entry: dict) -> str:
    """The variant's cell and the entropy table's seed means, written as the writeup's entropy table writes them."""
    seeds = entry["seeds"]
    which = f"seed {seeds[0]}" if len(seeds) == 1 else f"mean of {len(seeds)} seeds"
    return (f"{entry['variant']} (lr {format_lr(entry['lr'])}, {which}): mean {entry['mean']:.3f}, "
            f"sharp {entry['sharp']:.1%}, diffuse {entry['diffuse']:.1%}")


def _panel(ax, entries, order, style, layer=None, legend=False) -> list:
    """Draw one panel; return the legend handles when `legend`."""
    handles = []
    for entry in entries:
        if layer is not None and layer >= entry["per_layer"].shape[0]:
            continue
        share = entry["overall"] if layer is None else entry["per_layer"][layer]
        edges = np.linspace(0.0, 1.0, share.size + 1)
        color = variant_color(style, entry["variant"], order)
        ax.stairs(share, edges, color=color, lw=1.4)
        # the variant's marker on every few bins (offset per variant so markers do not stack)
        start = order.index(entry["variant"]) % MARK_EVERY if entry["variant"] in order else 0
        centres = (edges[:-1] + edges[1:]) / 2
        ax.plot(centres[start::MARK_EVERY], share[start::MARK_EVERY], ls="none", color=color, ms=4,
                marker=variant_marker(entry["variant"], order), mec=MARKER_EDGE, mew=0.5)
        if legend:
            handles.append(variant_handle(style, entry["variant"], order, label=legend_label(entry), lw=1.4))
    for x, name in ((SHARP_BELOW, f"sharp < {SHARP_BELOW:g}"), (DIFFUSE_ABOVE, f"diffuse > {DIFFUSE_ABOVE:g}")):
        ax.axvline(x, color="0.35", ls="--", lw=1)
        if legend:
            ax.text(x, 0.98, f" {name}", transform=ax.get_xaxis_transform(), va="top", fontsize=7.5, color="0.3")
    ax.axvspan(0, SHARP_BELOW, color="0.95", zorder=0)
    ax.axvspan(DIFFUSE_ABOVE, 1, color="0.95", zorder=0)
    ax.set_xlim(0, 1)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    return handles


def draw(data: dict, style: dict):
    entries, order = data["entries"], data["order"]
    layers = max((e["per_layer"].shape[0] for e in entries), default=1)
    per_layer = layers > 1
    columns = min(layers, LAYERS_PER_ROW) if per_layer else 1
    layer_rows = -(-layers // columns) if per_layer else 0
    height = min(2.6 + 1.0 + 1.75 * layer_rows, MAX_HEIGHT)
    fig = plt.figure(figsize=(TEXT_WIDTH, height), dpi=style["dpi"], layout="constrained")
    grid = fig.add_gridspec(1 + layer_rows, columns, height_ratios=[1.5] + [1] * layer_rows)
    top = fig.add_subplot(grid[0, :])
    if not entries:
        empty_note(top, "no contest cells in runs.csv")
        return fig
    handles = _panel(top, entries, order, style, legend=True)
    top.set_title("all layers")
    top.set_xlabel("normalised row entropy (entropy / log visible keys)")
    top.set_ylabel("share of query rows per bin")
    fig.legend(handles=handles, loc="outside lower center", ncol=1, frameon=False,
               title="variant (contest LR, seeds): the entropy table's means over those seeds")
    if per_layer:
        for layer in range(layers):
            ax = fig.add_subplot(grid[1 + layer // columns, layer % columns])
            _panel(ax, entries, order, style, layer=layer)
            ax.set_title(f"layer {layer} (dashed: {SHARP_BELOW:g} and {DIFFUSE_ABOVE:g})")
            ax.set_xlabel("normalised entropy")
            if layer % columns == 0:
                ax.set_ylabel("share of the\nlayer's rows")
    title(fig, "Attention entropy of the trained models on held-out batches "
          "(rows with enough visible keys; contest LR, mean over the contest seeds)")
    return fig


if __name__ == "__main__":
    sys.exit(figure_main(load, draw))
