"""The scale ladder's training-length axis: at the rung trained for several lengths, each variant's best
validation loss and its paired difference from softmax against the number of training steps.

It separates size from under-training: a gap that moves as much with 4x the
steps as with a bigger model is a gap of training length. Mean over seeds with
its t-interval, the seeds as dots (the ladder and ladder_seeds tables).
"""

from __future__ import annotations

import sys

from attnlab.pipeline.ground import intervals
from attnlab.pipeline.ground.contract import BASELINE
from attnlab.pipeline.figures.ladder_lines import lines, variants_of
from attnlab.pipeline.figures.main import figure_main
from attnlab.pipeline.figures.style import LOSS_LABEL, empty_note, new_figure, title, variant_color
from attnlab.pipeline.tables.ladder import length_series, params_text


def load(tables, style) -> dict:
    length = length_series(tables["ladder"])
    seeds = tables["ladder_seeds"]
    if len(seeds) and len(length):
        seeds = seeds[seeds.rung.isin(set(length.rung))]
    return {"ladder": length, "seeds": seeds}


def draw(data: dict, style: dict):
    table, seeds = data["ladder"], data["seeds"]
    fig, (loss_ax, gap_ax) = new_figure(style, 3.4, ncols=2, layout="constrained")
    if table.empty:
        gap_ax.remove()
        plateau = len(seeds) and "to_plateau" in seeds and seeds.to_plateau.astype(bool).any()
        empty_note(loss_ax, "every cell trained to its plateau, so the ladder has no training-length axis (the "
                   "steps each cell trained: ladder_seeds.csv's trained_steps)" if plateau
                   else "the ladder trained no rung at more than one length")
        return fig
    rung = int(table.rung.min())
    table, seeds = table[table.rung == rung], seeds[seeds.rung == rung] if len(seeds) else seeds
    order = variants_of(table, baseline=True)
    handles = lines(loss_ax, table, "best_val_mean", style, order, order, x="steps", seeds=seeds,
                    seed_column="best_val_loss")
    lines(gap_ax, table, "delta_vs_softmax", style, order, variants_of(table), x="steps", seeds=seeds)
    gap_ax.axhline(0.0, color=variant_color(style, BASELINE, order), ls=":", lw=1.2)
    steps = sorted(int(s) for s in table.steps.unique())
    for ax in (loss_ax, gap_ax):
        ax.set_xscale("log")
        ax.set_xticks(steps, [f"{s:,}" for s in steps])
        ax.minorticks_off()
        ax.set_xlim(min(steps) / 1.4, max(steps) * 1.4)
        ax.set_xlabel("training steps (log scale)")
        ax.grid(alpha=0.3)
    loss_ax.set_ylabel(f"best {LOSS_LABEL}")
    loss_ax.set_title("each variant")
    gap_ax.set_ylabel(f"best validation loss − {BASELINE}'s\n(nats/char)")
    gap_ax.set_title(f"paired by seed with {BASELINE}")
    loss_ax.legend(handles=handles, fontsize=7, loc="best")
    n_params = params_text(table[table.variant == BASELINE].n_params.min() if (table.variant == BASELINE).any()
                           else table.n_params.min())
    title(fig, f"Training length at rung {rung} ({n_params} parameters): mean over seeds with its "
          f"{intervals.CONFIDENCE:.0%} t-interval, single seeds (dots)")
    return fig


if __name__ == "__main__":
    sys.exit(figure_main(load, draw))
