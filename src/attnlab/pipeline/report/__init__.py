"""The writeup's helpers, one job per module; notebooks/writeup.py calls them.

- style, page: the stylesheet, and the HTML of numbered tables, captioned figures and links;
- build: the tables the page reads, the protocol beside the published one, provenance, compute used;
- abstract: the variants and the abstract at the top;
- contest, telemetry, a3, scale: each section's tables for reading and its results paragraph;
- ledger: the claim → verdict summary, the full ledger, the posts cited;
- pdf: the page printed to PDF (headless Chromium), A4 or Letter, with page numbers and the running title.

Numbers are written by attnlab.pipeline.ground.formatting, as in the tables' .md and .tex.
Nothing here derives what a table holds: the tables (attnlab.pipeline.tables) and the
ledger (attnlab.pipeline.claims) compute, these modules present. The package imports
every module but pdf, so the writeup rule's code fingerprint of it covers them all; pdf
runs as a command (python -m attnlab.pipeline.report.pdf), which a package that imported
it would warn about, and the rule fingerprints it by name.
"""

from attnlab.pipeline.report import a3, abstract, build, contest, ladder, ledger, page, style, telemetry

__all__ = ["a3", "abstract", "build", "contest", "ladder", "ledger", "page", "style", "telemetry"]
