"""The writeup's telemetry sections: score scale, mass AUROC, row entropy, yat_b's scalars, the normaliser swap.

Tables for reading and the results paragraph of each section, from the
telemetry tables the collect step writes. Per-seed values sit in a folded
block under their table, so each table fits the text column.
"""

from __future__ import annotations

import math

import pandas as pd

from attnlab.core.bundle_format import format_lr
from attnlab.core.telemetry_stats import DIFFUSE_ABOVE, SHARP_BELOW
from attnlab.pipeline import statistics
from attnlab.pipeline.claims import published
from attnlab.pipeline.contract import BASELINE, SEED_MEAN_OVER_LAYERS, SHARE_DIFFUSE, SHARE_SHARP
from attnlab.pipeline.formatting import MISSING, difference, fixed, mean_pm, number, percent
from attnlab.pipeline.report.contest import ordered
from attnlab.pipeline.score_scale import max_score_ratios, max_scores, seed_means, times

SCALAR_INIT = math.log(2.0)  # softplus(0): where yat_b's b and ε start
SCALAR_NAMES = {"eps": "ε"}
SEED_MEAN_LABEL = "mean over layers of max score, per seed (range over seeds)"
LEVEL = f"{statistics.CONFIDENCE:.0%}"


# ---- score scale


def score_display(score: pd.DataFrame, comparable: bool) -> pd.DataFrame:
    """Per variant: the seed means over layers of max score (range over seeds), the max score and its ratio
    to the baseline's: the same numbers, under the same names, as score_scale.md and the score-scale figure
    (both from attnlab.pipeline.score_scale)."""
    per_seed = seed_means(score)
    top, ratios = max_scores(score), max_score_ratios(score)
    rows = []
    for variant, cells in score.groupby("variant", sort=False):
        mine = per_seed[per_seed.variant == variant][SEED_MEAN_OVER_LAYERS]
        row = {"variant": variant, "LR": format_lr(cells.lr.iloc[0]), "seeds": cells.seed.nunique(),
               SEED_MEAN_LABEL: f"{number(mine.min())} – {number(mine.max())}", "max score": number(top[variant]),
               f"max score / {BASELINE}'s": "baseline" if variant == BASELINE else times(ratios[variant])}
        if comparable:
            pub = published().get("score_scale", {}).get(variant, {})
            row["published max score"] = number(pub["max"]) if "max" in pub else MISSING
        rows.append(row)
    return pd.DataFrame(rows)


def score_results(score: pd.DataFrame, contest: pd.DataFrame) -> str:
    top, ratios = max_scores(score), max_score_ratios(score)
    order = ordered(top.index, contest)
    text = "Max score (the largest over layers, seeds and held-out batches): " + ", ".join(
        f"{v} {number(top[v])}" for v in order) + "."
    if BASELINE in top and ratios.notna().any():
        text += f" Against {BASELINE}'s max score: " + ", ".join(
            f"{v} {times(ratios[v])}" for v in order if v != BASELINE) + "."
    return text


# ---- the kernel's row mass


