"""The ledger's rows from the scale ladder: the posts' two claims about scale, and the smallest rung at which each
other claim holds. Read from the ladder_seeds and ladder_claims tables (attnlab.pipeline.tables.ladder,
attnlab.pipeline.claims.ladder_points); a build without a ladder has none of these rows.

A trend is one regression over every rung × seed paired difference at the
ladder's length (attnlab.pipeline.ground.statistics.slope_with_seed_effect): the
least-squares slope against log10 of the parameter count with one intercept
per seed (each seed's rungs share its batches), and its t-interval on the
residual degrees of freedom. A claim that a difference shrinks with scale holds
when the whole interval is below 0, is contradicted when it is above 0, and is
inconclusive otherwise; at a ladder whose cells are still improving, it is
inconclusive at that protocol (the trend then mixes size with training speed).
A build without a ladder still shows the trend rows, not testable.
"""

from __future__ import annotations

import pandas as pd

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.ground import statistics, verdicts
from attnlab.pipeline.ground import estimate_text
from attnlab.pipeline.claims import protocol as pp
from attnlab.pipeline.claims import words
from attnlab.pipeline.claims.common import (A3_POST, BEYOND, Claim, at_protocol, decide, is_off_protocol, judged,
                                            off_protocol_rows, stability_text, table_of, untestable)
from attnlab.pipeline.ground.contract import BASELINE
from attnlab.pipeline.ground.verdicts import HOLDS, HOLDS_BY_CONSTRUCTION, one_sided
from attnlab.pipeline.ground.estimate_text import describe
from attnlab.pipeline.tables.ladder import LADDER_PROTOCOL, SIZE, STEPS, length_text, params_text

TREND_UNIT = "nats per tenfold parameters"
TREND_KERNELS = ("yat", "yat_b")
ON_THE_LADDER = "on the scale ladder: "  # how a claim's smallest-rung row begins
HOLDING = (HOLDS, HOLDS_BY_CONSTRUCTION)  # a rung where a claim holds: its check holds, or its construction does


def size_rows(t) -> pd.DataFrame:
    """ladder_seeds at the ladder's length: one row per rung, variant and seed."""
    seeds = table_of(t, "ladder_seeds")
    return seeds[seeds.series == SIZE] if not seeds.empty else seeds


def trend(rows: pd.DataFrame, variant: str, sign: float) -> statistics.Estimate:
    """The slope of sign x (variant − baseline) against log10 parameters over every rung × seed, one intercept
    per seed (statistics.slope_with_seed_effect); diverged cells are left out."""
    own = rows[(rows.variant == variant) & rows.delta_vs_softmax.notna()]
    if "diverged" in own:
        own = own[~own.diverged.fillna(False).astype(bool)]
    points = {int(seed): list(zip(cells.log10_n_params, sign * cells.delta_vs_softmax.astype(float)))
              for seed, cells in own.groupby("seed")}
    return statistics.slope_with_seed_effect(points)


def ladder_plateau(rows: pd.DataFrame, variants) -> pp.Condition:
    """The ladder's cells of these variants trained to a plateau (ladder_seeds' `improving`)."""
    return pp.cells_plateau(rows[rows.variant.isin(list(variants))], "ladder cells")


def ladder_protocol(rows: pd.DataFrame, protocol: str) -> str:
    """'ladder (scale ladder: 4 rungs, 31.7 k–818 k parameters, 1,000 steps)', or '..., each cell to its plateau
    (3,750–10,000 steps, at most 10,000))'."""
    sizes = rows[rows.variant == BASELINE].n_params if (rows.variant == BASELINE).any() else rows.n_params
    rungs = rows.rung.nunique()
    return (f"{protocol} ({LADDER_PROTOCOL}: {rungs} rung{'s' if rungs != 1 else ''}, {params_text(sizes.min())}–"
            f"{params_text(sizes.max())} parameters, {length_text(rows)})")


def is_ladder_row(row) -> bool:
    """Whether a ledger row is one of the scale ladder's (its protocol names the ladder)."""
    return f"({LADDER_PROTOCOL}" in str(row.protocol)


