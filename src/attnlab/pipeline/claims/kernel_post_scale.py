"""The kernel post's claims on the scale of the trained scores: the kernel's scores are orders of magnitude
above softmax's logits, and the b = 0 ablation un-tames them. Read from the score_scale and runs tables. The
ratio is heavy-tailed, so it is read by its median with an exact sign-test interval
(attnlab.pipeline.ground.sign_test), the mean log-ratio beside it; each check's Rule states the post's words,
the quantity, the threshold and its source, and the protocol it needs (attnlab.pipeline.claims.protocol)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from attnlab.pipeline.claims import protocol as pp
from attnlab.pipeline.claims import words
from attnlab.pipeline.claims.common import (KERNEL_POST, Claim, at_protocol, contest_lr_text, judged, lr_text,
                                            matched_lr_values, per_seed, primary_lr, ratio, stability_text,
                                            table_of, untestable)
from attnlab.pipeline.ground import intervals, sign_test, statistics, verdicts
from attnlab.pipeline.ground.contract import (ORDERS_OF_MAGNITUDE, QUANTILE_COLUMN, QUANTILE_NAME,
                                              SEED_MEAN_OVER_LAYERS)
from attnlab.pipeline.ground.estimate_text import describe
from attnlab.pipeline.ground.verdicts import one_sided

SEVERAL_FOLD = 2.0  # "several-fold": yat / yat_b max score at least this
KAPPA_IS_LINEAR = ("κ is a linear-space weight (a key's weight is κ/Σκ) while a softmax logit is log-space (its "
                   "weight is ∝ e^logit): the ratio sets side by side the numbers each computes, not quantities "
                   "of one kind; in weight terms a logit of 34.5 is a factor e^34.5 ≈ 10^15")
FIVE_ORDERS = 1e5  # "five orders of magnitude", read literally
SCALE_QUANTITY = ("max trained score yat / softmax (over layers and held-out batches), each at its contest LR: the "
                  "median over contest seeds of the per-seed ratio, exact sign-test interval (the ratio is "
                  "heavy-tailed, one seed's has been 72,524× beside others' 83×–5,461×: the mean log-ratio's "
                  "t-interval widens with such a seed and lowers its lower edge even when the seed is in the "
                  "claim's favour, where the order statistics only count the seeds on each side); the mean "
                  "log-ratio with its t-interval, and the same ratio at each LR both swept, in the note")
FIVE_ORDERS_RULE = pp.Rule(words.SCALE, SCALE_QUANTITY, f"at least {FIVE_ORDERS:,.0f}×",
                           "the post's words 'five orders'; its own figures give 443,508 / 34.5 = 12,855× (4.1 "
                           "orders), under them", pp.TRAINED, pairing=pp.OWN_LR)
ORDERS_RULE = pp.Rule(words.SCALE, SCALE_QUANTITY, f"at least {ORDERS_OF_MAGNITUDE:,.0f}×",
                      "a second, weaker reading of the same words: 'orders of magnitude', plural, as at least two "
                      "(this project's reading; the post's own figures give 4.1)", pp.TRAINED, pairing=pp.OWN_LR)
ABLATION_RULE = pp.Rule(words.ABLATION, "max trained score yat / yat_b at one LR, paired by seed (mean "
                        "log-ratio), at the LR where both ran the most seeds", f"at least {SEVERAL_FOLD:g}×",
                        "'un-tames', read as at least twice (this project's reading); the post's 443,508 / 61,221 "
                        "= 7.2× mixes LRs (3e-4 vs 3e-3), and the posts publish no pair at one LR", (pp.PLATEAU,),
                        pairing=pp.SHARED_LR)


def _max_scores(t, variant) -> dict[int, float]:
    """seed -> the largest score of a variant's contest cell (over layers and held-out batches)."""
    return per_seed(table_of(t, "score_scale"), variant, "max_score", "max")


