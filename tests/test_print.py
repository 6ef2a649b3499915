"""How the writeup prints: the scale a figure prints at (print_scale, the arithmetic tests/test_figures.py holds
every figure's lettering and maps to), and a commit hash kept whole, on one line."""

from __future__ import annotations

import pytest

from attnlab.pipeline.figures.style import TEXT_WIDTH
from attnlab.pipeline.report import page, pdf
from attnlab.pipeline.report.style import PAGE_STYLE, print_column, print_scale

COMMIT = "8830ba123df647b96372fc296f312dd73865d6fa"


def test_a_figure_prints_at_its_drawn_width_unless_it_is_wider_than_the_column():
    column = print_column()
    assert column == pytest.approx(min(pdf.text_area_mm(paper)[0] for paper in pdf.PAPERS) / 25.4)
    assert column == pytest.approx(180 / 25.4)  # A4's, the narrower of the two papers
    assert print_scale(TEXT_WIDTH) == 1.0 and print_scale(column) == 1.0
    assert print_scale(2 * column) == pytest.approx(0.5)
    assert print_scale(8.0, column_in=6.0) == pytest.approx(0.75)


def test_the_print_rule_is_the_one_print_scale_models():
    """Print gives an image its drawn width (--print-width, set by page._inline) and caps it at the column."""
    printed = PAGE_STYLE[PAGE_STYLE.index("@media print"):]
    assert "figure.paper img { width: var(--print-width); }" in printed
    assert "max-width: 100%" in PAGE_STYLE[:PAGE_STYLE.index("@media print")]


def test_a_commit_hash_is_set_as_code_that_never_breaks():
    cell = page.cell_html(f"{COMMIT} (a clean checkout)")
    assert cell == f'<code class="digest">{COMMIT}</code> (a clean checkout)'
    both = page.cell_html(f"{COMMIT} (state), {'0123456789abcdef' * 4} at 1e-2")
    assert both.count('<code class="digest">') == 2 and '<span class="unbroken">1e-2</span>' in both
    # an e-notation inside a hash is part of the hash, not a number of its own
    inside = "a1e5bb7c2d4e6f8091a2b3c4d5e6f708192a3b4c"
    assert page.cell_html(inside) == f'<code class="digest">{inside}</code>'
    assert "code.digest { white-space: nowrap; }" in PAGE_STYLE
    # numbers and short hex-looking words are left as they were
    assert page.cell_html("1234567890 deadbeef 3e-4") == '1234567890 deadbeef <span class="unbroken">3e-4</span>'
