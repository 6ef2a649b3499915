"""Does the kernel's row mass tell correct from wrong predictions? ROC curves and mass distributions (kernel variants).

Per held-out token, the kernel's row mass (averaged over layers and heads, as the
bundle's mass AUROC ranks it) against whether the argmax next-token prediction
was correct. The diagonal is the null: a mass that carries no signal about
correctness has AUROC 0.5. Every number printed is the mass_auroc table's: each
seed's AUROC, and the mean mass of correct and of wrong tokens averaged over
the seeds.
"""

from __future__ import annotations

import sys

import matplotlib.pyplot as plt
import numpy as np

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.ground.bundle_reader import read_arrays
from attnlab.pipeline.figures.cells import contest_cells, lr_keys, variant_order
from attnlab.pipeline.figures.main import figure_main
from attnlab.pipeline.figures.style import (MARKER_EDGE, MAX_HEIGHT, TEXT_WIDTH, empty_note, title, variant_color,
                                            variant_handle, variant_marker, wrap)

SEED_STYLES = ("-", "--", ":", "-.")
BINS = 40


def load(tables, style) -> dict:
    runs, contest = tables["runs"], tables["contest"]
    return {"entries": load_mass(runs, contest, tables["mass_auroc"]), "order": variant_order(contest, runs),
            "table": tables["mass_auroc"]}


def load_mass(runs, contest, table) -> list[dict]:
    """Every contest cell with a row in the mass_auroc table: its per-token mass, correctness and the table's row."""
    keyed = table.assign(lr=lr_keys(table.lr).to_numpy()).set_index(["variant", "lr", "seed"])
    entries = []
    for _, row in contest_cells(runs, contest).iterrows():
        key = (row.variant, format_lr(row.lr), int(row.seed))
        if key not in keyed.index:
            continue
        arrays = read_arrays(row.path, "telemetry.npz")
        entries.append({"variant": row.variant, "seed": int(row.seed), "auroc": float(keyed.loc[key, "mass_auroc"]),
                        "mass": np.asarray(arrays["mass"], dtype=float).ravel(),
                        "correct": np.asarray(arrays["correct"]).astype(bool).ravel()})
    return entries


def roc_curve(score: np.ndarray, positive: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """False- and true-positive rates as the threshold on `score` falls (ties step together)."""
    ordered = np.argsort(-score, kind="stable")
    score, positive = score[ordered], positive[ordered]
    last_of_tie = np.r_[np.flatnonzero(np.diff(score)), score.size - 1]
    tp = np.cumsum(positive)[last_of_tie]
    fp = np.cumsum(~positive)[last_of_tie]
    return (np.r_[0.0, fp / max(fp[-1], 1)], np.r_[0.0, tp / max(tp[-1], 1)])


def _number(value: float) -> str:
    """A mass as the writeup's mass table writes it: four significant digits, whole numbers past 10,000."""
    return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"


def mean_masses(table, variant) -> dict[str, float]:
    """'correct' and 'wrong' -> the table's mean mass of such tokens, averaged over the variant's seeds."""
    rows = table[table.variant == variant]
    return {"correct": float(rows.mass_correct_mean.mean()), "wrong": float(rows.mass_wrong_mean.mean())}


def draw(data: dict, style: dict):
    entries, order, table = data["entries"], data["order"], data["table"]
    variants = [v for v in order if any(e["variant"] == v for e in entries)]
    rows = max(len(variants), 1)
    fig = plt.figure(figsize=(TEXT_WIDTH, min(max(4.2, 1.7 * rows + 1.0), MAX_HEIGHT)), dpi=style["dpi"],
                     layout="constrained")
    grid = fig.add_gridspec(rows, 2, width_ratios=[1, 1.2])
    roc = fig.add_subplot(grid[:, 0])
    if not entries:
        empty_note(roc, "no contest cell with a kernel mass (a yat-family variant) in runs.csv")
        title(fig, "Kernel mass against next-token correctness")
        return fig
    # the chance line is named in the legend, not on the plot, where curves near chance would run over its label
    chance = roc.plot([0, 1], [0, 1], color="0.5", lw=1, ls="--", label="chance: AUROC 0.5, no signal")[0]
    seeds = sorted({e["seed"] for e in entries})
    handles = []
    for entry in entries:
        color, marker = variant_color(style, entry["variant"], order), variant_marker(entry["variant"], order)
        fpr, tpr = roc_curve(entry["mass"], entry["correct"])
        roc.plot(fpr, tpr, color=color, lw=1.2, ls=SEED_STYLES[seeds.index(entry["seed"]) % len(SEED_STYLES)],
                 marker=marker, markevery=max(1, fpr.size // 6), ms=4.5, mec=MARKER_EDGE, mew=0.5)
        handles.append(variant_handle(style, entry["variant"], order, lw=1.2,
                                      ls=SEED_STYLES[seeds.index(entry["seed"]) % len(SEED_STYLES)],
                                      label=f"{entry['variant']} seed {entry['seed']}: AUROC {entry['auroc']:.3f}"))
    roc.set_xlim(0, 1)
    roc.set_ylim(0, 1)
    roc.set_aspect("equal")
    roc.set_xlabel("false-positive rate\n(wrong tokens above the threshold)")
    roc.set_ylabel("true-positive rate\n(correct tokens above the threshold)")
    roc.set_title(wrap("ROC of mass as a predictor of a correct prediction", 2.8, 8.5))
    roc.legend(handles=handles + [chance], loc="upper left", bbox_to_anchor=(0, -0.22), borderaxespad=0,
               frameon=False)
    roc.grid(alpha=0.3)
    for r, variant in enumerate(variants):
        ax = fig.add_subplot(grid[r, 1])
        mine = [e for e in entries if e["variant"] == variant]
        mass = np.concatenate([e["mass"] for e in mine])
        correct = np.concatenate([e["correct"] for e in mine])
        positive = mass[mass > 0]
        if positive.size == 0:
            empty_note(ax, f"{variant}: no positive mass")
            continue
        edges = np.logspace(np.log10(positive.min()), np.log10(positive.max()), BINS + 1)
        color, means = variant_color(style, variant, order), mean_masses(table, variant)
        for chosen, label, line in ((correct, "correct", "-"), (~correct, "wrong", "--")):
            counts, _ = np.histogram(mass[chosen], bins=edges)
            share = counts / max(counts.sum(), 1)
            ax.stairs(share, edges, color=color, lw=1.3, ls=line,
                      label=f"{label} ({int(chosen.sum())} tokens, mean {_number(means[label])})"
                      if chosen.any() else f"{label} (none)")
        ax.set_xscale("log")
        ax.set_ylim(0, 1.7 * max(ax.get_ylim()[1], 1e-9))  # headroom above the bars for the legend
        ax.set_ylabel("share of tokens")
        ax.set_title(wrap(f"{variant}: mass of correct vs wrong tokens (seeds pooled; means over seeds)", 3.3, 8.5),
                     color=color)
        ax.legend(fontsize=7, loc="upper left")
        ax.grid(alpha=0.3)
        if r == len(variants) - 1:
            ax.set_xlabel("kernel row mass Σκ, mean over layers and heads\n(log scale)")
    title(fig, "Kernel mass against next-token correctness on held-out batches (contest cells)")
    return fig


if __name__ == "__main__":
    sys.exit(figure_main(load, draw))
