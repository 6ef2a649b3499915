"""The ledger: every check of every post over one build's tables, in the order the writeup reads them.

`python -m attnlab.pipeline.claims --tables DIR --out STEM` writes the ledger as
STEM.csv (one row per claim, a `verdict` column), .md and .tex.
"""

from __future__ import annotations

import argparse
import contextlib
import json
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from attnlab.pipeline.ground import contract, intervals, verdicts
from attnlab.pipeline.ground.design import Design
from attnlab.pipeline.ground import build_manifest
from attnlab.pipeline.claims.a3_post import (a3_composes, a3_compute_overhead_small, a3_early_layers_softer,
                                             a3_overhead_small, a3_starts_at_softmax, a3_starts_close,
                                             a3_valid_distributions)
from attnlab.pipeline.claims.beyond import a3_gain_is_per_token, softmax_against_itself
from attnlab.pipeline.claims.common import A3_POST, KERNEL_POST, is_off_protocol, published
from attnlab.pipeline.claims.diff_paper import CHECKS as DIFF_CHECKS
from attnlab.pipeline.claims.kernel_post import kernel_gap, kernel_lr_band, softmax_dies_at_high_lr
from attnlab.pipeline.claims.kernel_post_scale import ablation_untames, kernel_scores_five_orders, kernel_scores_larger
from attnlab.pipeline.claims.kernel_post_scores import (ablation_barely_moves_entropy, kernel_more_diffuse,
                                                        learned_scalars_specialise, mass_auroc_null)
from attnlab.pipeline.claims.later_post import softmax_over_kernel
from attnlab.pipeline.claims.ladder_rows import scale_claims
from attnlab.pipeline.claims.length_papers import CHECKS as LENGTH_CHECKS
from attnlab.pipeline.claims.score_papers import CHECKS as PAPER_CHECKS
from attnlab.pipeline.claims.slay_paper import CHECKS as SLAY_CHECKS
from attnlab.pipeline.tables.display import display, write_table

CHECKS = (kernel_gap, softmax_dies_at_high_lr, kernel_lr_band, kernel_scores_five_orders, kernel_scores_larger,
          ablation_untames, learned_scalars_specialise, mass_auroc_null, kernel_more_diffuse,
          ablation_barely_moves_entropy, a3_valid_distributions, a3_starts_at_softmax, a3_starts_close,
          a3_early_layers_softer, a3_overhead_small,
          a3_compute_overhead_small, a3_composes, softmax_over_kernel, a3_gain_is_per_token,
          softmax_against_itself, *LENGTH_CHECKS, *PAPER_CHECKS, *SLAY_CHECKS, *DIFF_CHECKS)


def load_tables(tables_dir: Path, optional: list[str] | None = None) -> dict[str, pd.DataFrame]:
    """Every table the ledger reads; the composability and ladder tables only where this build ran that study:
    those `optional` names (as the ledger rule passes them), else those the folder's build lists
    (attnlab.pipeline.ground.build_manifest), never a table an earlier config left in the folder."""
    tables = {name: _read(Path(tables_dir) / f"{name}.csv") for name in contract.COLLECTED}
    for name in contract.LEDGER_OPTIONAL:
        listed = build_manifest.has_table(tables_dir, name) if optional is None else name in optional
        if listed and (Path(tables_dir) / f"{name}.csv").is_file():
            tables[name] = _read(Path(tables_dir) / f"{name}.csv")
    return tables


def _read(path: Path) -> pd.DataFrame:
    """A table as written. pandas' default parser reads every float back exactly (pandas 3 deprecated the
    `float_precision` switch for that reason), so an LR keeps its identity (contract.at_lr)."""
    return pd.read_csv(path)


def build_protocol(tables: dict[str, pd.DataFrame]) -> str:
    """The config name every cell ran ('mixed: a, b' if several, 'unknown' without runs)."""
    runs = tables.get("runs")
    if runs is None or runs.empty or "config.name" not in runs:
        return "unknown"
    names = sorted(set(runs["config.name"].dropna().astype(str)))
    if not names:
        return "unknown"
    return names[0] if len(names) == 1 else "mixed: " + ", ".join(names)


