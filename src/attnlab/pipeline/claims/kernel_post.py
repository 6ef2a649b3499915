"""The kernel post's claims on quality and learning rate: softmax wins by about 1%, softmax dies at 1e-2 while
the kernel's LR column stays within about 1%. Read from the contest, best_lr and lr_sweep tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnlab.pipeline import statistics
from attnlab.pipeline.claims.common import (KERNEL_POST, KERNELS, Claim, contest_losses, contest_lr_text, judged,
                                            judged_by_divergence, pct, posts_lr, table_of, untestable)
from attnlab.pipeline.contract import at_lr
from attnlab.pipeline.statistics import CONFIDENCE, CONTRADICTED, HOLDS, describe, in_range, one_sided

# What each claim says, as numbers (the post's words, read generously).
GAP_BAND = (0.005, 0.025)  # "softmax wins by about 1%": kernel / softmax - 1 within this band
DEATH_GAP = 0.5  # nats above the best sweep LR that count as dead (published: +1.1 at 1e-2)
LR_BAND = 0.015  # "the kernel's LR column stays within about 1%": (max - min) / min below this
DEATH_LR = 1e-2  # the LR the post says softmax dies at


def kernel_gap(t, pub, protocol) -> Claim:
    low, high = GAP_BAND
    gap_pub = pub["claims"]["kernel_gap"]
    claim = Claim(KERNEL_POST, "softmax beats the kernel on quality by about 1% (kernel within 1.1–1.4%)",
                  f"kernel / softmax − 1 of the best validation loss, through the mean per-seed log-ratio over "
                  f"the contest seeds both have, each at its contest LR; the better kernel; the claim: within "
                  f"{low:.1%}–{high:.1%}", "–", f"{gap_pub['low']:.1%}–{gap_pub['high']:.1%}", "")
    mixes = ("published range mixes variants and LRs: 1.1% is yat_b at 3e-3, 1.4% is yat at 3e-4, "
             "both against softmax at 3e-4")
    soft = contest_losses(t, "softmax")
    gaps = {v: statistics.paired(contest_losses(t, v), soft, ratio=True) for v in KERNELS}
    gaps = {v: e for v, e in gaps.items() if e.n}
    if not soft or not gaps:
        claim.note = mixes
        return untestable(claim, protocol, "this build has no contest cells of softmax and a kernel on one seed")
    best = min(gaps, key=lambda v: gaps[v].mean)
    estimate = gaps[best]
    claim.measured = f"{best} {describe(estimate, pct)}"
    others = [f"{v} {describe(e, pct)}" for v, e in gaps.items() if v != best]
    notes = [f"{best} at {contest_lr_text(t, best)}, softmax at {contest_lr_text(t, 'softmax')}"]
    if others:
        notes.append("the other kernel: " + "; ".join(others))
    at_best = _best_lr_gaps(t)
    if at_best:
        notes.append("each variant at its best sweep LR instead: " + at_best)
    claim.note = "; ".join(notes + [mixes])
    return judged(claim, in_range(estimate, 1 + low, 1 + high), {best: estimate}, pct)


def _best_lr_gaps(t) -> str:
    """The kernels' gaps to softmax with each variant at its best sweep LR (the best_lr table)."""
    best = table_of(t, "best_lr")
    if best.empty or "gap_vs_softmax" not in best:
        return ""
    soft = best[best.variant == "softmax"]
    parts = []
    for row in best[best.variant.isin(KERNELS)].itertuples():
        if not np.isfinite(row.gap_vs_softmax):
            continue
        bounds = (f"{CONFIDENCE:.0%} CI [{row.gap_ci_low:+.2%}, {row.gap_ci_high:+.2%}]"
                  if np.isfinite(row.gap_ci_low) else str(row.interval_note))
        parts.append(f"{row.variant} at {posts_lr(row.best_lr)} {row.gap_vs_softmax:+.2%} ({bounds})")
    if parts and len(soft):
        parts[-1] += f", softmax at {posts_lr(soft.best_lr.iloc[0])}"
    return "; ".join(parts)


