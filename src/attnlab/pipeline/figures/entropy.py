"""Distribution of normalised attention-row entropy per variant (trained, held-out batches), overall and per layer."""

from __future__ import annotations

import sys

import matplotlib.pyplot as plt
import numpy as np

from attnlab.pipeline.bundle_reader import read_arrays
from attnlab.pipeline.figures import (MARKER_EDGE, cell_label, cli, empty_note, parse_style, read_tables, save_figure,
                                      shown_cells, variant_color, variant_handle, variant_marker, variant_order)
from attnlab.core.telemetry_stats import DIFFUSE_ABOVE, SHARP_BELOW

MARK_EVERY = 4  # bins between a variant's markers on its histogram


def load_histograms(runs, contest) -> list[dict]:
    """Per variant (its shown cell): the (layers, bins) entropy counts and the bundle's entropy summary."""
    entries = []
    for _, row in shown_cells(runs, contest).iterrows():
        hist = read_arrays(row.path, "telemetry.npz")["entropy_hist"].astype(float)
        entries.append({"variant": row.variant, "label": cell_label(row), "hist": hist,
                        "mean": row.get("telemetry.entropy.mean", np.nan),
                        "sharp": row.get("telemetry.entropy.share_sharp", np.nan),
                        "diffuse": row.get("telemetry.entropy.share_diffuse", np.nan)})
    return entries


def _share(counts: np.ndarray) -> np.ndarray:
    total = counts.sum()
    return counts / total if total > 0 else counts


def _panel(ax, entries, order, style, layer=None, legend=False) -> list:
    """Draw one panel; return the legend handles when `legend`."""
    handles = []
    for entry in entries:
        hist = entry["hist"]
        if layer is not None and layer >= hist.shape[0]:
            continue
        counts = hist.sum(axis=0) if layer is None else hist[layer]
        edges = np.linspace(0.0, 1.0, counts.size + 1)
        label = (f"{entry['label']}: mean {entry['mean']:.2f}, sharp {100 * entry['sharp']:.0f}%, "
                 f"diffuse {100 * entry['diffuse']:.0f}%") if legend else None
        color, share = variant_color(style, entry["variant"], order), _share(counts)
        ax.stairs(share, edges, color=color, lw=1.8)
        # the variant's marker on every few bins (offset per variant so markers do not stack)
        start = order.index(entry["variant"]) % MARK_EVERY if entry["variant"] in order else 0
        centres = (edges[:-1] + edges[1:]) / 2
        ax.plot(centres[start::MARK_EVERY], share[start::MARK_EVERY], ls="none", color=color, ms=5,
                marker=variant_marker(entry["variant"], order), mec=MARKER_EDGE, mew=0.5)
        if label:
            handles.append(variant_handle(style, entry["variant"], order, label=label, lw=1.8))
    for x, name in ((SHARP_BELOW, f"sharp < {SHARP_BELOW:g}"), (DIFFUSE_ABOVE, f"diffuse > {DIFFUSE_ABOVE:g}")):
        ax.axvline(x, color="0.35", ls="--", lw=1)
        if legend:
            ax.text(x, 0.98, f" {name}", transform=ax.get_xaxis_transform(), va="top", fontsize=8, color="0.3")
    ax.axvspan(0, SHARP_BELOW, color="0.95", zorder=0)
    ax.axvspan(DIFFUSE_ABOVE, 1, color="0.95", zorder=0)
    ax.set_xlim(0, 1)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    return handles


def draw(entries: list[dict], order: list[str], style: dict):
    layers = max((e["hist"].shape[0] for e in entries), default=1)
    per_layer = layers > 1
    fig = plt.figure(figsize=(max(9, 3.0 * layers), 8 if per_layer else 4.8), dpi=style["dpi"], layout="constrained")
    grid = fig.add_gridspec(2 if per_layer else 1, layers, height_ratios=[1.4, 1] if per_layer else None)
    top = fig.add_subplot(grid[0, :])
    if not entries:
        empty_note(top, "no contest cells in runs.csv")
        return fig
    handles = _panel(top, entries, order, style, legend=True)
    top.set_title("all layers")
    top.set_xlabel("normalised row entropy (entropy / log visible keys)")
    top.set_ylabel("share of query rows per bin")
    fig.legend(handles=handles, loc="outside lower center", ncol=2, fontsize=8,
               title="variant (cell): the bundle's entropy summary", title_fontsize=8)
    if per_layer:
        for layer in range(layers):
            ax = fig.add_subplot(grid[1, layer])
            _panel(ax, entries, order, style, layer=layer)
            ax.set_title(f"layer {layer} (dashed: {SHARP_BELOW:g} and {DIFFUSE_ABOVE:g})", fontsize=9)
            ax.set_xlabel("normalised entropy")
            if layer == 0:
                ax.set_ylabel("share of the layer's rows")
    fig.suptitle("Attention entropy of the trained models on held-out batches "
                 "(rows with enough visible keys; contest LR, sweep seed)")
    return fig


def main(argv: list[str] | None = None) -> int:
    args = cli(__doc__).parse_args(argv)
    style = parse_style(args.style)
    runs, contest = read_tables(args.runs, args.contest)
    entries = load_histograms(runs, contest)
    save_figure(draw(entries, variant_order(contest, runs), style), args.out, style["dpi"])
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
