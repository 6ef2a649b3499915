"""Whose words each ledger row judges, as they were written.

A row from a post prints that post's words verbatim, in quotation marks, with
the post's section; everything else in the row (the quantity, the threshold,
the protocol) is this project's reading and is labelled so. The posts use
typographic apostrophes (’), kept here. A passage that leaves words out marks
the gap with " … "; each piece is then found in the post in order
(tests/test_ledger_words.py checks every one against the posts' text).

Rows with no sentence behind them say so instead of quoting: a post's table,
a question of this project, a paper quoted by its title.
"""

from __future__ import annotations

from dataclasses import dataclass

QUOTE = "quote"  # the words are the source's, verbatim
TABLE = "table"  # the source states it only in a table: no sentence to quote
TITLE = "title"  # a paper or post quoted by its title
QUESTION = "question"  # no source makes the claim: a question this project asks
UNQUOTED = "unquoted"  # the source's text is not among the project's sources: its number only
GAP = " … "


@dataclass(frozen=True)
class Words:
    """What a row judges, as its source gives it: `text` verbatim (a QUOTE or TITLE), or why there is none."""

    kind: str
    text: str
    section: str = ""  # the source's section the words stand in

    def pieces(self) -> list[str]:
        """The quoted passages, in the order they stand in the source."""
        return [p.strip() for p in self.text.split(GAP.strip())] if self.kind in (QUOTE, TITLE) else []

    def cited(self) -> str:
        """The ledger's quote column: '“…” (section “The contest”)', or what stands in for words."""
        where = f" (section “{self.section}”)" if self.section else ""
        if self.kind == QUOTE:
            return f"“{self.text}”{where}"
        if self.kind == TITLE:
            return f"the title: “{self.text}”"
        return self.text + where


def quote(text: str, section: str) -> Words:
    return Words(QUOTE, text, section)


def title(text: str) -> Words:
    """A paper's claim as its title (or a part of it) states it."""
    return Words(TITLE, text)


# ---- the kernel post: "Softmax-Free Attention in JAX/Flax NNX"
AUDIT = "The learning-rate audit"
TELEMETRY = "The telemetry that killed a claim"
QUALITY = Words(TABLE, "the post's table of the contest, where softmax leads; no sentence states a gap; the "
                "learning-rate audit ends “so the quality table stands”", "The contest")
DIES = quote("The column shapes are the finding: softmax needs its rate found (and dies at 1e-2)", AUDIT)
BAND = quote("while the kernel’s entire column sits in a 1 percent band", AUDIT)
SCALE = quote("The kernel’s scores are five orders of magnitude larger", TELEMETRY)
ABLATION = quote("Empirically the ablation costs a run-noise-sized amount of quality and, more decisively, "
                 "un-tames the score scale: 443,508 maximum trained score against the full kernel’s 61,221.", AUDIT)
AUROC = quote("AUROC 0.509, 0.501, 0.508 across seeds. Null, reported as such.", TELEMETRY)
SCALARS = quote("b wanders from its log 2 init across [0.22, 3.40], and eps splits, most heads driving it toward zero "
                "(sharp, local kernels) while two late-layer heads grow it to 6.4 and 12.7 (smooth, near-global "
                "ones).", AUDIT)
BARELY = quote("The entropy statistics on the trained maps barely move against the ablation", AUDIT)
DIFFUSE = quote("(mean 0.73 vs softmax’s 0.48), so the diffuseness mechanism the explainer describes is a property "
                "of the polynomial ratio", AUDIT)
KERNEL_SCALE = Words(QUESTION, "no post: a question of this project (the kernel post says nothing about model "
                               "scale)")

# ---- the A³ post: "A³ Attention: The Softmax Is Not Sacred"
SAFE = "Two properties that make it safe"
VALID = quote("Proposition 1: the output is always a valid probability distribution, no matter what the gate and "
              "bias learn", SAFE)
EXACTLY = quote("with bg = 3·1, Wg = 0 and U = 0, A³ exactly recovers standard softmax at initialization", SAFE)
CLOSE = quote("The identity of σ(3) ≈ 0.95 means gated scores stay close to their originals at init.", SAFE)
NEVER_WORSE = quote("You are never worse than the baseline because of initialization luck.", SAFE)
DEPTH = quote("Heads near the first layers tend to learn softer, more diffuse distributions — they act as broad "
              "context collectors. Deeper heads sharpen selectively on the tokens they attend to.",
              "What the gate actually learns")
OVERHEAD = quote("The gate and bias add a small parameter and compute overhead per head", "The honest limitations")
COMPOSES = quote("making them adaptive is a two-matrix change that composes with every existing attention variant — "
                 "FlashAttention, MQA, GQA all still work", "What I'd want a reader to take away")
SHRINKS = quote("the benefits shrink as models scale up — big models already learn rich internal modulation, so the "
                "headroom is largest in small and mid-sized models", "The honest limitations")

# ---- no post of the two
LATER = Words(UNQUOTED, "a later post of the kernel post's series, whose text is not among this project's sources: "
                        "its number only, and the direction it was reported for")
CONTROL = Words(QUESTION, "no post: a control of this project")

# Every quotation of the two posts, by the post's file in shared/seeds (the test reads them there).
POSTS = {"yat-attention-jax-flax-nnx.txt": (DIES, BAND, SCALE, ABLATION, AUROC, SCALARS, BARELY, DIFFUSE),
         "a3-adaptive-activation-attention.txt": (VALID, EXACTLY, CLOSE, NEVER_WORSE, DEPTH, OVERHEAD, COMPOSES,
                                                  SHRINKS)}
