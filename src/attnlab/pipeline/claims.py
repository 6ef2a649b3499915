"""The claims ledger: each claim of the source posts as a check over this build's tables, with its interval.

Every check returns the measured value, the published value, a verdict, the
interval the verdict rests on (or why it has none), the number of seeds, and the
protocol it was measured at (runs.csv's config.name). A check compares like with
like (the same variant and LR as the published number beside it; where a
published number itself mixes conditions, the row's note says so) and is one
the claim's negation would fail. Comparisons between variants are paired by
seed, and every interval comes from attnlab.pipeline.statistics. A verdict is
one of five:

- holds: the interval lies inside what the claim says;
- contradicted: the interval excludes it;
- inconclusive: the interval spans the claim's threshold (the row says about
  how many seeds would resolve it at the observed spread), or there is one seed
  and so no interval;
- not testable at <protocol>: this protocol cannot express the claim (a
  2-layer model has no early and deep layers to tell apart, a sweep without
  1e-2 cannot show a death at 1e-2, a build without a variant cannot compare it);
- by construction: the claim follows from how the model is built; the row
  shows the check that this build's code does what the construction says.

A verdict at a protocol other than the published one speaks for that protocol.
`python -m attnlab.pipeline.claims --tables DIR --out STEM` writes the ledger as
STEM.csv (one row per claim, a `verdict` column), .md and .tex.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from attnlab.pipeline import statistics
from attnlab.pipeline.statistics import (BY_CONSTRUCTION, CONFIDENCE, CONTRADICTED, HOLDS, INCONCLUSIVE, Estimate,
                                         Verdict, describe, every, in_range, interval_text, not_testable, one_sided)

KERNELS = ("yat_b", "yat")
TABLE_NAMES = ("runs", "contest", "lr_sweep", "params", "score_scale", "mass_auroc", "entropy", "a3_gates",
               "a3_init", "a3_vs_softmax_entropy", "normswap", "a3_vs_temperature", "best_lr")
# Where each claim comes from (the ledger's source column) and how the writeup cites it.
KERNEL_POST = "kernel post"
A3_POST = "A³ post"
LATER_POST = "kernel post series, later post"
BEYOND = "beyond the posts"  # a control no post runs
POSTS = {
    KERNEL_POST: "Taha Bouhsine, “Softmax-Free Attention in JAX/Flax NNX”, blog post, July 2026, "
                 "https://tahabouhsine.com/blog/attention-is-a-compatibility-kernel-jax-flax-nnx/",
    A3_POST: "“A³ Attention: The Softmax Is Not Sacred”, blog post (adaptive activation attention)",
    LATER_POST: "the later post of the kernel post's series (yat_b under a softmax over its kernel)",
    BEYOND: "controls this project adds (a learned per-head temperature against A³'s per-token gate)",
}
LEDGER_COLUMNS = ["source", "claim", "check", "measured", "published", "verdict", "interval", "seeds",
                  "seeds_to_resolve", "resolution", "protocol", "note"]
SEED_MEAN = "seed_mean_over_layers_of_max_score"  # tables.SEED_MEAN_OVER_LAYERS (claims stays import-light)

# What each claim says, as numbers (the posts' words, read generously).
GAP_BAND = (0.005, 0.025)  # "softmax wins by about 1%": kernel / softmax - 1 within this band
DEATH_GAP = 0.5  # nats above the best sweep LR that count as dead (published: +1.1 at 1e-2)
LR_BAND = 0.015  # "the kernel's LR column stays within about 1%": (max - min) / min below this
ORDERS_OF_MAGNITUDE = 100.0  # kernel / softmax max score
SEVERAL_FOLD = 2.0  # yat / yat_b max score
AUROC_NULL = 0.03  # |AUROC - 0.5| at most this
ROW_SUM_TOLERANCE = 5e-3  # float16 storage of the maps
EXACT_TOLERANCE = 1e-3  # max |A3 - softmax| that would count as starting at softmax
OVERHEAD_SMALL = 0.01  # share of softmax's parameters
MIN_DEPTH_LAYERS = 4  # early and deep layers, at least two of each


@dataclass
class Claim:
    source: str  # which post makes it (POSTS)
    claim: str  # the claim in a sentence
    check: str  # what is computed from the tables
    measured: str
    published: str
    verdict: str  # one of statistics.VERDICTS ("not testable at <protocol>")
    interval: str = ""  # the interval the verdict rests on, or why there is none
    seeds: int = 0  # how many seeds it rests on
    seeds_to_resolve: float | None = None  # inconclusive: about how many seeds would resolve it
    resolution: str = ""  # inconclusive: that, in words
    protocol: str = ""  # the build's protocol (runs.csv config.name)
    note: str = ""  # conditions: LRs compared, what a published number mixes, what drives a result


def published() -> dict:
    return yaml.safe_load(resources.files("attnlab.pipeline").joinpath("published.yaml").read_text())


def load_tables(tables_dir: Path) -> dict[str, pd.DataFrame]:
    """Every table the ledger reads; the composability table only where the build ran that grid."""
    tables = {name: pd.read_csv(Path(tables_dir) / f"{name}.csv") for name in TABLE_NAMES}
    optional = Path(tables_dir) / "composability.csv"
    if optional.is_file():
        tables["composability"] = pd.read_csv(optional)
    return tables


def build_protocol(tables: dict[str, pd.DataFrame]) -> str:
    """The config name every cell ran ('mixed: a, b' if several, 'unknown' without runs)."""
    runs = tables.get("runs")
    if runs is None or runs.empty or "config.name" not in runs:
        return "unknown"
    names = sorted(set(runs["config.name"].dropna().astype(str)))
    if not names:
        return "unknown"
    return names[0] if len(names) == 1 else "mixed: " + ", ".join(names)


def ledger(tables: dict[str, pd.DataFrame], pub: dict | None = None) -> pd.DataFrame:
    pub = pub or published()
    protocol = build_protocol(tables)  # the checks run in CHECKS' order (defined after them, below)
    rows = []
    for check in CHECKS:
        claim = check(tables, pub, protocol)
        claim.protocol = protocol
        rows.append(asdict(claim))
    return pd.DataFrame(rows, columns=LEDGER_COLUMNS)


# ---- how a row is judged


def judged(claim: Claim, verdict: Verdict, estimates: dict[str, Estimate], fmt=None) -> Claim:
    """The claim with its verdict, its intervals ('label: 95% CI [a, b]' per estimate) and its seeds."""
    claim.verdict = verdict.word
    shown = [f"{label}: {interval_text(e, fmt)}" if label else interval_text(e, fmt) for label, e in estimates.items()]
    claim.interval = "; ".join(shown)
    claim.seeds = min((e.n for e in estimates.values()), default=0)
    if verdict.word == INCONCLUSIVE:
        claim.seeds_to_resolve = verdict.seeds_to_resolve
        claim.resolution = verdict.resolution
    return claim


def untestable(claim: Claim, protocol: str, why: str) -> Claim:
    """Not testable at this protocol, and why (no interval: nothing was compared)."""
    claim.verdict = not_testable(protocol)
    claim.interval = f"none: {why}"
    return claim


def constructed(claim: Claim, seeds: int, why: str, holds: bool) -> Claim:
    """A claim the model's construction settles; the check shows this build's code keeps to it."""
    claim.verdict = BY_CONSTRUCTION if holds else CONTRADICTED
    claim.interval = f"none needed: {why}"
    claim.seeds = seeds
    return claim


# ---- what the tables hold, per seed


def _table(t, name) -> pd.DataFrame:
    table = t.get(name)
    return table if table is not None else pd.DataFrame()


def _lr(value) -> str:
    """An LR as the posts write it: 3e-4, 1e-2, 2.5e-3."""
    mantissa, exponent = f"{float(value):.3e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def _contest_row(t, variant) -> pd.Series | None:
    contest = _table(t, "contest")
    rows = contest[contest.variant == variant] if "variant" in contest else contest
    return rows.iloc[0] if len(rows) else None


def _contest_lr(t, variant) -> str:
    row = _contest_row(t, variant)
    if row is None:
        return "?"
    auto = " (auto)" if str(row.get("lr_choice", "")) == "auto" else ""
    return _lr(row.lr) + auto


def contest_losses(t, variant) -> dict[int, float]:
    """seed -> best validation loss of a variant's contest cells (its contest LR, the contest's seeds)."""
    row, runs = _contest_row(t, variant), _table(t, "runs")
    if row is None or runs.empty:
        return {}
    cells = runs[(runs.variant == variant) & np.isclose(runs.lr.astype(float), float(row.lr))]
    if "seeds" in row and pd.notna(row.seeds):  # "0 1 2"; a lone seed reads back from the CSV as a number
        cells = cells[cells.seed.isin([int(float(s)) for s in str(row.seeds).split()])]
    return {int(s): float(v) for s, v in zip(cells.seed, cells.best_val_loss)}


def _per_seed(frame: pd.DataFrame, variant: str, column: str, how: str = "first") -> dict[int, float]:
    """seed -> one value of a variant in a per-seed table."""
    if frame.empty or "variant" not in frame:
        return {}
    cells = frame[frame.variant == variant]
    return {int(s): float(v) for s, v in cells.groupby("seed")[column].agg(how).items()}


def _pct(x: float) -> str:
    return f"{x - 1:+.2%}"


# ---- kernel post


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
    claim.measured = f"{best} {describe(estimate, _pct)}"
    others = [f"{v} {describe(e, _pct)}" for v, e in gaps.items() if v != best]
    notes = [f"{best} at {_contest_lr(t, best)}, softmax at {_contest_lr(t, 'softmax')}"]
    if others:
        notes.append("the other kernel: " + "; ".join(others))
    at_best = _best_lr_gaps(t)
    if at_best:
        notes.append("each variant at its best sweep LR instead: " + at_best)
    claim.note = "; ".join(notes + [mixes])
    return judged(claim, in_range(estimate, 1 + low, 1 + high), {best: estimate}, _pct)


def _best_lr_gaps(t) -> str:
    """The kernels' gaps to softmax with each variant at its best sweep LR (the best_lr table)."""
    best = _table(t, "best_lr")
    if best.empty or "gap_vs_softmax" not in best:
        return ""
    soft = best[best.variant == "softmax"]
    parts = []
    for row in best[best.variant.isin(KERNELS)].itertuples():
        if not np.isfinite(row.gap_vs_softmax):
            continue
        bounds = (f"{CONFIDENCE:.0%} CI [{row.gap_ci_low:+.2%}, {row.gap_ci_high:+.2%}]"
                  if np.isfinite(row.gap_ci_low) else str(row.interval_note))
        parts.append(f"{row.variant} at {_lr(row.best_lr)} {row.gap_vs_softmax:+.2%} ({bounds})")
    if parts and len(soft):
        parts[-1] += f", softmax at {_lr(soft.best_lr.iloc[0])}"
    return "; ".join(parts)


