"""What every claim of the ledger shares: the Claim row, the posts it cites, how a verdict is judged, and how a
check reads the tables (by the table contract's names and columns; an LR by its exact text)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.ground import intervals, statistics, verdicts
from attnlab.pipeline.claims import protocol as preconditions
from attnlab.pipeline.ground import contract
from attnlab.pipeline.ground.formatting import lr_text  # noqa: F401  (re-exported: how the checks write an LR)
from attnlab.pipeline.ground.published import published  # noqa: F401  (re-exported: the ledger's reading of the posts)
from attnlab.pipeline.ground.estimate_text import interval_text
from attnlab.pipeline.ground.statistics import Estimate
from attnlab.pipeline.ground.verdicts import (CONTRADICTED, CONTRADICTED_BY_CONSTRUCTION, HOLDS, HOLDS_BY_CONSTRUCTION,
                                              INCONCLUSIVE, Verdict, inconclusive_at, not_testable)

# Where each claim comes from: the ledger's source column. How the writeup cites each is published.yaml's
# `sources`, keyed by these words.
KERNEL_POST = "kernel post"
A3_POST = "A³ post"
LATER_POST = "kernel post series, later post"
BEYOND = "beyond the posts"  # a control no post runs
# The papers behind the catalog's score functions (config/catalog.yaml), one claim each.
STICKBREAKING_PAPER = "stick-breaking attention paper"
SSMAX_PAPER = "Scalable-Softmax paper"
SOFTPICK_PAPER = "Softpick paper"
SELECTIVE_PAPER = "selective attention paper"
COG_PAPER = "Cog attention paper"
SINK_POST = "off-by-one softmax post"
SLAY_PAPER = "SLAY paper"
FOX_PAPER = "forgetting attention paper"
DIFF_PAPER = "differential attention paper"
PAPERS = (STICKBREAKING_PAPER, SSMAX_PAPER, SOFTPICK_PAPER, SELECTIVE_PAPER, COG_PAPER, SINK_POST, SLAY_PAPER,
          FOX_PAPER, DIFF_PAPER)
SOURCES = (KERNEL_POST, A3_POST, LATER_POST, BEYOND, *PAPERS)
KERNELS = ("yat_b", "yat")


@dataclass
class Claim:
    source: str  # which post makes it (SOURCES)
    claim: str  # the claim, named in this project's words (the source's own are `quote`)
    check: str  # this project's reading: what is computed from the tables, the threshold and its edges' source
    measured: str
    published: str
    verdict: str  # one of verdicts.VERDICTS ("not testable at <protocol>", "inconclusive at <protocol>")
    interval: str = ""  # the interval the verdict rests on, or why there is none
    seeds: int = 0  # how many seeds it rests on
    seeds_to_resolve: float | None = None  # inconclusive: about how many seeds would resolve it
    resolution: str = ""  # inconclusive: that, in words; holds or contradicted: how many seeds would make it stable
    protocol: str = ""  # the build's protocol (runs.csv config.name)
    note: str = ""  # conditions: LRs compared, what a published number mixes, what drives a result
    preconditions: str = ""  # the claim's protocol preconditions at this build: which failed, which were met
    lean: str = ""  # off the claim's protocol: what the data at this protocol alone would say
    quote: str = ""  # the source's words, verbatim with their section, or why there are none (claims.words)
    p_value: float = math.nan  # two-sided, settled exactly when at most 0.05 (verdicts.Verdict.p)
    holm: str = ""  # in the build's family (claims.ledger.family): whether the verdict survives Holm's step-down
    p_holm: float = math.nan  # its Holm-adjusted p-value in that family (NaN outside it)
    leaning: str = ""  # not a column: an open verdict's side (verdicts.Verdict.lean), which the lean is made from
    # The verdict as typed values, which every reader of the ledger reads (never the `verdict` text, which is
    # rendered from them by `decide`): its word (verdicts.VERDICTS), whether the build is off the claim's
    # protocol, and what the data alone say (LEAN_SIDES).
    outcome: str = ""
    off_protocol: bool = False
    lean_side: str = ""


LEAN_SIDES = (HOLDS, CONTRADICTED, INCONCLUSIVE)  # the data at this protocol alone: would hold, contradict, or not say


def is_off_protocol(value) -> bool:
    """One cell of the typed `off_protocol` column, in memory (True) or read back from a CSV ('True'); NaN false."""
    return str(value) == "True"


def off_protocol_rows(frame: pd.DataFrame) -> pd.Series:
    """Per row of a ledger or ladder_claims table: whether the build is off its claim's protocol (False where the
    table has no such column)."""
    if "off_protocol" not in frame:
        return pd.Series(False, frame.index)
    return frame.off_protocol.map(is_off_protocol).astype(bool)


def decide(claim: Claim, word: str, protocol: str = "", off_protocol: bool = False) -> Claim:
    """Set the claim's verdict: its typed outcome and the text rendered from it ('not testable at smoke',
    'inconclusive at default' off the claim's protocol, else the word). The one place a verdict is written."""
    if word not in verdicts.VERDICTS:
        raise ValueError(f"a verdict is one of {verdicts.VERDICTS}, not {word!r}")
    claim.outcome, claim.off_protocol = word, off_protocol
    if not off_protocol:  # off it, at_protocol has kept what the data alone say
        claim.lean_side = word if word in LEAN_SIDES else ""
    claim.verdict = (not_testable(protocol) if word == verdicts.NOT_TESTABLE
                     else inconclusive_at(protocol) if off_protocol else word)
    return claim


