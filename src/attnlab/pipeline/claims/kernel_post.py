"""The kernel post's claims on quality and learning rate: softmax wins by about 1%; softmax's quality depends on
its LR and it dies at 1e-2, while the kernel's LR column stays within about 1%. Read from the contest, best_lr,
lr_sweep and runs tables. Each check's Rule states the post's words, the quantity, the threshold and where it
comes from, and the protocol it needs (attnlab.pipeline.claims.protocol)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from attnlab.pipeline import statistics
from attnlab.pipeline import estimate_text
from attnlab.pipeline.claims import protocol as pp
from attnlab.pipeline.claims.common import (KERNEL_POST, KERNELS, Claim, at_protocol, contest_losses,
                                            contest_lr_text, judged, judged_by_count, pct, lr_text,
                                            stability_text, table_of, untestable)
from attnlab.pipeline.contract import KERNEL_GAP_BAND, at_lr
from attnlab.pipeline.statistics import CONFIDENCE, every, in_range, one_sided
from attnlab.pipeline.estimate_text import describe

# What each claim says, as numbers.
GAP_BAND = KERNEL_GAP_BAND  # "about 1%" around the post's own 1.1–1.4%: kernel / softmax − 1 within this band
DEATH_GAP = 0.5  # nats above the best other sweep LR that count as dead (published: +1.1 at 1e-2, untrained level)
LR_BAND = 0.015  # "a 1 percent band" (the post's own column: 1.06%): (max − min) / min below this
DEATH_LR = 1e-2  # the LR the post says softmax dies at
MOST = 0.5  # "dies": more than half the seeds

GAP_RULE = pp.Rule(
    "softmax beats the kernel on quality by about 1% (kernel within 1.1–1.4%)",
    "kernel / softmax − 1 of the best validation loss, paired by contest seed (mean log-ratio), each at its "
    "contest LR; the better kernel",
    f"within {GAP_BAND[0]:.1%}–{GAP_BAND[1]:.1%}",
    "the post's 1.1–1.4%, widened to read 'about 1%'",
    (pp.OWN_BEST_LR, pp.INSIDE_GRID, pp.PLATEAU))
DIES_RULE = pp.Rule(
    "softmax needs its rate found (and dies at 1e-2)",
    f"softmax's sweep: (max − min) / min of the best validation loss over the LRs where it trained, and, at "
    f"1e-2, how many sweep seeds died (diverged, or ended {DEATH_GAP} nats or more above its best other LR)",
    f"the LR band above {LR_BAND:.1%} and deaths at 1e-2 in more than half the seeds (exact binomial interval)",
    "the band: the post's own 1% band for the kernel, which softmax is said to leave; the death: the post's "
    "2.5849 at 1e-2, 1.1 nats above its best; the band is over the LRs other than 1e-2",
    (pp.PLATEAU,))
BAND_RULE = pp.Rule(
    "the kernel's entire column sits in a 1 percent band",
    "yat sweep, per sweep seed: (max − min) / min of the best validation loss over its sweep LRs inside the "
    "post's 3e-4–1e-2; one diverged cell breaks the column on its seed",
    f"below {LR_BAND:.1%}",
    "the post's words, and its own column's 1.06%",
    (pp.PLATEAU,))


def kernel_gap(t, pub, protocol) -> Claim:
    low, high = GAP_BAND
    gap_pub = pub["claims"]["kernel_gap"]
    claim = Claim(KERNEL_POST, "softmax beats the kernel on quality by about 1% (kernel within 1.1–1.4%)",
                  GAP_RULE.text(), "–", f"{gap_pub['low']:.1%}–{gap_pub['high']:.1%}", "")
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
        notes.append("each variant at its best sweep LR: " + at_best)
    claim.note = "; ".join(notes + [mixes])
    verdict = in_range(estimate, 1 + low, 1 + high)
    judged(claim, verdict, {best: estimate}, pct, stability_text(estimate, 1 + low, 1 + high))
    gap = estimate.mean - 1
    direction = (f"softmax wins by more than claimed: {gap:+.1%}, not about 1%" if gap > high
                 else f"the kernel is closer to softmax than claimed: {gap:+.1%}" if gap >= 0
                 else f"the kernel beats softmax: {gap:+.1%}")
    return at_protocol(claim, protocol, pp.conditions(t, GAP_RULE, ["softmax", best]), direction)


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
        bounds = (f"{CONFIDENCE:.0%} {statistics.interval_kind()} [{row.gap_ci_low:+.2%}, {row.gap_ci_high:+.2%}]"
                  if np.isfinite(row.gap_ci_low) else str(row.interval_note))
        parts.append(f"{row.variant} at {lr_text(row.best_lr)} {row.gap_vs_softmax:+.2%} ({bounds})")
    if parts and len(soft):
        parts[-1] += f", softmax at {lr_text(soft.best_lr.iloc[0])}"
    return "; ".join(parts)


def _sweep(t, variant) -> pd.DataFrame:
    """One variant's rows of the lr_sweep table (every sweep LR at every sweep seed)."""
    sweep = table_of(t, "lr_sweep")
    return sweep[sweep.variant == variant] if "variant" in sweep else sweep


