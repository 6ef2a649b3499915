"""The writeup's telemetry sections: score scale, mass AUROC, row entropy, yat_b's scalars, the normaliser swap.

Each table is shown as its .md shows it (attnlab.pipeline.tables.display),
the published numbers beside it when the build ran the published protocol,
per-seed rows folded under it; then the section's results paragraph.
"""

from __future__ import annotations

import pandas as pd

from attnlab.core.telemetry_stats import DIFFUSE_ABOVE, SHARP_BELOW
from attnlab.pipeline.claims import PAPERS, published
from attnlab.pipeline.ground.contract import BASELINE, SHARE_SHARP
from attnlab.pipeline.ground.formatting import MISSING, fixed, number, percent
from attnlab.pipeline.report.contest import ordered
from attnlab.pipeline.ground.score_scale import max_score_ratios, max_scores, times
from attnlab.pipeline.ground.verdicts import NOT_TESTABLE
from attnlab.pipeline.tables import display
from attnlab.pipeline.tables.display_telemetry import SCALAR_INIT, SCALAR_NAMES


# ---- score scale


def score_display(score: pd.DataFrame, comparable: bool) -> pd.DataFrame:
    """score_scale.md's table, with the published max score beside it when comparable."""
    shown = display.shown("score_scale", score)
    if comparable:
        pub = published().get("score_scale", {})
        shown["published max score"] = [number(pub[v]["max"]) if "max" in pub.get(v, {}) else MISSING
                                        for v in shown.variant]
    return shown


def score_results(score: pd.DataFrame, contest: pd.DataFrame) -> str:
    top, ratios = max_scores(score), max_score_ratios(score)
    order = ordered(top.index, contest)
    text = "Max score (the largest over layers, seeds and held-out batches): " + ", ".join(
        f"{v} {number(top[v])}" for v in order) + "."
    if BASELINE in top and ratios.notna().any():
        text += (f" Against {BASELINE}'s, each seed's largest score over {BASELINE}'s of the same seed (geometric "
                 "mean over seeds, the number the claims ledger judges): " + ", ".join(
                     f"{v} {times(ratios[v])}" for v in order if v != BASELINE) + ".")
    text += (" A kernel score κ is a linear-space weight (a key's weight is κ/Σκ), a softmax logit a log-space one "
             "(its weight is ∝ e^logit): the ratio sets side by side the numbers each computes, as the posts do, "
             "not two quantities of one kind.")
    return text


# ---- the kernel's row mass


