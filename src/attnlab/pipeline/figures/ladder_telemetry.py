"""The scale ladder's telemetry against parameter count: each variant's max score over softmax's, its mean
attention entropy minus softmax's, and A³'s gate, with the published paper-size values at 2.72 M.

Each panel draws, at each rung of the ladder's length, the mean over seeds
(a line), its t-interval (a bar) and the seeds (dots): the max-score ratio
and entropy gap are paired by seed with softmax at the same rung (the ladder
and ladder_seeds tables). A³'s gate is the mean over layers and heads of its
per-token gate; the dotted line is its value before training, σ(3).
"""

from __future__ import annotations

import sys

from attnlab.pipeline.ground import intervals
from attnlab.pipeline.ground.contract import A3_GATE_INIT, BASELINE
from attnlab.pipeline.figures.ladder_lines import lines, paper_handle, paper_marks, params_axis, variants_of
from attnlab.pipeline.figures.main import figure_main
from attnlab.pipeline.figures.style import empty_note, new_figure, title, variant_color
from attnlab.pipeline.tables.ladder import SIZE, size_series

PANELS = (  # ladder column, its axis label, log scale
    ("max_score_ratio", f"max score / {BASELINE}'s\n(same seed)", True),
    ("entropy_gap", f"mean normalised entropy\n− {BASELINE}'s", False),
    ("a3_gate_mean", "A³ gate G, mean over\nlayers and heads", False),
)


def load(tables, style) -> dict:
    seeds = tables["ladder_seeds"]
    return {"ladder": size_series(tables["ladder"]), "seeds": seeds[seeds.series == SIZE] if len(seeds) else seeds}


def draw(data: dict, style: dict):
    table, seeds = data["ladder"], data["seeds"]
    fig, axes = new_figure(style, 3.8, ncols=len(PANELS), layout="constrained")
    order = variants_of(table, baseline=True)
    if table.empty:
        for ax in axes:
            empty_note(ax, "ladder.csv has no rows at the ladder's length")
        return fig
    legend = {}  # one legend for the three panels, below them: each variant (and the posts' mark) once
    for ax, (column, label, log_y) in zip(axes, PANELS):
        shown = [v for v in variants_of(table) if table[table.variant == v][column].notna().any()]
        if not shown:
            empty_note(ax, f"no variant has {column.replace('_', ' ')} here")
            continue
        handles = lines(ax, table, column, style, order, shown, seeds=seeds)
        if paper_marks(ax, column, style, order, shown):
            handles.append(paper_handle())
        if log_y:
            ax.set_yscale("log")
            ax.axhline(1.0, color=variant_color(style, BASELINE, order), ls=":", lw=1.2)
        elif column == "entropy_gap":
            ax.axhline(0.0, color=variant_color(style, BASELINE, order), ls=":", lw=1.2)
        else:
            ax.axhline(A3_GATE_INIT, color="0.4", ls=":", lw=1.2)
            # at the right, past the ladder's rungs, where no line runs
            ax.annotate(f"σ(3) = {A3_GATE_INIT:.3f} (init)", (0.98, A3_GATE_INIT), xycoords=("axes fraction", "data"),
                        xytext=(0, 3), textcoords="offset points", ha="right", fontsize=7, color="0.35")
        params_axis(ax, table)
        ax.set_ylabel(label)
        legend.update({handle.get_label(): handle for handle in handles})
    fig.legend(handles=list(legend.values()), loc="outside lower center", ncol=min(len(legend), 3), frameon=False)
    steps = int(table.steps.iloc[0])
    title(fig, f"Telemetry by model size ({steps:,} steps): mean over seeds with its "
          f"{intervals.CONFIDENCE:.0%} t-interval, single seeds (dots); hollow: the posts' values at "
          "2.72 M parameters")
    return fig


if __name__ == "__main__":
    sys.exit(figure_main(load, draw))