def ledger(tables: dict[str, pd.DataFrame], pub: dict | None = None) -> pd.DataFrame:
    """One row per check (CHECKS' order), then the scale ladder's rows where the build has a ladder
    (attnlab.pipeline.claims.ladder_rows), with the contract's ledger columns."""
    pub = pub or published()
    protocol = build_protocol(tables)
    diverged = diverged_note(tables)
    reading, rounds_note = design_reading(tables)
    rows = []
    # Where the build added seeds under a design, every interval is the one the rule read at its last look.
    with reading:
        for check in CHECKS:
            with intervals.fixed() if check in OFF_CONTEST else contextlib.nullcontext():
                claim = check(tables, pub, protocol)
            claim.protocol = protocol
            empirical = claim.outcome not in (*verdicts.BY_CONSTRUCTION, verdicts.NOT_TESTABLE)
            notes = [diverged, rounds_note] if empirical else []
            claim.note = "; ".join(filter(None, [claim.note, *notes]))
            rows.append(asdict(claim))
        with intervals.fixed():  # the ladder's rungs and seeds are its own, fixed in the config
            ladder_rows = scale_claims(tables, pub, protocol)
        for claim in ladder_rows:  # each ladder row names its own protocol
            claim.protocol = claim.protocol or protocol
            rows.append(asdict(claim))
    table = pd.DataFrame(rows, columns=contract.columns("ledger"))
    members = family(table, tables.get("contest"))
    claims = members[members.kind == CLAIM].set_index("member")
    table["p_holm"] = [float(claims.p_holm[i]) if i in claims.index else float("nan") for i in table.index]
    table["holm"] = [("" if i not in claims.index else SURVIVES if claims.survives[i] else FALLS)
                     for i in table.index]
    return table


# Checks over values no look of a contest design added (sweep seeds, timing rounds, cells at one matched LR whatever
# study trained them): fixed-seed t-intervals always.
OFF_CONTEST = (softmax_dies_at_high_lr, kernel_lr_band, a3_compute_overhead_small, ablation_untames,
               ablation_barely_moves_entropy)
POSTS = (KERNEL_POST, A3_POST)  # the two posts (the abstract counts their claims apart)
SURVIVES, FALLS = "survives Holm", "does not survive Holm"
CLAIM, CONTEST = "claim", "contest"  # the two kinds of member of the family
FAMILY_ALPHA = 1 - intervals.CONFIDENCE
DECIDED = (verdicts.HOLDS, verdicts.CONTRADICTED, verdicts.INCONCLUSIVE)  # at this build's protocol, by experiment


def family(ledger_table: pd.DataFrame, contest: pd.DataFrame | None) -> pd.DataFrame:
    """Holm's family of this build: every ledger row an experiment judges at this build's protocol (holds,
    contradicted or inconclusive, whatever its source, with a p-value) and every contest comparison with the
    baseline (contest.csv's p_vs_softmax), one step-down at FAMILY_ALPHA over all of them. A design's
    comparisons enter through their repeated p-values (verdicts.p_value), so they are members like any other.
    Left out: a row off its claim's protocol, not testable or settled by construction (no experiment decides
    it here), a control whose verdict is a non-rejection (the A/A row: no p-value), and one seed alone (no
    test). One row per member: kind (CLAIM, CONTEST), member (the ledger row's index, or the variant), label,
    p_value, p_holm (Holm's adjusted p), survives (p_holm at most FAMILY_ALPHA)."""
    rows = []
    for i, r in ledger_table.iterrows():
        p = pd.to_numeric(r.get("p_value"), errors="coerce")
        if str(r.outcome) in DECIDED and not is_off_protocol(r.off_protocol) and pd.notna(p):
            rows.append((CLAIM, i, str(r.claim), float(p)))
    if contest is not None and not contest.empty and "p_vs_softmax" in contest:
        for r in contest.itertuples():
            if r.variant != contract.BASELINE and pd.notna(r.p_vs_softmax):
                rows.append((CONTEST, r.variant, f"{r.variant} against {contract.BASELINE} (contest)",
                             float(r.p_vs_softmax)))
    members = pd.DataFrame(rows, columns=["kind", "member", "label", "p_value"])
    adjusted = verdicts.holm_adjusted(dict(enumerate(members.p_value)))
    members["p_holm"] = [adjusted[k] for k in range(len(members))]
    members["survives"] = members.p_holm <= FAMILY_ALPHA
    return members