def _sweep(t, variant) -> pd.DataFrame:
    sweep = _table(t, "lr_sweep")
    if sweep.empty or "variant" not in sweep:
        return sweep
    sweep = sweep[sweep.variant == variant]
    return sweep if "seed" in sweep else sweep.assign(seed=0)  # a one-seed table of an older build


def softmax_dies_at_high_lr(t, pub, protocol) -> Claim:
    claim = Claim(KERNEL_POST, "softmax's quality depends on its LR and it dies at 1e-2",
                  f"softmax at the sweep's 1e-2, per sweep seed: diverged, or its best validation loss at least "
                  f"{DEATH_GAP} nats above its best other sweep LR (mean over the sweep seeds)", "–",
                  "2.5849 at 1e-2 (untrained level)", "")
    sweep = _sweep(t, "softmax")
    if sweep.empty or not np.isclose(sweep.lr.astype(float), 1e-2).any():
        return untestable(claim, protocol, "the sweep has no 1e-2")
    top = sweep[np.isclose(sweep.lr.astype(float), 1e-2)].set_index("seed")
    others = sweep[~np.isclose(sweep.lr.astype(float), 1e-2) & ~sweep.diverged.astype(bool)]
    if others.empty:
        return untestable(claim, protocol, "the sweep has no other LR that trained")
    best_other = others.groupby("seed").best_val_loss.min()
    seeds = sorted(set(top.index) & set(best_other.index))
    claim.note = f"sweep seeds {' '.join(map(str, seeds))}, LRs {', '.join(_lr(x) for x in sorted(set(sweep.lr)))}"
    died = [s for s in seeds if bool(top.loc[s, "diverged"])]
    if died:
        claim.measured = f"diverged on {len(died)}/{len(seeds)} sweep seeds"
        return _judged_by_divergence(claim, len(died), len(seeds), HOLDS, "every seed diverged")
    estimate = statistics.mean_interval([top.loc[s, "best_val_loss"] - best_other[s] for s in seeds], seeds)
    claim.measured = (f"{float(top.best_val_loss.mean()):.4f} at 1e-2; against the best other LR "
                      f"{describe(estimate, unit='nats')}")
    return judged(claim, one_sided(estimate, DEATH_GAP, above=True), {"": estimate})