def post_range(pub) -> tuple[float, float]:
    """The LRs the post's sweep spans (3e-4 to 1e-2): its column claims speak of these LRs only."""
    lrs = [float(lr) for column in pub["lr_sweep"].values() for lr in column]
    return min(lrs), max(lrs)


def in_post_range(sweep: pd.DataFrame, pub) -> pd.DataFrame:
    low, high = post_range(pub)
    return sweep[(sweep.lr >= low * (1 - 1e-9)) & (sweep.lr <= high * (1 + 1e-9))] if not sweep.empty else sweep


def _outside(sweep: pd.DataFrame, pub) -> str:
    """'3e-2 outside the post's 3e-4–1e-2, left out' for sweep LRs beyond the post's range."""
    kept = set(in_post_range(sweep, pub).lr) if not sweep.empty else set()
    out = sorted(set(sweep.lr) - kept) if not sweep.empty else []
    low, high = post_range(pub)
    return (f"{', '.join(lr_text(x) for x in out)} outside the post's {lr_text(low)}–{lr_text(high)}, left out"
            if out else "")


def loss_noise(t, variant) -> tuple[statistics.Estimate, str]:
    """The seed-to-seed spread of a variant's best validation loss relative to its mean, scaled by √2 (a band
    is a difference of two such losses): the noise scale a one-seed LR band is read against. From the
    variant's contest seeds, else from its sweep seeds at one LR."""
    losses = contest_losses(t, variant)
    source = f"{variant}'s contest seeds"
    if len(losses) < 2:
        sweep = _sweep(t, variant)
        by_lr = sweep[~sweep.diverged.astype(bool)].groupby("lr") if not sweep.empty else []
        sizes = {lr: cells for lr, cells in by_lr}
        lr = max(sizes, key=lambda k: len(sizes[k]), default=None)
        losses = dict(zip(sizes[lr].seed, sizes[lr].best_val_loss)) if lr is not None else {}
        source = f"{variant}'s sweep seeds at {lr_text(lr)}" if lr is not None else source
    values = np.asarray(list(losses.values()), dtype=float)
    relative = values / values.mean() * math.sqrt(2) if len(values) else values
    return statistics.mean_interval(relative, list(losses)), f"{source}, relative and ×√2 for a band"


def _bands(sweep: pd.DataFrame) -> pd.Series:
    """seed -> (max − min) / min of the best validation loss over the LRs where that seed trained."""
    healthy = sweep[~sweep.diverged.astype(bool)]
    return healthy.groupby("seed").best_val_loss.agg(lambda x: (x.max() - x.min()) / x.min())


def band_estimate(t, variant, sweep: pd.DataFrame) -> statistics.Estimate:
    """The LR band of these sweep cells: its mean over sweep seeds with its t-interval; one seed: against
    loss_noise's scale."""
    band = _bands(sweep)
    if len(band) == 1:
        noise, source = loss_noise(t, variant)
        return statistics.against_noise(float(band.iloc[0]), noise, source)
    return statistics.mean_interval(band.values, band.index)


def _lrs_note(sweep) -> str:
    return f"sweep seeds {' '.join(map(str, sorted(set(sweep.seed))))}, LRs " + ", ".join(
        lr_text(x) for x in sorted(set(sweep.lr)))


def softmax_dies_at_high_lr(t, pub, protocol) -> Claim:
    claim = Claim(KERNEL_POST, "softmax's quality depends on its LR and it dies at 1e-2", DIES_RULE.text(), "–",
                  "2.5849 at 1e-2 (untrained level); band over 3e-4–3e-3 "
                  + _published_band(pub["lr_sweep"]["softmax"], exclude=DEATH_LR), "")
    full = _sweep(t, "softmax")
    sweep = in_post_range(full, pub)
    at_death = at_lr(sweep, DEATH_LR) if not sweep.empty else None
    if sweep.empty or not at_death.any():
        return untestable(claim, protocol, "the sweep has no 1e-2 for softmax")
    top = sweep[at_death].set_index("seed")
    others = sweep[~at_death & ~sweep.diverged.astype(bool)]
    if others.empty:
        return untestable(claim, protocol, "the sweep has no other LR that trained")
    best_other = others.groupby("seed").best_val_loss.min()
    seeds = sorted(set(top.index) & set(best_other.index))
    died = [s for s in seeds if bool(top.loc[s, "diverged"])
            or top.loc[s, "best_val_loss"] - best_other[s] >= DEATH_GAP]
    band = band_estimate(t, "softmax", sweep[~at_death])  # the LRs it lives at; 1e-2 is the death's own test
    band_verdict = one_sided(band, LR_BAND, above=True)
    death_verdict = statistics.count_verdict(len(died), len(seeds), MOST)
    fmt = lambda x: f"{x:.2%}"  # noqa: E731
    trained = [s for s in seeds if not bool(top.loc[s, "diverged"])]
    at_top = (f"; at {lr_text(DEATH_LR)} {float(top.loc[trained, 'best_val_loss'].mean()):.4f}, "
              f"{float((top.loc[trained, 'best_val_loss'] - best_other[trained]).mean()):+.4f} nats over its best "
              "other LR" if trained else "")
    deaths = estimate_text.count_text(len(died), len(seeds), f"died at {lr_text(DEATH_LR)}")
    claim.measured = f"band {describe(band, fmt)}; {deaths}" + at_top
    claim.note = "; ".join(filter(None, [_lrs_note(sweep), _outside(full, pub)]))
    judged_by_count(claim, len(died), len(seeds), "died", MOST)  # the interval column: the count's
    claim.interval = f"band: {estimate_text.interval_text(band, fmt)}; deaths: {claim.interval}"
    verdict = every(band_verdict, death_verdict)
    claim.verdict = verdict.word
    if verdict.word == statistics.INCONCLUSIVE:
        claim.seeds_to_resolve = verdict.seeds_to_resolve
        claim.resolution = "; ".join(filter(None, [band_verdict.resolution, (
            f"deaths: about {int(death_verdict.seeds_to_resolve)} sweep seeds at the same rate would resolve it"
            if death_verdict.seeds_to_resolve else death_verdict.resolution)]))
    direction = ("softmax trained at 1e-2 on every seed" if not died else "")
    return at_protocol(claim, protocol, pp.conditions(t, DIES_RULE, ["softmax"], cells="sweep"), direction)


