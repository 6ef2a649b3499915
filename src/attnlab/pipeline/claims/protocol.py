"""The protocol a post's number was made at, as preconditions a check tests on this build's tables.

The posts ran each variant at its own swept LR, trained to 12,000 steps. A
build that differs can still measure the same quantity, but its verdict is
no stronger than its protocol: when a precondition fails, the check's verdict
is *inconclusive at <protocol>*, it names what failed, and it says which way
the data at this protocol lean. Each check lists the preconditions its
claim's number rests on (its Rule):

- OWN_BEST_LR: each variant compared trains at its own best sweep LR (its
  contest LR is `auto`, or equals the sweep's best);
- INSIDE_GRID: that best LR is not at the edge of the variant's sweep grid,
  where a better LR may lie beyond it;
- PLATEAU: no cell read is still improving (runs.csv's `improving`: the last
  fifth of its training lowered its best loss by more than half a percent,
  attnlab.pipeline.tables.runs);
- LAYERS: enough layers to tell early from deep ones (four: two on each side);
- SAME_LR: the cells compared share one LR (what an ablation or a mechanism
  claim needs); tested for every rule that declares it.

Every rule declares how its variants are paired (`pairing`): SHARED_LR (one
LR for all: an ablation, a mechanism), OWN_LR (each variant at its own tuned
LR: "which is better as tuned"), or SINGLE (one variant, or a quantity read
across LRs on purpose). A comparison whose cells break its declaration is
refused (claims.common.at_protocol: not testable here, no lean from mixed
LRs), and what would decide it is named. An LR is one LR by the cell key's
rule everywhere (attnlab.core.bundle_format.format_lr).
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

import pandas as pd

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.claims.words import Words
from attnlab.pipeline.ground.contract import READING
from attnlab.pipeline.ground.formatting import lr_text
from attnlab.pipeline.tables.runs import LATE_SHARE, PLATEAU_TOLERANCE

OWN_BEST_LR = "each variant at its own best sweep LR"
INSIDE_GRID = "that LR inside its sweep grid"
PLATEAU = "cells trained to a plateau"
LAYERS = "at least four layers"
SAME_LR = "the compared cells at one shared LR"
PRECONDITIONS = (OWN_BEST_LR, INSIDE_GRID, PLATEAU, LAYERS, SAME_LR)
SHARED_LR = "at one shared LR"  # an ablation or a mechanism: every variant at the same LR
OWN_LR = "each at its own tuned LR"  # which is better as tuned: each variant at its own best sweep LR
SINGLE = "one variant (no pairing across variants)"  # or a quantity read across LRs on purpose (a band)
PAIRINGS = (SHARED_LR, OWN_LR, SINGLE)
# What a claim about trained models needs of a build: the published protocol's own-LR, in-grid, plateau cells.
TRAINED = (OWN_BEST_LR, INSIDE_GRID, PLATEAU)
MIN_LAYERS = 4  # two early and two deep layers: with one on each side, depth is one layer's own effect
# What would meet each precondition, with the setting or config that provides it: the resolution of a row held
# back names it for every precondition that failed (claims.common.at_protocol).
REMEDIES = {
    OWN_BEST_LR: "each variant at its own best sweep LR (contest.lr: auto)",
    INSIDE_GRID: "a sweep extended past its grid's edge until the best LR is inside it (sweep.extend: N)",
    PLATEAU: "every cell trained to its plateau (train.plateau; config/settle.yaml on a CPU, config/paper.yaml "
             "on a GPU)",
    LAYERS: f"a model of at least {MIN_LAYERS} layers (model.layers; config/paper.yaml has 6)",
    SAME_LR: "the compared variants' cells at one LR over two or more seeds (a contest giving them one LR, or a "
             "study training them at one)",
}


@dataclass(frozen=True)
class Rule:
    """A check written from its claim: the source's words (attnlab.pipeline.claims.words), then this project's
    reading of them: the quantity that would come out differently were the claim false, the threshold and where
    each edge of it comes from, and the preconditions of the claim's protocol."""

    words: Words
    quantity: str
    threshold: str
    source: str  # where the threshold's edges come from: the post's words, its own figures, or this project
    needs: tuple[str, ...] = ()
    _: KW_ONLY
    pairing: str  # how its variants are paired (PAIRINGS): every rule declares it, none by default

    def __post_init__(self):
        if self.pairing not in PAIRINGS:
            raise ValueError(f"a rule's pairing is one of {PAIRINGS}, not {self.pairing!r}")
        if self.pairing == SHARED_LR and OWN_BEST_LR in self.needs:
            raise ValueError("a rule at one shared LR cannot also need each variant at its own best LR")
        if self.pairing == OWN_LR and OWN_BEST_LR not in self.needs:
            raise ValueError("a rule comparing variants as tuned needs OWN_BEST_LR among its preconditions")

    def quote(self) -> str:
        """The ledger's quote column: the words, verbatim, with their section."""
        return self.words.cited()

    def text(self) -> str:
        """The ledger's check column: this project's reading, in one line."""
        needs = "; ".join(self.needs) if self.needs else "none (no training protocol enters it)"
        return (f"{READING}: measured: {self.quantity}; threshold: {self.threshold}; its edges: {self.source}; "
                f"paired: {self.pairing}; needs: {needs}")


