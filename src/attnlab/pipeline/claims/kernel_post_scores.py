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
from attnlab.pipeline import statistics
from attnlab.pipeline import estimate_text
from attnlab.pipeline.claims import protocol as pp
from attnlab.pipeline.claims.common import (KERNEL_POST, Claim, at_protocol, contest_lr_text, judged,
                                            judged_by_count, per_seed, lr_text, ratio, stability_text, table_of,
                                            untestable)
from attnlab.pipeline.contract import ORDERS_OF_MAGNITUDE, SEED_MEAN_OVER_LAYERS, SHARE_DIFFUSE, SHARE_SHARP
from attnlab.pipeline.statistics import every, in_range, one_sided
from attnlab.pipeline.estimate_text import describe

SEVERAL_FOLD = 2.0  # "several-fold": yat / yat_b max score at least this
AUROC_NULL = 0.03  # "AUROC ≈ 0.5": |AUROC - 0.5| at most this
BARELY = 0.05  # "barely move": |yat − yat_b| mean entropy within a fifth of the post's kernel–softmax gap (0.25)
MOST_HEADS = 0.5  # "most heads driving it toward zero": the share of heads whose ε ends below its init
TRAINED = (pp.OWN_BEST_LR, pp.INSIDE_GRID, pp.PLATEAU)  # a property of trained attention: the post's protocol
KAPPA_IS_LINEAR = ("κ is a linear-space weight (a key's weight is κ/Σκ) while a softmax logit is log-space (its "
                   "weight is ∝ e^logit): the ratio sets side by side the numbers each computes, not quantities "
                   "of one kind; in weight terms a logit of 34.5 is a factor e^34.5 ≈ 10^15")

SCALE_RULE = pp.Rule("The kernel's scores are five orders of magnitude larger",
                     "max trained score yat / softmax, paired by contest seed (mean log-ratio), each at its "
                     "contest LR", f"at least {ORDERS_OF_MAGNITUDE:,.0f}×",
                     "the words 'orders of magnitude', plural; the post's own numbers give 12,855× (4.1 orders), "
                     "its text says five", TRAINED)
ABLATION_RULE = pp.Rule("the ablation … un-tames the score scale: 443,508 maximum trained score against the full "
                        "kernel's 61,221", "max trained score yat / yat_b at one LR, paired by seed (mean "
                        "log-ratio), at the LR where both ran the most seeds", f"at least {SEVERAL_FOLD:g}×",
                        "'several-fold', read as at least twice; the post's 7.2× mixes LRs, ≈2.8× at one LR",
                        (pp.PLATEAU,))
AUROC_RULE = pp.Rule("AUROC 0.509, 0.501, 0.508 across seeds. Null", "mass AUROC per kernel variant, mean over "
                     "its contest seeds", f"within 0.5 ± {AUROC_NULL} for every kernel variant",
                     "the post's own seeds lie within 0.5 ± 0.015; twice that", TRAINED)
DIFFUSE_RULE = pp.Rule("the diffuseness mechanism … is a property of the polynomial ratio (kernel mean 0.73 vs "
                       "softmax's 0.48)", "yat_b − softmax mean normalised row entropy, paired by contest seed, "
                       "each at its contest LR (the posts' kernel maps are yat_b's)", "above 0",
                       "the post's direction; its own gap is +0.25", TRAINED)
BARELY_RULE = pp.Rule("The entropy statistics on the trained maps barely move against the ablation",
                      "yat − yat_b mean normalised row entropy, paired by contest seed, each at its contest LR",
                      f"within ±{BARELY:g}", "the post's numbers: yat 0.74 vs yat_b 0.73 against softmax's 0.48; "
                      "a fifth of that 0.25 kernel–softmax gap", TRAINED)
SCALARS_RULE = pp.Rule("eps splits, most heads driving it toward zero … while two late-layer heads grow it",
                       "the yat_b contest heads (every layer and head of every seed) whose learned ε ends below "
                       "its init log 2, a count", f"more than {MOST_HEADS:.0%} of heads (exact binomial interval)",
                       "the words 'most heads'", TRAINED)


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


