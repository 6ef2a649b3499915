"""The top of the writeup: which variants ran, and the abstract (what was tested, at which protocol, what it found).

Written from the build's tables: the contest's paired differences with their
intervals and the ledger's verdicts, so the first screen already answers the
page's question at this build's protocol.
"""

from __future__ import annotations

import html

import pandas as pd

from attnlab.pipeline import statistics
from attnlab.pipeline.contract import BASELINE
from attnlab.pipeline.report import build
from attnlab.pipeline.formatting import difference, finite
from attnlab.pipeline.report.ledger import reference_number, sources, tally, verdict_kind

# What each variant computes, in words (the README's table says the same).
VARIANTS = {
    "softmax": "`softmax(q·k/√d)` over the causal window, the baseline",
    "yat": "the Yat kernel `κ = (q·k)² / (‖q−k‖² + 1)`, normalised by its row mass `Σκ`; no exponential, "
           "masked keys get 0",
    "yat_b": "the same kernel with `b` and `ε` learned per layer and head, `κ = (q·k + b)² / (‖q−k‖² + ε)`",
    "a3": "adaptive activation attention, `softmax(S ⊙ G + B)`, with a gate G and a key bias B computed from a "
          "causal context",
    "yat_exp": "a softmax over yat's `κ`: the kernel kept, the exponential put back",
    "yat_b_exp": "a softmax over yat_b's `κ`",
    "softmax_t": "softmax with one learned inverse temperature per layer and head, starting where A³'s gate starts",
    "a3_heads": "A³ with its gate and bias per layer and head instead of shared",
}
LEVEL = f"{statistics.CONFIDENCE:.0%}"


def variants_list(contest: pd.DataFrame) -> str:
    """The variants this build trained, each with what it computes (Markdown)."""
    return "\n".join(f"* **{v}**: {VARIANTS.get(v, 'a variant of the registry')};" for v in contest.variant)[:-1] + "."


def _posts() -> str:
    cited = [(name, s) for name, s in sources().items() if s.get("cited", True)]
    return " and ".join(f"<em>{html.escape(s['title'])}</em> "
                        f'<a href="#references">[{reference_number(name)}]</a>' for name, s in cited)


def _reading(row) -> str:
    if not (finite(row.delta_ci_low) and finite(row.delta_ci_high)):
        return "no interval"
    if row.delta_ci_high < 0:
        return f"better, wins {row.wins}"
    if row.delta_ci_low > 0:
        return f"worse, wins {row.wins}"
    return f"not resolved, wins {row.wins}"


def findings(contest: pd.DataFrame) -> str:
    """Each variant's paired difference from the baseline with its interval, in a sentence."""
    rows = [r for r in contest.itertuples() if r.variant != BASELINE and finite(r.delta_vs_softmax)]
    if not rows:
        return ""
    parts = [f"{html.escape(r.variant)} {difference(r.delta_vs_softmax, r.delta_ci_low, r.delta_ci_high)} "
             f"({_reading(r)})" for r in sorted(rows, key=lambda r: r.delta_vs_softmax)]
    return (f"Against {BASELINE}, paired by seed (best validation loss in nats/char, each variant minus {BASELINE} "
            f"of the same seed, {LEVEL} interval; below 0 is better): " + "; ".join(parts) + ".")


def settled(ledger: pd.DataFrame) -> str:
    """The claims that hold or are contradicted, each with the interval it rests on."""
    parts = []
    for kind in (statistics.HOLDS, statistics.CONTRADICTED):
        rows = ledger[ledger.verdict.map(lambda v: verdict_kind(v)[0]) == kind]
        if len(rows):
            claims = "; ".join(html.escape(str(r.claim)) + (f" ({html.escape(str(r.interval))})"
                                                             if "CI" in str(r.interval) else "")
                               for r in rows.itertuples())
            parts.append(f"{'Holding' if kind == statistics.HOLDS else 'Contradicted'}: {claims}.")
    return " ".join(parts)


def abstract_html(runs: pd.DataFrame, contest: pd.DataFrame, ledger: pd.DataFrame) -> str:
    """The abstract as a block of HTML: what was tested and at which protocol, then what was found."""
    name = html.escape(build.protocol(runs))
    tested = (f"This report retrains the attention score functions of two blog posts, {_posts()}, as "
              f"character-level GPTs on tinyshakespeare that differ only in how a query and a key become an "
              f"attention weight ({', '.join(html.escape(v) for v in contest.variant)}), and checks the "
              f"{len(ledger)} claims of its ledger (the posts' and this project's controls) against the runs. {build.protocol_text(runs, contest)}")
    found = findings(contest)
    verdicts = (f"Of the {len(ledger)} claims at <code>{name}</code>: {tally(ledger)}. "
                + settled(ledger) + " The summary below gives every claim's verdict and why.")
    return ('<div class="abstract"><p><b>Abstract.</b> ' + tested + "</p>"
            + (f"<p>{found}</p>" if found else "") + f"<p>{verdicts}</p></div>")
