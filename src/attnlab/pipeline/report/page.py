"""The writeup's HTML: numbered tables and figures, captions read from workflow/report/, links within the page.

The page is one self-contained file: figures are inlined (PNG, or an animated
GIF with its still poster frame for print), tables are HTML of display strings
(text left, numbers right, a numbered caption above), and every table and
figure carries an id the summary links to. A figure is named as the figure
catalog (attnlab.pipeline.ground.figure_catalog) names it; its caption is the
workflow/report/<name>.rst file the Snakemake report captions it with, so both
say the same, and the line under it names the rule and the CSVs that made it.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

import pandas as pd

from attnlab.pipeline.ground.figure_catalog import BY_NAME, Figure
from attnlab.pipeline.ground.paths import results_dir
from attnlab.pipeline.ground.formatting import MISSING, cell_text

RULES = "workflow/rules/figures.smk"  # where the figure rules are, from the workspace
MIME = {".png": "image/png", ".gif": "image/gif"}


def results_path(*parts: str) -> Path:
    return results_dir().joinpath(*parts)


class Numbering:
    """Figure and table numbers in the order the writeup shows them."""

    def __init__(self):
        self.counts = {}

    def next(self, kind: str) -> int:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        return self.counts[kind]


def anchor(kind: str, name: str) -> str:
    """The id of a table or figure on the page ('table-contest', 'figure-lr_sweep')."""
    return f"{kind}-{re.sub(r'[^A-Za-z0-9_-]+', '-', Path(name).stem)}"


# ---- figures


def caption(figure: Figure) -> str:
    """The figure's caption, workflow/report/<name>.rst (shared with the Snakemake report)."""
    path = results_dir().parent / figure.caption
    if not path.is_file():
        return f"(no caption: {figure.caption} is missing)"
    return " ".join(path.read_text().split())


def made_by(figure: Figure) -> str:
    """One line under the figure: the rule and module that drew it and the CSVs it read, linked.

    Links are relative to results/writeup/, where the page is written: ../tables/<table>.csv,
    ../../workflow/rules/figures.smk and the module's source under ../../src/."""
    module = figure.module.replace(".", "/") + ".py"
    read = ", ".join(link(f"../tables/{table}.csv", f"{table}.csv") for table in figure.tables)
    source = f"from {read}" if read else "from no table (drawn from its formula alone)"
    return (f"Made by rule {link('../../' + RULES, figure.rule)} "
            f"(<code>python -m {html.escape(figure.module)}</code>, {link('../../src/' + module, 'source')}) "
            f"{source}.")


def drawn_width(path: Path) -> float | None:
    """The width in inches a figure was drawn at: its pixels over the resolution its PNG records (None for a
    file that records none, such as a GIF)."""
    from PIL import Image

    with Image.open(path) as image:
        dpi = image.info.get("dpi")
        return image.width / float(dpi[0]) if dpi and float(dpi[0]) > 0 else None


def _inline(path: Path, css: str, alt: str, width: float | None = None) -> str:
    """The image inlined; with its drawn width (inches) as --print-width, which the stylesheet prints it at."""
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    size = f' style="--print-width: {width:.3f}in"' if width else ""
    return f'<img class="{css}"{size} src="data:{MIME[path.suffix]};base64,{data}" alt="{html.escape(alt)}">'


def figure_html(name: str, number: int) -> str:
    """The catalog's figure `name` inlined under its numbered caption, then the line that says what made it.

    An animated figure comes with its poster (its last frame), hidden on screen and shown in print, so
    paper gets a meaningful still instead of whichever frame the GIF was on. Each image carries the width
    it was drawn at (the poster's for a GIF, whose frames are the same figure), so that print shows its
    lettering at the point size it was drawn with.
    """
    figure = BY_NAME[name]
    text = caption(figure)
    alt = text.split(". ")[0]
    shown = results_path("figures", figure.file)
    poster = results_path("figures", figure.poster) if figure.poster else None
    width = drawn_width(poster if poster else shown)
    image = _inline(shown, "animated" if figure.animated else "still", alt, width)
    if poster:
        image += _inline(poster, "poster", alt, width)
    return (f'<figure class="paper" id="{anchor("figure", name)}">{image}'
            f"<figcaption><b>Figure {number}.</b> {rst_inline(text)}</figcaption>"
            f'<p class="made-by">{made_by(figure)}</p></figure>')