def _judged_by_divergence(claim: Claim, diverged: int, seeds: int, every_seed: str, every_seed_why: str) -> Claim:
    """A sweep claim decided by divergence, which leaves no loss to put in an interval.

    `every_seed` is the verdict when every one of two or more sweep seeds
    diverged; fewer seeds, or seeds that disagree, are inconclusive.
    """
    claim.seeds = seeds
    why = "a diverged cell has no loss to put in an interval"
    if diverged == seeds and seeds >= 2:
        claim.verdict, claim.interval = every_seed, f"none: {every_seed_why} ({why})"
        return claim
    claim.verdict = INCONCLUSIVE
    claim.interval = f"none: {statistics.ONE_SEED}" if seeds == 1 else f"none: {why}"
    claim.resolution = ("two or more sweep seeds (sweep.seeds) would give an interval" if seeds == 1
                        else "seeds disagree: more sweep seeds (sweep.seeds) would tell")
    return claim


def kernel_lr_band(t, pub, protocol) -> Claim:
    pub_band = pub["lr_sweep"]["yat"]
    pub_value = (max(pub_band.values()) - min(pub_band.values())) / min(pub_band.values())
    claim = Claim(KERNEL_POST, "the kernel's whole LR column stays within about 1%",
                  f"yat sweep, per sweep seed: (max − min) / min of the best validation loss over the sweep LRs, "
                  f"mean over the sweep seeds; the claim: below {LR_BAND:.1%}", "–",
                  f"{pub_value:.2%} over {', '.join(_lr(x) for x in pub_band)}", "")
    sweep = _sweep(t, "yat")
    if sweep.empty or sweep.lr.nunique() < 2:
        return untestable(claim, protocol, "the sweep has fewer than two LRs of yat")
    seeds = sorted(set(sweep.seed))
    claim.note = f"sweep seeds {' '.join(map(str, seeds))}, LRs {', '.join(_lr(x) for x in sorted(set(sweep.lr)))}"
    broken = sorted(set(sweep[sweep.diverged.astype(bool)].seed))
    if broken:
        claim.measured = f"a yat sweep cell diverged on {len(broken)}/{len(seeds)} sweep seeds"
        return _judged_by_divergence(claim, len(broken), len(seeds), CONTRADICTED, "every seed had a divergence")
    band = sweep.groupby("seed").best_val_loss.agg(lambda x: (x.max() - x.min()) / x.min())
    estimate = statistics.mean_interval(band.values, band.index)
    claim.measured = f"over {sweep.lr.nunique()} LRs: {describe(estimate, lambda x: f'{x:.2%}')}"
    return judged(claim, one_sided(estimate, LR_BAND, above=False), {"": estimate}, lambda x: f"{x:.2%}")


