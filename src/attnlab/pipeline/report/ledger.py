"""The claims ledger on the page: the summary of claim → verdict up front, the full ledger, the tally, the posts.

Every row names the post its claim comes from (the ledger's source column,
shown as the post's title and linked to the references), and the summary
links each claim to the table in this writeup that holds its evidence.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pandas as pd

from attnlab.pipeline.ground import intervals, statistics, verdicts
from attnlab.pipeline.claims import common as claims_common
from attnlab.pipeline.claims import published
from attnlab.pipeline.claims.ladder_rows import ON_THE_LADDER
from attnlab.pipeline.claims.ledger import CONTEST, FALLS, POSTS, SURVIVES, family  # noqa: F401  (the abstract's POSTS)
from attnlab.pipeline.ground.contract import BASELINE
from attnlab.pipeline.ground.formatting import MISSING
from attnlab.pipeline.report.page import anchor, link
from attnlab.pipeline.tables import display

# The ledger's verdicts (attnlab.pipeline.ground.verdicts) and how each is coloured; the two settled by construction
# first, so a verdict is read by its longest first words, and counted apart from the experiments.
VERDICT_CLASSES = ((verdicts.HOLDS_BY_CONSTRUCTION, "construction"),
                   (verdicts.CONTRADICTED_BY_CONSTRUCTION, "construction-fails"),
                   (verdicts.HOLDS, "holds"), (verdicts.CONTRADICTED, "fails"),
                   (verdicts.INCONCLUSIVE, "partly"), (verdicts.NOT_TESTABLE, "untested"))
EMPIRICAL = (verdicts.HOLDS, verdicts.CONTRADICTED, verdicts.INCONCLUSIVE, verdicts.NOT_TESTABLE)
MISSED = (verdicts.CONTRADICTED, verdicts.INCONCLUSIVE)
# Column widths: percents of the text column, and the verdict badges' own width (they never wrap).
BADGE_WIDTH = "13em"  # "by construction ✗" in bold on one line, and the cell padding
# The full ledger leaves the published value to the summary above it (and ledger.csv): the widths go to the
# words and the reading, which are what a reader checks a verdict against.
LEDGER_WIDTHS = {"the source's words": 20, "this project's reading": 22, "measured": 18, "verdict": BADGE_WIDTH,
                 "note": 25}
SUMMARY_WIDTHS = {"claim": 23, "measured": 20, "published": 13, "verdict": BADGE_WIDTH, "why": 22, "evidence": 10}
# Where the writeup shows each claim's evidence: words of the claim -> the table (its id on the page).
EVIDENCE = (("on the scale ladder", "ladder_claims"), ("scale up", "ladder"), ("closes with scale", "ladder"),
            ("quality:", "contest"), ("dies at", "lr_sweep"), ("LR column", "lr_sweep"),
            ("orders of magnitude", "score_scale"), ("barely moves the entropy", "entropy"),
            ("ablation", "score_scale"), ("learned scalars", "scalars"), ("row mass", "mass_auroc"),
            ("diffuse", "entropy"), ("valid distributions", "a3_init"), ("starts", "a3_init"),
            ("stay close", "a3_init"),
            ("early layers", "a3_vs_softmax_entropy"), ("overhead", "params"), ("composes", "composability"),
            ("softmax over its kernel", "normswap"), ("per-token temperature", "a3_vs_temperature"))
EVIDENCE_NAMES = {"contest": "the contest", "lr_sweep": "the LR sweep", "score_scale": "score scale",
                  "mass_auroc": "mass AUROC", "entropy": "row entropy", "a3_init": "A³ at step 0",
                  "a3_vs_softmax_entropy": "A³ per layer", "params": "parameters", "composability": "composability",
                  "normswap": "normaliser swap", "a3_vs_temperature": "A³ vs a temperature", "ledger": "the ledger",
                  "ladder": "the scale ladder", "ladder_claims": "claims by rung", "scalars": "learned scalars"}


def read_ledger(path: Path) -> pd.DataFrame:
    """ledger.csv as the page shows it: text columns empty rather than NaN."""
    ledger = pd.read_csv(path)
    text = [c for c in ledger.columns if c not in ("seeds", "seeds_to_resolve")]
    ledger[text] = ledger[text].astype(object).where(ledger[text].notna(), "")
    return ledger


def verdict_kind(outcome: str) -> tuple[str, str]:
    """('not testable', 'untested'): a verdict's typed outcome (the ledger's `outcome` column, never its text)
    and how it is coloured."""
    return str(outcome), dict(VERDICT_CLASSES).get(str(outcome), "untested")


# A badge's words: the two construction verdicts as "by construction" with a tick or a cross, short enough to
# stay on one line in print; the full verdict is the badge's title and stands in the ledger's CSV.
BADGE_WORDS = {verdicts.HOLDS_BY_CONSTRUCTION: "by construction ✓",
               verdicts.CONTRADICTED_BY_CONSTRUCTION: "by construction ✗"}


def badge(outcome: str, verdict: str) -> str:
    """The verdict as a coloured badge of its outcome ('not testable'; the caption names the protocol); its full
    text is the badge's title."""
    kind, css = verdict_kind(outcome)
    words = BADGE_WORDS.get(kind, kind)
    return f'<span class="verdict {css}" title="{html.escape(str(verdict), quote=True)}">{html.escape(words)}</span>'


