"""The SLAY paper's quality claims (Luna, Bouhsine and Choromanski, 2026, arXiv 2602.04915), one ledger row each.

Its language-model table (GPT-2 small, 124M parameters, one run per method)
gives SLAY 4.6760 validation loss against softmax's 4.6417 (+0.74%) and the
exact Yat kernel's 4.5747 (+2.21%); its abstract calls SLAY's performance
nearly indistinguishable from softmax's. The paper's text is not among this
project's sources, so the rows print its numbers, not its words. Each row is
judged like the catalog's papers (attnlab.pipeline.claims.score_papers):
paired by contest seed, each variant at its contest LR, held to the published
protocol's preconditions, and not testable at a build without the cells. That
SLAY's cost grows linearly with the context is measured by benchmarks/slay.py,
not by a row. And a question of this project's beside them: what the
approximation costs against its exact kernel (spherical Yat) at fewer and at
more random features than SLAY's default (the studies `slay_small` and
`slay_large`, which set model.variant_options.slay.features).
"""

from __future__ import annotations

import pandas as pd

from attnlab.core.variants import declared
from attnlab.pipeline.claims import protocol as pp
from attnlab.pipeline.claims import words
from attnlab.pipeline.claims.common import BEYOND, SLAY_PAPER, Claim, at_protocol, contest_losses, judged, pct, \
    table_of, untestable
from attnlab.pipeline.claims.score_papers import (SAME_LOSS, loss_ratio, lrs_note, missing, no_loss_cost,
                                                  study_cells_trained, unlike_the_contest)
from attnlab.pipeline.claims.words import UNQUOTED, Words
from attnlab.pipeline.ground import statistics
from attnlab.pipeline.ground.contract import BASELINE, SLAY_FEATURES
from attnlab.pipeline.tables.contest import losses_by_seed, trained
from attnlab.pipeline.ground.estimate_text import describe
from attnlab.pipeline.ground.verdicts import one_sided

SLAY, EXACT = "slay", "yat"  # the paper's "Yat (Exact)", listed apart from its spherical form: read as yat's
TABLE = {"slay": 4.6760, "softmax": 4.6417, "exact": 4.5747}  # the paper's language-model table, one run each
EXACT_GAP = TABLE["slay"] / TABLE["exact"]  # 1.0221: the paper's own gap to the exact kernel
SOFTMAX_GAP = TABLE["slay"] / TABLE["softmax"]  # 1.0074: and to softmax
TABLE_WORDS = Words(UNQUOTED, "the SLAY paper, whose text is not among this project's sources: its language-model "
                              "table (GPT-2 small, 124M parameters, one run per method) and the direction its "
                              "abstract states")

NEAR_SOFTMAX_RULE = pp.Rule(
    TABLE_WORDS, "slay / softmax best validation loss, paired by contest seed, each at its contest LR",
    f"below {SAME_LOSS:.2f}", "this project's loss margin for 'at softmax's quality' (the catalog's); the paper's "
    f"table puts SLAY {SOFTMAX_GAP - 1:+.2%} from softmax", pp.TRAINED,
    pairing=pp.OWN_LR)
EXACT_GAP_RULE = pp.Rule(
    TABLE_WORDS, "slay / yat best validation loss, paired by contest seed, each at its contest LR",
    f"below {EXACT_GAP:.4f}", f"the paper's table: SLAY {TABLE['slay']:.4f} against the exact kernel's "
    f"{TABLE['exact']:.4f} ({EXACT_GAP - 1:+.2%}), read as the most the approximation costs", pp.TRAINED,
    pairing=pp.OWN_LR)


def slay_near_softmax(t, pub, protocol) -> Claim:
    claim = Claim(SLAY_PAPER, "SLAY trains to softmax's quality", NEAR_SOFTMAX_RULE.text(), "–",
                  f"{TABLE['slay']:.4f} vs {TABLE['softmax']:.4f} ({SOFTMAX_GAP - 1:+.2%}; "
                  "one run each, GPT-2 small)", "", quote=NEAR_SOFTMAX_RULE.quote())
    why = missing(t, SLAY)
    if why:
        return untestable(claim, protocol, why)
    loss = loss_ratio(t, SLAY)
    claim.measured = f"loss {SLAY} / {BASELINE} {describe(loss, pct)}"
    claim.note = lrs_note(t, SLAY, BASELINE)
    judged(claim, no_loss_cost(loss), {"loss ratio": loss}, pct)
    return at_protocol(claim, protocol, pp.conditions(t, NEAR_SOFTMAX_RULE, [SLAY, BASELINE]),
                       f"SLAY trains worse than softmax: {pct(loss.mean)}")


def slay_close_to_the_exact_kernel(t, pub, protocol) -> Claim:
    claim = Claim(SLAY_PAPER, "SLAY costs at most the paper's gap to the exact Yat kernel", EXACT_GAP_RULE.text(),
                  "–", f"{TABLE['slay']:.4f} vs {TABLE['exact']:.4f} ({EXACT_GAP - 1:+.2%}; one run each, GPT-2 "
                  "small)", "", quote=EXACT_GAP_RULE.quote())
    why = missing(t, SLAY, EXACT)
    if why:
        return untestable(claim, protocol, why)
    gap = loss_ratio(t, SLAY, EXACT)
    claim.measured = f"loss {SLAY} / {EXACT} {describe(gap, pct)}"
    claim.note = lrs_note(t, SLAY, EXACT) + ("; the paper's table lists its exact Yat kernel apart from the "
                                             "spherical one (4.7180), so this project reads it as yat's, the kernel "
                                             "of unnormalised queries and keys")
    judged(claim, one_sided(gap, EXACT_GAP, above=False), {"loss ratio": gap}, pct)
    return at_protocol(claim, protocol, pp.conditions(t, EXACT_GAP_RULE, [SLAY, EXACT]),
                       f"SLAY costs more than the paper's gap: {pct(gap.mean)}")