def _max_scores(t, variant) -> dict[int, float]:
    """seed -> the largest score of a variant's contest cell (over layers and held-out batches)."""
    return _per_seed(_table(t, "score_scale"), variant, "max_score", "max")


def _seed_mean_range(cells: pd.DataFrame) -> tuple[float, float]:
    """Range across seeds of the mean over layers of each layer's max score."""
    if SEED_MEAN in cells:
        per_seed = cells.groupby("seed")[SEED_MEAN].first()
    else:  # the same definition from the per-layer rows
        per_seed = cells.groupby("seed").max_score.mean()
    return float(per_seed.min()), float(per_seed.max())


def _ratio(x: float) -> str:
    return f"{x:,.3g}×"


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
    note = (f"published yat max at LR {_lr(ps['yat']['max_lr'])}; the posts' 'per-layer mean' is, per seed, "
            "the mean over layers of each layer's max score (range across seeds)")
    estimate = statistics.paired(_max_scores(t, "yat"), _max_scores(t, "softmax"), ratio=True)
    if not estimate.n:
        claim.note = note
        return untestable(claim, protocol, "this build has no yat and softmax contest cells of one seed")
    scores = _table(t, "score_scale")
    kern, soft = scores[scores.variant == "yat"], scores[scores.variant == "softmax"]
    (k_lo, k_hi), (s_lo, s_hi) = _seed_mean_range(kern), _seed_mean_range(soft)
    claim.measured = (f"{describe(estimate, _ratio, wins=False)}; largest {kern.max_score.max():,.4g} vs "
                      f"{soft.max_score.max():.4g}; per-seed mean over layers of max: {k_lo:,.4g}–{k_hi:,.4g} vs "
                      f"{s_lo:.4g}–{s_hi:.4g}")
    claim.note = f"yat at {_contest_lr(t, 'yat')}, softmax at {_contest_lr(t, 'softmax')}; " + note
    return judged(claim, one_sided(estimate, ORDERS_OF_MAGNITUDE, above=True), {"": estimate}, _ratio)


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
    for lr in sorted(set(cells.lr.astype(float))):
        at_lr = cells[np.isclose(cells.lr.astype(float), lr)]
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
                  "–", f"{mixed['ratio']:.1f}× mixed LRs (yat {_lr(mixed['yat']['lr'])} {mixed['yat']['max']:,} / "
                  f"yat_b {_lr(mixed['yat_b']['lr'])} {mixed['yat_b']['max']:,}); "
                  f"≈{matched['ratio']:.1f}× at matched {_lr(matched['lr'])} "
                  f"({matched['yat']['max']:,} / {matched['yat_b']['max']:,})", "")
    tel = ab["telemetry_run"]
    mixes = (f"the headline {mixed['ratio']:.1f}× mixes LRs (yat at {_lr(mixed['yat']['lr'])}, yat_b at "
             f"{_lr(mixed['yat_b']['lr'])}); at one LR the published data give ≈{matched['ratio']:.1f}×, and a "
             f"separate yat_b telemetry run (seed {tel['seed']}, {_lr(tel['lr'])}) reached "
             f"{tel['yat_b']['max']:,}, above yat there")
    pairs = matched_lr_scores(_table(t, "runs"))
    if pairs.empty:
        claim.note = mixes
        return untestable(claim, protocol, "no LR at which both yat and yat_b ran the same seed")
    by_lr = {}
    for lr, cells in pairs.groupby("lr"):
        by_lr[float(lr)] = statistics.paired(dict(zip(cells.seed, cells.yat_max)),
                                             dict(zip(cells.seed, cells.yat_b_max)), ratio=True)
    primary = max(by_lr, key=lambda lr: (by_lr[lr].n, -abs(math.log(lr / float(matched["lr"])))))
    estimate = by_lr[primary]
    claim.measured = f"at {_lr(primary)}: {describe(estimate, _ratio, wins=False)}"
    others = [f"at {_lr(lr)} {describe(e, _ratio, wins=False)}" for lr, e in by_lr.items() if lr != primary]
    against = [lr for lr, e in by_lr.items() if e.mean < 1]
    notes = []
    if others:
        notes.append("other LRs: " + "; ".join(others))
    if against:
        notes.append(f"b = 0 gives the smaller max score at {', '.join(_lr(lr) for lr in against)} "
                     f"({len(against)} of {len(by_lr)} LRs)")
    claim.note = "; ".join(notes + [mixes])
    return judged(claim, one_sided(estimate, SEVERAL_FOLD, above=True), {_lr(primary): estimate}, _ratio)


