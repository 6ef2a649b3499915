"""The writeup's contest, learning-rate sweep and best-LR sections: the published numbers beside their tables,
and their prose.

Each table is shown as its .md shows it (attnlab.pipeline.tables.display);
each variant is compared with the baseline seed by seed (the contest table's
paired columns, from attnlab.pipeline.ground.statistics); the published numbers stand
beside this build's only when the build ran the published protocol.
"""

from __future__ import annotations

import pandas as pd

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.ground import intervals, statistics
from attnlab.pipeline.claims import published
from attnlab.pipeline.claims.ledger import surviving_comparisons
from attnlab.pipeline.ground.contract import BASELINE, seeds_of
from attnlab.pipeline.ground.design import FIXED, Design
from attnlab.pipeline.ground.rounds import ENTROPY, LARGEST_SCORE, LOSS
from attnlab.pipeline.ground.formatting import MISSING, finite, interval, mean_pm, percent, plural, signed
from attnlab.pipeline.tables import display
from attnlab.pipeline.tables.runs import LATE_SHARE, PLATEAU_TOLERANCE

LEVEL = f"{intervals.CONFIDENCE:.0%}"


def ordered(variants, contest: pd.DataFrame) -> list[str]:
    """The variants in the contest table's order, any others after them."""
    present = list(dict.fromkeys(variants))
    return [v for v in contest.variant if v in present] + [v for v in present if v not in set(contest.variant)]


def contest_display(contest: pd.DataFrame, comparable: bool) -> tuple[pd.DataFrame, list[tuple[str, int]]]:
    """The contest table as contest.md shows it, its spanning headers, and the published numbers of the same
    variant and LR beside it when the build ran the published protocol."""
    shown = display.shown("contest", contest)
    # the paired columns (the difference with its interval, the wins, the gap) start at the difference, after
    # the losses (the posts' measure, the held-out half, the whole split, each where the build has it)
    first = next(i for i, column in enumerate(shown.columns) if column.startswith(f"− {BASELINE}"))
    groups = [("", first), (f"paired by seed with {BASELINE}", 3), ("", len(shown.columns) - first - 3)]
    if comparable:
        groups = [("this build" if not label else f"this build, {label}", span) for label, span in groups]
        pub = {(p["variant"], format_lr(p["lr"])): p for p in published()["contest"]}
        rows = [pub.get((v, format_lr(lr))) for v, lr in zip(contest.variant, contest.lr)]
        shown["published (nats/char)"] = [f"{p['mean']:.4f} ± {p['std']:.4f}" if p else MISSING for p in rows]
        groups.append(("published, same variant and LR", 1))
    return shown, groups


def contest_results(contest: pd.DataFrame, protocol_name: str, ledger: pd.DataFrame | None = None) -> str:
    """The contest in words: the ranking by mean, then each paired difference from the baseline, called better or
    worse only where it survives Holm's step-down over the build's family (claims.ledger.family, with `ledger`'s
    tests; the contest's comparisons alone without it)."""
    ranked = contest.sort_values("best_val_mean").reset_index(drop=True)
    losses = dict(zip(contest.variant, mean_pm(contest.best_val_mean, contest.best_val_std)))
    winner = ranked.iloc[0]
    seeds = sorted(set(int(n) for n in contest.n_seeds))
    per_variant = plural(seeds[0], "seed") + " per variant" if len(seeds) == 1 else "seeds per variant as listed"
    text = (f"At the `{protocol_name}` protocol ({per_variant}), **{winner.variant}** has the lowest "
            f"best validation loss, {losses[winner.variant]} nats/char")
    if len(ranked) > 1:
        text += "; then " + ", ".join(f"{r.variant} {losses[r.variant]}" for r in ranked.iloc[1:].itertuples())
    text += "."
    held = surviving_comparisons(ledger, contest)
    parts = [comparison(row, row.variant in held) for row in ranked.itertuples()
             if row.variant != BASELINE and finite(row.delta_vs_softmax)]
    if parts:
        text += (f" Paired by seed with {BASELINE} (each variant at its own contest LR, over the seeds both have; "
                 f"below 0 beats {BASELINE}): " + "; ".join(parts) + ".")
    diverged = contest[contest.n_diverged > 0]
    if len(diverged):
        text += " Diverged contest seeds: " + ", ".join(
            f"{r.variant} {int(r.n_diverged)}" for r in diverged.itertuples()) + "."
    return text


def comparison(row, survives: bool = True) -> str:
    """One contest row against the baseline: 'yat +0.0989 nats (95% interval [...], wins 0/3): <reading>'."""
    text = f"{row.variant} {signed(row.delta_vs_softmax)} nats"
    if finite(row.delta_ci_low) and finite(row.delta_ci_high):
        return text + (f" ({LEVEL} interval {interval(row.delta_ci_low, row.delta_ci_high)}, wins {row.wins}): "
                       f"{reading(row.delta_ci_low, row.delta_ci_high, survives)}")
    return text + f" ({statistics.ONE_SEED})"