@dataclass(frozen=True)
class Condition:
    name: str
    met: bool
    detail: str


def _best_lr_rows(t) -> pd.DataFrame:
    best = t.get("best_lr")
    return best.set_index("variant") if best is not None and not best.empty else pd.DataFrame()


def _contest_rows(t) -> pd.DataFrame:
    contest = t.get("contest")
    return contest.set_index("variant") if contest is not None and not contest.empty else pd.DataFrame()


def own_best_lr(t, variants) -> Condition:
    """Each variant's contest LR is its sweep's best."""
    best, contest = _best_lr_rows(t), _contest_rows(t)
    off, shown = [], []
    for v in variants:
        if v not in contest.index:
            continue
        lr = format_lr(contest.loc[v, "lr"])
        if v not in best.index:
            off.append(f"{v} has no sweep to choose its LR")
            continue
        chosen = format_lr(best.loc[v, "best_lr"])
        shown.append(f"{v} {lr_text(lr)}")
        if chosen != lr:
            off.append(f"{v} at {lr_text(lr)}, its sweep's best is {lr_text(chosen)}")
    if off:
        return Condition(OWN_BEST_LR, False, "; ".join(off))
    return Condition(OWN_BEST_LR, True, ", ".join(shown) + (" (each its sweep's best)" if shown else ""))


def inside_grid(t, variants) -> Condition:
    """No compared variant's best LR sits at the edge of its own sweep grid."""
    best = _best_lr_rows(t)
    edges = []
    for v in variants:
        if v in best.index and "lr_edge" in best and isinstance(best.loc[v, "lr_edge"], str) and best.loc[v, "lr_edge"]:
            edge = best.loc[v, "lr_edge"]
            where = "the only LR of its sweep" if edge == "only" else f"the {edge} LR of its sweep grid"
            added, limit = _count(best, v, "lrs_added"), _count(best, v, "extend_limit")
            if limit and added >= limit:
                where += f", which its sweep extended by {added} LR{'s' * (added > 1)}, the limit (sweep.extend)"
            edges.append(f"{v}'s best {lr_text(best.loc[v, 'best_lr'])} is {where}")
    if edges:
        return Condition(INSIDE_GRID, False, "; ".join(edges) + ": a better LR may lie beyond it")
    added = {v: _count(best, v, "lrs_added") for v in variants if v in best.index}
    extended = "; ".join(f"{v}'s sweep extended by {n} LR{'s' * (n > 1)} past its grid's edge"
                         for v, n in added.items() if n)
    return Condition(INSIDE_GRID, True, "every best LR has sweep LRs on both sides"
                     + (f" ({extended})" if extended else ""))


def _count(best: pd.DataFrame, variant: str, column: str) -> int:
    """A count of best_lr.csv's (lrs_added, extend_limit), 0 where the table has none (one made before them)."""
    return int(best.loc[variant, column]) if column in best and pd.notna(best.loc[variant, column]) else 0