def mass_auroc_null(t, pub, protocol) -> Claim:
    pub_text = ", ".join(f"{v} {np.mean(x):.3f}" for v, x in pub["mass_auroc"].items())
    claim = Claim(KERNEL_POST, "the kernel's row mass does not predict next-token correctness (AUROC ≈ 0.5)",
                  f"mass AUROC per kernel variant, mean over its contest seeds; the claim: within 0.5 ± "
                  f"{AUROC_NULL} for every kernel variant", "–", pub_text, "")
    auroc = _table(t, "mass_auroc")
    if auroc.empty:
        return untestable(claim, protocol, "this build has no kernel variant")
    estimates = {v: statistics.mean_interval(c.mass_auroc, c.seed) for v, c in auroc.groupby("variant", sort=False)}
    fmt = lambda x: f"{x:.3f}"  # noqa: E731
    claim.measured = "; ".join(f"{v} {describe(e, fmt, wins=False)}" for v, e in estimates.items())
    notes = []
    if "lr" in auroc:
        notes.append(", ".join(f"{v} at {_lr(c.lr.iloc[0])}" for v, c in auroc.groupby("variant", sort=False)))
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
                  f"{pe['yat_b']['share_below_0.3']:.1%} vs {pe['softmax']['share_below_0.3']:.0%}; yat_b diffuse "
                  f"{pe['yat_b']['share_above_0.8']:.0%}", "")
    pub_note = (f"the posts' 'kernel' 0.73 / 0.2% / 37% are yat_b's maps; yat (b = 0) published "
                f"{pe['yat']['mean']:.2f} / {pe['yat']['share_below_0.3']:.1%} / {pe['yat']['share_above_0.8']:.0%}")
    entropy = _table(t, "entropy")
    estimate = statistics.paired(_per_seed(entropy, "yat_b", "mean"), _per_seed(entropy, "softmax", "mean"))
    if not estimate.n:
        claim.note = pub_note
        return untestable(claim, protocol, "this build has no yat_b and softmax contest cells of one seed")
    sharp = statistics.paired(_per_seed(entropy, "yat_b", "share_below_0.3"),
                              _per_seed(entropy, "softmax", "share_below_0.3"))
    means = entropy.groupby("variant")[["mean", "share_below_0.3", "share_above_0.8"]].mean()
    k, s = means.loc["yat_b"], means.loc["softmax"]
    claim.measured = (f"{describe(estimate, lambda x: f'{x:+.3f}', wins=False)} (yat_b {k['mean']:.2f} vs softmax "
                      f"{s['mean']:.2f}); sharp rows {k['share_below_0.3']:.1%} vs {s['share_below_0.3']:.1%}; "
                      f"diffuse {k['share_above_0.8']:.0%} vs {s['share_above_0.8']:.0%}")
    notes = [f"yat_b at {_contest_lr(t, 'yat_b')}, softmax at {_contest_lr(t, 'softmax')}",
             f"share of sharp rows, yat_b − softmax: {describe(sharp, lambda x: f'{x:+.1%}', wins=False)}", pub_note]
    if "yat" in means.index:
        y = means.loc["yat"]
        notes.append(f"this build's yat: {y['mean']:.2f} / {y['share_below_0.3']:.1%} / {y['share_above_0.8']:.0%}")
    claim.note = "; ".join(notes)
    return judged(claim, one_sided(estimate, 0.0, above=True), {"": estimate}, lambda x: f"{x:+.3f}")


# ---- A3 post


def a3_valid_distributions(t, pub, protocol) -> Claim:
    claim = Claim(A3_POST, "A3's outputs are always valid distributions",
                  f"worst |row sum − 1| over every stored A3 attention map (float16 storage); below "
                  f"{ROW_SUM_TOLERANCE:g} keeps to the construction", "–", "Proposition 1", "")
    init = _table(t, "a3_init")
    if init.empty:
        return untestable(claim, protocol, "this build has no A3 and softmax contest cells of one seed")
    worst = float(init.max_row_sum_error.max())
    claim.measured = f"{worst:.2g} over {len(init)} seeds"
    if worst >= ROW_SUM_TOLERANCE:
        claim.note = "the stored maps do not sum to one: the code breaks the construction"
    return constructed(claim, len(init), "a softmax row sums to one whatever its logits (Proposition 1)",
                       worst < ROW_SUM_TOLERANCE)


