"""The writeup's stylesheet: a text column that holds every table and figure, on screen and on paper.

Tables never grow wider than the text column (cells wrap at spaces, never
inside a word, a number's interval or a header word; per-seed detail sits in a
collapsible block under its table on screen); a verdict badge never breaks
inside itself, nor a commit hash (set as code, on one line). A figure is shown
at the width it was drawn for (attnlab.pipeline.figures.style.TEXT_WIDTH, set
on each image by attnlab.pipeline.report.page), so on paper its lettering has
the point size it was drawn at; on screen it is enlarged by SCREEN_ZOOM up to
the column.

In print (the PDF of attnlab.pipeline.report.pdf, or a browser's own print):
text flows from page to page instead of each cell's output being held on one
page (JupyterLab's rule, which leaves near-empty pages before a long table); a
figure stays on one page with its caption, a table of a few rows stays whole,
a long one breaks between rows; the per-seed tables print unfolded; a link to
the web prints its address; an animated figure shows its still poster frame
instead of whatever frame the GIF is on.

How large a figure prints is print_scale's arithmetic, the one place it is
done: the tests hold every figure's lettering (7 pt) and attention maps to it,
and check it against the PDF Chromium prints.
"""

MM_PER_INCH = 25.4
SCREEN_ZOOM = 1.35  # a figure on screen is this much larger than on paper, up to the text column