def _seed_mean_range(cells: pd.DataFrame) -> tuple[float, float]:
    """Range across seeds of the mean over layers of each layer's max score."""
    if SEED_MEAN_OVER_LAYERS in cells:
        by_seed = cells.groupby("seed")[SEED_MEAN_OVER_LAYERS].first()
    else:  # the same definition from the per-layer rows
        by_seed = cells.groupby("seed").max_score.mean()
    return float(by_seed.min()), float(by_seed.max())


def scale_check(rule: pp.Rule, bar: float, name: str, function: str):
    """The score-scale check at one reading of the post's words: the median per-seed max-score ratio, with its
    exact sign-test interval, against `bar` (attnlab.pipeline.ground.sign_test); the mean log-ratio is a second
    reading, in the note."""
    def check(t, pub, protocol) -> Claim:
        ps = pub["score_scale"]
        published_ratio = ps["yat"]["max"] / ps["softmax"]["max"]
        claim = Claim(KERNEL_POST, f"kernel scores are {name} larger than softmax logits", rule.text(), "–",
                      f"{published_ratio:,.0f}× ({ps['yat']['max']:,} vs {ps['softmax']['max']}; "
                      f"{math.log10(published_ratio):.1f} orders); per-seed mean over layers of max: "
                      f"{ps['yat']['seed_mean_over_layers_of_max_min']:,}–"
                      f"{ps['yat']['seed_mean_over_layers_of_max_max']:,} vs "
                      f"{ps['softmax']['seed_mean_over_layers_of_max_min']}–"
                      f"{ps['softmax']['seed_mean_over_layers_of_max_max']}", "", quote=rule.quote())
        note = (f"published yat max at LR {lr_text(ps['yat']['max_lr'])}; the posts' 'per-layer mean' is, per "
                "seed, the mean over layers of each layer's max score (range across seeds)")
        kernel_max, softmax_max = _max_scores(t, "yat"), _max_scores(t, "softmax")
        level = intervals.median_confidence(len(set(kernel_max) & set(softmax_max)))
        median = sign_test.paired_median(kernel_max, softmax_max, ratio=True, confidence=level, threshold=bar)
        if not median.n:
            claim.note = note
            return untestable(claim, protocol, "this build has no yat and softmax contest cells of one seed")
        estimate = statistics.paired(kernel_max, softmax_max, ratio=True)  # the mean log-ratio: a second reading
        scores = table_of(t, "score_scale")
        kern, soft = scores[scores.variant == "yat"], scores[scores.variant == "softmax"]
        (k_lo, k_hi), (s_lo, s_hi) = _seed_mean_range(kern), _seed_mean_range(soft)
        claim.measured = (f"{median_text(median, bar)}; largest {kern.max_score.max():,.4g} vs "
                          f"{soft.max_score.max():.4g}; per-seed mean over layers of max: {k_lo:,.4g}–{k_hi:,.4g} "
                          f"vs {s_lo:.4g}–{s_hi:.4g}")
        claim.note = "; ".join(filter(None, [
            f"yat at {contest_lr_text(t, 'yat')}, softmax at {contest_lr_text(t, 'softmax')}",
            mean_log_ratio_note(estimate, bar), robust_note(scores), matched_lr_note(table_of(t, "runs")), note,
            KAPPA_IS_LINEAR]))
        judged_by_median(claim, sign_test.verdict(median, bar, above=True), median, bar)
        direction = (f"the kernel's scores are {scale_text(median.median)} by the median "
                     f"({math.log10(median.median):.1f} orders), under {bar:,.0f}×")
        return at_protocol(claim, protocol, pp.conditions(t, rule, ["yat", "softmax"]), direction)

    check.__name__ = function  # the ladder's ladder_claims table names each check by it
    return check


def scale_text(x: float) -> str:
    """A score ratio: '442×', '72,524×', '2.5×'."""
    return f"{x:,.0f}×" if abs(x) >= 100 else f"{x:,.3g}×"