def is_rung_row(row) -> bool:
    """Whether a ledger row is a claim's smallest rung (not one of the trends)."""
    return is_ladder_row(row) and str(row.claim).startswith(ON_THE_LADDER)


def by_rung(rows: pd.DataFrame, variant: str, sign: float) -> str:
    """The paired difference at each rung: '31.7 k +0.0123 [+0.0050, +0.0196]; ...'."""
    parts = []
    for rung, cells in rows[rows.variant == variant].groupby("rung"):
        values = dict(zip(cells.seed.astype(int), sign * cells.delta_vs_softmax.astype(float)))
        estimate = statistics.mean_interval(values.values(), values.keys())
        parts.append(f"{params_text(cells.n_params.iloc[0])} {describe(estimate, wins=False)}")
    return "; ".join(parts)


def lrs_note(rows: pd.DataFrame, variants: tuple[str, ...]) -> str:
    """Each variant's ladder LR, and the confound when they differ."""
    lrs = {v: format_lr(float(rows[rows.variant == v].lr.iloc[0])) for v in variants if (rows.variant == v).any()}
    note = "each variant at its ladder LR: " + ", ".join(f"{v} {lr}" for v, lr in lrs.items())
    if len(set(lrs.values())) > 1:
        note += ("; the LRs differ between variants, so part of a gap, and of its trend, may be the LR's rather "
                 "than the score function's")
    return note


def _trend_claim(t, protocol: str, claim: Claim, variant: str, sign: float, published_note: str) -> Claim:
    rows = size_rows(t)
    if rows.empty:
        return untestable(claim, protocol, "this build has no scale ladder (a study named ladder)")
    claim.protocol = ladder_protocol(rows, protocol)
    if not (rows.variant == variant).any() or not (rows.variant == BASELINE).any():
        return untestable(claim, claim.protocol, f"the ladder trains no {variant} or no {BASELINE}")
    if rows[rows.variant == variant].rung.nunique() < 2:
        return untestable(claim, claim.protocol, "the ladder has one rung at its length: a trend needs two")
    estimate = trend(rows, variant, sign)
    fmt = lambda x: f"{x:+.4f}"  # noqa: E731
    own = rows[(rows.variant == variant) & rows.delta_vs_softmax.notna()]
    points = int((~own.diverged.fillna(False).astype(bool)).sum()) if "diverged" in own else len(own)
    claim.measured = (f"slope {fmt(estimate.mean)} {TREND_UNIT}, {estimate_text.interval_text(estimate, fmt)} over "
                      f"{points} rung × seed differences; by rung: {by_rung(rows, variant, sign)}")
    claim.note = "; ".join(filter(None, [
        "one least-squares line over every rung × seed paired difference against log10 parameters, one "
        "intercept per seed; t-interval on the residual degrees of freedom",
        lrs_note(rows, (BASELINE, variant)), published_note]))
    judged(claim, one_sided(estimate, 0.0, above=False), {"slope": estimate}, fmt, stability_text(estimate, 0.0))
    return at_protocol(claim, claim.protocol, [ladder_plateau(rows, (BASELINE, variant))],
                       f"the gap widens with scale: {fmt(estimate.mean)} {TREND_UNIT}")


def a3_benefit_shrinks(t, pub, protocol) -> Claim:
    claim = Claim(A3_POST, "A³'s benefits shrink as models scale up",
                  f"this project's reading: measured: A³'s paired gain over {BASELINE} ({BASELINE} − A³ best "
                  "validation loss, same seed and rung) against log10 parameters; threshold: the slope below 0; its "
                  "edges: 0, the post's direction (it gives no size)", "–",
                  "qualitative", "", quote=words.SHRINKS.cited())
    return _trend_claim(t, protocol, claim, "a3", -1.0, "")