def reading(low: float, high: float, survives: bool = True) -> str:
    """What an interval of a difference from the baseline says: better or worse only where the comparison also
    survives Holm's step-down over the build's family."""
    if (high < 0 or low > 0) and not survives:
        return (f"the interval lies {'below' if high < 0 else 'above'} 0 alone, not after Holm's step-down over "
                "the build's family")
    if high < 0:
        return f"the interval lies below 0, better than {BASELINE}"
    if low > 0:
        return f"the interval lies above 0, worse than {BASELINE}"
    return "the interval spans 0, a difference the seeds do not resolve"


def still_improving(runs: pd.DataFrame) -> str:
    """A sentence on the cells still improving when training stopped (runs.csv's `improving`, the plateau rule
    the ledger's preconditions use), and how many reached their best loss at their last evaluation."""
    if runs.empty or "improving" not in runs:
        return ""
    cells = runs[~runs.diverged.fillna(False).astype(bool)] if "diverged" in runs else runs
    improving = int(cells.improving.fillna(False).astype(bool).sum())
    last = ""
    if {"best_step", "config.train.steps"} <= set(cells.columns):
        at_end = int((cells.best_step.astype(float) >= cells["config.train.steps"].astype(float)).sum())
        last = f"; {at_end} of them reached their best validation loss at their last evaluation"
    if not improving:
        return f"None of the {len(cells)} cells that trained was still improving when training stopped{last}."
    gain = float(cells[cells.improving.fillna(False).astype(bool)].late_gain.median()) if "late_gain" in cells else None
    return (f"{improving} of the {len(cells)} cells that trained were still improving when training stopped (their "
            f"last {LATE_SHARE:.0%} of training lowered the best validation loss by more than "
            f"{PLATEAU_TOLERANCE:.1%}" + (f"; the median by {gain:.1%}" if gain is not None else "") + f"){last}. "
            "These rankings are of models that had not finished learning, and the ledger holds back every claim "
            "about trained models.")


# ---- the learning-rate sweep


def sweep_display(sweep: pd.DataFrame, contest: pd.DataFrame,
                  comparable: bool) -> tuple[pd.DataFrame, list[tuple[str, int]]]:
    """lr_sweep.md's LR rows x variant columns, in contest order, the published sweep beside it when comparable."""
    wide = display.shown("lr_sweep", sweep)
    wide = wide[["LR"] + ordered([c for c in wide.columns if c != "LR"], contest)]
    seeds = sweep.seed.nunique()
    label = ("best validation loss at the sweep seed (nats/char)" if seeds == 1
             else f"best validation loss, mean over the {seeds} sweep seeds (nats/char)")
    groups = [("", 1), (label, len(wide.columns) - 1)]
    if comparable:
        values = published()["lr_sweep"]
        for variant, by_lr in values.items():
            at = {format_lr(lr): f"{loss:.4f}" for lr, loss in by_lr.items()}
            wide[f"{variant} "] = [at.get(lr, MISSING) for lr in wide.LR]
        groups.append(("published", len(values)))
    return wide, groups


def sweep_results(sweep: pd.DataFrame, best: pd.DataFrame, contest: pd.DataFrame) -> str:
    """Each variant's best sweep LR (from the best_lr table) and the cells that diverged."""
    seeds = sweep.seed.nunique()
    where = "at the sweep seed" if seeds == 1 else f"mean over the {seeds} sweep seeds"
    rows = best.set_index("variant")
    parts = [f"{v} {format_lr(rows.loc[v].best_lr)} ({rows.loc[v].best_val_mean:.3f})"
             for v in ordered(best.variant, contest)]
    text = f"Best LR of each variant ({where}): {', '.join(parts)}." if parts else "No sweep LR trained cleanly."
    diverged = sweep[sweep.diverged.astype(bool)]
    cells = [f"{r.variant} at LR {format_lr(r.lr)}" + (f" seed {int(r.seed)}" if seeds > 1 else "")
             + (f" at step {int(r.diverged_step)}" if finite(r.diverged_step) else "") for r in diverged.itertuples()]
    text += f" Diverged cells: {', '.join(cells)}." if cells else " No cell diverged."
    lrs = sorted(set(sweep.lr.astype(float)))
    if len(lrs) < 3:
        text += f" With {len(lrs)} LRs ({', '.join(map(format_lr, lrs))}) the sweep only brackets each optimum."
    return text


# ---- each variant at its best sweep LR


