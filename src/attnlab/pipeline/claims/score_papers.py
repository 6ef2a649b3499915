"""The claims of the papers behind the catalog's score functions (config/catalog.yaml), one ledger row each;
the claims about longer contexts are attnlab.pipeline.claims.length_papers.

Each row is judged like the posts' claims: paired by contest seed with
softmax, each variant at its contest LR, held to the same preconditions (own
best LR, inside its grid, trained to a plateau), and *not testable* at a build
without the cells or the measurement it needs. The telemetry they read is the
contest cells' (runs.csv's telemetry.* columns, defined in
attnlab.core.telemetry_stats): the sink rate, the share of negative weight and
the residual stream's kurtosis and largest |activation|.

"At no loss cost", "at least softmax's quality" and "at the same loss" are read
as one non-inferiority margin, SAME_LOSS: the variant's best validation loss at
most 1% above softmax's of the same seed (the whole interval of the paired
ratio below 1.01). None of the papers states a margin; 1% is about the gap the
kernel post calls close to softmax.
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.ground import contract, intervals, statistics, verdicts
from attnlab.pipeline.claims import protocol as pp
from attnlab.pipeline.claims.common import (COG_PAPER, SELECTIVE_PAPER, SINK_POST, SOFTPICK_PAPER, Claim, at_protocol,
                                            contest_losses, contest_lr_text, contest_row, contest_values, judged, pct,
                                            table_of, untestable)
from attnlab.pipeline.claims.words import title
from attnlab.pipeline.ground.contract import BASELINE
from attnlab.pipeline.ground.estimate_text import describe, interval_text
from attnlab.pipeline.ground.verdicts import CONTRADICTED, HOLDS, Verdict, every, one_sided
from attnlab.pipeline.tables.contest import losses_by_seed, trained

SAME_LOSS = 1.01  # variant / softmax best validation loss: the non-inferiority margin (module docstring)
SINK_SHARE = 0.10  # "no attention sinks": the share of layer x head pairs with a sink stays below this


def loss_ratio(t, variant: str, against: str = BASELINE) -> statistics.Estimate:
    """variant / `against` (softmax) best validation loss, paired by contest seed (the mean log-ratio's interval)."""
    return statistics.paired(contest_losses(t, variant), contest_losses(t, against), ratio=True)


def telemetry(t, variant: str, name: str) -> dict[int, float]:
    """seed -> one telemetry scalar of a variant's contest cells."""
    return contest_values(t, variant, f"telemetry.{name}")


def lrs_note(t, *variants: str) -> str:
    return ", ".join(f"{v} at {contest_lr_text(t, v)}" for v in variants)


def no_loss_cost(estimate: statistics.Estimate) -> Verdict:
    """The variant's loss within SAME_LOSS of softmax's: the whole ratio interval below it."""
    return one_sided(estimate, SAME_LOSS, above=False)


def missing(t, variant: str, against: str = BASELINE) -> str:
    """Why a paired check cannot run ('' when both the variant's and `against`'s (softmax's) contest cells are
    there)."""
    if not contest_losses(t, variant) or not contest_losses(t, against):
        return f"this build has no {variant} or no {against} contest cells"
    return ""


# ---- selective attention: unequal sizes on purpose


SELECTIVE_RULE = pp.Rule(
    title("Selective Attention Improves Transformer"),
    "selective / softmax with twice the heads (the study `heads`, at the same model width, so each head half as "
    "wide), best validation loss paired by contest seed, each at "
    "its contest LR",
    f"the ratio within {2 - SAME_LOSS:.2f}–{SAME_LOSS:.2f}: 'as well as', this project's loss margin both ways",
    "the paper's 'performs as well as standard transformers with about twice the heads'", pp.TRAINED,
    pairing=pp.OWN_LR)
NO_TWICE = ("no softmax cells with twice the heads: a study named `heads` setting model.heads to twice the "
            "config's, for softmax, at the contest's seeds (as config/catalog.yaml has)")


def twice_the_heads(t) -> tuple[dict[int, float], int | None, str]:
    """seed -> best validation loss of the study `heads`'s softmax cells (diverged ones left out), their heads,
    and why they cannot be read ('' when they can): one heads value at one LR, or the seeds would be ambiguous."""
    runs = table_of(t, "runs_heads")
    if runs.empty or "variant" not in runs:
        return {}, None, NO_TWICE
    rows = runs[runs.variant == BASELINE]
    heads = sorted(set(rows["config.model.heads"].astype(int))) if "config.model.heads" in rows else []
    lrs = sorted(set(rows.lr.astype(float))) if "lr" in rows else []
    if len(heads) > 1 or len(lrs) > 1:
        return {}, None, (f"the study `heads` trains {BASELINE} at {len(heads)} head counts and {len(lrs)} LRs; the "
                          "row compares with one (twice the config's heads, at softmax's contest LR)")
    losses = losses_by_seed(trained(rows))
    return losses, (heads[0] if heads else None), "" if losses else NO_TWICE


SAME_BUT_HEADS = ("config.variant", "config.lr", "config.seed", "config.model.heads")  # what the study may change


def unlike_the_contest(t, study: pd.DataFrame, own: pd.DataFrame, may_change: tuple[str, ...] = SAME_BUT_HEADS,
                       at_lr_of: str = BASELINE) -> list[str]:
    """What a study's cells change besides what they may (`may_change`: for the study `heads`, its head count),
    against the contest cells `own` and the contest LR of `at_lr_of`: each config key whose value differs
    ('model.d_model 64, not 32'), and the LR. A key one table lacks is unset there (its default), as an empty
    cell is."""
    def values(frame: pd.DataFrame, column: str) -> set[str]:
        return {"unset" if pd.isna(v) else str(v) for v in (frame[column] if column in frame else [None])}

    differs = []
    for column in sorted(c for c in set(study.columns) | set(own.columns)
                         if c.startswith("config.") and c not in may_change):
        theirs, ours = values(study, column), values(own, column)
        if theirs != ours:
            differs.append(f"{column.removeprefix('config.')} {', '.join(sorted(theirs))}, not "
                           f"{', '.join(sorted(ours))}")
    chosen = contest_row(t, at_lr_of)
    if chosen is not None and "lr" in study and not contract.at_lr(study, chosen.lr).all():
        differs.append(f"LR {', '.join(sorted(set(study.lr.map(format_lr))))}, not {at_lr_of}'s contest "
                       f"{format_lr(chosen.lr)}")
    return differs


def study_cells_trained(rows: pd.DataFrame, what: str) -> list[pp.Condition]:
    """A study's cells as a row reads them: none diverged (the pairing leaves a diverged cell out, so it is
    counted here) and none still improving."""
    diverged = len(rows) - len(trained(rows))
    plateau = pp.cells_plateau(rows, what)
    return [pp.Condition(f"no {what} diverged", not diverged,
                         f"{diverged} of {len(rows)} diverged" if diverged else f"none of {len(rows)}"),
            dataclasses.replace(plateau, name=f"{what} trained to a plateau")]


def selective_matches_twice_the_heads(t, pub, protocol) -> Claim:
    claim = Claim(SELECTIVE_PAPER, "selective attention matches softmax with about twice the heads (a comparison "
                  "of unequal sizes on purpose)", SELECTIVE_RULE.text(), "–",
                  "qualitative (Leviathan et al. 2024, arXiv:2410.02703)", "")
    claim.quote = SELECTIVE_RULE.quote()
    why = missing(t, "selective")
    twice, heads, unread = twice_the_heads(t)
    runs = table_of(t, "runs")
    own = runs[runs.variant == "selective"] if "variant" in runs else runs
    own_heads = int(own["config.model.heads"].iloc[0]) if len(own) and "config.model.heads" in own else None
    if why or unread:
        return untestable(claim, protocol, why or unread)
    if heads is not None and own_heads is not None and heads != 2 * own_heads:
        return untestable(claim, protocol, f"the study `heads` trains softmax with {heads} heads, not twice "
                                           f"selective's {own_heads}")
    study = table_of(t, "runs_heads")
    differs = unlike_the_contest(t, study[study.variant == BASELINE], own)
    if differs:
        return untestable(claim, protocol, "the study `heads` changes more than the head count: "
                          + "; ".join(differs) + "; the row compares softmax with twice the heads and nothing "
                          "else changed, at softmax's contest LR")
    ratio = statistics.paired(contest_losses(t, "selective"), twice, ratio=True)
    claim.measured = (f"selective ({own_heads} heads) / {BASELINE} ({heads} heads) {describe(ratio, pct)}; "
                      f"against {BASELINE} with its own {own_heads} heads {describe(loss_ratio(t, 'selective'), pct)}")
    params = sorted(set(study.loc[study.variant == BASELINE, "n_params"].astype(int))) if "n_params" in study else []
    own_params = sorted(set(own.n_params.astype(int))) if "n_params" in own else []
    size = ("the same parameter count" if params and params == own_params
            else f"{', '.join(f'{n:,}' for n in params) or '?'} parameters against selective's "
                 f"{', '.join(f'{n:,}' for n in own_params) or '?'}")
    claim.note = "; ".join([lrs_note(t, "selective", BASELINE), "the softmax with twice the heads trains at "
                            "softmax's contest LR, with the contest's model and training but for its heads; the "
                            f"model's width is fixed, so its heads are half as wide and it has {size}, where the "
                            "paper's wider heads add parameters"])
    verdict = verdicts.in_range(ratio, 2 - SAME_LOSS, SAME_LOSS)
    judged(claim, verdict, {"loss ratio": ratio}, pct)
    found = (pp.conditions(t, SELECTIVE_RULE, ["selective", BASELINE])
             + study_cells_trained(study[study.variant == BASELINE], "cells with twice the heads"))
    return at_protocol(claim, protocol, found,
                       f"selective is not within 1% of softmax with twice the heads: {pct(ratio.mean)}")


# ---- Softpick: no attention sinks


SOFTPICK_RULE = pp.Rule(
    title("No Attention Sink"),
    "the share of layer x head pairs with an attention sink (mean weight on the window's first key above 0.3, Gu "
    "et al. 2024's sink rate) in softpick's contest cells, all seeds pooled; softpick / softmax "
    "best validation loss, paired by seed",
    f"sink share below {SINK_SHARE:.0%} (exact binomial interval) and the loss ratio below {SAME_LOSS:.2f}",
    "the title's 'no sink' read as fewer than one head in ten, with this project's loss margin", pp.TRAINED,
    pairing=pp.OWN_LR)


def below_share(k: int, n: int, share: float) -> Verdict:
    """A claim that an event is rarer than `share`: verdicts.count_verdict's, with its sides swapped."""
    verdict = verdicts.count_verdict(k, n, share)
    swapped = {HOLDS: CONTRADICTED, CONTRADICTED: HOLDS}.get(verdict.word, verdict.word)
    return Verdict(swapped, verdict.reason, verdict.seeds_to_resolve, verdict.side, p=verdict.p)  # p: two-sided


def sink_heads(t, variant: str) -> tuple[int, int, dict[int, float]]:
    """(layer x head pairs with a sink, pairs in all, seed -> sink rate) over a variant's contest cells."""
    rates = telemetry(t, variant, "sink_rate")
    runs = table_of(t, "runs")
    if not rates or not {"config.model.layers", "config.model.heads"} <= set(runs.columns):
        return 0, 0, rates
    first = runs[runs.variant == variant].iloc[0]
    pairs = int(first["config.model.layers"]) * int(first["config.model.heads"])
    return sum(round(rate * pairs) for rate in rates.values()), pairs * len(rates), rates


def first_key(t) -> str:
    """What the first key of a window is in this build: the beginning-of-sequence token (data.bos) or not."""
    runs = table_of(t, "runs")
    with_token = "config.data.bos" in runs and runs["config.data.bos"].astype(str).eq("True").all()
    return ("every window's first key is the beginning-of-sequence token" if with_token else
            "a head's first key is whichever character starts its window (no beginning-of-sequence token)")


def softpick_no_sinks(t, pub, protocol) -> Claim:
    claim = Claim(SOFTPICK_PAPER, "Softpick has no attention sinks, at no loss cost", SOFTPICK_RULE.text(), "–",
                  "no sinks (Zuhri et al. 2025, arXiv:2504.20966)", "")
    claim.quote = SOFTPICK_RULE.quote()
    why = missing(t, "softpick")
    k, n, rates = sink_heads(t, "softpick")
    if why or not n:
        return untestable(claim, protocol, why or "the contest cells carry no sink rate (telemetry)")
    base_k, base_n, _ = sink_heads(t, BASELINE)
    loss = loss_ratio(t, "softpick")
    claim.measured = (f"sink heads {k} of {n} layer × head pairs over {len(rates)} seeds"
                      + (f" ({BASELINE}: {base_k} of {base_n})" if base_n else "")
                      + f"; loss softpick / {BASELINE} {describe(loss, pct)}")
    claim.note = "; ".join([lrs_note(t, "softpick", BASELINE), first_key(t), "heads are pooled over seeds as "
                            "independent trials, though one model's heads share its training"])
    sinks = below_share(k, n, SINK_SHARE)
    judged(claim, every(sinks, no_loss_cost(loss)), {"loss ratio": loss}, pct)
    low, high = statistics.count_interval(k, n)
    claim.interval += f"; sink share {intervals.CONFIDENCE:.0%} CI [{low:.2f}, {high:.2f}] (exact binomial)"
    direction = (f"softpick has sinks in {k} of {n} heads" if sinks.word == CONTRADICTED
                 else f"softpick costs loss: {pct(loss.mean)}")
    return at_protocol(claim, protocol, pp.conditions(t, SOFTPICK_RULE, ["softpick", BASELINE]), direction)


# ---- Cog attention: signed weights at softmax's quality


COG_RULE = pp.Rule(
    title("More Expressive Attention with Negative Weights"),
    "cog / softmax best validation loss, paired by contest seed (and the share of cog's weight magnitude on "
    "negative weights, reported)",
    f"the loss ratio below {SAME_LOSS:.2f}: quality at least softmax's", "this project's loss margin", pp.TRAINED,
    pairing=pp.OWN_LR)


def cog_at_least_softmax(t, pub, protocol) -> Claim:
    claim = Claim(COG_PAPER, "Cog attention's signed weights train at least as well as softmax", COG_RULE.text(),
                  "–", "better than softmax (Lv et al. 2024, arXiv:2411.07176)", "")
    claim.quote = COG_RULE.quote()
    why = missing(t, "cog")
    if why:
        return untestable(claim, protocol, why)
    loss = loss_ratio(t, "cog")
    negative = telemetry(t, "cog", "negative_mass_share")
    share = statistics.mean_interval(negative.values(), negative.keys()) if negative else None
    claim.measured = (f"loss cog / {BASELINE} {describe(loss, pct)}"
                      + (f"; negative weight share {share.mean:.1%}"
                         + (f", {interval_text(share, lambda x: f'{x:.1%}')}" if share.has_interval else "")
                         if share else ""))
    claim.note = lrs_note(t, "cog", BASELINE)
    judged(claim, no_loss_cost(loss), {"loss ratio": loss}, pct)
    return at_protocol(claim, protocol, pp.conditions(t, COG_RULE, ["cog", BASELINE]),
                       f"cog trains worse than softmax: {pct(loss.mean)}")


# ---- the learned sink: smaller activation outliers


SINK_RULE = pp.Rule(
    title("Attention Is Off By One"),
    "softmax_sink / softmax, paired by contest seed: the residual stream's kurtosis (the largest over layers), its "
    "largest |activation|, and the best validation loss",
    f"both activation ratios below 1 and the loss ratio below {SAME_LOSS:.2f}",
    "the post's outlier claim, with this project's loss margin", pp.TRAINED,
    pairing=pp.OWN_LR)


def sink_smaller_outliers(t, pub, protocol) -> Claim:
    claim = Claim(SINK_POST, "a softmax with a sink (off by one) has smaller activation outliers at the same loss",
                  SINK_RULE.text(), "–", "qualitative (E. Miller, 2023)", "")
    claim.quote = SINK_RULE.quote()
    why = missing(t, "softmax_sink")
    kurtosis = statistics.paired(telemetry(t, "softmax_sink", "activation_kurtosis"),
                                 telemetry(t, BASELINE, "activation_kurtosis"), ratio=True)
    largest = statistics.paired(telemetry(t, "softmax_sink", "activation_max"),
                                telemetry(t, BASELINE, "activation_max"), ratio=True)
    if why or not kurtosis.n:
        return untestable(claim, protocol, why or "the contest cells carry no activation telemetry")
    loss = loss_ratio(t, "softmax_sink")
    claim.measured = (f"kurtosis ratio {describe(kurtosis)}; largest |activation| ratio {describe(largest)}; "
                      f"loss softmax_sink / {BASELINE} {describe(loss, pct)}")
    claim.note = "; ".join([lrs_note(t, "softmax_sink", BASELINE), "the sink's logit is learned per layer x head "
                            "from 0, where it is exactly the off-by-one softmax"])
    verdict = every(one_sided(kurtosis, 1.0, above=False), one_sided(largest, 1.0, above=False),
                    no_loss_cost(loss))
    judged(claim, verdict, {"kurtosis": kurtosis, "largest": largest, "loss": loss})
    return at_protocol(claim, protocol, pp.conditions(t, SINK_RULE, ["softmax_sink", BASELINE]),
                       f"outliers do not shrink: kurtosis ratio {kurtosis.mean:.3g}×, largest {largest.mean:.3g}×")


CHECKS = (softpick_no_sinks, selective_matches_twice_the_heads, cog_at_least_softmax, sink_smaller_outliers)