def a3_starts_at_softmax(t, pub, protocol) -> Claim:
    claim = Claim(A3_POST, "with b_g = 3, W_g = 0, U = 0, A3 starts exactly at softmax",
                  "step-0 first-layer maps, per seed: max |A3 − softmax| vs max |A3 − softmax at temperature "
                  f"1/σ(3)|; starting at softmax means below {EXACT_TOLERANCE:g}", "–", "exact (post)", "")
    init = _table(t, "a3_init")
    if init.empty:
        return untestable(claim, protocol, "this build has no A3 and softmax contest cells of one seed")
    plain, tempered = float(init.max_diff_vs_softmax.max()), float(init.max_diff_vs_tempered_softmax.max())
    claim.measured = f"{plain:.3g} vs {tempered:.2g} (worst over {len(init)} seeds)"
    if plain < EXACT_TOLERANCE:
        return constructed(claim, len(init), "the step-0 maps are the same function at every seed", True)
    if tempered < plain / 10:
        claim.measured += ": it starts at softmax(σ(3)·S), temperature 1.050"
        claim.note = "by construction at any protocol: the gate starts at σ(3) ≈ 0.9526, not 1"
        return constructed(claim, len(init), "the gate starts at σ(3) at every seed", False)
    claim.note = "A3 at step 0 matches neither softmax nor softmax at temperature 1/σ(3)"
    return constructed(claim, len(init), "the step-0 maps follow from the initialisation", False)


def early_and_deep(n_layers: int) -> tuple[list[int], list[int]]:
    """The first and the second half of the layers (the middle layer of an odd depth is in neither)."""
    half = n_layers // 2
    return list(range(half)), list(range(n_layers - half, n_layers))


def _layer_entropy(gates: pd.DataFrame, variant: str, layers: list[int]) -> dict[int, float]:
    """seed -> mean normalised entropy over the given layers (heads averaged) of a variant's contest cell."""
    if gates.empty or "variant" not in gates:
        return {}
    cells = gates[(gates.variant == variant) & gates.layer.isin(layers)]
    return {int(s): float(v) for s, v in cells.groupby("seed").entropy.mean().items()}


def a3_early_layers_softer(t, pub, protocol) -> Claim:
    claim = Claim(A3_POST, "A3's early layers learn softer distributions; deeper heads sharpen",
                  "A3 − softmax mean normalised row entropy, paired by contest seed, over the first and over the "
                  "second half of the layers: above 0 (softer) early and below 0 (sharper) deep", "–",
                  "qualitative", "")
    table = _table(t, "a3_vs_softmax_entropy")
    if table.empty:
        return untestable(claim, protocol, "this build has no A3 and softmax contest cells")
    table = table.sort_values("layer").reset_index(drop=True)
    diff = table.entropy_diff.to_numpy(dtype=float)
    claim.note = _a3_sharpening_note(table, diff)
    claim.measured = "Δ per layer (seed means) " + ", ".join(f"L{int(r.layer)} {r.entropy_diff:+.3f}"
                                                             for r in table.itertuples())
    if len(table) < MIN_DEPTH_LAYERS:
        return untestable(claim, protocol, f"the model has {len(table)} layers; telling early from deep layers "
                                           f"takes at least {MIN_DEPTH_LAYERS}")
    early, deep = early_and_deep(len(table))
    gates = _table(t, "a3_gates")
    softer = statistics.paired(_layer_entropy(gates, "a3", early), _layer_entropy(gates, "softmax", early))
    sharper = statistics.paired(_layer_entropy(gates, "a3", deep), _layer_entropy(gates, "softmax", deep))
    if not softer.n:
        return untestable(claim, protocol, "the a3_gates table has no per-seed entropy of A3 and softmax")
    fmt = lambda x: f"{x:+.3f}"  # noqa: E731
    claim.measured += (f"; early layers {describe(softer, fmt, wins=False)}; deep layers "
                       f"{describe(sharper, fmt, wins=False)}")
    verdict = every(one_sided(softer, 0.0, above=True), one_sided(sharper, 0.0, above=False))
    return judged(claim, verdict, {"early": softer, "deep": sharper}, fmt)