def kernel_scores_larger(t, pub, protocol) -> Claim:
    ps = pub["score_scale"]
    published_ratio = ps["yat"]["max"] / ps["softmax"]["max"]
    claim = Claim(KERNEL_POST, "kernel scores are orders of magnitude larger than softmax logits",
                  SCALE_RULE.text(), "–",
                  f"{published_ratio:,.0f}× ({ps['yat']['max']:,} vs {ps['softmax']['max']}); "
                  f"per-seed mean over layers of max: {ps['yat']['seed_mean_over_layers_of_max_min']:,}–"
                  f"{ps['yat']['seed_mean_over_layers_of_max_max']:,} vs "
                  f"{ps['softmax']['seed_mean_over_layers_of_max_min']}–"
                  f"{ps['softmax']['seed_mean_over_layers_of_max_max']}", "")
    note = (f"published yat max at LR {lr_text(ps['yat']['max_lr'])}; the posts' 'per-layer mean' is, per seed, "
            "the mean over layers of each layer's max score (range across seeds)")
    estimate = statistics.paired(_max_scores(t, "yat"), _max_scores(t, "softmax"), ratio=True)
    if not estimate.n:
        claim.note = note
        return untestable(claim, protocol, "this build has no yat and softmax contest cells of one seed")
    scores = table_of(t, "score_scale")
    kern, soft = scores[scores.variant == "yat"], scores[scores.variant == "softmax"]
    (k_lo, k_hi), (s_lo, s_hi) = _seed_mean_range(kern), _seed_mean_range(soft)
    above = sum(v > ORDERS_OF_MAGNITUDE for v in estimate.values)
    claim.measured = (f"{describe(estimate, ratio, wins=False)} ({math.log10(estimate.mean):.1f} orders; "
                      f"{above} of {estimate.n} seeds above {ORDERS_OF_MAGNITUDE:,.0f}×); largest "
                      f"{kern.max_score.max():,.4g} vs {soft.max_score.max():.4g}; per-seed mean over layers of "
                      f"max: {k_lo:,.4g}–{k_hi:,.4g} vs {s_lo:.4g}–{s_hi:.4g}")
    claim.note = "; ".join([f"yat at {contest_lr_text(t, 'yat')}, softmax at {contest_lr_text(t, 'softmax')}",
                            note, KAPPA_IS_LINEAR])
    judged(claim, one_sided(estimate, ORDERS_OF_MAGNITUDE, above=True), {"": estimate}, ratio,
           stability_text(estimate, ORDERS_OF_MAGNITUDE))
    direction = f"the kernel's scores are {estimate.mean:,.3g}×, under two orders of magnitude"
    return at_protocol(claim, protocol, pp.conditions(t, SCALE_RULE, ["yat", "softmax"]), direction)


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


def learned_scalars_specialise(t, pub, protocol) -> Claim:
    ps = pub["scalars"]
    claim = Claim(KERNEL_POST, "yat_b's learned scalars specialise per head: b spreads from its log 2 init, ε goes "
                  "toward 0 in most heads and grows in a few late ones", SCALARS_RULE.text(), "–",
                  f"one run: b over [{ps['b']['min']}, {ps['b']['max']}]; ε {ps['eps']['note']}", "")
    scalars = table_of(t, "scalars")
    rows = scalars[scalars.variant == "yat_b"] if "variant" in scalars else scalars
    if rows.empty:
        return untestable(claim, protocol, "this build has no yat_b contest cell")
    init = math.log(2.0)
    eps, b = rows[rows.scalar == "eps"], rows[rows.scalar == "b"]
    below = int((eps.value < init).sum())
    runs = []
    for seed in sorted(set(rows.seed)):
        e, bb = eps[eps.seed == seed], b[b.seed == seed]
        grown = e[e.value > init].sort_values("value", ascending=False)
        runs.append(f"seed {int(seed)}: b [{bb.value.min():.2f}, {bb.value.max():.2f}], ε [{e.value.min():.2f}, "
                    f"{e.value.max():.2f}], ε below init in {int((e.value < init).sum())} of {len(e)} heads"
                    + (f", grown in layers {', '.join(str(int(x)) for x in sorted(set(grown.layer)))}"
                       if len(grown) else ""))
    claim.measured = estimate_text.count_text(below, len(eps), "ε below its init").replace(" seeds", " heads").replace(
        " seed ", " head ") + "; " + "; ".join(runs)
    claim.note = (f"yat_b at {contest_lr_text(t, 'yat_b')}; heads of every contest seed counted together; single "
                  f"runs side by side with the post's single run (init log 2 = {init:.3f}), not ranges of seed "
                  "means")
    judged_by_count(claim, below, len(eps), "ε below init", MOST_HEADS)
    claim.interval = claim.interval.replace(f"{below} of {len(eps)})", f"{below} of {len(eps)} heads)")
    claim.seeds = int(rows.seed.nunique())
    direction = f"ε falls in only {below} of {len(eps)} heads"
    return at_protocol(claim, protocol, pp.conditions(t, SCALARS_RULE, ["yat_b"]), direction)
