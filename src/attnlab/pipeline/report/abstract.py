"""The top of the writeup: which variants ran, and the abstract (what was tested, at which protocol, what it found).

Written from the build's tables: the contest's paired differences with their
intervals and the ledger's verdicts, so the first screen already answers the
page's question at this build's protocol.
"""

from __future__ import annotations

import html

import pandas as pd

from attnlab.pipeline.ground import intervals, verdicts
from attnlab.pipeline.ground.contract import BASELINE
from attnlab.pipeline.report import build
from attnlab.pipeline.ground.formatting import difference, finite, plural
from attnlab.pipeline.claims.ledger import surviving_comparisons
from attnlab.pipeline.report.ledger import POSTS, SURVIVES, posts_claims, reference_number, sources, tally
from attnlab.pipeline.claims.common import off_protocol_rows

# What each variant computes, in words (docs/variants.md's table says the same).
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
LEVEL = f"{intervals.CONFIDENCE:.0%}"
# The config that trains every cell to its plateau on a 2-core machine. The report names it as what would decide
# the claims held back here, never what another build of it found: a report states only its own build.
SETTLE_CONFIG = "settle"


def variants_list(contest: pd.DataFrame) -> str:
    """The variants this build trained, each with what it computes (Markdown)."""
    return "\n".join(f"* **{v}**: {VARIANTS.get(v, 'a variant of the registry')};" for v in contest.variant)[:-1] + "."


def _posts() -> str:
    """The two posts, by title with their reference numbers (the catalog's papers are cited where their rows
    stand)."""
    cited = [(name, s) for name, s in sources().items() if s.get("cited", True) and name in POSTS]
    return " and ".join(f"<em>{html.escape(s['title'])}</em> "
                        f'<a href="#references">[{reference_number(name)}]</a>' for name, s in cited)


def _reading(row, survives: bool) -> str:
    """A contest comparison in words: better or worse only where its interval is clear of 0 and it survives
    Holm's step-down over the build's family (claims.ledger.family)."""
    if not (finite(row.delta_ci_low) and finite(row.delta_ci_high)):
        return "no interval"
    clear = row.delta_ci_high < 0 or row.delta_ci_low > 0
    if clear and survives:
        return f"{'better' if row.delta_ci_high < 0 else 'worse'}, wins {row.wins}"
    if clear:
        return f"clear of 0 alone, not after Holm's step-down over the build's family, wins {row.wins}"
    return f"not resolved, wins {row.wins}"


def findings(contest: pd.DataFrame, ledger: pd.DataFrame | None = None) -> str:
    """Each variant's paired difference from the baseline with its interval, in a sentence; called better or
    worse only where it survives Holm's step-down over the build's family (the ledger's tests and the contest's
    comparisons together)."""
    rows = [r for r in contest.itertuples() if r.variant != BASELINE and finite(r.delta_vs_softmax)]
    if not rows:
        return ""
    held = surviving_comparisons(ledger, contest)
    parts = [f"{html.escape(r.variant)} {difference(r.delta_vs_softmax, r.delta_ci_low, r.delta_ci_high)} "
             f"({_reading(r, r.variant in held)})" for r in sorted(rows, key=lambda r: r.delta_vs_softmax)]
    return (f"Against {BASELINE}, paired by seed (best validation loss in nats/char, each variant minus {BASELINE} "
            f"of the same seed, {LEVEL} interval; below 0 is better): " + "; ".join(parts) + ".")


def _kind(ledger: pd.DataFrame) -> pd.Series:
    return ledger.outcome.astype(str)


def _lean(row) -> str:
    return str(getattr(row, "lean", "") or "")


def _bounded(row) -> bool:
    """Whether a ledger row's interval text holds an interval: a t-interval (CI) or a confidence sequence (CS)."""
    return " CI [" in str(row.interval) or " CS [" in str(row.interval)


def settled(ledger: pd.DataFrame) -> str:
    """The experiments that hold or are contradicted: each with the interval it rests on, and a contradiction
    with its direction and size."""
    parts = []
    kinds = _kind(ledger)
    held = ledger[kinds == verdicts.HOLDS]
    if len(held):
        parts.append("Holding: " + "; ".join(
            html.escape(str(r.claim)) + (f" ({html.escape(str(r.interval))})" if _bounded(r) else "")
            for r in held.itertuples()) + ".")
    against = ledger[kinds == verdicts.CONTRADICTED]
    if len(against):
        parts.append("Contradicted: " + "; ".join(
            html.escape(str(r.claim)) + (f": {html.escape(_lean(r))}" if _lean(r) else "")
            + (f" ({html.escape(str(r.interval))})" if _bounded(r) else "")
            for r in against.itertuples()) + ".")
    return " ".join(parts)


