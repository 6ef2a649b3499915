"""The writeup's stylesheet: a text column that holds every table and figure, on screen and on paper.

Tables never grow wider than the text column (cells wrap; per-seed detail sits
in a collapsible block under its table); a verdict badge never breaks inside
itself; in print a figure stays on one page with its caption, and an animated
figure shows its still poster frame instead of whatever frame the GIF is on.
"""

PAGE_STYLE = """
<style>
.jp-Notebook, body.jp-Notebook { max-width: 62rem; margin: 0 auto; }
.jp-RenderedHTMLCommon { font-size: 15px; line-height: 1.55; }
.jp-RenderedHTMLCommon p, .jp-RenderedHTMLCommon li { max-width: 48rem; }
.jp-RenderedHTMLCommon a { color: #1f4e8c; }
div.abstract { border-left: 3px solid #1f4e8c; background: #f5f8fc; padding: 0.6em 1em; margin: 0.8em 0 1.2em 0; }
div.abstract p { margin: 0.3em 0; }
figure.paper { margin: 1.2em 0 1.8em 0; break-inside: avoid; page-break-inside: avoid; }
figure.paper img { display: block; max-width: 100%; height: auto; margin: 0 auto; }
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
  overflow-wrap: anywhere; }
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
span.verdict { display: inline-block; white-space: nowrap; font-weight: 600; padding: 0 0.3em; border-radius: 3px; }
span.verdict.holds { color: #0b5e3c; background: #dff3e8; }
span.verdict.partly { color: #7a4b00; background: #fbecd0; }
span.verdict.fails { color: #ffffff; background: #b3261e; }
span.verdict.untested { color: #444; background: #eee; }
span.verdict.construction { color: #1c3d6e; background: #e3ecf8; }
span.verdict.construction-fails { color: #6e1c3d; background: #f3e3ec; }
span.resolution, span.post { display: block; font-size: 0.9em; color: #555; margin-top: 0.2em; }
ol.references li { margin-bottom: 0.3em; }
@media print {
  .jp-Notebook, body.jp-Notebook { max-width: none; }
  figure.paper img.animated { display: none; }
  figure.paper img.poster { display: block; }
  details.per-seed { display: none; }
  .jp-RenderedHTMLCommon table.paper.small { font-size: 0.7em; }
  .jp-RenderedHTMLCommon table.paper tbody tr:hover { background: inherit; }
  h1, h2, h3 { break-after: avoid; page-break-after: avoid; }
}
</style>
"""
