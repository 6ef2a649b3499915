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
not by a row.
"""

from __future__ import annotations

from attnlab.pipeline.claims import protocol as pp
from attnlab.pipeline.claims.common import SLAY_PAPER, Claim, at_protocol, judged, pct, untestable
from attnlab.pipeline.claims.score_papers import SAME_LOSS, loss_ratio, lrs_note, missing, no_loss_cost
from attnlab.pipeline.claims.words import UNQUOTED, Words
from attnlab.pipeline.ground.contract import BASELINE
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
    f"table puts SLAY {SOFTMAX_GAP - 1:+.2%} from softmax", pp.TRAINED)
EXACT_GAP_RULE = pp.Rule(
    TABLE_WORDS, "slay / yat best validation loss, paired by contest seed, each at its contest LR",
    f"below {EXACT_GAP:.4f}", f"the paper's table: SLAY {TABLE['slay']:.4f} against the exact kernel's "
    f"{TABLE['exact']:.4f} ({EXACT_GAP - 1:+.2%}), read as the most the approximation costs", pp.TRAINED)


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


CHECKS = (slay_near_softmax, slay_close_to_the_exact_kernel)