def rst_inline(text: str) -> str:
    """The little reStructuredText a caption uses (``code``, *emphasis*) as HTML."""
    text = html.escape(text)
    text = re.sub(r"``(.+?)``", r"<code>\1</code>", text)
    return re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<em>\1</em>", text)


def link(href: str, text: str) -> str:
    return f'<a href="{html.escape(href, quote=True)}">{html.escape(text)}</a>'


# ---- tables


def table_html(frame: pd.DataFrame, number: int, title: str, groups: list[tuple[str, int]] | None = None,
               widths: dict[str, int] | None = None, left: tuple[str, ...] = (), markup: tuple[str, ...] = (),
               css: str = "", name: str = "", per_seed: pd.DataFrame | None = None) -> str:
    """A table of display strings: numbered caption above, no index, text left and numbers right.

    groups: optional (label, span) spanning headers over consecutive columns ('' for none).
    widths: each column's width, for a table of running text that fills the text column: a number is a
    percent of it, a text a CSS length ('9.5em', for a column of badges that must never wrap).
    left: columns kept left-aligned even when they look numeric. markup: columns of trusted HTML.
    css: extra classes ('small'). name: the table's id on the page is table-<name>.
    per_seed: the per-seed detail, shown folded under the table so the table itself fits the text column.
    """
    columns = list(frame.columns)
    kinds = {c: "num" if _numeric_column(frame[c]) and c not in left else
             "text word" if _word_column(frame[c]) else "text" for c in columns}
    keep = ["keep"] if len(frame) <= KEEP_ROWS and not widths else []  # printed on one page
    dense = ["dense"] if len(columns) >= DENSE_COLUMNS else []  # printed smaller, to fit the page's width
    classes = " ".join(["paper", *css.split()] + (["wide"] if widths else []) + keep + dense)
    ident = f' id="{anchor("table", name)}"' if name else ""
    layout = ' style="table-layout:fixed"' if widths else ""
    cols = ("<colgroup>" + "".join(f'<col style="width:{width}">' for width in _col_widths(columns, widths))
            + "</colgroup>" if widths else "")
    head = ""
    if groups:
        head += "<tr>" + "".join(f'<th class="group" colspan="{span}">{html.escape(label)}</th>' if label
                                 else f'<th colspan="{span}"></th>' for label, span in groups) + "</tr>"
    head += "<tr>" + "".join(f'<th class="{kinds[c]}">{header_html(str(c))}</th>' for c in columns) + "</tr>"
    body = []
    for row in frame.itertuples(index=False):
        cells = [f'<td class="{kinds[c]}">{value if c in markup else cell_html(cell_text(value))}</td>'
                 for c, value in zip(columns, row)]
        body.append("<tr>" + "".join(cells) + "</tr>")
    table = (f'<table class="{classes}"{ident}{layout}><caption><b>Table {number}.</b> {rst_inline(title)}'
             f"</caption>{cols}<thead>{head}</thead><tbody>{''.join(body)}</tbody></table>")
    if per_seed is not None and not per_seed.empty:
        table += details_html(per_seed, f"Per seed (Table {number})")
    return table


KEEP_ROWS = 12  # a table of no more rows than this is printed on one page, not split across two
# A table of this many columns or more (the scale ladder's) is printed in a smaller type, its intervals free to
# wrap after their comma: whole, they would make it wider than the page.
DENSE_COLUMNS = 12
# A sign or operator standing alone between spaces in a header ('− softmax', 'row sum − 1') stays on the
# line of the word after it.
_LONE_OPERATOR = re.compile(r"(?:(?<=\s)|^)([−+±×=<>≈]) ")
# What a cell never breaks inside: an interval '[−0.0453, +0.3986]', a 'mean ± std', a number in e-notation
# or a range of them ('1e-2', '3e-4–3e-3'), whose hyphen the browser would otherwise break after.
_E_NUMBER = r"[−+-]?\d+(?:\.\d+)?e[−+-]?\d+"
_UNBROKEN = re.compile(rf"\[[^\[\]]*\]|\S+ ± \S+|{_E_NUMBER}(?:[–-]{_E_NUMBER})*")
# A commit or a checksum (40 or 64 hex digits): an identifier, not a number, so it is set as code on one line;
# broken across two, its halves would read as two numbers, and its digits as a quantity.
_DIGEST = re.compile(r"\b([0-9a-f]{64}|[0-9a-f]{40})\b")