def _a3_sharpening_note(table: pd.DataFrame, diff: np.ndarray) -> str:
    """What does A3's sharpening: the gate G (vs its init) or the bias B's spread over keys."""
    parts = []
    if {"a3_lr", "softmax_lr"} <= set(table.columns):
        parts.append(f"A3 at {_lr(table.a3_lr.iloc[0])}, softmax at {_lr(table.softmax_lr.iloc[0])}")
    if "a3_gate_mean" in table and table.a3_gate_mean.notna().any():
        init = float(table.a3_gate_init.iloc[0]) if "a3_gate_init" in table else 1 / (1 + math.exp(-3))
        parts.append(f"gate G per layer {', '.join(f'{g:.2f}' for g in table.a3_gate_mean)} (init {init:.3f}; "
                     "below init cools the logits)")
        if "a3_bias_std" in table:
            parts.append(f"bias B std over keys {', '.join(f'{b:.2f}' for b in table.a3_bias_std)} "
                         "(a wider spread sharpens)")
        sharper = [i for i, d in enumerate(diff) if d < 0]
        by_gate = [int(table.layer[i]) for i in sharper if table.a3_gate_mean[i] > init]
        not_gate = [int(table.layer[i]) for i in sharper if table.a3_gate_mean[i] <= init]
        if by_gate:
            parts.append(f"where A3 is sharper, G above init sharpens (layers {', '.join(map(str, by_gate))})")
        if not_gate:
            parts.append(f"where A3 is sharper with G at or below init (layers {', '.join(map(str, not_gate))}), "
                         "the sharpening is B's or the trained q·k scale's, not the gate's")
    return "; ".join(parts)


def a3_overhead_small(t, pub, protocol) -> Claim:
    claim = Claim(A3_POST, "A3's parameter overhead is small",
                  f"(A3 parameters − softmax parameters) / softmax parameters, below {OVERHEAD_SMALL:.0%}", "–",
                  "small", "")
    params = _table(t, "params")
    params = params.set_index("variant").n_params if not params.empty else pd.Series(dtype=float)
    if "a3" not in params or "softmax" not in params:
        return untestable(claim, protocol, "this build has no A3 or no softmax")
    extra = int(params["a3"] - params["softmax"])
    share = extra / params["softmax"]
    claim.measured = f"+{extra:,} ({share:.3%})"
    notes = [] if share < OVERHEAD_SMALL else [
        "the shared gate network is a fixed cost: its share shrinks as the model grows"]
    notes.append("a3 shares one gate and bias across layers and heads (the two-matrix reading)")
    if "a3_heads" in params:
        heads_extra = int(params["a3_heads"] - params["softmax"])
        notes.append(f"the per-head reading (a3_heads: w_g, b_g, u per layer x head) costs +{heads_extra:,} "
                     f"({heads_extra / params['softmax']:.3%}), {heads_extra / max(extra, 1):.1f}× a3's overhead")
    claim.note = "; ".join(notes)
    return constructed(claim, 0, "a parameter count follows from the config, whatever the seed",
                       share < OVERHEAD_SMALL)


def a3_composes(t, pub, protocol) -> Claim:
    """Read from the composability grid (config/composability.yaml); not testable where a build did not run it."""
    claim = Claim(A3_POST, "A3 composes with MQA, GQA and FlashAttention-style (blockwise) attention",
                  "kv_heads = heads, heads/2, 1, each dense and blockwise from the same seeds: blockwise = dense at "
                  "step 0 and within 1% at the end, and every run's loss falls", "–", "claimed", "")
    table = t.get("composability")
    if table is None or table.empty:
        return untestable(claim, protocol, "this build has no composability grid (config/composability.yaml)")
    from attnlab.pipeline.composability import FAILS as COMPOSE_FAILS
    from attnlab.pipeline.composability import HOLDS as COMPOSE_HOLDS
    from attnlab.pipeline.composability import composability_verdict

    outcome = composability_verdict(table, variant="a3")
    head = outcome.split(":", 1)[0]
    rows = table[table.variant == "a3"]
    claim.measured = "; ".join(f"kv {int(r.kv_heads)}: dense {r.dense_loss:.4f} / blockwise {r.blockwise_loss:.4f}"
                               for r in rows.itertuples()) or "–"
    claim.note = outcome
    if head not in (COMPOSE_HOLDS, COMPOSE_FAILS):
        return untestable(claim, protocol, outcome.split(":", 1)[-1].strip())
    claim.verdict = HOLDS if head == COMPOSE_HOLDS else CONTRADICTED
    claim.interval = ("none: a numerical equivalence, checked seed by seed against its tolerance, not a mean "
                      "over seeds")
    claim.seeds = int(rows.seeds.min()) if "seeds" in rows and len(rows) else 0
    return claim


# ---- the later post, and the controls beyond the posts


def softmax_over_kernel(t, pub, protocol) -> Claim:
    entries = {e["variant"]: e for e in pub["contest"] if e["variant"] in ("yat_b", "yat_b_exp")}
    exp, l1 = entries.get("yat_b_exp"), entries.get("yat_b")
    claim = Claim(LATER_POST, "yat_b under a softmax over its kernel trains better than under the l1 normaliser",
                  "yat_b_exp − yat_b best validation loss at the same contest LR, paired by seed; the claim: "
                  "below 0", "–",
                  f"{exp['mean']:.4f} ± {exp['std']:.4f} vs {l1['mean']:.4f} ± {l1['std']:.4f} "
                  f"({exp['mean'] - l1['mean']:+.4f})" if exp and l1 else "–", "")
    note = ("the later post's figure; it states no LR for it (yat_b's 3e-3 assumed in published.yaml); "
            "the same kappa and parameters, only the normaliser differs")
    a, b = contest_losses(t, "yat_b_exp"), contest_losses(t, "yat_b")
    if not a or not b:
        claim.note = note
        return untestable(claim, protocol, "this build has no yat_b_exp or no yat_b contest")
    lr_a, lr_b = _contest_lr(t, "yat_b_exp"), _contest_lr(t, "yat_b")
    claim.note = f"yat_b_exp at {lr_a}, yat_b at {lr_b}; " + note
    if float(_contest_row(t, "yat_b_exp").lr) != float(_contest_row(t, "yat_b").lr):
        claim.measured = f"contest LRs differ ({lr_a} vs {lr_b})"
        return untestable(claim, protocol, "the two variants' contest LRs differ")
    estimate = statistics.paired(a, b)
    claim.measured = describe(estimate, unit="nats")
    return judged(claim, one_sided(estimate, 0.0, above=False), {"": estimate})