def median_interval_text(median: sign_test.MedianEstimate) -> str:
    """'[365×, 5,461×] (exact sign-test 96.1% interval)', or why there is none."""
    if not median.has_interval:
        return median.reason
    return (f"[{scale_text(median.low)}, {scale_text(median.high)}] (exact sign-test {median.achieved:.1%} "
            "interval)")


def median_text(median: sign_test.MedianEstimate, bar: float) -> str:
    """'median 442× [365×, 5,461×] (exact sign-test 96.1% interval), 8/9 seeds above 100× (2.6 orders)'."""
    interval = median_interval_text(median)
    interval = f" {interval}" if median.has_interval else f" ({interval})"
    return (f"median {scale_text(median.median)}{interval}, {median.count_above(bar)}/{median.n} seeds above "
            f"{bar:,.0f}× ({math.log10(median.median):.1f} orders)")


def mean_log_ratio_note(estimate: statistics.Estimate, bar: float) -> str:
    """The mean log-ratio with its t-interval beside the median, and what that reading alone would say."""
    alone = verdicts.one_sided(estimate, bar, above=True).word
    return (f"second reading, the mean log-ratio: {describe(estimate, scale_text, wins=False)} "
            f"({math.log10(estimate.mean):.1f} orders; its t-interval alone: {alone} at {bar:,.0f}×)")


def judged_by_median(claim: Claim, verdict: verdicts.Verdict, median: sign_test.MedianEstimate,
                     bar: float) -> Claim:
    """The claim with the median's verdict, interval and seeds (common.judged's columns, for a median): an open
    verdict says how many seeds at the observed shares would settle it, a settled one how many seeds on the
    other side would reopen it."""
    judged(claim, verdict, {})
    claim.interval = f"median {median_interval_text(median)}" if median.has_interval else median.reason
    claim.seeds = median.n
    needed = verdict.seeds_to_resolve
    if verdict.word == verdicts.INCONCLUSIVE:
        above = f"{median.count_above(bar)}/{median.n}"
        claim.resolution = "; ".join(filter(None, [verdict.side, (
            f"about {int(needed)} seeds with the same share above {bar:,.0f}× ({above}) would resolve it (exact "
            "sign test)" if needed is not None and math.isfinite(needed) else
            f"as many seeds fall at or below {bar:,.0f}× as above it: no number of seeds would resolve it"
            if needed is not None else
            f"more than {statistics.MAX_SEEDS:,} seeds would be needed at the observed shares")]))
    else:
        flips = sign_test.fragility(median, bar)
        claim.resolution = (f"rests on {median.n} seeds; {flips} of them on the other side of {bar:,.0f}× would "
                            "reopen it (exact sign test)")
    return claim


def robust_note(scores: pd.DataFrame) -> str:
    """yat / softmax of a high quantile of the trained scores (the score_scale table's quantile column), per
    seed mean, beside the maximum: the maximum is the most heavy-tailed statistic there is, and moves with the LR."""
    column = QUANTILE_COLUMN
    if scores.empty or column not in scores or scores[column].isna().all():
        return ""
    by = {v: per_seed(scores, v, column, "max") for v in ("yat", "softmax")}
    estimate = statistics.paired(by["yat"], by["softmax"], ratio=True)
    if not estimate.n:
        return ""
    return (f"the {QUANTILE_NAME} of the trained scores (largest over layers), yat / softmax: "
            f"{describe(estimate, ratio, wins=False)} ({math.log10(estimate.mean):.1f} orders)")


def matched_lr_note(runs: pd.DataFrame) -> str:
    """yat / softmax max score at each LR both trained (same seed): the ratio without each variant's own LR."""
    pairs = matched_lr_scores(runs, "yat", "softmax")
    if pairs.empty:
        return ""
    parts = [f"{lr_text(lr)} {np.exp(np.log(cells.yat_max / cells.softmax_max).mean()):,.3g}× ({len(cells)} seed"
             f"{'s' if len(cells) != 1 else ''})" for lr, cells in pairs.groupby("lr")]
    return "at matched LRs, yat / softmax max score: " + "; ".join(parts)