def off_protocol(ledger: pd.DataFrame, protocol: str) -> str:
    """The claims held back because this build is off their protocol: which precondition failed, how often, and
    which way the data at this protocol lean."""
    rows = ledger[off_protocol_rows(ledger)]
    if rows.empty:
        return ""
    failed = {}
    for text in rows.resolution.astype(str):
        head = text.removeprefix("off the claim's protocol: ").split("; at this protocol")[0]
        for name in filter(None, head.split("; ")):  # a ladder row names its rung's preconditions elsewhere
            failed[name] = failed.get(name, 0) + 1
    why = ", ".join(f"{name} ({n})" for name, n in sorted(failed.items(), key=lambda kv: -kv[1]))
    text = (f"{plural(len(rows), 'claim')} {'is' if len(rows) == 1 else 'are'} inconclusive at "
            f"<code>{html.escape(protocol)}</code> because a precondition "
            f"of their protocol failed: {html.escape(why)}.")
    if protocol != SETTLE_CONFIG:
        text += (f" <code>config/{SETTLE_CONFIG}.yaml</code> trains each cell until its validation loss stops "
                 "improving, each variant at its own best LR, under a design declared before its seeds (8 seeds, "
                 "then up to 20 for the comparisons still open, 5% error over both looks; "
                 f"<code>snakemake --cores all --configfile config/{SETTLE_CONFIG}.yaml</code>; "
                 "<code>python benchmarks/design_power.py</code> prints each comparison's power).")
    leaning = {}
    for r in rows.itertuples():  # the typed side the data alone take; the lean's words only as its detail
        side = str(getattr(r, "lean_side", "") or "")
        if side in (verdicts.CONTRADICTED, verdicts.HOLDS):
            lean = _lean(r)
            detail = lean.split(" (", 1)[1][:-1] if " (" in lean else ""
            leaning.setdefault(side, []).append(html.escape(str(r.claim)) + (f" ({html.escape(detail)})"
                                                                               if detail else ""))
    for side, label in ((verdicts.CONTRADICTED, "would contradict"), (verdicts.HOLDS, "would support")):
        if side in leaning:
            text += f" At this protocol alone the data {label}: " + "; ".join(leaning[side]) + "."
    return text


def constructions(ledger: pd.DataFrame) -> str:
    """The claims the model's construction settles, apart from the experiments."""
    kinds = _kind(ledger)
    rows = ledger[kinds.isin(verdicts.BY_CONSTRUCTION)]
    if rows.empty:
        return ""
    parts = [f"{html.escape(str(r.claim))}: {html.escape(str(r.outcome))} ({html.escape(str(r.measured))})"
             for r in rows.itertuples()]
    return "Settled by construction, not by experiment: " + "; ".join(parts) + "."


def improving(runs: pd.DataFrame) -> str:
    """How many cells were still improving when training stopped (runs.csv's `improving`)."""
    if runs.empty or "improving" not in runs:
        return ""
    cells = runs[~runs.diverged.fillna(False).astype(bool)] if "diverged" in runs else runs
    still = cells.improving.fillna(False).astype(bool)
    n = int(still.sum())
    if not n:
        return f"None of the {len(cells)} cells that trained was still improving when training stopped."
    if "study" in cells and not cells[still].study.astype(str).str.contains("contest").any():
        return (f"{n} of {len(cells)} cells {'was' if n == 1 else 'were'} still improving when training stopped, "
                "none of them a contest cell: only the claims that read those sweep cells are held back.")
    return (f"<b>{n} of {len(cells)} cells were still improving when training stopped</b>, so every claim about "
            "trained models is judged off the posts' protocol (trained to a plateau) and can be no stronger "
            "than inconclusive here; the rankings are of models caught mid-training.")


def decided(ledger: pd.DataFrame, protocol: str) -> str:
    """One line: how many of the two posts' claims this build decides, how many survive Holm's step-down, and
    what would decide the rest."""
    posts = posts_claims(ledger)
    kinds = _kind(posts)
    tested = int(kinds.isin([verdicts.HOLDS, verdicts.CONTRADICTED]).sum())
    built = int(kinds.isin(verdicts.BY_CONSTRUCTION).sum())
    survive = int((posts.holm == SURVIVES).sum()) if "holm" in posts else 0
    rest = len(posts) - tested - built
    corrected = (f" ({survive} of them surviving Holm's step-down over the build's family of tests)"
                 if tested else "")
    text = (f"Of the two posts' {len(posts)} claims, this build decides {tested} by experiment{corrected} and {built} "
            "by construction")
    if rest:
        text += (f"; the other {rest} stay open at <code>{html.escape(protocol)}</code>: their protocol is cells "
                 "trained to a plateau, each variant at its own best LR, at the posts' size "
                 "(<code>config/paper.yaml</code>, a GPU run; a paper cell takes hours on a 2-core CPU), and "
                 f"<code>config/{SETTLE_CONFIG}.yaml</code> trains to the plateau on a CPU at a smaller size")
    return text + "."


def abstract_html(runs: pd.DataFrame, contest: pd.DataFrame, ledger: pd.DataFrame) -> str:
    """The abstract as a block of HTML: what was found and how many of the posts' claims it decides first, then
    what was tested and at which protocol, then every verdict's count."""
    name = html.escape(build.protocol(runs))
    n_posts = len(posts_claims(ledger))
    tested = (f"This report retrains the attention score functions of two blog posts, {_posts()}, as "
              f"character-level GPTs on tinyshakespeare that differ only in how a query and a key become an "
              f"attention weight ({', '.join(html.escape(v) for v in contest.variant)}), and checks the two "
              f"posts' {n_posts} claims against the runs, with {len(ledger) - n_posts} more rows of its ledger "
              "apart from them: the catalog's papers, this project's own questions and controls, and the scale "
              "ladder's. "
              f"{build.protocol_text(runs, contest)}")
    found = " ".join(filter(None, [findings(contest, ledger), improving(runs)]))
    verdicts = " ".join(filter(None, [
        f"Of the {len(ledger)} claims at <code>{name}</code>, {tally(ledger)}.", settled(ledger),
        off_protocol(ledger, build.protocol(runs)), constructions(ledger),
        "The summary below gives every claim's verdict and why."]))
    headline = " ".join(filter(None, [found, decided(ledger, build.protocol(runs))]))
    return ('<div class="abstract"><p><b>Abstract.</b> ' + headline + "</p>" + f"<p>{tested}</p>"
            + f"<p>{verdicts}</p></div>")
