"""The kernel post's claims on the trained attention: kernel scores are orders of magnitude above softmax's
logits, the b = 0 ablation un-tames them (and barely moves the entropy), the learned scalars specialise per
head, row mass does not predict correctness, kernel rows are more diffuse. Read from the score_scale, runs,
mass_auroc, entropy and scalars tables. Each check's Rule states the post's words, the quantity, the threshold
and its source, and the protocol it needs (attnlab.pipeline.claims.protocol)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.ground import sign_test, statistics
from attnlab.pipeline.claims import protocol as pp
from attnlab.pipeline.claims import words
from attnlab.pipeline.claims.common import (KERNEL_POST, Claim, at_protocol, contest_lr_text, judged,
                                            per_seed, lr_text, ratio, stability_text, table_of,
                                            untestable)
from attnlab.pipeline.ground.contract import (ORDERS_OF_MAGNITUDE, QUANTILE_COLUMN, QUANTILE_NAME,
                                              SEED_MEAN_OVER_LAYERS, SHARE_DIFFUSE, SHARE_SHARP)
from attnlab.pipeline.ground.statistics import every, in_range, one_sided
from attnlab.pipeline.ground.estimate_text import describe

SEVERAL_FOLD = 2.0  # "several-fold": yat / yat_b max score at least this
AUROC_NULL = 0.03  # "AUROC ≈ 0.5": |AUROC - 0.5| at most this
BARELY = 0.05  # "barely move": |yat − yat_b| mean entropy within a fifth of the post's kernel–softmax gap (0.25)
MOST_HEADS = 0.5  # "most heads driving it toward zero": the share of heads whose ε ends below its init
TRAINED = (pp.OWN_BEST_LR, pp.INSIDE_GRID, pp.PLATEAU)  # a property of trained attention: the post's protocol
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
                           "orders), under them", TRAINED)
ORDERS_RULE = pp.Rule(words.SCALE, SCALE_QUANTITY, f"at least {ORDERS_OF_MAGNITUDE:,.0f}×",
                      "a second, weaker reading of the same words: 'orders of magnitude', plural, as at least two "
                      "(this project's reading; the post's own figures give 4.1)", TRAINED)
ABLATION_RULE = pp.Rule(words.ABLATION, "max trained score yat / yat_b at one LR, paired by seed (mean "
                        "log-ratio), at the LR where both ran the most seeds", f"at least {SEVERAL_FOLD:g}×",
                        "'un-tames', read as at least twice (this project's reading); the post's 443,508 / 61,221 "
                        "= 7.2× mixes LRs (3e-4 vs 3e-3), its own yat run at 3e-3 gives ≈2.8×", (pp.PLATEAU,))
AUROC_RULE = pp.Rule(words.AUROC, "mass AUROC per kernel variant, mean over "
                     "its contest seeds", f"within 0.5 ± {AUROC_NULL} for every kernel variant",
                     "the post's own seeds lie within 0.5 ± 0.015; twice that is this project's allowance",
                     TRAINED)
DIFFUSE_RULE = pp.Rule(words.DIFFUSE, "yat_b − softmax mean normalised row entropy, paired by contest seed, "
                       "each at its contest LR (the posts' kernel maps are yat_b's)", "above 0",
                       "0: the post's direction (its own gap is +0.25)", TRAINED)
BARELY_RULE = pp.Rule(words.BARELY,
                      "yat − yat_b mean normalised row entropy, paired by contest seed, each at its contest LR",
                      f"within ±{BARELY:g}", "a fifth of the post's own kernel–softmax gap of 0.25 (0.73 vs "
                      "0.48), a fraction this project chose; the post's yat 0.74 vs yat_b 0.73 sits inside", TRAINED)
B_SPREAD = 0.5  # b's range per seed: at least this share of the post's [0.22, 3.40] (3.18 wide)
GROWN = 2.0  # a grown ε: the deeper half's largest ε at least this many times its init
SCALARS_RULE = pp.Rule(
    words.SCALARS,
    "per yat_b contest seed (the seed is the unit; heads of one seed are not independent trials): the share of "
    "heads whose ε ends below its init log 2; the width of b's range (max − min over heads); the largest ε of "
    "the deeper half of the layers over its init; each compared across seeds (t-interval)",
    f"the share above {MOST_HEADS:.0%}, b's width above {B_SPREAD:.0%} of the post's 3.18, and a deep ε grown "
    f"more than {GROWN:g}×",
    f"'most heads' for the share; b's edge: the post's own range [0.22, 3.40], half its width being this project's "
    f"floor; the grown ε: the post's two late heads at 6.4 and 12.7 (9× and 18× the init), {GROWN:g}× being this "
    "project's floor", TRAINED)


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
        level = statistics.median_confidence(len(set(kernel_max) & set(softmax_max)))
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
    alone = statistics.one_sided(estimate, bar, above=True).word
    return (f"second reading, the mean log-ratio: {describe(estimate, scale_text, wins=False)} "
            f"({math.log10(estimate.mean):.1f} orders; its t-interval alone: {alone} at {bar:,.0f}×)")


def judged_by_median(claim: Claim, verdict: statistics.Verdict, median: sign_test.MedianEstimate,
                     bar: float) -> Claim:
    """The claim with the median's verdict, interval and seeds (common.judged's columns, for a median): an open
    verdict says how many seeds at the observed shares would settle it, a settled one how many seeds on the
    other side would reopen it."""
    judged(claim, verdict, {})
    claim.interval = f"median {median_interval_text(median)}" if median.has_interval else median.reason
    claim.seeds = median.n
    needed = verdict.seeds_to_resolve
    if verdict.word == statistics.INCONCLUSIVE:
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


kernel_scores_five_orders = scale_check(FIVE_ORDERS_RULE, FIVE_ORDERS, "five orders of magnitude",
                                        "kernel_scores_five_orders")
kernel_scores_larger = scale_check(ORDERS_RULE, ORDERS_OF_MAGNITUDE, "orders of magnitude", "kernel_scores_larger")


def matched_lr_scores(runs: pd.DataFrame, a: str = "yat", b: str = "yat_b") -> pd.DataFrame:
    """Per LR and seed at which both variants have a healthy cell: each one's max score there.

    Uses runs.csv's telemetry.max_score (max over layers and held-out batches) of
    every cell, sweep and contest alike; diverged cells are left out. Only seeds
    both variants ran at that LR count, so no LR and no seed is mixed.
    """
    columns = ["lr", "seed", f"{a}_max", f"{b}_max"]
    needed = {"variant", "lr", "seed", "telemetry.max_score"}
    if runs is None or runs.empty or not needed <= set(runs.columns):
        return pd.DataFrame(columns=columns)
    cells = runs[runs.variant.isin([a, b])]
    if "diverged" in cells:
        cells = cells[~cells.diverged.fillna(False).astype(bool)]
    cells = cells[np.isfinite(cells["telemetry.max_score"].astype(float))]
    rows = []
    for lr_name, at_lr in sorted(cells.groupby(cells.lr.map(format_lr)), key=lambda group: float(group[0])):
        lr = float(lr_name)
        first = at_lr[at_lr.variant == a].groupby("seed")["telemetry.max_score"].max()
        second = at_lr[at_lr.variant == b].groupby("seed")["telemetry.max_score"].max()
        for seed in sorted(set(first.index) & set(second.index)):
            rows.append({"lr": lr, "seed": int(seed), f"{a}_max": float(first[seed]), f"{b}_max": float(second[seed])})
    return pd.DataFrame(rows, columns=columns)


def ablation_untames(t, pub, protocol) -> Claim:
    ab = pub["ablation"]
    mixed, matched = ab["mixed_lr"], ab["matched_lr"]
    claim = Claim(KERNEL_POST, "the b = 0 ablation raises the max score several-fold against learned b",
                  ABLATION_RULE.text(), "–",
                  f"{mixed['ratio']:.1f}× mixed LRs (yat {lr_text(mixed['yat']['lr'])} {mixed['yat']['max']:,} / "
                  f"yat_b {lr_text(mixed['yat_b']['lr'])} {mixed['yat_b']['max']:,}); "
                  f"≈{matched['ratio']:.1f}× at matched {lr_text(matched['lr'])} "
                  f"({matched['yat']['max']:,} / {matched['yat_b']['max']:,})", "")
    claim.quote = ABLATION_RULE.quote()
    tel = ab["telemetry_run"]
    mixes = (f"the headline {mixed['ratio']:.1f}× mixes LRs (yat at {lr_text(mixed['yat']['lr'])}, yat_b at "
             f"{lr_text(mixed['yat_b']['lr'])}); at one LR the published data give ≈{matched['ratio']:.1f}×, and a "
             f"separate yat_b telemetry run (seed {tel['seed']}, {lr_text(tel['lr'])}) reached "
             f"{tel['yat_b']['max']:,}, above yat there")
    pairs = matched_lr_scores(table_of(t, "runs"))
    if pairs.empty:
        claim.note = mixes
        return untestable(claim, protocol, "no LR at which both yat and yat_b ran the same seed")
    by_lr = {}
    for lr, cells in pairs.groupby("lr"):
        by_lr[float(lr)] = statistics.paired(dict(zip(cells.seed, cells.yat_max)),
                                             dict(zip(cells.seed, cells.yat_b_max)), ratio=True)
    primary = max(by_lr, key=lambda lr: (by_lr[lr].n, -abs(math.log(lr / float(matched["lr"])))))
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


def mass_auroc_null(t, pub, protocol) -> Claim:
    pub_text = ", ".join(f"{v} {np.mean(x):.3f}" for v, x in pub["mass_auroc"].items())
    claim = Claim(KERNEL_POST, "the kernel's row mass does not predict next-token correctness (AUROC ≈ 0.5)",
                  AUROC_RULE.text(), "–", pub_text, "")
    claim.quote = AUROC_RULE.quote()
    auroc = table_of(t, "mass_auroc")
    if auroc.empty:
        return untestable(claim, protocol, "this build has no kernel variant")
    estimates = {v: statistics.mean_interval(c.mass_auroc, c.seed) for v, c in auroc.groupby("variant", sort=False)}
    fmt = lambda x: f"{x:.3f}"  # noqa: E731
    claim.measured = "; ".join(f"{v} {describe(e, fmt, wins=False)}" for v, e in estimates.items())
    notes = []
    if "lr" in auroc:
        notes.append(", ".join(f"{v} at {lr_text(c.lr.iloc[0])}" for v, c in auroc.groupby("variant", sort=False)))
    if {"mass_correct_mean", "mass_wrong_mean"} <= set(auroc.columns):
        masses = auroc.groupby("variant", sort=False)[["mass_correct_mean", "mass_wrong_mean"]].mean()
        notes.append("mean kernel mass, correct vs wrong predictions: " + "; ".join(
            f"{v} {m.mass_correct_mean:,.4g} vs {m.mass_wrong_mean:,.4g}" for v, m in masses.iterrows()))
    claim.note = "; ".join(notes)
    verdict = every(*(in_range(e, 0.5 - AUROC_NULL, 0.5 + AUROC_NULL) for e in estimates.values()))
    judged(claim, verdict, estimates, fmt)
    off = [f"{v} {e.mean:.3f}" for v, e in estimates.items() if abs(e.mean - 0.5) > AUROC_NULL]
    direction = "row mass carries signal: " + ", ".join(off) if off else ""
    return at_protocol(claim, protocol, pp.conditions(t, AUROC_RULE, list(estimates)), direction)


def kernel_more_diffuse(t, pub, protocol) -> Claim:
    pe = pub["entropy"]
    claim = Claim(KERNEL_POST, "the kernel's attention rows are more diffuse than softmax's",
                  DIFFUSE_RULE.text(), "–",
                  f"yat_b {pe['yat_b']['mean']:.2f} vs softmax {pe['softmax']['mean']:.2f}; sharp "
                  f"{pe['yat_b'][SHARE_SHARP]:.1%} vs {pe['softmax'][SHARE_SHARP]:.0%}; yat_b diffuse "
                  f"{pe['yat_b'][SHARE_DIFFUSE]:.0%}", "")
    claim.quote = DIFFUSE_RULE.quote()
    pub_note = (f"the posts' 'kernel' 0.73 / 0.2% / 37% are yat_b's maps; yat (b = 0) published "
                f"{pe['yat']['mean']:.2f} / {pe['yat'][SHARE_SHARP]:.1%} / {pe['yat'][SHARE_DIFFUSE]:.0%}")
    entropy = table_of(t, "entropy")
    estimate = statistics.paired(per_seed(entropy, "yat_b", "mean"), per_seed(entropy, "softmax", "mean"))
    if not estimate.n:
        claim.note = pub_note
        return untestable(claim, protocol, "this build has no yat_b and softmax contest cells of one seed")
    sharp = statistics.paired(per_seed(entropy, "yat_b", SHARE_SHARP),
                              per_seed(entropy, "softmax", SHARE_SHARP))
    means = entropy.groupby("variant")[["mean", SHARE_SHARP, SHARE_DIFFUSE]].mean()
    k, s = means.loc["yat_b"], means.loc["softmax"]
    claim.measured = (f"{describe(estimate, lambda x: f'{x:+.3f}', wins=False)} (yat_b {k['mean']:.2f} vs softmax "
                      f"{s['mean']:.2f}); sharp rows {k[SHARE_SHARP]:.1%} vs {s[SHARE_SHARP]:.1%}; "
                      f"diffuse {k[SHARE_DIFFUSE]:.0%} vs {s[SHARE_DIFFUSE]:.0%}")
    notes = [f"yat_b at {contest_lr_text(t, 'yat_b')}, softmax at {contest_lr_text(t, 'softmax')}",
             f"share of sharp rows, yat_b − softmax: {describe(sharp, lambda x: f'{x:+.1%}', wins=False)}", pub_note]
    if "yat" in means.index:
        y = means.loc["yat"]
        notes.append(f"this build's yat: {y['mean']:.2f} / {y[SHARE_SHARP]:.1%} / {y[SHARE_DIFFUSE]:.0%}")
    claim.note = "; ".join(notes)
    judged(claim, one_sided(estimate, 0.0, above=True), {"": estimate}, lambda x: f"{x:+.3f}",
           stability_text(estimate, 0.0))
    direction = f"the kernel's rows are sharper than softmax's: {estimate.mean:+.3f}"
    return at_protocol(claim, protocol, pp.conditions(t, DIFFUSE_RULE, ["yat_b", "softmax"]), direction)


def ablation_barely_moves_entropy(t, pub, protocol) -> Claim:
    pe = pub["entropy"]
    claim = Claim(KERNEL_POST, "the b = 0 ablation barely moves the entropy of the trained maps", BARELY_RULE.text(),
                  "–", f"yat {pe['yat']['mean']:.2f} vs yat_b {pe['yat_b']['mean']:.2f} "
                  f"({pe['yat']['mean'] - pe['yat_b']['mean']:+.2f}); softmax {pe['softmax']['mean']:.2f}", "")
    claim.quote = BARELY_RULE.quote()
    entropy = table_of(t, "entropy")
    estimate = statistics.paired(per_seed(entropy, "yat", "mean"), per_seed(entropy, "yat_b", "mean"))
    if not estimate.n:
        return untestable(claim, protocol, "this build has no yat and yat_b contest cells of one seed")
    fmt = lambda x: f"{x:+.3f}"  # noqa: E731
    means = entropy.groupby("variant")["mean"].mean()
    gap = statistics.paired(per_seed(entropy, "yat_b", "mean"), per_seed(entropy, "softmax", "mean"))
    claim.measured = (f"{describe(estimate, fmt, wins=False)} (yat {means['yat']:.3f} vs yat_b {means['yat_b']:.3f})"
                      + (f"; yat_b − softmax {gap.mean:+.3f}" if gap.n else ""))
    claim.note = f"yat at {contest_lr_text(t, 'yat')}, yat_b at {contest_lr_text(t, 'yat_b')}"
    judged(claim, in_range(estimate, -BARELY, BARELY), {"": estimate}, fmt, stability_text(estimate, -BARELY, BARELY))
    direction = f"the ablation moves the entropy by {estimate.mean:+.3f}, more than barely"
    return at_protocol(claim, protocol, pp.conditions(t, BARELY_RULE, ["yat", "yat_b"]), direction)


def scalar_summaries(rows: pd.DataFrame) -> pd.DataFrame:
    """Per seed of yat_b's learned scalars: the share of heads whose ε fell below its init, the width of b's range,
    and the deeper half's largest ε over its init (the seed is the unit of every comparison)."""
    init = math.log(2.0)
    layers = sorted(set(rows.layer))
    deep = set(layers[len(layers) - len(layers) // 2:]) if len(layers) > 1 else set(layers)
    out = []
    for seed, cells in rows.groupby("seed"):
        eps, b = cells[cells.scalar == "eps"], cells[cells.scalar == "b"]
        deep_eps = eps[eps.layer.isin(deep)]
        out.append({"seed": int(seed), "share_below": float((eps.value < init).mean()),
                    "b_low": float(b.value.min()), "b_high": float(b.value.max()),
                    "b_width": float(b.value.max() - b.value.min()),
                    "deep_growth": float(deep_eps.value.max() / init) if len(deep_eps) else math.nan,
                    "eps_low": float(eps.value.min()), "eps_high": float(eps.value.max()), "heads": len(eps)})
    return pd.DataFrame(out)


def learned_scalars_specialise(t, pub, protocol) -> Claim:
    ps = pub["scalars"]
    claim = Claim(KERNEL_POST, "yat_b's learned scalars specialise per head: b spreads from its log 2 init, ε goes "
                  "toward 0 in most heads and grows in a few late ones", SCALARS_RULE.text(), "–",
                  f"one run: b over [{ps['b']['min']}, {ps['b']['max']}]; ε {ps['eps']['note']}", "",
                  quote=SCALARS_RULE.quote())
    scalars = table_of(t, "scalars")
    rows = scalars[scalars.variant == "yat_b"] if "variant" in scalars else scalars
    if rows.empty:
        return untestable(claim, protocol, "this build has no yat_b contest cell")
    per = scalar_summaries(rows)
    seeds = per.seed.tolist()
    share = statistics.mean_interval(per.share_below, seeds)
    width = statistics.mean_interval(per.b_width, seeds)
    growth = statistics.mean_interval(per.deep_growth.fillna(0.0), seeds)
    b_floor = B_SPREAD * (ps["b"]["max"] - ps["b"]["min"])
    fmt2 = lambda x: f"{x:.2f}"  # noqa: E731
    claim.measured = (f"ε below init in a share of heads {describe(share, lambda x: f'{x:.0%}', wins=False)}; "
                      f"b's width {describe(width, fmt2, wins=False)}; deep ε over init "
                      f"{describe(growth, lambda x: f'{x:.2f}×', wins=False)}; by seed: " + "; ".join(
                          f"seed {r.seed}: b [{r.b_low:.2f}, {r.b_high:.2f}], ε [{r.eps_low:.2f}, {r.eps_high:.2f}], "
                          f"{r.share_below:.0%} of {r.heads} heads below init" for r in per.itertuples()))
    claim.note = (f"yat_b at {contest_lr_text(t, 'yat_b')}; init log 2 = {math.log(2.0):.3f}; the post's figures are "
                  "one run's, set beside each seed's")
    verdict = every(one_sided(share, MOST_HEADS, above=True), one_sided(width, b_floor, above=True),
                    one_sided(growth, GROWN, above=True))
    judged(claim, verdict, {"share of heads": share, "b's width": width, "deep ε growth": growth})
    failing = [name for name, e, bar in (("ε falls in a minority of heads", share, MOST_HEADS),
                                         ("b spreads narrowly", width, b_floor),
                                         ("no deep ε grows", growth, GROWN)) if e.mean <= bar]
    return at_protocol(claim, protocol, pp.conditions(t, SCALARS_RULE, ["yat_b"]), "; ".join(failing))