def matched_lr_scores(runs: pd.DataFrame, a: str = "yat", b: str = "yat_b") -> pd.DataFrame:
    """Per LR and seed at which both variants have a healthy cell: each one's max score there (runs.csv's
    telemetry.max_score, max over layers and held-out batches; common.matched_lr_values)."""
    rows = [{"lr": lr, "seed": seed, f"{a}_max": first[seed], f"{b}_max": second[seed]}
            for lr, (first, second) in matched_lr_values(runs, "telemetry.max_score", a, b).items() for seed in first]
    return pd.DataFrame(rows, columns=["lr", "seed", f"{a}_max", f"{b}_max"])


kernel_scores_five_orders = scale_check(FIVE_ORDERS_RULE, FIVE_ORDERS, "five orders of magnitude",
                                        "kernel_scores_five_orders")


kernel_scores_larger = scale_check(ORDERS_RULE, ORDERS_OF_MAGNITUDE, "orders of magnitude", "kernel_scores_larger")


def ablation_untames(t, pub, protocol) -> Claim:
    mixed = pub["ablation"]["mixed_lr"]
    claim = Claim(KERNEL_POST, "the b = 0 ablation raises the max score several-fold against learned b",
                  ABLATION_RULE.text(), "–",
                  f"{mixed['ratio']:.1f}× mixed LRs (yat {lr_text(mixed['yat']['lr'])} {mixed['yat']['max']:,} / "
                  f"yat_b {lr_text(mixed['yat_b']['lr'])} {mixed['yat_b']['max']:,}); no pair at one LR published", "")
    claim.quote = ABLATION_RULE.quote()
    mixes = (f"the headline {mixed['ratio']:.1f}× mixes LRs (yat at {lr_text(mixed['yat']['lr'])}, yat_b at "
             f"{lr_text(mixed['yat_b']['lr'])}); the posts publish no maxima of both at one LR, so the matched "
             "reading here is this build's own")
    pairs = matched_lr_scores(table_of(t, "runs"))
    if pairs.empty:
        claim.note = mixes
        return untestable(claim, protocol, "no LR at which both yat and yat_b ran the same seed")
    by_lr = {}
    for lr, cells in pairs.groupby("lr"):
        by_lr[float(lr)] = statistics.paired(dict(zip(cells.seed, cells.yat_max)),
                                             dict(zip(cells.seed, cells.yat_b_max)), ratio=True)
    primary = primary_lr(by_lr, mixed["yat_b"]["lr"])
    estimate = by_lr[primary]
    claim.measured = f"at {lr_text(primary)}: {describe(estimate, ratio, wins=False)}"
    others = [f"at {lr_text(lr)} {describe(e, ratio, wins=False)}" for lr, e in by_lr.items() if lr != primary]
    against = [lr for lr, e in by_lr.items() if e.mean < 1]
    notes = []
    if others:
        notes.append("other LRs: " + "; ".join(others))
    if against:
        notes.append(f"b = 0 gives the smaller max score at {', '.join(lr_text(lr) for lr in against)} "
                     f"({len(against)} of {len(by_lr)} LRs)")
    claim.note = "; ".join(notes + [mixes])
    judged(claim, one_sided(estimate, SEVERAL_FOLD, above=True), {lr_text(primary): estimate}, ratio,
           stability_text(estimate, SEVERAL_FOLD))
    direction = (f"b = 0 gives the smaller max score: {estimate.mean:.2f}×" if estimate.mean < 1
                 else f"b = 0 raises the max score {estimate.mean:.2f}×, less than several-fold")
    return at_protocol(claim, protocol, pp.conditions(t, ABLATION_RULE, ["yat", "yat_b"], cells=primary), direction)