def plateau(t, variants, cells="contest") -> Condition:
    """No cell the check reads is still improving: `cells` is 'contest' (the variants' contest cells), 'sweep'
    (their sweep cells) or an LR (their cells at that LR, whatever study trained them)."""
    runs = t.get("runs")
    if runs is None or runs.empty or "improving" not in runs:
        return Condition(PLATEAU, True, "no curve to tell (assumed)")
    rows = runs[runs.variant.isin(list(variants))]
    if cells == "sweep":
        rows = rows[rows.study.astype(str).str.contains("sweep")] if "study" in rows else rows
    elif not isinstance(cells, str):
        rows = rows[rows.lr.map(format_lr) == format_lr(cells)]
    else:
        contest = _contest_rows(t)
        keep = [format_lr(lr) == format_lr(contest.loc[v, "lr"]) if v in contest.index else False
                for v, lr in zip(rows.variant, rows.lr)]
        rows = rows[keep]
    return cells_plateau(rows)


def cells_plateau(rows: pd.DataFrame, what: str = "cells") -> Condition:
    """PLATEAU over these cells (a table with `improving` and `late_gain`: runs.csv, ladder_seeds.csv); a
    diverged cell is no evidence either way."""
    if "improving" not in rows:
        return Condition(PLATEAU, True, "no curve to tell (assumed)")
    if "diverged" in rows:
        rows = rows[~rows.diverged.eq(True)]
    if rows.empty:
        return Condition(PLATEAU, True, f"no {what} to tell")
    unknown = int(rows.improving.isna().sum())
    improving = rows[rows.improving.eq(True)]
    rule = f"more than {PLATEAU_TOLERANCE:.1%} gained over the last {LATE_SHARE:.0%} of training"
    if len(improving):
        gain = float(improving.late_gain.median())
        return Condition(PLATEAU, False, f"{len(improving)} of {len(rows)} {what} still improving ({rule}; median "
                                         f"{gain:.1%})")
    return Condition(PLATEAU, True, f"none of {len(rows)} {what} still improving ({rule})"
                     + (f"; {unknown} without a curve to tell" if unknown else ""))


def layers(n_layers: int) -> Condition:
    return Condition(LAYERS, n_layers >= MIN_LAYERS, f"{n_layers} layer{'s' if n_layers != 1 else ''}")


def same_lr(t, variants, cells="contest") -> Condition:
    """The compared variants' cells share one LR: their contest LRs (cells 'contest') by the cell key's rule, or
    the one LR a matched reading chose (cells an LR)."""
    if not isinstance(cells, str):
        return Condition(SAME_LR, True, f"all at {lr_text(format_lr(cells))}")
    contest = _contest_rows(t)
    lrs = {v: format_lr(contest.loc[v, "lr"]) for v in variants if v in contest.index}
    if len(set(lrs.values())) <= 1:
        return Condition(SAME_LR, True, f"all at {lr_text(next(iter(lrs.values())))}" if lrs else "no cells")
    return Condition(SAME_LR, False, ", ".join(f"{v} at {lr_text(lr)}" for v, lr in lrs.items())
                     + ": their contest LRs differ")


def conditions(t, rule: Rule, variants, cells: str = "contest") -> list[Condition]:
    """The rule's preconditions tested on this build's tables for these variants (LAYERS is the caller's); a rule
    at one shared LR is always tested for it (SAME_LR), whatever else it needs."""
    tests = {OWN_BEST_LR: lambda: own_best_lr(t, variants), INSIDE_GRID: lambda: inside_grid(t, variants),
             PLATEAU: lambda: plateau(t, variants, cells)}
    found = [tests[name]() for name in rule.needs if name in tests]
    return found + ([same_lr(t, variants, cells)] if rule.pairing == SHARED_LR else [])


def failed(found: list[Condition]) -> list[Condition]:
    return [c for c in found if not c.met]


def summary(found: list[Condition]) -> str:
    """'failed: cells trained to a plateau (19 of 20 cells still improving ...); met: ...'."""
    bad = [f"{c.name} ({c.detail})" for c in found if not c.met]
    good = [f"{c.name} ({c.detail})" for c in found if c.met]
    return "; ".join(filter(None, ["failed: " + "; ".join(bad) if bad else "",
                                   "met: " + "; ".join(good) if good else ""]))