def auroc_display(auroc: pd.DataFrame, comparable: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per kernel variant: mean AUROC with its interval over seeds and the mean mass of correct and wrong
    tokens; then the same per seed (folded under the table)."""
    rows = []
    for variant, cells in auroc.groupby("variant", sort=False):
        estimate = statistics.mean_interval(cells.mass_auroc, seeds=cells.seed)
        row = {"variant": variant, "LR": format_lr(cells.lr.iloc[0]), "seeds": estimate.n,
               f"AUROC [{LEVEL} interval]": _estimate_text(estimate, 3),
               "distance from 0.5": fixed(abs(estimate.mean - 0.5)),
               "mean mass, correct tokens": number(cells.mass_correct_mean.mean(), 4),
               "mean mass, wrong tokens": number(cells.mass_wrong_mean.mean(), 4)}
        if comparable:
            pub = published().get("mass_auroc", {}).get(variant)
            row["published AUROC per seed"] = ", ".join(f"{x:.3f}" for x in pub) if pub else MISSING
        rows.append(row)
    per_seed = pd.DataFrame({"variant": auroc.variant, "seed": auroc.seed.astype(int),
                             "AUROC": auroc.mass_auroc.map(fixed),
                             "mean mass, correct tokens": auroc.mass_correct_mean.map(lambda x: number(x, 4)),
                             "mean mass, wrong tokens": auroc.mass_wrong_mean.map(lambda x: number(x, 4))})
    return pd.DataFrame(rows), per_seed


def _estimate_text(estimate: statistics.Estimate, digits: int) -> str:
    if estimate.has_interval:
        return f"{estimate.mean:.{digits}f} [{estimate.low:.{digits}f}, {estimate.high:.{digits}f}]"
    return f"{estimate.mean:.{digits}f} ({estimate.reason})"


def auroc_results(auroc: pd.DataFrame, verdict: str = "") -> str:
    """What AUROC means here, the measured means, and the ledger's verdict on the claim (when given)."""
    if auroc.empty:
        return "No kernel variant ran, so there is no kernel mass to test."
    means = auroc.groupby("variant", sort=False).mass_auroc.mean()
    text = ("AUROC here is the probability that a correctly predicted token's kernel mass outranks a wrongly "
            "predicted one's. 0.5 is the null: the mass then carries no information about whether the "
            "prediction is right, and \"mass AUROC is null\" means the measured value sits at 0.5 within "
            "the ledger's tolerance. Measured: " + ", ".join(f"{v} {m:.3f}" for v, m in means.items()) + ".")
    return text + (f" The ledger says **{verdict}**." if verdict else "")


# ---- row entropy


def entropy_scope(runs: pd.DataFrame) -> str:
    """Which rows the entropy telemetry counts and where sharp and diffuse begin, from the build's config."""
    keys = sorted({int(k) for k in runs["config.telemetry.entropy_min_keys"].dropna()})
    return (f"Rows with at least {' or '.join(map(str, keys))} visible keys count; a row is sharp below "
            f"{SHARP_BELOW:g} and diffuse above {DIFFUSE_ABOVE:g}.")


def entropy_display(entropy: pd.DataFrame, comparable: bool) -> pd.DataFrame:
    """Per variant: mean normalised row entropy over seeds (± std), the shares of sharp and diffuse rows."""
    stats = entropy.groupby("variant", sort=False).agg(
        mean=("mean", "mean"), std=("mean", lambda x: x.std(ddof=0)), sharp=(SHARE_SHARP, "mean"),
        diffuse=(SHARE_DIFFUSE, "mean"), seeds=("seed", "nunique")).reset_index()
    shown = pd.DataFrame({
        "variant": stats.variant,
        "seeds": stats.seeds,
        "mean normalised entropy": mean_pm(stats["mean"], stats["std"], digits=3),
        f"sharp rows (< {SHARP_BELOW:g})": stats.sharp.map(lambda x: percent(x, signed=False)),
        f"diffuse rows (> {DIFFUSE_ABOVE:g})": stats.diffuse.map(lambda x: percent(x, signed=False)),
    })
    if comparable:
        pub = published().get("entropy", {})
        shown["published mean"] = [fixed(pub.get(v, {}).get("mean"), 2) for v in stats.variant]
    return shown


def entropy_results(entropy: pd.DataFrame) -> str:
    means = entropy.groupby("variant", sort=False)["mean"].mean().sort_values()
    sharp = entropy.groupby("variant", sort=False)[SHARE_SHARP].mean()
    return ("Sharpest rows (lowest mean normalised entropy) first: "
            + ", ".join(f"{v} {m:.3f}" for v, m in means.items()) + "."
            + f" Share of sharp rows (entropy < {SHARP_BELOW:g}): "
            + ", ".join(f"{v} {percent(sharp[v], signed=False)}" for v in means.index) + ".")


# ---- yat_b's learned scalars


def scalars_display(scalars: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (variant, name), cells in scalars.groupby(["variant", "scalar"], sort=False):
        per_head = cells.groupby(["layer", "head"]).value.mean()
        rows.append({"variant": variant, "scalar": SCALAR_NAMES.get(name, name), "init": fixed(SCALAR_INIT),
                     "min": fixed(per_head.min()), "mean": fixed(per_head.mean()), "max": fixed(per_head.max()),
                     "largest move from init": fixed((per_head - SCALAR_INIT).abs().max())})
    return pd.DataFrame(rows)


def scalars_results(scalars: pd.DataFrame) -> str:
    if scalars.empty:
        return "No yat_b cells in this build, so no learned kernel scalars."
    parts = []
    for name, cells in scalars.groupby("scalar", sort=False):
        per_head = cells.groupby(["variant", "layer", "head"]).value.mean()
        parts.append(f"learned {SCALAR_NAMES.get(name, name)} spans {per_head.min():.3f}–{per_head.max():.3f} "
                     f"across layers and heads, at most {(per_head - SCALAR_INIT).abs().max():.3f} from its init "
                     f"log 2 ≈ {SCALAR_INIT:.3f}")
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


# ---- the normaliser swap


def normswap_display(normswap: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per kernel-family variant, over its contest cells: native and swapped loss and the paired swap cost
    (swapped − native) with its interval; then every cell (contest and sweep) folded under the table."""
    contest = normswap[normswap.in_contest.astype(bool)]
    rows = []
    for variant, cells in contest.groupby("variant", sort=False):
        cost = statistics.mean_interval(cells.difference, seeds=cells.seed)
        rows.append({"variant": variant, "LR": format_lr(cells.lr.iloc[0]), "seeds": cost.n,
                     "trained with": cells.native_normaliser.iloc[0],
                     "native loss (nats/char)": fixed(cells.native_loss.mean(), 4),
                     "swapped to": f"{cells.swapped_normaliser.iloc[0]} (= {cells.swapped_to.iloc[0]})",
                     "swapped loss (nats/char)": fixed(cells.swapped_loss.mean(), 4),
                     f"swapped − native [{LEVEL} interval]": difference(cost.mean, cost.low, cost.high)})
    every = pd.DataFrame({
        "variant": normswap.variant, "LR": normswap.lr.map(format_lr), "seed": normswap.seed.astype(int),
        "cell": ["contest" if c else "sweep" for c in normswap.in_contest.astype(bool)],
        "native loss": normswap.native_loss.map(lambda x: fixed(x, 4)),
        "swapped loss": normswap.swapped_loss.map(lambda x: fixed(x, 4)),
        "swapped − native": normswap.difference.map(lambda x: f"{x:+.4f}")})
    return pd.DataFrame(rows), every


def normswap_results(normswap: pd.DataFrame) -> str:
    if normswap.empty:
        return "No kernel-family cell in this build, so no normaliser swap."
    worse = int((normswap.difference > 0).sum())
    return (f"Evaluated with the other normaliser, the trained weights' loss rose in {worse} of {len(normswap)} "
            "cells: weights trained under one normaliser are tuned to it, so the swap measures how much the "
            "trained model relies on its own normaliser, not which normaliser trains better (the contest's "
            "_exp arms answer that).")