# ---- the posts



def sources() -> dict:
    """The ledger's source names -> their citation (published.yaml's sources), in reference order."""
    return published()["sources"]


def reference_number(source: str) -> int | None:
    """The post's number in the references (a source that is no post of its own: the one it points to)."""
    entry = sources().get(source, {})
    source = entry.get("see", source)
    cited = [name for name, s in sources().items() if s.get("cited", True)]
    return cited.index(source) + 1 if source in cited else None


def post_name(source: str) -> str:
    """How a row names its post: the post's title with its reference number, linked to the references."""
    entry = sources().get(source)
    if entry is None:
        return html.escape(source)
    number = reference_number(source)
    title = html.escape(entry["short"])
    return f'<a href="#references">{title} [{number}]</a>' if number else title


def references_html() -> str:
    """The posts the claims come from, as a numbered reference list (id 'references')."""
    items = []
    for entry in (s for s in sources().values() if s.get("cited", True)):
        title = f"“{html.escape(entry['title'])}”"
        if entry.get("url"):
            title = f'<a href="{html.escape(entry["url"], quote=True)}">{title}</a>'
        parts = [html.escape(entry["author"])] if entry.get("author") else []
        parts += [title, html.escape(entry["kind"])] + ([html.escape(str(entry["date"]))] if entry.get("date") else [])
        note = f" {html.escape(entry['note'])}" if entry.get("note") else ""
        items.append(f"<li>{', '.join(parts)}.{note}</li>")
    return f'<ol class="references" id="references">{"".join(items)}</ol>'


# ---- the full ledger


def words_html(row) -> str:
    """A row's first cell: the source's words as written (or what stands in for them), its post, then the
    claim as this project names it, set apart so that no paraphrase reads as the post's."""
    quote = str(getattr(row, "quote", "") or "")
    return (f'<span class="words">{html.escape(quote) or MISSING}</span><span class="post">{post_name(row.source)}'
            f'</span><span class="named">this project\'s name for it: {html.escape(str(row.claim))}</span>')


def ledger_html(ledger: pd.DataFrame) -> pd.DataFrame:
    """ledger.md's display on the page, in five columns that fit the text column: the source's words with the
    post (linked to the references) and the claim's name, this project's reading, what was measured, and what
    the verdict rests on under its badge (the published value stands in the summary)."""
    shown = display.shown("ledger", ledger)
    claim = [words_html(row) for row in ledger.itertuples()]
    verdict = [badge(o, v) + (f'<span class="resolution">{html.escape(b)}</span>' if b != MISSING else "")
               for o, v, b in zip(ledger.outcome, ledger.verdict, shown["rests on"])]
    reading = shown["this project's reading"]
    return pd.DataFrame({"the source's words": claim, "this project's reading": reading, "measured": shown.measured,
                         "verdict": verdict, "note": shown.note})


def posts_claims(ledger: pd.DataFrame) -> pd.DataFrame:
    """The two posts' own claims: their rows of the ledger, without the ladder's per-rung repeats of them."""
    return ledger[ledger.source.isin(POSTS) & ~ledger.claim.astype(str).str.startswith(ON_THE_LADDER)]


