"""The scale ladder's paired difference from softmax against parameter count, one line per variant, with the
published paper-size gaps at 2.72 M.

At each rung (the ladder's length), a variant's best validation loss minus
softmax's of the same seed: the mean over seeds joined by a line, its
t-interval as a bar, the seeds as dots (the ladder and ladder_seeds tables).
Below the dotted zero line beats softmax. The hollow markers at 2.72 M are the
posts' paper-protocol gaps (each variant at its own LR, 12,000 steps).
"""

from __future__ import annotations

import sys

from attnlab.pipeline.ground import intervals
from attnlab.pipeline.ground.contract import BASELINE
from attnlab.pipeline.figures.ladder_lines import lines, paper_handle, paper_marks, params_axis, variants_of
from attnlab.pipeline.figures.main import figure_main
from attnlab.pipeline.figures.style import TEXT_WIDTH, empty_note, new_figure, variant_color, wrap
from attnlab.pipeline.tables.ladder import SIZE, size_series


def load(tables, style) -> dict:
    seeds = tables["ladder_seeds"]
    return {"ladder": size_series(tables["ladder"]), "seeds": seeds[seeds.series == SIZE] if len(seeds) else seeds}


def draw(data: dict, style: dict):
    table, seeds = data["ladder"], data["seeds"]
    fig, ax = new_figure(style, 4.0, layout="constrained")
    shown, order = variants_of(table), variants_of(table, baseline=True)
    if table.empty or not shown:
        empty_note(ax, "ladder.csv has no variant beside softmax at the ladder's length")
        return fig
    handles = lines(ax, table, "delta_vs_softmax", style, order, shown, seeds=seeds)
    published = paper_marks(ax, "delta_vs_softmax", style, order, shown)
    ax.axhline(0.0, color=variant_color(style, BASELINE, order), ls=":", lw=1.2)
    params_axis(ax, table)
    ax.set_ylabel(f"best validation loss − {BASELINE}'s (nats/char)")
    steps = int(table.steps.iloc[0])
    level = f"{intervals.CONFIDENCE:.0%}"
    ax.set_title(wrap(f"Paired difference from {BASELINE} by model size ({steps:,} steps): mean over seeds with its "
                      f"{level} t-interval, single seeds (dots)" + ("; hollow: the posts' gaps at 2.72 M parameters"
                                                                    if published else ""), TEXT_WIDTH, 8.5))
    ax.legend(handles=handles + ([paper_handle()] if published else []), loc="best")
    return fig


if __name__ == "__main__":
    sys.exit(figure_main(load, draw))