def judged(claim: Claim, verdict: Verdict, estimates: dict[str, Estimate], fmt=None,
           stability: str = "") -> Claim:
    """The claim with its verdict, its intervals ('label: 95% CI [a, b]' per estimate) and its seeds; a settled
    verdict carries `stability` (how many seeds would make it stable) as its resolution."""
    decide(claim, verdict.word)
    claim.p_value = verdict.p
    shown = []
    for label, e in estimates.items():
        text = interval_text(e, fmt) + (f" ({e.noise})" if e.noise and e.has_interval else "")
        shown.append(f"{label}: {text}" if label else text)
    claim.interval = "; ".join(shown)
    claim.seeds = min((e.n for e in estimates.values()), default=0)
    if verdict.word == INCONCLUSIVE:
        claim.seeds_to_resolve = verdict.seeds_to_resolve
        claim.resolution = verdict.resolution
        leaned(claim, verdict)
    elif stability:
        claim.resolution = stability
    return claim


def leaned(claim: Claim, verdict: Verdict) -> Claim:
    """An open verdict's lean on the claim: which side of the claim its estimate lies (verdicts.Verdict.lean),
    kept for at_protocol and shown as the row's lean."""
    claim.leaning = verdict.lean
    claim.lean = f"open: {verdict.lean}" if verdict.lean else ""
    return claim


def stability_text(estimate: Estimate, *thresholds: float) -> str:
    """'rests on 3 seeds; about 6 would make it stable at the observed spread' (statistics.seeds_for_stability)."""
    if not estimate.has_interval or estimate.n < 2:
        return ""
    needed = statistics.seeds_for_stability(estimate, *thresholds)
    rests = f"rests on {estimate.n} seed{'s' if estimate.n != 1 else ''}"
    if needed is None:
        return f"{rests}; more than {statistics.MAX_SEEDS:,} would be needed to make it stable"
    if math.isinf(needed):
        return f"{rests}; its mean sits on the threshold, so no number of seeds would make it stable"
    if needed <= estimate.n:
        return f"{rests}; stable at the observed spread"
    return f"{rests}; about {int(needed)} would make it stable at the observed spread"


LEANS = {HOLDS: "would hold", CONTRADICTED: "would contradict it", INCONCLUSIVE: "would not resolve it either"}


