"""The catalog papers' claims about contexts longer than trained on: stick-breaking attention extrapolates
better than softmax, Scalable-Softmax and forgetting attention give a lower loss there. Read from the
context_length table (each contest cell evaluated on the whole validation split in windows of 2x and 4x its
training block), paired by contest seed with softmax, held to the preconditions of
attnlab.pipeline.claims.score_papers. And forgetting attention's claim that it needs no position embeddings:
its cells without them (the study `positions`, runs_positions) against softmax's with learned ones, in a build
whose model has them (config/catalog.yaml)."""

from __future__ import annotations

import pandas as pd

from attnlab.pipeline.claims import protocol as pp
from attnlab.pipeline.claims.common import (FOX_PAPER, STICKBREAKING_PAPER, SSMAX_PAPER, Claim, at_protocol,
                                            contest_losses, judged, pct, table_of, untestable)
from attnlab.pipeline.claims.score_papers import (SAME_LOSS, lrs_note, missing, no_loss_cost, study_cells_trained,
                                                  unlike_the_contest)
from attnlab.pipeline.claims.words import UNQUOTED, Words, title
from attnlab.pipeline.ground import statistics
from attnlab.pipeline.ground.contract import BASELINE
from attnlab.pipeline.ground.estimate_text import describe
from attnlab.pipeline.ground.verdicts import CONTRADICTED, every, one_sided
from attnlab.pipeline.tables.contest import losses_by_seed, trained

LONGER_CONTEXT = ("no cell was evaluated beyond its training block: that needs cells without position embeddings "
                  "(model.position: none) evaluated at longer windows (train.eval_context_multiples), as "
                  "config/length.yaml trains them")
NO_POSITIONS = ("every variant without position embeddings, softmax included (the papers' softmax baselines have "
                "positional encodings): the loss at each longer window is on the whole validation split in windows "
                "of that length")


def context_losses(t, variant: str, multiple: int) -> dict[int, float]:
    """seed -> a variant's contest cell's whole-split loss in windows of `multiple` x its training block."""
    table = table_of(t, "context_length")
    if table.empty:
        return {}
    rows = table[(table.variant == variant) & (table.multiple.astype(int) == multiple)]
    return {int(r.seed): float(r.val_loss) for r in rows.itertuples()}


def longer_than_trained(t) -> list[int]:
    """The window multiples beyond the training block this build evaluated at (none: [])."""
    table = table_of(t, "context_length")
    return sorted(int(m) for m in set(table.multiple.astype(int)) if m > 1) if not table.empty else []


def lower_loss_at_longer_contexts(t, claim: Claim, variant: str, rule: pp.Rule, protocol) -> Claim:
    """The variant / softmax loss at every longer window, paired by seed: holds when each ratio's interval is
    below 1, contradicted when one is above it."""
    multiples = longer_than_trained(t)
    why = missing(t, variant)
    ratios = {m: statistics.paired(context_losses(t, variant, m), context_losses(t, BASELINE, m), ratio=True)
              for m in multiples}
    if why or not multiples or not all(e.n for e in ratios.values()):
        return untestable(claim, protocol, why or LONGER_CONTEXT)
    trained = statistics.paired(context_losses(t, variant, 1), context_losses(t, BASELINE, 1), ratio=True)
    claim.measured = "; ".join([f"{m}× the block: {variant} / {BASELINE} {describe(e, pct)}"
                                for m, e in ratios.items()]
                               + [f"at the trained block {describe(trained, pct)}"])
    claim.note = "; ".join([lrs_note(t, variant, BASELINE), NO_POSITIONS])
    verdict = every(*(one_sided(e, 1.0, above=False) for e in ratios.values()))
    judged(claim, verdict, {f"{m}x": e for m, e in ratios.items()}, pct)
    worst = max(ratios, key=lambda m: ratios[m].mean)
    return at_protocol(claim, protocol, pp.conditions(t, rule, [variant, BASELINE]),
                       f"{variant} is not better at {worst}× the block: {pct(ratios[worst].mean)}")


