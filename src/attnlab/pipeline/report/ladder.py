"""The writeup's Scale section, shown when the build has a scale ladder: its tables for reading and its results
paragraph, written from the ladder tables and the ledger's scale rows (attnlab.pipeline.claims.ladder_rows).

Nothing is computed here that a table holds: the trends, their intervals and
verdicts are the ledger's, the per-rung numbers the ladder table's. What this
module adds is the sentence that names the LR confound: every variant at one
LR at every size keeps the LR out of the paired differences but not out of the
trend, and variants at different LRs mix the LR into every gap.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.ground import build_manifest
from attnlab.pipeline.claims.ladder_points import claims_display
from attnlab.pipeline.claims.ladder_rows import is_ladder_row, is_rung_row
from attnlab.pipeline.ground.contract import BASELINE
from attnlab.pipeline.ground.formatting import plural
from attnlab.pipeline.tables.ladder import (LADDER, ladder_display, length_series, length_text, params_text,
                                            size_series)

def load(folder: Path) -> dict[str, pd.DataFrame]:
    """The ladder tables of a build ({} when it has no ladder, even if an earlier config left them on disk:
    attnlab.pipeline.ground.build_manifest)."""
    return {name: pd.read_csv(Path(folder) / f"{name}.csv") for name in (LADDER, "ladder_claims")
            if build_manifest.has_table(folder, name)}


def ladder_shown(ladder: pd.DataFrame) -> pd.DataFrame:
    """The ladder table as the page shows it: the display of ladder.md without the LR and series columns."""
    return ladder_display(ladder).drop(columns=["LR", "series"])


def claims_shown(checked: pd.DataFrame) -> pd.DataFrame:
    """Each claim of the ledger (rows) at each point of the ladder (columns), as ladder_claims.md shows it."""
    return claims_display(checked)


def lr_sentence(ladder: pd.DataFrame) -> str:
    """How the ladder chose its LRs, and the confound that follows."""
    lrs = {v: format_lr(float(lr)) for v, lr in ladder.groupby("variant", sort=False).lr.first().items()}
    if len(set(lrs.values())) == 1:
        lr = next(iter(lrs.values()))
        return (f"Every variant trains at LR {lr} at every rung, so no paired difference mixes in a choice of LR "
                "between variants; but one LR at every size is itself a confound of the trend: the best LR moves "
                f"with model size (at 2.72 M parameters the posts train {BASELINE} at 3e-4), so part of a trend "
                f"may be {lr} growing too large or too small for the model.")
    listed = ", ".join(f"{v} at {lr}" for v, lr in lrs.items())
    return (f"The variants train at different LRs ({listed}): every paired difference mixes the score function "
            "with that choice of LR, a confound the ladder cannot separate.")


def scale_results(ladder: pd.DataFrame, ledger: pd.DataFrame) -> str:
    """The section's results paragraph: the ladder's extent, each trend's verdict, the LR confound, the length
    axis and how many claims hold at some rung."""
    size = size_series(ladder)
    if size.empty:
        return "The build's ladder has no rung at its own length."
    base = size[size.variant == BASELINE] if (size.variant == BASELINE).any() else size
    seeds = int(size.n_seeds.max())
    each = "" if "to_plateau" in size and size.to_plateau.astype(bool).any() else " each"
    text = [f"The ladder trains {plural(size.variant.nunique(), 'variant')} at {plural(size.rung.nunique(), 'rung')} "
            f"from {params_text(base.n_params.min())} to {params_text(base.n_params.max())} parameters, "
            f"{length_text(size, 'trained_steps_min', 'trained_steps_max')}{each}, over {plural(seeds, 'seed')}."]
    rows = ledger[[is_ladder_row(r) for r in ledger.itertuples()]] if not ledger.empty else ledger
    for row in rows.itertuples():
        if not is_rung_row(row):
            text.append(f"{row.claim}: {row.outcome} ({row.measured.split('; by rung')[0]}).")
    text.append(lr_sentence(ladder))
    length = length_series(ladder)
    if not length.empty:
        rung = int(length.rung.min())
        at = length[(length.rung == rung) & (length.variant != BASELINE)]
        moves = [f"{v} {' → '.join(f'{d:+.4f}' for d in cells.sort_values('steps').delta_vs_softmax)}"
                 for v, cells in at.groupby("variant", sort=False)]
        steps = " and ".join(f"{int(s):,}" for s in sorted(length.steps.unique()))
        text.append(f"At rung {rung}, trained for {steps} steps, the paired differences from {BASELINE} move "
                    f"{'; '.join(moves)} nats.")
    rung_rows = rows[[is_rung_row(r) for r in rows.itertuples()]] if not rows.empty else rows
    if len(rung_rows):
        holding = rung_rows[rung_rows.measured.str.startswith("holds from")]
        text.append(f"Of the ledger's {len(rung_rows)} claims, {len(holding)} hold at some rung of this ladder"
                    + (": " + "; ".join(f"{r.claim.split(': ', 1)[-1]} ({r.measured.replace('holds ', '')})"
                                       for r in holding.itertuples()) if len(holding) else "") + ".")
        marker = "the data alone would hold from "
        leaning = rung_rows[rung_rows.measured.str.contains(marker, regex=False)]
        if len(leaning):
            text.append("Off their protocol (every variant at the ladder's one LR, not its own best), the data at a "
                        "rung alone would support: " + "; ".join(
                            f"{r.claim.split(': ', 1)[-1]} (from {r.measured.split(marker, 1)[1]})"
                            for r in leaning.itertuples()) + ".")
    return " ".join(text)