def at_protocol(claim: Claim, protocol: str, found: list, direction: str = "") -> Claim:
    """A judged claim held to its protocol: when a precondition failed, its verdict becomes 'inconclusive at
    <protocol>', the failed preconditions are named, and what the data alone would say is kept as its lean.
    `direction` says which way and how far a contradiction goes ('softmax wins by more than claimed: +5.0%');
    it is the lean of a contradicted claim, and part of the lean of one off its protocol."""
    claim.preconditions = preconditions.summary(found)
    bad = preconditions.failed(found)
    mixed = [c for c in bad if c.name == preconditions.SAME_LR]
    if mixed:  # a comparison its rule makes at one LR, read across LRs: refused, with no lean from mixed LRs
        return refused(claim, protocol, mixed[0].detail)
    word = claim.outcome
    if not bad:
        if word == CONTRADICTED and direction:
            claim.lean = direction
        return claim
    stability = claim.resolution if word in (HOLDS, CONTRADICTED) else ""  # how many seeds the lean rests on
    claim.lean = f"at this protocol alone the data {LEANS.get(word, 'say: ' + word)}"
    if word == INCONCLUSIVE and claim.leaning:  # which side its own numbers lie on, in the one wording
        claim.lean += f": {claim.leaning}"
    if word == CONTRADICTED and direction:
        claim.lean += f" ({direction})"
    claim.lean_side = word if word in LEAN_SIDES else ""
    decide(claim, INCONCLUSIVE, protocol, off_protocol=True)
    claim.p_value = math.nan  # no experiment decides it here: a p-value is settled exactly when at most 0.05
    claim.seeds_to_resolve = None
    claim.resolution = "; ".join(filter(None, ["off the claim's protocol: " + "; ".join(c.name for c in bad),
                                               claim.lean, stability, "what would decide it: " + "; ".join(
                                                   preconditions.REMEDIES.get(c.name, c.name) for c in bad)]))
    return claim


def refused(claim: Claim, protocol: str, detail: str) -> Claim:
    """A comparison its rule declares at one shared LR whose cells ran at different LRs: not testable at this
    protocol. What the cells gave moves to the note, marked as no evidence for the claim; no p-value, no lean;
    the resolution names what would test it."""
    across = f"read across LRs, no evidence for this claim: {claim.measured}" if claim.measured != "–" else ""
    claim.note = "; ".join(filter(None, [across, claim.note]))
    claim.measured, claim.lean, claim.p_value, claim.seeds_to_resolve = "–", "", math.nan, None
    claim.resolution = "what would test it: " + preconditions.REMEDIES[preconditions.SAME_LR]
    return untestable(claim, protocol, f"the claim compares at one shared LR; {detail}")


def untestable(claim: Claim, protocol: str, why: str) -> Claim:
    """Not testable at this protocol, and why (no interval: nothing was compared)."""
    decide(claim, verdicts.NOT_TESTABLE, protocol)
    claim.interval = f"none: {why}"
    return claim


def constructed(claim: Claim, seeds: int, why: str, holds: bool) -> Claim:
    """A claim the model's construction settles; the check shows this build's code keeps to it. Its verdict is
    'holds by construction' or 'contradicted by construction', never counted with the experiments."""
    decide(claim, HOLDS_BY_CONSTRUCTION if holds else CONTRADICTED_BY_CONSTRUCTION)
    claim.interval = f"none needed: {why}"
    claim.seeds = seeds
    return claim


def judged_by_count(claim: Claim, k: int, n: int, event: str, share: float = 0.5) -> Claim:
    """A claim about an event (a divergence): k of n seeds, judged by the exact binomial interval of the share
    against `share` (verdicts.count_verdict), never as a mean."""
    verdict = verdicts.count_verdict(k, n, share)
    low, high = statistics.count_interval(k, n)
    decide(claim, verdict.word)
    claim.p_value = verdict.p
    claim.seeds = n
    claim.interval = (f"share {intervals.CONFIDENCE:.0%} CI [{low:.2f}, {high:.2f}] (exact binomial, {k} of {n})"
                      if n else f"none: {statistics.NO_SEED}")
    if verdict.word == INCONCLUSIVE:
        leaned(claim, verdict)
        claim.seeds_to_resolve = verdict.seeds_to_resolve
        needed = verdict.seeds_to_resolve
        claim.resolution = (f"about {int(needed)} seeds at the same rate would resolve it"
                            if needed is not None and math.isfinite(needed) else verdict.resolution)
    return claim