def _published_band(column: dict, exclude: float | None = None) -> str:
    values = [v for lr, v in column.items() if exclude is None or not math.isclose(float(lr), exclude)]
    return f"{(max(values) - min(values)) / min(values):.2%}"


def kernel_lr_band(t, pub, protocol) -> Claim:
    pub_band = pub["lr_sweep"]["yat"]
    claim = Claim(KERNEL_POST, "the kernel's whole LR column stays within about 1%", BAND_RULE.text(), "–",
                  f"{_published_band(pub_band)} over {', '.join(lr_text(x) for x in pub_band)}", "")
    full = _sweep(t, "yat")
    sweep = in_post_range(full, pub)
    if sweep.empty or sweep.lr.nunique() < 2:
        return untestable(claim, protocol, "the sweep has fewer than two LRs of yat inside the post's range")
    seeds = sorted(set(sweep.seed))
    notes = [_lrs_note(sweep), _outside(full, pub)]
    span = max(sweep.lr) / min(sweep.lr)
    low, high = post_range(pub)
    if not math.isclose(span, high / low, rel_tol=0.01):
        notes.append(f"this column spans {span:.3g}× in LR, the post's {lr_text(low)}–{lr_text(high)} "
                     f"{high / low:.3g}×")
    soft = in_post_range(_sweep(t, "softmax"), pub)
    soft_band = _bands(soft) if not soft.empty and soft.lr.nunique() >= 2 else pd.Series(dtype=float)
    if len(soft_band):
        notes.append(f"softmax's band over its own sweep LRs in that range: {float(soft_band.mean()):.2%}")
    broken = sorted(set(sweep[sweep.diverged.astype(bool)].seed))
    if broken:  # the claim is about the whole column: one diverged cell breaks it on that seed
        claim.measured = estimate_text.count_text(len(broken), len(seeds), "a yat sweep cell diverged")
        claim.note = "; ".join(filter(None, notes))
        # the share of seeds whose column broke is above 0 on any divergence (its interval's lower end): the claim,
        # that every LR of the column stays within the band, is contradicted
        judged_by_count(claim, len(broken), len(seeds), "diverged", 0.0)
        claim.verdict, claim.resolution, claim.seeds_to_resolve = statistics.CONTRADICTED, "", None
        return at_protocol(claim, protocol, [], f"the column breaks on {len(broken)} of {len(seeds)} seeds")
    estimate = band_estimate(t, "yat", sweep)
    fmt = lambda x: f"{x:.2%}"  # noqa: E731
    claim.measured = f"over {sweep.lr.nunique()} LRs: {describe(estimate, fmt)}"
    if estimate.noise and estimate.has_interval:
        claim.measured += f" ({abs(estimate.center - LR_BAND) / estimate.spread:.1f} seed spreads from the bar)"
    if len(soft_band) and len(_bands(sweep)):
        wider = "wider" if float(_bands(sweep).mean()) > float(soft_band.mean()) else "narrower"
        notes.append(f"the kernel's band is {wider} than softmax's: the post found it narrower")
    claim.note = "; ".join(filter(None, notes))
    judged(claim, one_sided(estimate, LR_BAND, above=False), {"": estimate}, fmt, stability_text(estimate, LR_BAND))
    direction = (f"the kernel's band is {estimate.mean:.1%}, not within about 1%" if estimate.mean > LR_BAND else "")
    return at_protocol(claim, protocol, pp.conditions(t, BAND_RULE, ["yat"], cells="sweep"), direction)
