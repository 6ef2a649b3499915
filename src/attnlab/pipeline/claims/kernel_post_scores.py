"""The kernel post's claims on the trained attention: kernel scores are orders of magnitude above softmax's
logits, the b = 0 ablation un-tames them, row mass does not predict correctness, kernel rows are more
diffuse. Read from the score_scale, runs, mass_auroc and entropy tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline import statistics
from attnlab.pipeline.claims.common import (KERNEL_POST, Claim, contest_lr_text, judged, per_seed, posts_lr, ratio,
                                            table_of, untestable)
from attnlab.pipeline.contract import SEED_MEAN_OVER_LAYERS, SHARE_DIFFUSE, SHARE_SHARP
from attnlab.pipeline.statistics import describe, every, in_range, one_sided

ORDERS_OF_MAGNITUDE = 100.0  # "orders of magnitude": kernel / softmax max score at least this
SEVERAL_FOLD = 2.0  # "several-fold": yat / yat_b max score at least this
AUROC_NULL = 0.03  # "AUROC ≈ 0.5": |AUROC - 0.5| at most this


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
                  f"max trained score yat / softmax, paired by contest seed (mean log-ratio), each at its contest "
                  f"LR; the claim: at least {ORDERS_OF_MAGNITUDE:,.0f}×", "–",
                  f"{published_ratio:,.0f}× ({ps['yat']['max']:,} vs {ps['softmax']['max']}); "
                  f"per-seed mean over layers of max: {ps['yat']['seed_mean_over_layers_of_max_min']:,}–"
                  f"{ps['yat']['seed_mean_over_layers_of_max_max']:,} vs "
                  f"{ps['softmax']['seed_mean_over_layers_of_max_min']}–"
                  f"{ps['softmax']['seed_mean_over_layers_of_max_max']}", "")
    note = (f"published yat max at LR {posts_lr(ps['yat']['max_lr'])}; the posts' 'per-layer mean' is, per seed, "
            "the mean over layers of each layer's max score (range across seeds)")
    estimate = statistics.paired(_max_scores(t, "yat"), _max_scores(t, "softmax"), ratio=True)
    if not estimate.n:
        claim.note = note
        return untestable(claim, protocol, "this build has no yat and softmax contest cells of one seed")
    scores = table_of(t, "score_scale")
    kern, soft = scores[scores.variant == "yat"], scores[scores.variant == "softmax"]
    (k_lo, k_hi), (s_lo, s_hi) = _seed_mean_range(kern), _seed_mean_range(soft)
    claim.measured = (f"{describe(estimate, ratio, wins=False)}; largest {kern.max_score.max():,.4g} vs "
                      f"{soft.max_score.max():.4g}; per-seed mean over layers of max: {k_lo:,.4g}–{k_hi:,.4g} vs "
                      f"{s_lo:.4g}–{s_hi:.4g}")
    claim.note = f"yat at {contest_lr_text(t, 'yat')}, softmax at {contest_lr_text(t, 'softmax')}; " + note
    return judged(claim, one_sided(estimate, ORDERS_OF_MAGNITUDE, above=True), {"": estimate}, ratio)


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
    for lr_text, at_lr in sorted(cells.groupby(cells.lr.map(format_lr)), key=lambda group: float(group[0])):
        lr = float(lr_text)
        first = at_lr[at_lr.variant == a].groupby("seed")["telemetry.max_score"].max()
        second = at_lr[at_lr.variant == b].groupby("seed")["telemetry.max_score"].max()
        for seed in sorted(set(first.index) & set(second.index)):
            rows.append({"lr": lr, "seed": int(seed), f"{a}_max": float(first[seed]), f"{b}_max": float(second[seed])})
    return pd.DataFrame(rows, columns=columns)


def ablation_untames(t, pub, protocol) -> Claim:
    ab = pub["ablation"]
    mixed, matched = ab["mixed_lr"], ab["matched_lr"]
    claim = Claim(KERNEL_POST, "the b = 0 ablation raises the max score several-fold against learned b",
                  f"max trained score yat / yat_b at one LR, paired by seed (mean log-ratio), at the LR where "
                  f"both ran the most seeds; the claim: at least {SEVERAL_FOLD:g}×; every other shared LR in the note",
                  "–", f"{mixed['ratio']:.1f}× mixed LRs (yat {posts_lr(mixed['yat']['lr'])} {mixed['yat']['max']:,} / "
                  f"yat_b {posts_lr(mixed['yat_b']['lr'])} {mixed['yat_b']['max']:,}); "
                  f"≈{matched['ratio']:.1f}× at matched {posts_lr(matched['lr'])} "
                  f"({matched['yat']['max']:,} / {matched['yat_b']['max']:,})", "")
    tel = ab["telemetry_run"]
    mixes = (f"the headline {mixed['ratio']:.1f}× mixes LRs (yat at {posts_lr(mixed['yat']['lr'])}, yat_b at "
             f"{posts_lr(mixed['yat_b']['lr'])}); at one LR the published data give ≈{matched['ratio']:.1f}×, and a "
             f"separate yat_b telemetry run (seed {tel['seed']}, {posts_lr(tel['lr'])}) reached "
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
    claim.measured = f"at {posts_lr(primary)}: {describe(estimate, ratio, wins=False)}"
    others = [f"at {posts_lr(lr)} {describe(e, ratio, wins=False)}" for lr, e in by_lr.items() if lr != primary]
    against = [lr for lr, e in by_lr.items() if e.mean < 1]
    notes = []
    if others:
        notes.append("other LRs: " + "; ".join(others))
    if against:
        notes.append(f"b = 0 gives the smaller max score at {', '.join(posts_lr(lr) for lr in against)} "
                     f"({len(against)} of {len(by_lr)} LRs)")
    claim.note = "; ".join(notes + [mixes])
    return judged(claim, one_sided(estimate, SEVERAL_FOLD, above=True), {posts_lr(primary): estimate}, ratio)


def mass_auroc_null(t, pub, protocol) -> Claim:
    pub_text = ", ".join(f"{v} {np.mean(x):.3f}" for v, x in pub["mass_auroc"].items())
    claim = Claim(KERNEL_POST, "the kernel's row mass does not predict next-token correctness (AUROC ≈ 0.5)",
                  f"mass AUROC per kernel variant, mean over its contest seeds; the claim: within 0.5 ± "
                  f"{AUROC_NULL} for every kernel variant", "–", pub_text, "")
    auroc = table_of(t, "mass_auroc")
    if auroc.empty:
        return untestable(claim, protocol, "this build has no kernel variant")
    estimates = {v: statistics.mean_interval(c.mass_auroc, c.seed) for v, c in auroc.groupby("variant", sort=False)}
    fmt = lambda x: f"{x:.3f}"  # noqa: E731
    claim.measured = "; ".join(f"{v} {describe(e, fmt, wins=False)}" for v, e in estimates.items())
    notes = []
    if "lr" in auroc:
        notes.append(", ".join(f"{v} at {posts_lr(c.lr.iloc[0])}" for v, c in auroc.groupby("variant", sort=False)))
    if {"mass_correct_mean", "mass_wrong_mean"} <= set(auroc.columns):
        masses = auroc.groupby("variant", sort=False)[["mass_correct_mean", "mass_wrong_mean"]].mean()
        notes.append("mean kernel mass, correct vs wrong predictions: " + "; ".join(
            f"{v} {m.mass_correct_mean:,.4g} vs {m.mass_wrong_mean:,.4g}" for v, m in masses.iterrows()))
    claim.note = "; ".join(notes)
    verdict = every(*(in_range(e, 0.5 - AUROC_NULL, 0.5 + AUROC_NULL) for e in estimates.values()))
    return judged(claim, verdict, estimates, fmt)


def kernel_more_diffuse(t, pub, protocol) -> Claim:
    pe = pub["entropy"]
    claim = Claim(KERNEL_POST, "the kernel's attention rows are more diffuse than softmax's",
                  "yat_b − softmax mean normalised row entropy, paired by contest seed, each at its contest LR "
                  "(the posts' kernel maps are yat_b's); the claim: above 0", "–",
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
    return judged(claim, one_sided(estimate, 0.0, above=True), {"": estimate}, lambda x: f"{x:+.3f}")
