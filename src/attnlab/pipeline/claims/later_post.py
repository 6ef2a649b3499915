"""The later post of the kernel post's series: yat_b under a softmax over its kernel (yat_b_exp) trains better
than under the l1 normaliser. Read from the contest table."""

from __future__ import annotations

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.ground import statistics
from attnlab.pipeline.claims import protocol as pp
from attnlab.pipeline.claims import words
from attnlab.pipeline.claims.common import (LATER_POST, Claim, at_protocol, contest_losses, contest_lr_text,
                                            contest_row, judged, untestable)
from attnlab.pipeline.ground.verdicts import one_sided
from attnlab.pipeline.ground.estimate_text import describe

RULE = pp.Rule(words.LATER, "yat_b_exp − yat_b best validation loss, paired by contest seed, each at its contest "
               "LR", "below 0", "0: the direction the later post reported",
               pp.TRAINED, pairing=pp.OWN_LR)


def softmax_over_kernel(t, pub, protocol) -> Claim:
    """The direction a later post of the series reported; its text and figures are not among this project's
    sources, so the row prints no published number (one without a source is never printed)."""
    claim = Claim(LATER_POST, "yat_b under a softmax over its kernel trains better than under the l1 normaliser",
                  RULE.text(), "–", "the direction only: the later post is not among this project's sources", "")
    claim.quote = RULE.quote()
    note = "the same kappa and parameters, only the normaliser differs"
    a, b = contest_losses(t, "yat_b_exp"), contest_losses(t, "yat_b")
    if not a or not b:
        claim.note = note
        return untestable(claim, protocol, "this build has no yat_b_exp or no yat_b contest")
    lr_a, lr_b = contest_lr_text(t, "yat_b_exp"), contest_lr_text(t, "yat_b")
    claim.note = f"yat_b_exp at {lr_a}, yat_b at {lr_b}; " + note
    same = format_lr(contest_row(t, "yat_b_exp").lr) == format_lr(contest_row(t, "yat_b").lr)
    estimate = statistics.paired(a, b)
    claim.measured = describe(estimate, unit="nats") + ("" if same else f" (each at its own LR: {lr_a} vs {lr_b})")
    judged(claim, one_sided(estimate, 0.0, above=False), {"": estimate})
    return at_protocol(claim, protocol, pp.conditions(t, RULE, ["yat_b_exp", "yat_b"]),
                       f"the l1 normaliser trains better: {estimate.mean:+.4f} nats")