STICKBREAKING_RULE = pp.Rule(
    title("Scaling Stick-Breaking Attention"), "stickbreaking / softmax validation loss at each window longer "
    "than the training block (2x and 4x), paired by contest seed", "every ratio below 1",
    "'extrapolates better' read as a lower loss than softmax at every longer window", pp.TRAINED,
    pairing=pp.OWN_LR)
SSMAX_RULE = pp.Rule(
    title("Scalable-Softmax Is Superior for Attention"), "ssmax / softmax validation loss at each window longer "
    "than the training block (2x and 4x), paired by contest seed", "every ratio below 1",
    "the paper's lower loss at longer contexts than trained on", pp.TRAINED,
    pairing=pp.OWN_LR)
FOX_RULE = pp.Rule(
    Words(UNQUOTED, "the forgetting attention paper, whose text is not among this project's sources: the "
                    "direction its abstract reports for length extrapolation, FoX ahead of the Transformer"),
    "fox / softmax validation loss at each window longer than the training block (2x and 4x), paired by contest "
    "seed", "every ratio below 1", "this project's reading of the direction the paper reports (FoX ahead of the "
    "Transformer at length extrapolation): a lower loss than softmax at every longer window", pp.TRAINED,
    pairing=pp.OWN_LR)


def stickbreaking_extrapolates(t, pub, protocol) -> Claim:
    claim = Claim(STICKBREAKING_PAPER, "stick-breaking attention, trained at one context length, extrapolates to "
                  "longer ones better than softmax", STICKBREAKING_RULE.text(), "–",
                  "qualitative (Tan et al. 2024, arXiv:2410.17980)", "")
    claim.quote = STICKBREAKING_RULE.quote()
    return lower_loss_at_longer_contexts(t, claim, "stickbreaking", STICKBREAKING_RULE, protocol)


def ssmax_longer_contexts(t, pub, protocol) -> Claim:
    claim = Claim(SSMAX_PAPER, "Scalable-Softmax gives a lower loss than softmax at contexts longer than trained on",
                  SSMAX_RULE.text(), "–", "qualitative (Nakanishi 2025, arXiv:2501.19399)", "")
    claim.quote = SSMAX_RULE.quote()
    return lower_loss_at_longer_contexts(t, claim, "ssmax", SSMAX_RULE, protocol)


def fox_extrapolates(t, pub, protocol) -> Claim:
    claim = Claim(FOX_PAPER, "forgetting attention gives a lower loss than softmax at contexts longer than trained "
                  "on", FOX_RULE.text(), "–", "qualitative (Lin et al. 2025, arXiv:2503.02130)", "")
    claim.quote = FOX_RULE.quote()
    return lower_loss_at_longer_contexts(t, claim, "fox", FOX_RULE, protocol)


# ---- forgetting attention without position embeddings


POSITIONS_RULE = pp.Rule(
    Words(UNQUOTED, "the forgetting attention paper, whose text is not among this project's sources: what its "
                    "abstract reports of FoX and position embeddings, that it does not require them"),
    "fox without position embeddings (the study `positions`) / softmax with learned ones (the contest), best "
    "validation loss at the training block paired by contest seed, each at its contest LR",
    f"the whole interval below {SAME_LOSS:.2f}", "this project's reading of 'does not require': without them, FoX "
    "loses nothing against the Transformer with them, read with the catalog's loss margin (at most 1% above "
    "softmax's)", pp.TRAINED,
    pairing=pp.OWN_LR)
LEARNED, NONE = "learned", "none"  # model.position; a cell's config slice leaves out the default, learned
NO_POSITIONS_STUDY = ("no fox cells without position embeddings beside contest cells with them: a study named "
                      "`positions` setting model.position: none, for fox, at the contest's seeds, in a build whose "
                      "model has learned ones (as config/catalog.yaml has)")