def auroc_display(auroc: pd.DataFrame, comparable: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    """mass_auroc.md's table (the published AUROCs beside it when comparable), and its per-seed rows."""
    shown = display.shown("mass_auroc", auroc)
    if comparable:
        pub = published().get("mass_auroc", {})
        shown["published AUROC per seed"] = [", ".join(f"{x:.3f}" for x in pub[v]) if v in pub else MISSING
                                             for v in shown.variant]
    return shown, display.details("mass_auroc", auroc)


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
    """entropy.md's table, with the published mean beside it when comparable."""
    shown = display.shown("entropy", entropy)
    if comparable:
        pub = published().get("entropy", {})
        shown["published mean"] = [fixed(pub.get(v, {}).get("mean"), 2) for v in shown.variant]
    return shown


def entropy_results(entropy: pd.DataFrame) -> str:
    means = entropy.groupby("variant", sort=False)["mean"].mean().sort_values()
    sharp = entropy.groupby("variant", sort=False)[SHARE_SHARP].mean()
    return ("Sharpest rows (lowest mean normalised entropy) first: "
            + ", ".join(f"{v} {m:.3f}" for v, m in means.items()) + "."
            + f" Share of sharp rows (entropy < {SHARP_BELOW:g}): "
            + ", ".join(f"{v} {percent(sharp[v], signed=False)}" for v in means.index) + ".")


# ---- sinks, signed weights and outliers


def sinks_results(sinks: pd.DataFrame, claims_table: pd.DataFrame) -> str:
    """Which variants have sinks, which carry negative weight, whose outliers are largest; then each catalog
    paper's verdict from the ledger."""
    if sinks.empty:
        return "This build's bundles record no sink or outlier telemetry."
    means = sinks.groupby("variant", sort=False)[["sink_rate", "negative_mass_share", "activation_kurtosis"]].mean()
    with_sinks = means[means.sink_rate > 0]
    text = [("Heads with a sink: " + ", ".join(f"{v} {percent(r, signed=False)}" for v, r in
                                               with_sinks.sink_rate.sort_values(ascending=False).items()) + "."
             if len(with_sinks) else "No variant has a head with a sink on the window's first key.")]
    signed_weights = means[means.negative_mass_share > 0]
    if len(signed_weights):
        text.append("Negative weight: " + ", ".join(f"{v} {percent(r, signed=False)} of the weights' magnitude"
                                                    for v, r in signed_weights.negative_mass_share.items()) + ".")
    order = means.activation_kurtosis.sort_values(ascending=False)
    text.append("Activation kurtosis, largest first: " + ", ".join(f"{v} {k:.2f}" for v, k in order.items()) + ".")
    papers = claims_table[claims_table.source.isin(PAPERS)] if not claims_table.empty else claims_table
    judged = [r for r in papers.itertuples() if str(r.outcome) != NOT_TESTABLE]
    if judged:
        text.append("The papers' claims here: " + "; ".join(f"{r.claim}: {r.verdict}" for r in judged) + ".")
    untested = len(papers) - len(judged)
    if untested:
        text.append(f"{untested} of the papers' {len(papers)} claims are not testable at this build (the ledger "
                    "says why).")
    return " ".join(text)


def context_results(context: pd.DataFrame) -> str:
    """How each variant's loss changes from the trained window to the longest one it was evaluated at."""
    if context.empty:
        return ("This build evaluates no model beyond its training block (that needs models without position "
                "embeddings, model.position none, and train.eval_context_multiples).")
    longest = int(context.multiple.max())
    at = context[context.multiple == longest].groupby("variant", sort=False)
    change = (at.vs_trained.mean() - 1).sort_values()
    loss = at.val_loss.mean()
    return (f"At {longest}× the trained block, from the smallest change to the largest: "
            + ", ".join(f"{v} {percent(c)} ({loss[v]:.4f} nats/char)" for v, c in change.items()) + ".")


# ---- yat_b's learned scalars


def scalars_results(scalars: pd.DataFrame) -> str:
    if scalars.empty:
        return "No yat_b cells in this build, so no learned kernel scalars."
    parts = []
    for name, cells in scalars.groupby("scalar", sort=False):
        runs = []
        for seed, run in cells.groupby("seed"):
            far = (run.value - SCALAR_INIT).abs().max()
            runs.append(f"seed {int(seed)} {run.value.min():.3f}–{run.value.max():.3f} (at most {far:.3f} from init)")
        parts.append(f"learned {SCALAR_NAMES.get(name, name)} over the layers and heads of one run: "
                     + ", ".join(runs))
    text = "; ".join(parts)
    return (text[0].upper() + text[1:] + f". Each range is one run's, as the post's are (its init is log 2 ≈ "
            f"{SCALAR_INIT:.3f}), not a range of means over seeds.")


# ---- the normaliser swap


def normswap_results(normswap: pd.DataFrame, variants=()) -> str:
    """What the swap shows; which normaliser trains better is the _exp arms' question, answered only where the
    build trained them (`variants`: the contest's)."""
    if normswap.empty:
        return "No kernel-family cell in this build, so no normaliser swap."
    worse = int((normswap.difference > 0).sum())
    arms = [v for v in variants if str(v).endswith("_exp")]
    which = (f"the contest's {' and '.join(arms)} answer that" if arms else
             "a build with the _exp arms, config/arms.yaml, answers that")
    return (f"Evaluated with the other normaliser, the trained weights' loss rose in {worse} of {len(normswap)} "
            "cells: weights trained under one normaliser are tuned to it, so the swap measures how much the "
            f"trained model relies on its own normaliser, not which normaliser trains better ({which}).")