PAGE_STYLE = """
<style>
.jp-Notebook, body.jp-Notebook { max-width: 62rem; margin: 0 auto; }
.jp-RenderedHTMLCommon { font-size: 15px; line-height: 1.55; }
.jp-RenderedHTMLCommon p, .jp-RenderedHTMLCommon li { max-width: 48rem; }
.jp-RenderedHTMLCommon a { color: #1f4e8c; }
div.abstract { border-left: 3px solid #1f4e8c; background: #f5f8fc; padding: 0.6em 1em; margin: 0.8em 0 1.2em 0; }
div.abstract p { margin: 0.3em 0; }
figure.paper { margin: 1.2em 0 1.8em 0; break-inside: avoid; page-break-inside: avoid; }
figure.paper img { display: block; max-width: 100%; height: auto; margin: 0 auto;
  width: calc(var(--print-width) * SCREEN_ZOOM); }
figure.paper img.poster { display: none; }
figure.paper figcaption { font-size: 0.9em; color: #333; margin: 0.5em auto 0 auto; max-width: 48rem;
  break-before: avoid; page-break-before: avoid; }
figure.paper p.made-by { font-size: 0.8em; color: #555; margin: 0.3em auto 0 auto; max-width: 48rem; }
.jp-RenderedHTMLCommon table.paper { border-collapse: collapse; margin: 0.4em 0 1.6em 0; font-size: 0.88em;
  table-layout: auto; max-width: 100%; }
.jp-RenderedHTMLCommon table.paper.wide { width: 100%; }
.jp-RenderedHTMLCommon table.paper caption { caption-side: top; text-align: left; font-size: 0.95em;
  color: #333; padding-bottom: 0.4em; max-width: 48rem; }
.jp-RenderedHTMLCommon table.paper th { border-bottom: 1px solid #444; font-weight: 600; padding: 0.25em 0.6em;
  vertical-align: bottom; white-space: normal; overflow-wrap: normal; hyphens: manual; }
.jp-RenderedHTMLCommon table.paper th.group { border-bottom: 1px solid #aaa; text-align: center; }
.jp-RenderedHTMLCommon table.paper td { padding: 0.25em 0.6em; vertical-align: top; border: none;
  overflow-wrap: break-word; }
.jp-RenderedHTMLCommon table.paper span.unbroken { white-space: nowrap; }
.jp-RenderedHTMLCommon table.paper.wide span.interval, .jp-RenderedHTMLCommon table.paper.dense span.interval {
  white-space: normal; }
.jp-RenderedHTMLCommon table.paper:not(.wide) td:first-child, .jp-RenderedHTMLCommon table.paper td a {
  overflow-wrap: normal; }
.jp-RenderedHTMLCommon table.paper tbody tr:nth-child(odd) { background: #f6f6f6; }
.jp-RenderedHTMLCommon table.paper tbody tr:hover { background: #eef3fa; }
.jp-RenderedHTMLCommon table.paper .text { text-align: left; }
.jp-RenderedHTMLCommon table.paper .num { text-align: right; font-variant-numeric: tabular-nums; }
.jp-RenderedHTMLCommon table.paper td.num { overflow-wrap: normal; }
.jp-RenderedHTMLCommon table.paper td.word { overflow-wrap: normal; white-space: nowrap; }
.jp-RenderedHTMLCommon table.paper.small { font-size: 0.8em; }
.jp-RenderedHTMLCommon table.paper tr { break-inside: avoid; page-break-inside: avoid; }
.jp-RenderedHTMLCommon details.per-seed { margin: -1.2em 0 1.6em 0; font-size: 0.85em; }
.jp-RenderedHTMLCommon details.per-seed summary { cursor: pointer; color: #1f4e8c; }
.jp-RenderedHTMLCommon details.per-seed table.paper { margin-top: 0.4em; }
.jp-RenderedHTMLCommon div.per-seed-print { display: none; }
code.digest { white-space: nowrap; }
span.verdict { display: inline-block; white-space: nowrap; font-weight: 600; padding: 0 0.3em; border-radius: 3px; }
span.verdict.holds { color: #0b5e3c; background: #dff3e8; }
span.verdict.partly { color: #7a4b00; background: #fbecd0; }
span.verdict.fails { color: #ffffff; background: #b3261e; }
span.verdict.untested { color: #444; background: #eee; }
span.verdict.construction { color: #1c3d6e; background: #e3ecf8; }
span.verdict.construction-fails { color: #6e1c3d; background: #f3e3ec; }
span.resolution, span.post, span.named { display: block; font-size: 0.9em; color: #555; margin-top: 0.2em; }
span.words { display: block; font-style: italic; }
ol.references li { margin-bottom: 0.3em; }
@media print {
  html, body { background: #fff; }
  .jp-Notebook, body.jp-Notebook { max-width: none; margin: 0; padding: 0; }
  .jp-Cell, .jp-Cell-outputWrapper, .jp-OutputArea, .jp-OutputArea-child { margin: 0; padding: 0; }
  /* JupyterLab holds each output on one page in print, which pushes a long table whole to the next page */
  .jp-OutputArea-child, .jp-Cell { break-inside: auto; page-break-inside: auto; }
  /* the last section's one cell (the provenance table and the version-drift line) ends the paper together */
  main > .jp-Cell:last-child { break-inside: avoid; page-break-inside: avoid; }
  .jp-OutputArea-output { display: block; overflow: visible; }
  .jp-RenderedHTMLCommon { font-size: 10pt; line-height: 1.4; padding-right: 0; }
  .jp-RenderedHTMLCommon p, .jp-RenderedHTMLCommon li { max-width: none; orphans: 3; widows: 3; }
  .jp-RenderedHTMLCommon h1 { font-size: 18pt; margin-top: 0; }
  .jp-RenderedHTMLCommon h2 { font-size: 13pt; margin: 1.1em 0 0.4em 0; }
  h1, h2, h3 { break-after: avoid; page-break-after: avoid; }
  div.abstract { box-decoration-break: clone; -webkit-box-decoration-break: clone; }
  figure.paper { margin: 0.8em 0 1.2em 0; }
  figure.paper img { width: var(--print-width); }
  figure.paper img.animated { display: none; }
  figure.paper img.poster { display: block; }
  figure.paper figcaption, figure.paper p.made-by { max-width: none; }
  .jp-RenderedHTMLCommon table.paper { font-size: 7.5pt; margin: 0.3em 0 1.2em 0; }
  .jp-RenderedHTMLCommon table.paper.small { font-size: 7pt; }
  .jp-RenderedHTMLCommon table.paper.dense { font-size: 6.5pt; }
  .jp-RenderedHTMLCommon table.paper.keep { break-inside: avoid; page-break-inside: avoid; }
  .jp-RenderedHTMLCommon table.paper caption { max-width: none; font-size: 8.5pt; }
  .jp-RenderedHTMLCommon table.paper th, .jp-RenderedHTMLCommon table.paper td { padding: 0.2em 0.35em; }
  .jp-RenderedHTMLCommon table.paper th { overflow-wrap: normal; word-break: keep-all; }
  .jp-RenderedHTMLCommon table.paper tbody tr:hover { background: inherit; }
  .jp-RenderedHTMLCommon table.paper tbody tr:nth-child(odd) { background: #f4f4f4; }
  details.per-seed { display: none; }
  .jp-RenderedHTMLCommon div.per-seed-print { display: block; margin: -0.8em 0 1.2em 0; }
  .jp-RenderedHTMLCommon div.per-seed-print caption { font-size: 8pt; }
  /* paper cannot follow a link: print where a reference lives */
  .jp-RenderedHTMLCommon a[href^="http"]::after { content: " (" attr(href) ")"; overflow-wrap: anywhere;
    color: #333; }
}
</style>
""".replace("SCREEN_ZOOM", str(SCREEN_ZOOM))


def print_column() -> float:
    """The text column a figure prints in, in inches: the narrower of the papers' (A4's 180 mm), where a
    figure has the least room."""
    # imported here: the package imports this module, and pdf runs as a command (python -m), which warns when
    # its package has imported it already
    from attnlab.pipeline.report.pdf import PAPERS, text_area_mm

    return min(text_area_mm(paper)[0] for paper in PAPERS) / MM_PER_INCH


def print_scale(width_in: float, column_in: float | None = None) -> float:
    """Printed size over drawn size of a figure whose image is `width_in` inches wide (as saved, cropped).

    Print shows the image at the width it was drawn at (--print-width) but never wider than the text column
    (max-width: 100%), so a point of lettering is a point on paper unless the figure is wider than the column,
    which shrinks it by column / width."""
    column = print_column() if column_in is None else column_in
    return min(1.0, column / width_in)
