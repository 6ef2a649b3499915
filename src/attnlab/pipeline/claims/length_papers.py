"""The catalog papers' claims about contexts longer than trained on: stick-breaking attention extrapolates
better than softmax, Scalable-Softmax and forgetting attention give a lower loss there. Read from the
context_length table (each contest cell evaluated on the whole validation split in windows of 2x and 4x its
training block), paired by contest seed with softmax, held to the preconditions of
attnlab.pipeline.claims.score_papers."""

from __future__ import annotations

from attnlab.pipeline.claims import protocol as pp
from attnlab.pipeline.claims.common import (FOX_PAPER, STICKBREAKING_PAPER, SSMAX_PAPER, Claim, at_protocol, judged,
                                            pct, table_of, untestable)
from attnlab.pipeline.claims.score_papers import lrs_note, missing
from attnlab.pipeline.claims.words import UNQUOTED, Words, title
from attnlab.pipeline.ground import statistics
from attnlab.pipeline.ground.contract import BASELINE
from attnlab.pipeline.ground.estimate_text import describe
from attnlab.pipeline.ground.verdicts import every, one_sided

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
    "'extrapolates better' read as a lower loss than softmax at every longer window", pp.TRAINED)
SSMAX_RULE = pp.Rule(
    title("Scalable-Softmax Is Superior for Attention"), "ssmax / softmax validation loss at each window longer "
    "than the training block (2x and 4x), paired by contest seed", "every ratio below 1",
    "the paper's lower loss at longer contexts than trained on", pp.TRAINED)
FOX_RULE = pp.Rule(
    Words(UNQUOTED, "the forgetting attention paper, whose text is not among this project's sources: the "
                    "direction its abstract reports for length extrapolation, FoX ahead of the Transformer"),
    "fox / softmax validation loss at each window longer than the training block (2x and 4x), paired by contest "
    "seed", "every ratio below 1", "this project's reading of the direction the paper reports (FoX ahead of the "
    "Transformer at length extrapolation): a lower loss than softmax at every longer window", pp.TRAINED)


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


CHECKS = (stickbreaking_extrapolates, ssmax_longer_contexts, fox_extrapolates)