def kernel_gap_closes(variant: str):
    """The check that `variant`'s gap to the baseline closes as the model grows."""
    def check(t, pub, protocol) -> Claim:
        entries = {(e["variant"], float(e["lr"])): e for e in pub["contest"]}
        base = next((e for e in pub["contest"] if e["variant"] == BASELINE), None)
        paper = [(lr, e["mean"] - base["mean"]) for (v, lr), e in entries.items() if v == variant and base]
        published = "; ".join(f"{d:+.4f} nats at {params_text(pub['params'][BASELINE])} (LR {format_lr(lr)})"
                              for lr, d in paper) or "–"
        claim = Claim(BEYOND, f"{variant}'s gap to {BASELINE} closes with scale",
                      f"this project's reading: measured: {variant} − {BASELINE} best validation loss (same seed "
                      "and rung) against log10 parameters; threshold: the slope below 0; its edges: 0, the "
                      "direction this project asks about", "–", published, "", quote=words.KERNEL_SCALE.cited())
        note = ("the published gaps are each variant at its own LR against softmax at 3e-4, trained 12,000 steps"
                if paper else "")
        return _trend_claim(t, protocol, claim, variant, 1.0, note)
    check.__name__ = f"{variant}_gap_closes"
    return check


TRENDS = (a3_benefit_shrinks, *(kernel_gap_closes(v) for v in TREND_KERNELS))


def smallest_rung(checked: pd.DataFrame, check: str) -> Claim:
    """One check of the ledger across the ladder: the smallest rung (at the ladder's length) where it holds, the
    verdict at every rung, and the largest rung's verdict and interval as the row's."""
    rows = checked[checked.check == check].sort_values(["rung", STEPS], kind="stable")
    size = rows[rows.series == SIZE]
    last = size.iloc[-1] if len(size) else rows.iloc[-1]
    claim = Claim(last.source, f"{ON_THE_LADDER}{last.claim}",
                  "this project's reading: its own check on each rung's cells alone (every variant at its "
                  "ladder LR, the ladder's seeds): the smallest rung where it holds; the verdict is the largest "
                  "rung's", "–", "–",
                  str(last.verdict),
                  interval=str(last.interval) if pd.notna(last.interval) else "", seeds=int(last.seeds),
                  protocol=str(last.protocol),
                  lean=str(last.lean) if "lean" in last and pd.notna(last.lean) else "",
                  quote=str(last.quote) if "quote" in last and pd.notna(last.quote) else "",
                  lean_side=str(last.lean_side) if pd.notna(last.lean_side) else "")
    decide(claim, str(last.outcome), str(last.protocol), off_protocol=is_off_protocol(last.off_protocol))
    holding = size[size.outcome.isin(HOLDING)]
    if len(holding):
        first = holding.iloc[0]
        claim.measured = (f"holds from rung {int(first.rung)} of {size.rung.nunique()} "
                          f"({params_text(first.n_params)} parameters)")
    elif size.outcome.eq(verdicts.NOT_TESTABLE).all():
        claim.measured = "not testable at any rung of this ladder"
    else:
        claim.measured = "at no rung of this ladder"
        leaning = size[off_protocol_rows(size) & size.lean_side.eq(verdicts.HOLDS)]
        if len(leaning):
            first = leaning.iloc[0]
            claim.measured += (f"; off the claim's protocol, the data alone would hold from rung {int(first.rung)} of "
                               f"{size.rung.nunique()} ({params_text(first.n_params)} parameters)")
    by_rung = [f"{params_text(r.n_params)} {r.outcome}" for r in size.itertuples()]
    longer = [f"{params_text(r.n_params)} at {int(getattr(r, STEPS)):,} steps {r.outcome}"
              for r in rows[rows.series != SIZE].itertuples()]
    claim.note = "; ".join(filter(None, ["by rung: " + ", ".join(by_rung) if by_rung else "",
                                         "trained longer: " + ", ".join(longer) if longer else ""]))
    return claim


def scale_claims(t, pub, protocol) -> list[Claim]:
    """Every ladder row of the ledger: the trends (not testable without a ladder), then each check's smallest
    rung (only with one)."""
    rows = [check(t, pub, protocol) for check in TRENDS]
    if table_of(t, "ladder_seeds").empty:
        return rows
    checked = table_of(t, "ladder_claims")
    if not checked.empty:
        rows += [smallest_rung(checked, check) for check in dict.fromkeys(checked.check)]  # the ledger's order
    return rows