MAY_CHANGE = ("config.variant", "config.lr", "config.seed", "config.model.position")  # the study's one change


def positions(rows: pd.DataFrame) -> set[str]:
    """The model.position values of these cells (a column left empty is the default, learned)."""
    column = rows["config.model.position"] if "config.model.position" in rows else [None] * len(rows)
    return {LEARNED if pd.isna(value) else str(value) for value in column}


def without_positions(t) -> tuple[pd.DataFrame, str]:
    """The study `positions`'s fox cells, and why they cannot be read ('' when they can): fox without position
    embeddings, beside contest cells with them, changing nothing else."""
    study, runs = table_of(t, "runs_positions"), table_of(t, "runs")
    if study.empty or "variant" not in study or "variant" not in runs:
        return study, NO_POSITIONS_STUDY
    rows = study[study.variant == "fox"]
    contest = runs[runs.variant.isin(["fox", BASELINE])]
    if not len(rows) or positions(rows) != {NONE} or positions(contest) != {LEARNED}:
        return rows, NO_POSITIONS_STUDY
    differs = unlike_the_contest(t, rows, runs[runs.variant == "fox"], MAY_CHANGE, at_lr_of="fox")
    if differs:
        return rows, ("the study `positions` changes more than the position embeddings: " + "; ".join(differs)
                      + "; the row reads fox without them and nothing else changed, at fox's contest LR")
    return rows, ""


def study_conditions(rows: pd.DataFrame, word: str) -> list[pp.Condition]:
    """The study's own preconditions: none of its cells diverged, none still improving, and an LR the verdict
    does not rest on. Its LR is fox's contest LR, chosen with position embeddings: a loss within the margin
    holds whatever a tuned LR would give (tuning could only lower it), a loss beyond it may be the LR's."""
    tuned = pp.Condition("an LR the verdict does not rest on", word != CONTRADICTED,
                         "fox's contest LR, chosen with position embeddings: "
                         + ("the loss beyond the margin may be the LR's (the study has no sweep of its own)"
                            if word == CONTRADICTED else "a tuned LR could only lower the loss without them"))
    return [*study_cells_trained(rows, "cells without position embeddings"), tuned]


def fox_needs_no_positions(t, pub, protocol) -> Claim:
    claim = Claim(FOX_PAPER, "forgetting attention needs no position embeddings: without them it is no worse than "
                  "softmax with them", POSITIONS_RULE.text(), "–", "qualitative (Lin et al. 2025, arXiv:2503.02130)",
                  "")
    claim.quote = POSITIONS_RULE.quote()
    rows, unread = without_positions(t)
    why = missing(t, "fox") or unread
    if why:
        return untestable(claim, protocol, why)
    without = losses_by_seed(trained(rows))
    ratio = statistics.paired(without, contest_losses(t, BASELINE), ratio=True)
    own = statistics.paired(without, contest_losses(t, "fox"), ratio=True)
    claim.measured = (f"fox without position embeddings / {BASELINE} with them {describe(ratio, pct)}; / fox with "
                      f"them {describe(own, pct)}")
    claim.note = "; ".join([lrs_note(t, "fox", BASELINE), "fox without position embeddings trains at fox's "
                            "contest LR (chosen with them), with the contest's model and training but for its "
                            "positions"])
    judged(claim, no_loss_cost(ratio), {"loss ratio": ratio}, pct)
    found = pp.conditions(t, POSITIONS_RULE, ["fox", BASELINE]) + study_conditions(rows, claim.outcome)
    return at_protocol(claim, protocol, found,
                       f"fox without position embeddings is not within 1% of softmax with them: {pct(ratio.mean)}")


CHECKS = (stickbreaking_extrapolates, ssmax_longer_contexts, fox_extrapolates, fox_needs_no_positions)