def header_html(text: str) -> str:
    """A column header that wraps only at its spaces: each word is kept whole ('1/σ(3)|' never splits at the
    slash), a lone operator stays with the word after it and a bracket ('[95% interval]') on one line."""
    text = re.sub(r"\[[^\[\]]*\]", lambda m: m.group(0).replace(" ", "\u00a0"), text)  # '[95% interval]'
    words = _LONE_OPERATOR.sub("\\1\u00a0", text).split(" ")
    return " ".join(f'<span class="unbroken">{html.escape(word)}</span>' if word else "" for word in words)


def cell_html(text: str) -> str:
    """A cell's text as HTML: intervals and 'mean ± std' kept on one line (an interval may wrap after its comma
    where the stylesheet lets it: in a column of running text, or a dense table), a commit hash as code on one
    line, a path free to wrap after a slash."""
    parts = _DIGEST.split(text)  # text, hash, text, ...
    if len(parts) > 1:
        return "".join(f'<code class="digest">{part}</code>' if i % 2 else cell_html(part)
                       for i, part in enumerate(parts))
    out, at = [], 0
    for match in _UNBROKEN.finditer(text):
        out.append(_wrappable(text[at:match.start()]))
        kind = "unbroken interval" if match.group(0).startswith("[") else "unbroken"
        out.append(f'<span class="{kind}">{html.escape(match.group(0))}</span>')
        at = match.end()
    out.append(_wrappable(text[at:]))
    return "".join(out)


def _wrappable(text: str) -> str:
    """Escaped text with a break opportunity after each slash inside a word ('config/<wbr>ladder.yaml')."""
    return re.sub(r"(?<=\w)/(?=\w)", "/<wbr>", html.escape(text))


def _col_widths(columns: list, widths: dict) -> list[str]:
    """Each column's CSS width: a length as given ('13em'), a percent as its share of what the lengths leave,
    so the columns add up to the table's width on any page (the text column on screen, A4 or Letter)."""
    given = {c: widths.get(c, 8) for c in columns}
    fixed = [w for w in given.values() if isinstance(w, str)]
    total = sum(w for w in given.values() if not isinstance(w, str)) or 1
    rest = f"(100% - {' - '.join(fixed)})" if fixed else "100%"
    return [w if isinstance(w, str) else f"calc({rest} * {w / total:.4f})" for w in given.values()]


def details_html(frame: pd.DataFrame, summary: str) -> str:
    """A folded table: the per-seed values behind a summary row, open on a click.

    Paper cannot be clicked, and a browser prints a folded <details> folded: the same table follows in a block
    that only print shows, captioned with the summary, and print hides the folded one."""
    columns = list(frame.columns)
    kinds = {c: "num" if _numeric_column(frame[c]) else "text" for c in columns}
    head = "".join(f'<th class="{kinds[c]}">{header_html(str(c))}</th>' for c in columns)
    body = "".join("<tr>" + "".join(f'<td class="{kinds[c]}">{cell_html(cell_text(v))}</td>'
                                     for c, v in zip(columns, row)) + "</tr>"
                   for row in frame.itertuples(index=False))
    keep = " keep" if len(frame) <= KEEP_ROWS else ""
    table = f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return (f'<details class="per-seed"><summary>{html.escape(summary)}</summary>'
            f'<table class="paper small">{table}</details>'
            f'<div class="per-seed-print"><table class="paper small{keep}"><caption>{html.escape(summary)}.</caption>'
            f"{table}</div>")


_NUMERIC = re.compile(r"^[\s+\-−–±×%,.\d()\[\]e≈<>~]*$")


WORD_CHARS = 12  # a column of single words no longer than this never breaks inside a word ('softmax', 'yat_b')


def _word_column(values: pd.Series) -> bool:
    """A column of short names (variants, series): the browser may not break them mid-word to narrow the table."""
    texts = [cell_text(v).strip() for v in values]
    return bool(texts) and all(len(t) <= WORD_CHARS and not any(ch.isspace() for ch in t) for t in texts)


def _numeric_column(values: pd.Series) -> bool:
    """Right-align a column when most of its cells read as numbers ('3.130 ± 0.023', '+5.6%', '0.003')."""
    texts = [cell_text(v).strip() for v in values]
    texts = [t for t in texts if t and t != MISSING]
    numeric = [bool(_NUMERIC.match(t)) and any(ch.isdigit() for ch in t) for t in texts]
    return bool(texts) and sum(numeric) >= len(texts) / 2