def _sweep(t, variant) -> pd.DataFrame:
    """One variant's rows of the lr_sweep table (every sweep LR at every sweep seed)."""
    sweep = table_of(t, "lr_sweep")
    return sweep[sweep.variant == variant] if "variant" in sweep else sweep


def softmax_dies_at_high_lr(t, pub, protocol) -> Claim:
    claim = Claim(KERNEL_POST, "softmax's quality depends on its LR and it dies at 1e-2",
                  f"softmax at the sweep's 1e-2, per sweep seed: diverged, or its best validation loss at least "
                  f"{DEATH_GAP} nats above its best other sweep LR (mean over the sweep seeds)", "–",
                  "2.5849 at 1e-2 (untrained level)", "")
    sweep = _sweep(t, "softmax")
    at_death = at_lr(sweep, DEATH_LR) if not sweep.empty else None
    if sweep.empty or not at_death.any():
        return untestable(claim, protocol, "the sweep has no 1e-2")
    top = sweep[at_death].set_index("seed")
    others = sweep[~at_death & ~sweep.diverged.astype(bool)]
    if others.empty:
        return untestable(claim, protocol, "the sweep has no other LR that trained")
    best_other = others.groupby("seed").best_val_loss.min()
    seeds = sorted(set(top.index) & set(best_other.index))
    claim.note = f"sweep seeds {' '.join(map(str, seeds))}, LRs {', '.join(posts_lr(x) for x in sorted(set(sweep.lr)))}"
    died = [s for s in seeds if bool(top.loc[s, "diverged"])]
    if died:
        claim.measured = f"diverged on {len(died)}/{len(seeds)} sweep seeds"
        return judged_by_divergence(claim, len(died), len(seeds), HOLDS, "every seed diverged")
    estimate = statistics.mean_interval([top.loc[s, "best_val_loss"] - best_other[s] for s in seeds], seeds)
    claim.measured = (f"{float(top.best_val_loss.mean()):.4f} at 1e-2; against the best other LR "
                      f"{describe(estimate, unit='nats')}")
    return judged(claim, one_sided(estimate, DEATH_GAP, above=True), {"": estimate})


def kernel_lr_band(t, pub, protocol) -> Claim:
    pub_band = pub["lr_sweep"]["yat"]
    pub_value = (max(pub_band.values()) - min(pub_band.values())) / min(pub_band.values())
    claim = Claim(KERNEL_POST, "the kernel's whole LR column stays within about 1%",
                  f"yat sweep, per sweep seed: (max − min) / min of the best validation loss over the sweep LRs, "
                  f"mean over the sweep seeds; the claim: below {LR_BAND:.1%}", "–",
                  f"{pub_value:.2%} over {', '.join(posts_lr(x) for x in pub_band)}", "")
    sweep = _sweep(t, "yat")
    if sweep.empty or sweep.lr.nunique() < 2:
        return untestable(claim, protocol, "the sweep has fewer than two LRs of yat")
    seeds = sorted(set(sweep.seed))
    claim.note = f"sweep seeds {' '.join(map(str, seeds))}, LRs {', '.join(posts_lr(x) for x in sorted(set(sweep.lr)))}"
    broken = sorted(set(sweep[sweep.diverged.astype(bool)].seed))
    if broken:
        claim.measured = f"a yat sweep cell diverged on {len(broken)}/{len(seeds)} sweep seeds"
        return judged_by_divergence(claim, len(broken), len(seeds), CONTRADICTED, "every seed had a divergence")
    band = sweep.groupby("seed").best_val_loss.agg(lambda x: (x.max() - x.min()) / x.min())
    estimate = statistics.mean_interval(band.values, band.index)
    claim.measured = f"over {sweep.lr.nunique()} LRs: {describe(estimate, lambda x: f'{x:.2%}')}"
    return judged(claim, one_sided(estimate, LR_BAND, above=False), {"": estimate}, lambda x: f"{x:.2%}")