def surviving_comparisons(ledger_table: pd.DataFrame | None, contest: pd.DataFrame) -> set[str]:
    """The variants whose contest comparison with the baseline survives the build's family (`family`, with the
    ledger's tests where there is a ledger, else over the contest's comparisons alone): the only ones a sentence
    may call better or worse."""
    if ledger_table is None:
        ledger_table = pd.DataFrame(columns=["outcome", "off_protocol", "p_value", "claim"])
    members = family(ledger_table, contest)
    return set(members[(members.kind == CONTEST) & members.survives].member)


def design_reading(tables: dict[str, pd.DataFrame]):
    """The context every interval is computed in and a note naming the design, where the build added contest
    seeds under a design (its seed_rounds table: a group-sequential look's repeated interval, or the confidence
    sequence), else (no context, '')."""
    rounds = tables.get("seed_rounds")
    if rounds is None or rounds.empty:
        return contextlib.nullcontext(), ""
    last = rounds[rounds["round"] == rounds["round"].max()].iloc[0]
    ended = {"out of reach": "what was left undecided out of the budget's reach"}.get(last.outcome, last.outcome)
    note = (f"contest seeds added under the design declared in the config, {int(last.n_seeds)} of a budget of "
            f"{int(last.max_seeds)} ({ended} after round {int(last['round'])}); the design: {last.method}")
    return Design.from_json(json.loads(last.design)).reading(), note


def diverged_note(tables: dict[str, pd.DataFrame]) -> str:
    """'contest cells that diverged and enter no comparison: yat 2 of 3 (at step 41, 57)', '' without any."""
    contest, runs = tables.get("contest"), tables.get("runs")
    if contest is None or contest.empty or "n_diverged" not in contest or not contest.n_diverged.fillna(0).any():
        return ""
    parts = []
    for row in contest[contest.n_diverged.fillna(0) > 0].itertuples():
        steps = ""
        if runs is not None and {"diverged", "diverged_step"} <= set(runs.columns):
            cells = runs[(runs.variant == row.variant) & runs.diverged.fillna(False).astype(bool)
                         & contract.at_lr(runs, row.lr)]
            steps = ", ".join(str(int(s)) for s in cells.diverged_step.dropna())
        parts.append(f"{row.variant} {int(row.n_diverged)} of {int(row.n_seeds)}"
                     + (f" (at step {steps})" if steps else ""))
    return "contest cells that diverged and enter no comparison: " + "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Print (and write) the claims ledger of a build.")
    parser.add_argument("--tables", type=Path, default=Path("results/tables"))
    parser.add_argument("--out", type=Path, default=None,
                        help="write the ledger as OUT.csv, OUT.md and OUT.tex (e.g. results/tables/ledger)")
    parser.add_argument("--notes", action="store_true", help="also print each claim's note")
    parser.add_argument("--optional", nargs="*", default=None, choices=contract.LEDGER_OPTIONAL,
                        help="the optional tables this build has (default: those its build.json lists)")
    args = parser.parse_args(argv)
    table = ledger(load_tables(args.tables, args.optional))
    if args.out is not None:
        write_table(table, args.out, display("ledger", table))
    columns = ["claim", "measured", "verdict", "interval", "seeds"] + (["note"] if args.notes else [])
    with pd.option_context("display.max_colwidth", 120, "display.width", 400):
        print(table[columns].to_string(index=False))
    return 0
