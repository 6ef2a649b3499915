"""The kernel post's claims on the shape of the trained attention: row mass does not predict correctness, kernel
rows are more diffuse, the b = 0 ablation barely moves the entropy, the learned scalars specialise per head. Read
from the mass_auroc, entropy and scalars tables; the claims on the scores' scale are
attnlab.pipeline.claims.kernel_post_scale. Each check's Rule states the post's words, the quantity, the threshold
and its source, and the protocol it needs (attnlab.pipeline.claims.protocol)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from attnlab.pipeline.claims import protocol as pp
from attnlab.pipeline.claims import words
from attnlab.pipeline.claims.common import (KERNEL_POST, Claim, at_protocol, contest_lr_text, judged, lr_text,
                                            matched_lr_values, per_seed, primary_lr, stability_text, table_of,
                                            untestable)
from attnlab.pipeline.ground import statistics
from attnlab.pipeline.ground.contract import SHARE_DIFFUSE, SHARE_SHARP
from attnlab.pipeline.ground.estimate_text import describe
from attnlab.pipeline.ground.verdicts import every, in_range, one_sided

AUROC_NULL = 0.03  # "AUROC ≈ 0.5": |AUROC - 0.5| at most this
BARELY = 0.05  # "barely move": |yat − yat_b| mean entropy within a fifth of the post's kernel–softmax gap (0.25)
MOST_HEADS = 0.5  # "most heads driving it toward zero": the share of heads whose ε ends below its init

AUROC_RULE = pp.Rule(words.AUROC, "mass AUROC per kernel variant, mean over "
                     "its contest seeds", f"within 0.5 ± {AUROC_NULL} for every kernel variant",
                     "the post's own seeds lie within 0.5 ± 0.015; twice that is this project's allowance",
                     pp.TRAINED, pairing=pp.SINGLE)
DIFFUSE_RULE = pp.Rule(words.DIFFUSE, "yat_b − softmax mean normalised row entropy, paired by contest seed, "
                       "each at its contest LR (the posts' kernel maps are yat_b's)", "above 0",
                       "0: the post's direction (its own gap is +0.25)", pp.TRAINED, pairing=pp.OWN_LR)
BARELY_RULE = pp.Rule(words.BARELY,
                      "yat − yat_b mean normalised row entropy, paired by seed at one LR both trained (any cell: "
                      "sweep, contest or study), at the LR where both ran the most seeds (ties: the one nearest "
                      "yat_b's published 3e-3)",
                      f"within ±{BARELY:g}", "a fifth of the post's own kernel–softmax gap of 0.25 (0.73 vs "
                      "0.48), a fraction this project chose (the post gives no number for the ablation's maps)",
                      (pp.PLATEAU,),
                      pairing=pp.SHARED_LR)
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
    "project's floor", pp.TRAINED, pairing=pp.SINGLE)


def mass_auroc_null(t, pub, protocol) -> Claim:
    pub_text = ", ".join(f"{v} {np.mean(x):.3f}" for v, x in pub["mass_auroc"].items())
    claim = Claim(KERNEL_POST, "the kernel's row mass does not predict next-token correctness (AUROC ≈ 0.5)",
                  AUROC_RULE.text(), "–", pub_text, "")
    claim.quote = AUROC_RULE.quote()
    auroc = table_of(t, "mass_auroc")
    if auroc.empty:
        return untestable(claim, protocol, "this build has no kernel variant")
    estimates = {v: statistics.mean_interval(c.mass_auroc, c.seed, bounds=(0.0, 1.0))  # an AUROC: inside [0, 1]
                 for v, c in auroc.groupby("variant", sort=False)}
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
    pub_note = "the posts' 'kernel' 0.73 / 0.2% / 37% are yat_b's maps; the posts give no entropy of yat's (b = 0)"
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


ENTROPY_COLUMN = "telemetry.entropy.mean"  # runs.csv: a cell's mean normalised row entropy, every cell


def ablation_barely_moves_entropy(t, pub, protocol) -> Claim:
    """An ablation: yat against yat_b at one LR (BARELY_RULE's pairing), never each at its own contest LR, where a
    difference in LR would read as the ablation's effect."""
    pe = pub["entropy"]
    claim = Claim(KERNEL_POST, "the b = 0 ablation barely moves the entropy of the trained maps", BARELY_RULE.text(),
                  "–", f"'barely move' (mean {pe['yat_b']['mean']:.2f} vs softmax's {pe['softmax']['mean']:.2f}); "
                  "no entropy of the ablation's own maps published", "")
    claim.quote = BARELY_RULE.quote()
    pairs = matched_lr_values(table_of(t, "runs"), ENTROPY_COLUMN, "yat", "yat_b")
    if not pairs:
        return untestable(claim, protocol, "no LR at which both yat and yat_b trained a seed")
    by_lr = {lr: statistics.paired(first, second) for lr, (first, second) in pairs.items()}
    primary = primary_lr(by_lr, pub["ablation"]["mixed_lr"]["yat_b"]["lr"])
    estimate = by_lr[primary]
    fmt = lambda x: f"{x:+.3f}"  # noqa: E731
    first, second = pairs[primary]
    claim.measured = (f"at {lr_text(primary)}: {describe(estimate, fmt, wins=False)} (yat "
                      f"{np.mean(list(first.values())):.3f} vs yat_b {np.mean(list(second.values())):.3f})")
    others = [f"at {lr_text(lr)} {describe(e, fmt, wins=False)}" for lr, e in by_lr.items() if lr != primary]
    claim.note = "; ".join(filter(None, [
        "other shared LRs: " + "; ".join(others) if others else "",
        f"contest LRs: yat {contest_lr_text(t, 'yat')}, yat_b {contest_lr_text(t, 'yat_b')} (not compared: "
        "the claim is an ablation at one LR)"]))
    judged(claim, in_range(estimate, -BARELY, BARELY), {lr_text(primary): estimate}, fmt,
           stability_text(estimate, -BARELY, BARELY))
    direction = f"the ablation moves the entropy by {estimate.mean:+.3f}, more than barely"
    return at_protocol(claim, protocol, pp.conditions(t, BARELY_RULE, ["yat", "yat_b"], cells=primary), direction)


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
    share = statistics.mean_interval(per.share_below, seeds, bounds=(0.0, 1.0))  # a share: inside [0, 1]
    width = statistics.mean_interval(per.b_width, seeds, bounds=(0.0, math.inf))  # a width: never below 0
    grown = per.dropna(subset=["deep_growth"])
    growth = statistics.mean_interval(grown.deep_growth, grown.seed.tolist(), ratio=True)  # a ratio: log scale
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
