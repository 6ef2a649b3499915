"""The kernel post's claims on quality and learning rate: softmax wins by about 1%; softmax's quality depends on
its LR and it dies at 1e-2, while the kernel's LR column stays within about 1%. Read from the contest, best_lr,
lr_sweep and runs tables. Each check's Rule states the post's words, the quantity, the threshold and where it
comes from, and the protocol it needs (attnlab.pipeline.claims.protocol)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from attnlab.pipeline.ground import intervals, statistics, verdicts
from attnlab.pipeline.ground import estimate_text
from attnlab.pipeline.claims import protocol as pp
from attnlab.pipeline.claims import words
from attnlab.pipeline.claims.common import (KERNEL_POST, KERNELS, Claim, at_protocol, decide, leaned, contest_losses,
                                            contest_lr_text, judged, judged_by_count, pct, lr_text,
                                            stability_text, table_of, untestable)
from attnlab.pipeline.ground.contract import at_lr
from attnlab.pipeline.ground.published import quality_band, table_gap
from attnlab.pipeline.ground.intervals import CONFIDENCE
from attnlab.pipeline.ground.verdicts import every, in_range, one_sided
from attnlab.pipeline.ground.estimate_text import describe

# What each claim says, as numbers.
DEATH_GAP = 1.0  # nats above the best other sweep LR that count as dead (the post's dead cell: +1.10 at 1e-2)
LR_BAND = 0.015  # "a 1 percent band" (the post's own column: 1.06%): (max − min) / min below this
DEATH_LR = 1e-2  # the LR the post says softmax dies at
MOST = 0.5  # "dies": more than half the seeds
KERNEL, SECOND_KERNEL = "yat_b", "yat"  # named before the data: the table's kernel, then b = 0 as a second comparison
GAP_BAND = quality_band(KERNEL)  # (0, u): softmax ahead, by less than the post's own interval's upper end
_LOW, _GAP, _HIGH = table_gap(KERNEL)

GAP_RULE = pp.Rule(
    words.QUALITY,
    f"{KERNEL} / softmax − 1 of the best validation loss, paired by contest seed (mean log-ratio), each at its "
    f"contest LR; {KERNEL} is the contest kernel of the post's table, named before the data ({SECOND_KERNEL}, the "
    "b = 0 ablation, is a second comparison in the note, never swapped in)",
    f"above {GAP_BAND[0]:.0%} and below {GAP_BAND[1]:.2%}: softmax ahead, by less than the post's own table allows",
    f"0: the table's direction (softmax ahead of {KERNEL}, 1.4923 vs 1.5089: {_GAP:+.2%}); "
    f"{GAP_BAND[1]:.2%}: the upper end of a Welch 95% interval of that gap over the table's three seeds a side "
    f"([{_LOW:+.2%}, {_HIGH:+.2%}], this project's reading of the table, which states no interval)",
    pp.TRAINED, pairing=pp.OWN_LR)
DIES_RULE = pp.Rule(
    words.DIES,
    "softmax's sweep, over the post's LRs below 1e-2 that the sweep holds: (max − min) / min of the best "
    f"validation loss, per sweep seed; and at 1e-2, how many sweep seeds died (diverged, or ended {DEATH_GAP:g} nat "
    "or more above the seed's best other LR)",
    f"the band above {LR_BAND:.1%} and deaths at 1e-2 in more than half the sweep seeds (exact binomial interval)",
    f"the band's edge: the post's 1 percent band for the kernel's column, which softmax is said to leave, with "
    f"this project's allowance to {LR_BAND:.1%}; a death: the post's own dead cell, 2.5849 at 1e-2, 1.10 nats "
    f"above its best, read as at least {DEATH_GAP:g} nat; 'more than half': this project's reading of 'dies'",
    (pp.PLATEAU,), pairing=pp.SINGLE)
BAND_RULE = pp.Rule(
    words.BAND,
    "yat sweep, per sweep seed: (max − min) / min of the best validation loss over its sweep LRs inside the "
    "post's 3e-4–1e-2; one diverged cell breaks the column on its seed; softmax's band over the same LRs beside it",
    f"below {LR_BAND:.1%}",
    f"the post's words '1 percent' and its own column's 1.06%; the allowance to {LR_BAND:.1%} is this project's",
    (pp.PLATEAU,), pairing=pp.SINGLE)


def kernel_gap(t, pub, protocol) -> Claim:
    low, high = GAP_BAND
    gap_pub = pub["claims"]["kernel_gap"]
    claim = Claim(KERNEL_POST, f"quality: softmax ahead of the kernel ({KERNEL}), by less than the table allows",
                  GAP_RULE.text(), "–", f"{gap_pub['low']:.1%} ({KERNEL} at 3e-3 vs softmax at 3e-4)", "",
                  quote=GAP_RULE.quote())
    soft = contest_losses(t, "softmax")
    estimate = statistics.paired(contest_losses(t, KERNEL), soft, ratio=True)
    second = statistics.paired(contest_losses(t, SECOND_KERNEL), soft, ratio=True)
    if not soft or not estimate.n:
        return untestable(claim, protocol, f"this build has no contest cells of softmax and {KERNEL} on one seed")
    claim.measured = f"{KERNEL} {describe(estimate, pct)}"
    notes = [f"{KERNEL} at {contest_lr_text(t, KERNEL)}, softmax at {contest_lr_text(t, 'softmax')}"]
    if second.n:
        notes.append(f"the second comparison, {SECOND_KERNEL} (b = 0) at {contest_lr_text(t, SECOND_KERNEL)}: "
                     f"{describe(second, pct)}")
    at_best = _best_lr_gaps(t)
    if at_best:
        notes.append("each variant at its best sweep LR: " + at_best)
    claim.note = "; ".join(notes)
    verdict = in_range(estimate, 1 + low, 1 + high)
    judged(claim, verdict, {KERNEL: estimate}, pct, stability_text(estimate, 1 + low, 1 + high))
    gap = estimate.mean - 1
    direction = (f"softmax leads by more than the table allows: {gap:+.1%}" if gap > high
                 else f"softmax leads, within the table's interval: {gap:+.1%}" if gap >= 0
                 else f"the kernel beats softmax: {gap:+.1%}")
    return at_protocol(claim, protocol, pp.conditions(t, GAP_RULE, ["softmax", KERNEL]), direction)


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
        bounds = (f"{CONFIDENCE:.0%} {intervals.interval_kind()} [{row.gap_ci_low:+.2%}, {row.gap_ci_high:+.2%}]"
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
    """The LR band of these sweep cells, never below 0 (a band is positive): over sweep seeds the geometric mean
    with its t-interval on the log scale; one seed against loss_noise's scale, that interval intersected with
    [0, ∞) (on the log scale a noise larger than the band itself would stretch it over orders of magnitude)."""
    band = _bands(sweep)
    if len(band) == 1:
        noise, source = loss_noise(t, variant)
        return statistics.against_noise(float(band.iloc[0]), noise, source, bounds=(0.0, math.inf))
    if (band <= 0).any():  # a seed whose LRs all tie has no log: its band is read on the linear scale, in [0, ∞)
        return statistics.mean_interval(band.values, band.index, bounds=(0.0, math.inf))
    return statistics.mean_interval(band.values, band.index, ratio=True)


def _lrs_note(sweep) -> str:
    return f"sweep seeds {' '.join(map(str, sorted(set(sweep.seed))))}, LRs " + ", ".join(
        lr_text(x) for x in sorted(set(sweep.lr)))


def shared_lrs(first: pd.DataFrame, second: pd.DataFrame) -> list[float]:
    """The sweep LRs both frames hold (by their exact text), ascending: a band compares columns over these."""
    texts = set(first.lr.map(lr_key)) & set(second.lr.map(lr_key)) if len(first) and len(second) else set()
    return sorted(float(x) for x in texts)


def lr_key(lr) -> str:
    return f"{float(lr):.6g}"


def at_lrs(sweep: pd.DataFrame, lrs) -> pd.DataFrame:
    keys = {lr_key(x) for x in lrs}
    return sweep[sweep.lr.map(lr_key).isin(keys)] if len(sweep) else sweep


def one_seed_note(seeds) -> str:
    """What one sweep seed can and cannot show about a death."""
    return ("one sweep seed: it shows whether softmax died at 1e-2 on that seed, not how often it dies; the count "
            "decides only over more sweep seeds (sweep.seeds)") if len(seeds) == 1 else ""


def softmax_dies_at_high_lr(t, pub, protocol) -> Claim:
    claim = Claim(KERNEL_POST, "softmax's quality depends on its LR, and it dies at 1e-2", DIES_RULE.text(), "–",
                  "2.5849 at 1e-2 (untrained level, +1.10 nats); band over 3e-4–3e-3 "
                  + _published_band(pub["lr_sweep"]["softmax"], exclude=DEATH_LR), "", quote=DIES_RULE.quote())
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
    death_verdict = verdicts.count_verdict(len(died), len(seeds), MOST)
    fmt = lambda x: f"{x:.2%}"  # noqa: E731
    trained = [s for s in seeds if not bool(top.loc[s, "diverged"])]
    at_top = (f"; at {lr_text(DEATH_LR)} {float(top.loc[trained, 'best_val_loss'].mean()):.4f}, "
              f"{float((top.loc[trained, 'best_val_loss'] - best_other[trained]).mean()):+.4f} nats over its best "
              "other LR" if trained else "")
    deaths = estimate_text.count_text(len(died), len(seeds), f"died at {lr_text(DEATH_LR)}")
    claim.measured = f"band {describe(band, fmt)}; {deaths}" + at_top
    claim.note = "; ".join(filter(None, [_lrs_note(sweep), _outside(full, pub), one_seed_note(seeds)]))
    judged_by_count(claim, len(died), len(seeds), "died", MOST)  # the interval column: the count's
    claim.interval = f"band: {estimate_text.interval_text(band, fmt)}; deaths: {claim.interval}"
    verdict = every(band_verdict, death_verdict)
    decide(claim, verdict.word)
    claim.p_value = verdict.p
    if verdict.word == verdicts.INCONCLUSIVE:
        leaned(claim, verdict)
        claim.seeds_to_resolve = verdict.seeds_to_resolve
        claim.resolution = "; ".join(filter(None, [band_verdict.resolution, (
            f"deaths: about {int(death_verdict.seeds_to_resolve)} sweep seeds at the same rate would resolve it"
            if death_verdict.seeds_to_resolve else death_verdict.resolution)]))
    direction = ("softmax trained at 1e-2 on every sweep seed" if not died else "")
    return at_protocol(claim, protocol, pp.conditions(t, DIES_RULE, ["softmax"], cells="sweep"), direction)


def _published_band(column: dict, exclude: float | None = None) -> str:
    values = [v for lr, v in column.items() if exclude is None or not math.isclose(float(lr), exclude)]
    return f"{(max(values) - min(values)) / min(values):.2%}"


def kernel_lr_band(t, pub, protocol) -> Claim:
    pub_band = pub["lr_sweep"]["yat"]
    claim = Claim(KERNEL_POST, "the kernel's whole LR column stays within about 1%", BAND_RULE.text(), "–",
                  f"{_published_band(pub_band)} over {', '.join(lr_text(x) for x in pub_band)}", "",
                  quote=BAND_RULE.quote())
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
    notes.append(columns_compared(sweep, in_post_range(_sweep(t, "softmax"), pub)))
    broken = sorted(set(sweep[sweep.diverged.astype(bool)].seed))
    if broken:  # the claim is about the whole column: one diverged cell breaks it on that seed
        claim.measured = estimate_text.count_text(len(broken), len(seeds), "a yat sweep cell diverged")
        claim.note = "; ".join(filter(None, notes))
        # the share of seeds whose column broke is above 0 on any divergence (its interval's lower end): the claim,
        # that every LR of the column stays within the band, is contradicted
        judged_by_count(claim, len(broken), len(seeds), "diverged", 0.0)
        decide(claim, verdicts.CONTRADICTED)
        claim.resolution, claim.seeds_to_resolve = "", None
        claim.p_value = math.nan  # a broken column refutes the claim outright: no test, outside Holm's family
        return at_protocol(claim, protocol, [], f"the column breaks on {len(broken)} of {len(seeds)} seeds")
    estimate = band_estimate(t, "yat", sweep)
    fmt = lambda x: f"{x:.2%}"  # noqa: E731
    claim.measured = f"over {sweep.lr.nunique()} LRs: {describe(estimate, fmt)}"
    if estimate.noise and estimate.has_interval:
        claim.measured += f" ({abs(estimate.center - LR_BAND) / estimate.spread:.1f} seed spreads from the bar)"
    claim.note = "; ".join(filter(None, notes))
    judged(claim, one_sided(estimate, LR_BAND, above=False), {"": estimate}, fmt, stability_text(estimate, LR_BAND))
    direction = (f"the kernel's band is {estimate.mean:.1%}, not within about 1%" if estimate.mean > LR_BAND else "")
    return at_protocol(claim, protocol, pp.conditions(t, BAND_RULE, ["yat"], cells="sweep"), direction)


def columns_compared(kernel: pd.DataFrame, soft: pd.DataFrame) -> str:
    """The post's contrast of the two columns, over the LRs both sweeps hold (never each over its own LRs):
    yat's and softmax's mean band there, or why there is no such comparison."""
    shared = shared_lrs(kernel, soft)
    if len(shared) < 2:
        return (f"the two columns share {len(shared)} sweep LR{'s' if len(shared) != 1 else ''}, so this build "
                "cannot set their bands side by side")
    k, s = _bands(at_lrs(kernel, shared)), _bands(at_lrs(soft, shared))
    if not len(k) or not len(s):
        return ""
    wider = "wider" if float(k.mean()) > float(s.mean()) else "narrower"
    return (f"over the LRs both sweeps hold ({', '.join(lr_text(x) for x in shared)}): yat {float(k.mean()):.2%}, "
            f"softmax {float(s.mean()):.2%}; the kernel's band is {wider} there (the post found it narrower)")
