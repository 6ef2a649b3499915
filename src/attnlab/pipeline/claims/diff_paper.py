"""The differential attention paper's quality claim (Ye et al. 2024, arXiv 2410.05258), one ledger row.

The paper trains the Differential Transformer beside a Transformer of the same size (its heads halved, so the
parameters match) and reports a lower language-modelling loss across its scaling study. Its text is not among
this project's sources, so the row states the claim's direction, not its words, and reads it as the catalog's
papers are read (attnlab.pipeline.claims.score_papers): diff against softmax paired by contest seed, each at its
own contest LR, held to the published protocol's preconditions, and not testable at a build without the cells.
"""

from __future__ import annotations

from attnlab.pipeline.claims import protocol as pp
from attnlab.pipeline.claims.common import DIFF_PAPER, Claim, at_protocol, judged, pct, untestable
from attnlab.pipeline.claims.score_papers import loss_ratio, lrs_note, missing
from attnlab.pipeline.claims.words import UNQUOTED, Words
from attnlab.pipeline.ground.contract import BASELINE
from attnlab.pipeline.ground.estimate_text import describe
from attnlab.pipeline.ground.verdicts import one_sided

DIFF = "diff"
PARITY = 1.0  # diff / softmax best validation loss: below it, differential attention trains to the lower loss

LOWER_LOSS_RULE = pp.Rule(
    Words(UNQUOTED, "the differential attention paper, whose text is not among this project's sources: the "
                    "direction its abstract and scaling study state, a lower language-modelling loss than the "
                    "Transformer at the same parameter count"),
    "diff / softmax best validation loss, paired by contest seed, each at its contest LR (diff's heads read in "
    "pairs, so its parameters are softmax's plus six head widths per layer)",
    f"the whole interval below {PARITY:.2f}", "the paper's direction: lower than the Transformer's loss (a ratio of "
    "1 is no difference)", pp.TRAINED, pairing=pp.OWN_LR)


def diff_lower_loss(t, pub, protocol) -> Claim:
    claim = Claim(DIFF_PAPER, "differential attention trains to a lower loss than softmax at matched parameters",
                  LOWER_LOSS_RULE.text(), "–", "lower loss at matched parameters (qualitative; Ye et al. 2024, "
                  "arXiv:2410.05258)", "", quote=LOWER_LOSS_RULE.quote())
    why = missing(t, DIFF)
    if why:
        return untestable(claim, protocol, why)
    loss = loss_ratio(t, DIFF)
    claim.measured = f"loss {DIFF} / {BASELINE} {describe(loss, pct)}"
    claim.note = lrs_note(t, DIFF, BASELINE)
    judged(claim, one_sided(loss, PARITY, above=False), {"loss ratio": loss}, pct)
    return at_protocol(claim, protocol, pp.conditions(t, LOWER_LOSS_RULE, [DIFF, BASELINE]),
                       f"differential attention trains to a higher loss than softmax: {pct(loss.mean)}")


CHECKS = (diff_lower_loss,)