def table_of(t, name) -> pd.DataFrame:
    """A table of the build, empty where the build has none."""
    table = t.get(name)
    return table if table is not None else pd.DataFrame()


def contest_row(t, variant) -> pd.Series | None:
    contest = table_of(t, "contest")
    rows = contest[contest.variant == variant] if "variant" in contest else contest
    return rows.iloc[0] if len(rows) else None


def contest_lr_text(t, variant) -> str:
    row = contest_row(t, variant)
    if row is None:
        return "?"
    return lr_text(row.lr, str(row.get("lr_choice", "")))


def contest_losses(t, variant) -> dict[int, float]:
    """seed -> best validation loss of a variant's contest cells (its contest LR, the contest's seeds)."""
    return contest_values(t, variant, "best_val_loss")


def contest_values(t, variant, column: str) -> dict[int, float]:
    """seed -> one runs.csv column of a variant's contest cells (its contest LR, the contest's seeds); seeds
    without that value are left out."""
    row, runs = contest_row(t, variant), table_of(t, "runs")
    if row is None or runs.empty or column not in runs:
        return {}
    seeds = contract.seeds_of(row.seeds) if "seeds" in row and pd.notna(row.seeds) else runs.seed.unique()
    cells = contract.contest_rows(runs, variant, row.lr, seeds)
    return {int(s): float(v) for s, v in zip(cells.seed, cells[column]) if pd.notna(v)}


def matched_lr_values(runs: pd.DataFrame, column: str, a: str, b: str) -> dict[float, tuple[dict, dict]]:
    """LR -> (seed -> a's value, seed -> b's value) at every LR where both variants have a healthy cell of one
    seed, read from runs.csv's `column` over every cell (sweep, contest and study alike): a comparison at one
    shared LR. LRs are grouped by the cell key's rule (format_lr); diverged cells and missing values are left
    out, and only seeds both variants ran at that LR count, so no LR and no seed is mixed."""
    needed = {"variant", "lr", "seed", column}
    if runs is None or runs.empty or not needed <= set(runs.columns):
        return {}
    cells = runs[runs.variant.isin([a, b])]
    if "diverged" in cells:
        cells = cells[~cells.diverged.fillna(False).astype(bool)]
    cells = cells[np.isfinite(pd.to_numeric(cells[column], errors="coerce").astype(float))]
    found = {}
    for lr_name, at_lr in sorted(cells.groupby(cells.lr.map(format_lr)), key=lambda group: float(group[0])):
        first = at_lr[at_lr.variant == a].groupby("seed")[column].max()
        second = at_lr[at_lr.variant == b].groupby("seed")[column].max()
        shared = sorted(set(first.index) & set(second.index))
        if shared:
            found[float(lr_name)] = ({int(s): float(first[s]) for s in shared},
                                     {int(s): float(second[s]) for s in shared})
    return found


def primary_lr(by_lr: dict[float, Estimate], near: float) -> float:
    """The LR a matched reading is judged at, named by a rule fixed before the data: the one where both variants
    ran the most seeds, ties to the LR nearest `near` (on the log scale)."""
    return max(by_lr, key=lambda lr: (by_lr[lr].n, -abs(math.log(lr / float(near)))))


def per_seed(frame: pd.DataFrame, variant: str, column: str, how: str = "first") -> dict[int, float]:
    """seed -> one value of a variant in a per-seed table."""
    if frame.empty or "variant" not in frame:
        return {}
    cells = frame[frame.variant == variant]
    return {int(s): float(v) for s, v in cells.groupby("seed")[column].agg(how).items()}


def pct(x: float) -> str:
    return f"{x - 1:+.2%}"


def ratio(x: float) -> str:
    return f"{x:,.3g}×"