# ---- the cost of the approximation by feature count (a question of this project's)


SPHERICAL = "spherical_yat"  # SLAY's exact kernel
FEATURES = "features"  # SLAY's setting M: random features per quadrature node and head
FEATURES_COLUMN = f"config.model.variant_options.{SLAY}.{FEATURES}"
FEATURES_RULE = pp.Rule(
    words.CONTROL, f"{SLAY} / {SPHERICAL} best validation loss at each random-feature count M (the studies "
    f"{' and '.join(f'`{name}`' for name in SLAY_FEATURES)} beside the contest's {SLAY} at its default), paired by "
    f"contest seed, every {SLAY} cell at {SLAY}'s contest LR and {SPHERICAL} at its own; the verdict reads {SLAY} at "
    f"the most features / {SLAY} at the fewest, paired by seed at that one LR",
    "the whole interval below 1.00", "1: no change with the feature count; below it, more features bring SLAY's "
    "loss towards its exact kernel's (this project's question)", pp.TRAINED,
    pairing=pp.OWN_LR)
NO_FEATURE_STUDIES = (f"no {SLAY} cells at other feature counts: studies named {' and '.join(SLAY_FEATURES)} "
                      f"setting model.variant_options.{SLAY}.{FEATURES}, for {SLAY} alone, at the contest's seeds "
                      "(as config/catalog.yaml has)")
# what a feature-count study may change against the contest's slay cells
MAY_CHANGE = ("config.variant", "config.lr", "config.seed", FEATURES_COLUMN)


def default_features() -> int:
    """SLAY's M where a config leaves it unset: its module's declared default."""
    return int(declared(SLAY).settings[FEATURES]["default"])


def by_features(t) -> tuple[dict[int, pd.DataFrame], str]:
    """{M: SLAY's cells at M}, the contest's at the default among them, and why they cannot be read ('' when
    they can): each study's cells at one M other than the default, changing nothing else, at SLAY's contest LR."""
    runs = table_of(t, "runs")
    contest = runs[runs.variant == SLAY] if "variant" in runs else runs
    cells: dict[int, pd.DataFrame] = {}
    for name in SLAY_FEATURES:
        study = table_of(t, f"runs_{name}")
        rows = study[study.variant == SLAY] if "variant" in study else study
        if rows.empty or FEATURES_COLUMN not in rows or rows[FEATURES_COLUMN].isna().any():
            return cells, NO_FEATURE_STUDIES
        counts = set(rows[FEATURES_COLUMN].astype(int))
        if len(counts) != 1 or counts & ({default_features()} | set(cells)):
            return cells, (f"the study `{name}` trains {SLAY} at M = {sorted(counts)}: each feature-count study "
                           f"holds one M, apart from the default {default_features()} and from the other study's")
        differs = unlike_the_contest(t, rows, contest, MAY_CHANGE, at_lr_of=SLAY)
        if differs:
            return cells, (f"the study `{name}` changes more than SLAY's feature count: " + "; ".join(differs))
        cells[counts.pop()] = rows
    return dict(sorted(cells.items())), ""


def slay_cost_by_features(t, pub, protocol) -> Claim:
    claim = Claim(BEYOND, "SLAY's cost against its exact kernel falls as its random features grow",
                  FEATURES_RULE.text(), "–", "not in the paper", "", quote=FEATURES_RULE.quote())
    studies, unread = by_features(t)
    why = missing(t, SLAY, SPHERICAL) or unread
    if why:
        return untestable(claim, protocol, why)
    exact = contest_losses(t, SPHERICAL)
    losses = {**{m: losses_by_seed(trained(rows)) for m, rows in studies.items()},
              default_features(): contest_losses(t, SLAY)}
    losses = dict(sorted(losses.items()))
    costs = {m: statistics.paired(seeds, exact, ratio=True) for m, seeds in losses.items()}
    fewest, most = min(losses), max(losses)
    gain = statistics.paired(losses[most], losses[fewest], ratio=True)
    claim.measured = "; ".join(f"M = {m}: {SLAY} / {SPHERICAL} {describe(cost, pct)}" for m, cost in costs.items())
    claim.note = "; ".join([lrs_note(t, SLAY, SPHERICAL), f"{SLAY} at M = {most} / at M = {fewest} "
                            f"{describe(gain, pct)}; every {SLAY} cell at {SLAY}'s contest LR, chosen at M = "
                            f"{default_features()}"])
    judged(claim, one_sided(gain, 1.0, above=False), {f"M = {most} / M = {fewest}": gain}, pct)
    found = pp.conditions(t, FEATURES_RULE, [SLAY, SPHERICAL])
    for m, rows in studies.items():
        found += study_cells_trained(rows, f"{SLAY} cells at M = {m}")
    return at_protocol(claim, protocol, found, f"more features do not lower SLAY's loss: {pct(gain.mean)}")


CHECKS = (slay_near_softmax, slay_close_to_the_exact_kernel, slay_cost_by_features)