def ledger_parts(ledger: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """The ledger as the page shows it, in three tables (name, caption, rows), each only where it has rows: the
    two posts' claims, the catalog papers' claims, and this project's own questions, controls and the scale
    ladder's rows, so that neither of the last two is counted as a claim of the posts."""
    posts = posts_claims(ledger)
    papers = ledger[ledger.source.isin(claims_common.PAPERS)]
    rest = ledger.drop(index=posts.index.union(papers.index))
    parts = [("ledger", "the two posts' claims", posts), ("ledger_papers", "the catalog papers' claims", papers),
             ("ledger_project", "this project's questions and controls, a later post's number, and the scale "
              "ladder", rest)]
    return [(name, caption, rows) for name, caption, rows in parts if len(rows)]


def verdict_of(ledger: pd.DataFrame, words: str) -> str:
    """The verdict of the first claim that says `words` ('' when no claim does)."""
    hits = ledger[ledger.claim.str.contains(words, case=False, regex=False)]
    return str(hits.verdict.iloc[0]) if len(hits) else ""


def tally(ledger: pd.DataFrame) -> str:
    """'of 14 experiments, 2 hold, 1 is contradicted, 8 are inconclusive (6 off the claims' protocol), 3 are not
    testable; 3 settled by construction: 2 hold, 1 is contradicted': experiments and constructions apart."""
    kinds = ledger.outcome.astype(str)
    counts = kinds.value_counts()
    off = int(claims_common.off_protocol_rows(ledger).sum())
    words = {verdicts.HOLDS: ("holds", "hold"), verdicts.CONTRADICTED: ("is contradicted", "are contradicted"),
             verdicts.INCONCLUSIVE: ("is inconclusive", "are inconclusive"),
             verdicts.NOT_TESTABLE: ("is not testable", "are not testable")}
    experiments = int(kinds.isin(EMPIRICAL).sum())
    parts = []
    for kind in EMPIRICAL:
        if kind in counts:
            n = int(counts[kind])
            text = f"{n} {words[kind][n != 1]}"
            if kind == verdicts.INCONCLUSIVE and off:
                text += f" ({off} off the claim's protocol)"
            parts.append(text)
    text = f"of {experiments} experiment{'s' if experiments != 1 else ''}, " + ", ".join(parts) if parts else ""
    built = [(kind, int(counts[kind])) for kind in verdicts.BY_CONSTRUCTION if kind in counts]
    if built:
        total = sum(n for _, n in built)
        settled = ", ".join(f"{n} {'hold' if kind == verdicts.HOLDS_BY_CONSTRUCTION else 'contradicted'}"
                            for kind, n in built)
        text += ("; " if text else "") + f"{total} settled by construction ({settled})"
    return text


def ledger_results(ledger: pd.DataFrame, protocol_name: str, comparable: bool,
                   contest: pd.DataFrame | None = None) -> str:
    text = f"At the `{protocol_name}` protocol, {len(ledger)} claims: {tally(ledger)}."
    text += (f" An experiment's verdict rests on the interval beside it ({intervals.CONFIDENCE:.0%}: a "
             "t-interval over the seeds named, an exact binomial interval for a count of divergences, or one "
             "seed against the same variant's seed spread): *holds* when it lies inside what the claim says, "
             "*contradicted* when it excludes it, *inconclusive* when it spans the claim's threshold, and "
             "*inconclusive at* the protocol when a precondition of the claim's protocol failed (each variant at "
             "its own best LR, that LR inside its sweep grid, cells trained to a plateau), whatever the interval "
             "says; the row then gives the data's lean. *Not testable* means this protocol cannot express the "
             "claim. *Holds* or *contradicted by construction* (badges *by construction ✓* and *✗*) means the "
             "model's construction settles it, not an experiment.")
    text += " " + multiplicity_text(ledger, contest)
    if not comparable:
        text += (f" The `{protocol_name}` protocol is not the published one, so a claim contradicted here is "
                 "contradicted at this protocol; it does not refute the published number.")
    return text


def posts_family(ledger: pd.DataFrame) -> pd.DataFrame:
    """The ledger's members of Holm's family (claims.ledger.family): the rows an experiment judged at this
    build's protocol with a test."""
    if "holm" not in ledger:
        return ledger.iloc[0:0]
    return ledger[ledger.holm.astype(str).isin([SURVIVES, FALLS])]


def multiplicity_text(ledger: pd.DataFrame, contest: pd.DataFrame | None = None) -> str:
    """The build's one family: how many claims and contest comparisons it holds, what 95% per claim would mean
    for it, and which settled verdicts survive Holm's step-down."""
    members = family(ledger, contest)
    m = len(members)
    if not m:
        return "No claim was judged by a test at this build, so no correction for multiplicity applies."
    in_ledger = posts_family(ledger)
    settled = in_ledger[in_ledger.outcome.isin([verdicts.HOLDS, verdicts.CONTRADICTED])]
    survive = in_ledger[in_ledger.holm == SURVIVES]
    names = "; ".join(f"{r.claim} ({r.verdict})" for r in survive.itertuples()) or "none"
    comparisons = members[members.kind == CONTEST]
    held = comparisons[comparisons.survives]
    contest_text = (f" Of the contest's {len(comparisons)} comparisons with {BASELINE}, "
                    f"{len(held)} survive{'s' if len(held) == 1 else ''}"
                    + (f" ({', '.join(held.member)})" if len(held) else "") + "." if len(comparisons) else "")
    alpha = 1 - intervals.CONFIDENCE
    return (f"*Multiplicity.* The build's family holds {m} tests: {len(in_ledger)} claims an experiment judged at "
            f"this protocol and {len(comparisons)} contest comparisons. Each verdict rests on its own "
            f"{intervals.CONFIDENCE:.0%} interval, so were every one sitting exactly on its threshold, about "
            f"{m * alpha:.1f} of the {m} would still come out settled by chance. Holm's step-down over the family "
            f"(each test's two-sided p-value, a design's repeated p-value where its seeds were added under one; "
            f"the smallest held to {alpha:g}/{m}, the next to {alpha:g}/{m - 1}, ...) keeps {len(survive)} of the "
            f"{len(settled)} settled verdicts: {names}.{contest_text} The others stand as this build's per-claim "
            "readings, not as findings corrected for the family.")


# ---- the summary, before section 1


def threshold(check: str) -> str:
    """What the claim says as a number, from the check's reading ('threshold: at least 100×')."""
    found = re.search(r"threshold: ([^;]+)", str(check))
    return found.group(1).strip() if found else ""


def reason(row) -> str:
    """One line: why the row has its verdict."""
    kind = str(row.outcome)
    interval, resolution, limit = str(row.interval), str(row.resolution), threshold(row.check)
    why = re.sub(r"^none( needed)?: ", "", interval)
    if why != interval or not interval:  # no interval: the row says why, or what would resolve it
        return resolution or why or MISSING
    against = f" the claim ({limit})" if limit else " the claim"
    stable = f"; {resolution}" if resolution else ""
    if kind == verdicts.HOLDS:
        return f"{interval} lies inside{against}{stable}"
    if kind == verdicts.CONTRADICTED:
        return f"{interval} excludes{against}{stable}"
    if claims_common.is_off_protocol(row.off_protocol):
        return f"{resolution}; {interval}" if resolution else interval
    if kind == verdicts.INCONCLUSIVE:
        if interval == statistics.ONE_SEED:
            return resolution or interval
        return f"{interval} spans{against}" + (f"; {resolution}" if resolution else "")
    return interval


def evidence(claim: str, shown: set[str]) -> str:
    """The table on this page that holds the claim's evidence ('ledger' when it is not shown)."""
    for words, table in EVIDENCE:
        if words.lower() in str(claim).lower() and table in shown:
            return table
    return "ledger"


def summary_display(ledger: pd.DataFrame, shown: set[str]) -> pd.DataFrame:
    """Claim → verdict, one row per claim: the post's reference, measured and published values, the verdict,
    one line of why, and a link to the table that holds the evidence (`shown`: the tables on the page)."""
    def claim(row):
        number = reference_number(row.source)
        short = sources().get(row.source, {}).get("short", row.source)
        cite = f' <a href="#references">[{number}]</a>' if number else f" ({html.escape(str(short))})"
        return html.escape(str(row.claim)) + cite  # the post's own words stand in the full ledger

    def see(row):
        table = evidence(row.claim, shown)
        return link(f"#{anchor('table', table)}", EVIDENCE_NAMES[table])

    return pd.DataFrame({
        "claim": [claim(r) for r in ledger.itertuples()],
        "measured": ledger.measured.replace("", MISSING),
        "published": ledger.published.replace("", MISSING),
        "verdict": [badge(o, v) for o, v in zip(ledger.outcome, ledger.verdict)],
        "why": [reason(r) for r in ledger.itertuples()],
        "evidence": [see(r) for r in ledger.itertuples()],
    })