def best_lr_results(best: pd.DataFrame) -> str:
    """Where a variant's contest LR is not its best sweep LR, and what that changes against the baseline."""
    if best.empty:
        return "No sweep cells trained, so no variant has a best sweep LR."
    off = [r for r in best.itertuples() if finite(r.contest_lr) and format_lr(r.best_lr) != format_lr(r.contest_lr)]
    seeds = int(best.n_sweep_seeds.max())
    text = (f"The sweep ran {plural(seeds, 'seed')} per LR, so "
            + (f"these comparisons have no interval ({statistics.ONE_SEED})." if seeds == 1
               else "these comparisons carry intervals over the sweep seeds."))
    if not off:
        return text + " Every variant's contest LR is its best sweep LR."

    def moved(r):
        lrs = f"{r.variant} (contest {format_lr(r.contest_lr)}, best {format_lr(r.best_lr)}"
        if r.variant == BASELINE:
            return lrs + ")"
        return (f"{lrs}: gap to {BASELINE} {percent(r.contest_gap_vs_softmax)} in the contest, "
                f"{percent(r.gap_vs_softmax)} with each at its best LR)")
    return (text + " The contest runs these variants away from their best sweep LR: " + "; ".join(map(moved, off))
            + f". A claim about a gap to {BASELINE} can turn on that choice.")


def rounds_text(rounds: pd.DataFrame) -> str:
    """How many seeds the contest grew to and why: each round's outcome, each comparison's last interval."""
    last_round = rounds[rounds["round"] == rounds["round"].max()]
    last = last_round.iloc[0]
    states = "; ".join(
        f"{row.comparison}{' (median)' if row.reading != 'mean' else ''} [{_bound(row.low, row)}, "
        f"{_bound(row.high, row)}] {row.state}"
        + (f" (about {int(row.seeds_needed)} seeds at the observed spread)"
           if row.state != "decided" and pd.notna(row.seeds_needed) else "")
        for row in last_round.itertuples())
    ended = {"decided": "every comparison the rule reads was decided",
             "budget spent": "the budget was spent with a comparison still undecided",
             "out of reach": ("every comparison still undecided was out of the budget's reach (at its observed "
                              "spread it would need more seeds than contest.rounds.reach times the budget), so "
                              "no round was added for it")}.get(last.outcome, last.outcome)
    return (f"The contest's seeds were added under a design declared in the config before any seed was trained "
            f"({last.method}): up to {int(last.n_seeds)} seeds per variant in {int(last['round']) + 1} rounds "
            f"(a later round trains the variants of the comparisons still open), of a budget of "
            f"{int(last.max_seeds)}; after the last round, {ended}. Every interval over the contest's "
            f"seeds (its tables and the ledger) is read through that design, which keeps its error rate when the "
            f"number of seeds depends on the data seen (docs/statistics.md). The "
            f"comparisons the rule read, after the last round: {states}.")


def _bound(value, row) -> str:
    """One end of a rounds interval: a loss ratio as its gap in percent, a loss difference in nats, a score
    ratio as a factor, an entropy difference as a number; unbounded while the sequence is still the whole
    line."""
    if not finite(value):
        return "unbounded"
    quantity = getattr(row, "quantity", LOSS)
    if quantity == LARGEST_SCORE:
        return f"{float(value):,.3g}×"
    if quantity == ENTROPY:
        return f"{float(value):+.3f}"
    return f"{float(value) - 1:+.2%}" if str(row.ratio) == "True" else f"{float(value):+.4f} nats"


def design_text(tables: dict[str, pd.DataFrame]) -> str:
    """The contest's design in words with its error rate (a seed_rounds table's, else a fixed design of the
    contest's seeds), and whether a contest seed is a sweep seed: the sweep cell that won an 'auto' LR choice is
    then also that seed's contest cell, a selection bias in the variant's favour on that seed."""
    rounds, contest, sweep = (tables.get(name) for name in ("seed_rounds", "contest", "lr_sweep"))
    if contest is None or contest.empty:
        return ""
    seeds = {s for text in contest.seeds.dropna() for s in seeds_of(text)}
    design = (str(rounds.method.iloc[-1]) if rounds is not None and not rounds.empty
              else Design(FIXED, (int(contest.n_seeds.max()),)).text())
    text = f"The contest's design, fixed in the config before any seed was trained: {design}."
    swept = set(sweep.seed.astype(int)) if sweep is not None and "seed" in sweep and not sweep.empty else set()
    chosen = contest[contest.lr_choice == "auto"] if "lr_choice" in contest else contest.iloc[:0]
    shared = sorted(seeds & swept)
    if len(chosen) and shared:
        text += (f" Seed{'s' if len(shared) > 1 else ''} {', '.join(map(str, shared))} chose each 'auto' "
                 "variant's LR in the sweep and is also a contest seed: its contest cell is the sweep cell that "
                 "won, a selection bias in that variant's favour on that seed.")
    elif len(chosen):
        text += " The contest's seeds are apart from the sweep seeds that chose each LR, so no contest cell won it."
    return text