def a3_gain_is_per_token(t, pub, protocol) -> Claim:
    claim = Claim(BEYOND, "A3's gain over softmax is its per-token temperature: a learned per-head temperature "
                  "(softmax_t, the same start) does not close it",
                  "per contest seed, each variant at its contest LR: softmax − A3 (A3's gain) above 0, and "
                  "softmax_t − A3 (what a per-head temperature leaves of it) above 0", "–", "not in the posts", "")
    table = _table(t, "a3_vs_temperature")
    needed = {"seed", "softmax_best_val", "a3_best_val", "softmax_t_best_val"}
    if table.empty or not needed <= set(table.columns) or table[list(needed)].isna().all().any():
        return untestable(claim, protocol, "this build has no softmax, A3 and softmax_t contest cells")

    def per_seed(column):
        cells = table[["seed", column]].dropna()
        return dict(zip(cells.seed.astype(int), cells[column].astype(float)))

    gain = statistics.paired(per_seed("softmax_best_val"), per_seed("a3_best_val"))
    left = statistics.paired(per_seed("softmax_t_best_val"), per_seed("a3_best_val"))
    t_gain = statistics.paired(per_seed("softmax_best_val"), per_seed("softmax_t_best_val"))
    share = t_gain.mean / gain.mean if gain.mean else math.nan
    claim.measured = (f"A3's gain over softmax {describe(gain, wins=False)}; softmax_t − A3 "
                      f"{describe(left, wins=False)}")
    if gain.mean > 0:
        claim.measured += f" (softmax_t closes {share:.0%} of A3's gain, seed means)"
    else:
        claim.measured += ": A3 does not beat softmax"
    lrs = ", ".join(f"{v} at {_lr(table[f'{v}_lr'].iloc[0])}" for v in ("softmax", "a3", "softmax_t")
                    if f"{v}_lr" in table and str(table[f"{v}_lr"].iloc[0]) not in ("–", "nan"))
    notes = [lrs] if lrs else []
    if "a3_heads_gain" in table and table.a3_heads_gain.notna().any():
        heads = statistics.paired(per_seed("softmax_best_val"), per_seed("a3_heads_best_val"))
        notes.append(f"a3_heads (gate and bias per head) gains {describe(heads, wins=False)}")
    claim.note = "; ".join(notes)
    verdict = every(one_sided(gain, 0.0, above=True), one_sided(left, 0.0, above=True))
    return judged(claim, verdict, {"A3's gain": gain, "softmax_t − A3": left})


CHECKS = (kernel_gap, softmax_dies_at_high_lr, kernel_lr_band, kernel_scores_larger, ablation_untames,
          mass_auroc_null, kernel_more_diffuse, a3_valid_distributions, a3_starts_at_softmax,
          a3_early_layers_softer, a3_overhead_small, a3_composes, softmax_over_kernel, a3_gain_is_per_token)


# ---- the ledger as a table


def ledger_display(table: pd.DataFrame) -> pd.DataFrame:
    """The ledger for reading in ledger.md and ledger.tex: the claim, the measured value, the verdict."""
    return pd.DataFrame({
        "source": table.source, "claim": table.claim, "measured": table.measured, "published": table.published,
        "verdict": [f"{v} ({r})" if r else v for v, r in zip(table.verdict, table.resolution.fillna(""))],
        "interval": table.interval, "seeds": table.seeds, "protocol": table.protocol,
    })


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Print (and write) the claims ledger of a build.")
    parser.add_argument("--tables", type=Path, default=Path("results/tables"))
    parser.add_argument("--out", type=Path, default=None,
                        help="write the ledger as OUT.csv, OUT.md and OUT.tex (e.g. results/tables/ledger)")
    parser.add_argument("--notes", action="store_true", help="also print each claim's note")
    args = parser.parse_args(argv)
    table = ledger(load_tables(args.tables))
    if args.out is not None:
        from attnlab.pipeline.tables import write_table

        write_table(table, args.out, ledger_display(table))
    columns = ["claim", "measured", "verdict", "interval", "seeds"] + (["note"] if args.notes else [])
    with pd.option_context("display.max_colwidth", 120, "display.width", 400):
        print(table[columns].to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
