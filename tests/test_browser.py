"""The built writeup opened in a real browser (headless Chromium at 1280 px), as a reader would open it, and printed.

On screen: every image has loaded, no traceback or error output shows, no code
or input prompt shows, nothing is fetched from the network, the claims ledger
is there, no table is wider than the text column, the claim → verdict summary
comes before section 1, no caption names a config key, every figure says which
rule made it from which CSV, and every link inside the page lands on something.
In print (Chromium's print media at the narrower text area of the printed
writeup's two papers, attnlab.pipeline.report.pdf, then Page.printToPDF): no
verdict badge breaks across lines or spills out of its cell, no table header
word breaks at all and no word of a cell breaks between two letters, no table
is wider than its column, every figure fits one page with its caption and
cannot be split from it, and an animated figure shows its still poster.
A full-page screenshot and this print are saved under the workspace's results/writeup/ (beside, never
over, the build's own writeup.pdf).
Skipped, with the reason, where no Chromium is installed (CI installs the
distribution's chromium and chromium-driver: .ci/run).

ATTNLAB_BROWSER_WORKSPACE=<a built workspace> checks that build (the default
build, say) instead of building the smoke workspace here (conftest's
built_writeup, which tests/test_pdf.py reads the printed writeup of too).
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

from attnlab.core.config import schema
from attnlab.pipeline.report import pdf

CHROMIUM = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(name)), None)
CHROMEDRIVER = shutil.which("chromedriver")
NO_BROWSER = ("no headless browser: install the Debian packages chromium and chromium-driver "
              "(apt-get install chromium chromium-driver, as .ci/run does)")
SCREENSHOT = Path("results") / "writeup" / "writeup_screenshot.png"
PDF = Path("results") / "writeup" / "writeup_print_check.pdf"  # not the build's writeup.pdf
SCREEN_WIDTH = 1280  # the window a reader opens the page in
# The printed writeup's text area, the narrower and the shorter of A4's and Letter's, in CSS pixels (96 per inch).
PRINT_WIDTH, PRINT_HEIGHT = (round(min(pdf.text_area_mm(paper)[i] for paper in pdf.PAPERS) / 25.4 * 96)
                             for i in (0, 1))
# What a reader of the paper must never meet: code cells and their prompts, and error output.
CODE_SELECTORS = (".jp-InputPrompt, .jp-OutputPrompt, .jp-InputArea-editor, .jp-CodeMirrorEditor, "
                  ".input_prompt, .output_prompt, div.input_area")
ERROR_SELECTORS = ('[data-mime-type="application/vnd.jupyter.stderr"], '
                   '[data-mime-type="application/vnd.jupyter.error"], .jp-RenderedText.jp-mod-error')
# A config key as a caption would print it: a section of the config schema, a dot, a key ('figures.map_layer').
SECTIONS = sorted(name for name, spec in schema()["properties"].items() if spec.get("type") == "object")
CONFIG_KEY = re.compile(r"\b(?:" + "|".join(SECTIONS) + r")\.[a-z_]+\b")

pytestmark = pytest.mark.skipif(CHROMIUM is None or CHROMEDRIVER is None, reason=NO_BROWSER)


# ---- the checks, on any page


def page_problems(driver) -> list[str]:
    """Everything on the loaded page that a reader should not meet, one line each (empty: the page is fine)."""
    problems = []
    images = driver.execute_script(
        "return Array.from(document.images).map((img, i) => ({index: i, complete: img.complete,"
        " width: img.naturalWidth, alt: img.alt, src: img.currentSrc.slice(0, 60)}))")
    if not images:
        problems.append("no image on the page")
    for image in images:
        if not image["complete"] or image["width"] <= 0:
            problems.append(f"image {image['index']} did not load ({image['alt'] or image['src']!r})")
    text = driver.execute_script("return document.body.innerText")
    if "Traceback" in text:
        problems.append("a Traceback is shown")
    code = driver.execute_script(f"return document.querySelectorAll({CODE_SELECTORS!r}).length")
    if code:
        problems.append(f"{code} code cells or input prompts are shown")
    if any(line.strip().startswith("In [") for line in text.splitlines()):
        problems.append("an 'In [n]:' input prompt is shown")
    errors = driver.execute_script(f"return Array.from(document.querySelectorAll({ERROR_SELECTORS!r}))"
                                   ".map(e => e.innerText.slice(0, 200))")
    problems += [f"error output is shown: {error!r}" for error in errors]
    fetched = driver.execute_script(
        "return Array.from(document.querySelectorAll('script[src], link[href], img[src], iframe[src]'))"
        ".map(e => e.getAttribute('src') || e.getAttribute('href')).filter(u => /^(https?:)?\\/\\//.test(u))")
    problems += [f"the page fetches {url} (it should be one self-contained file)" for url in fetched]
    ledger_rows = driver.execute_script(
        "const t = Array.from(document.querySelectorAll('table')).find("
        "  t => t.caption && /claims ledger/i.test(t.caption.innerText));"
        "return t ? t.tBodies[0].rows.length : -1")
    if ledger_rows < 1:
        problems.append("no claims-ledger table" if ledger_rows < 0 else "the claims-ledger table is empty")
    return problems


def layout_problems(driver) -> list[str]:
    """What a reader at this window width would find out of place: tables wider than the text column, the
    summary after section 1, config keys in captions, figures that do not say what made them, dead links."""
    found = driver.execute_script("""
      const name = t => (t.caption ? t.caption.innerText : t.id || 'a table').slice(0, 60);
      const wide = [];
      for (const t of document.querySelectorAll('table')) {
        const column = t.closest('.jp-Cell') || document.body;
        const style = getComputedStyle(column);
        const right = column.getBoundingClientRect().right - parseFloat(style.paddingRight);
        const box = t.getBoundingClientRect();
        let scrolled = false;  // wider than a box that clips it and shows a scrollbar instead
        for (let a = t.parentElement; a && a !== document.body; a = a.parentElement)
          scrolled = scrolled || (a.scrollWidth > a.clientWidth + 1 && getComputedStyle(a).overflowX !== 'visible');
        if (box.right > right + 1 || t.scrollWidth > t.clientWidth + 1 || scrolled)
          wide.push(`${name(t)} (${Math.round(box.width)} px, column ends ${Math.round(right - box.left)} px in)`);
      }
      const page = document.documentElement.scrollWidth > window.innerWidth + 1;
      const summary = document.getElementById('table-summary');
      const first = Array.from(document.querySelectorAll('h2')).find(h => /^\\s*1\\.\\s/.test(h.innerText));
      const order = !summary ? 'no summary table (id table-summary)' : !first ? 'no section 1'
        : (summary.compareDocumentPosition(first) & Node.DOCUMENT_POSITION_FOLLOWING) ? '' : 'after';
      const captions = Array.from(document.querySelectorAll('figcaption, caption')).map(c => c.innerText);
      const untraced = Array.from(document.querySelectorAll('figure')).filter(f => {
        const line = f.querySelector('p.made-by');
        return !line || !/rule/.test(line.innerText)
          || !(line.querySelector('a[href$=".csv"]') || /from no table/.test(line.innerText));
      }).map(f => f.id || (f.querySelector('figcaption') || f).innerText.slice(0, 40));
      const dead = Array.from(document.querySelectorAll('a[href^="#"]')).map(a => a.getAttribute('href'))
        .filter(h => !document.getElementById(h.slice(1)) && !document.getElementById(decodeURIComponent(h.slice(1))));
      return {wide, page, order, captions, untraced, dead};
    """)
    problems = [f"a table is wider than the text column: {t}" for t in found["wide"]]
    if found["page"]:
        problems.append("the page scrolls sideways")
    if found["order"] == "after":
        problems.append("the claim → verdict summary comes after section 1")
    elif found["order"]:
        problems.append(found["order"])
    for text in found["captions"]:
        problems += [f"a caption names the config key {key!r}" for key in CONFIG_KEY.findall(text)]
    problems += [f"figure {f!r} does not say which rule made it from which CSV" for f in found["untraced"]]
    problems += [f"the link {href} leads nowhere on the page" for href in sorted(set(found["dead"]))]
    return problems


def print_problems(driver) -> list[str]:
    """The page under print media in the printed text area: badges broken across lines, header words broken,
    cell words broken between letters, tables wider than their column, figures that could split from their
    caption or do not fit a page, animations without a still."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": PRINT_WIDTH, "height": PRINT_HEIGHT, "deviceScaleFactor": 1, "mobile": False})
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
    try:
        found = driver.execute_script("""
          const lines = el => { const r = document.createRange(); r.selectNodeContents(el);
            return new Set(Array.from(r.getClientRects()).filter(b => b.width > 0).map(b => Math.round(b.top))).size; };
          // A header word broken anywhere ('1/' over 'σ(3)|' too) or running past its cell; a cell's word broken
          // between two letters or digits (a path may wrap after its '/', a range after its '-').
          const top = (node, i) => { const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
            const b = Array.from(r.getClientRects()).find(b => b.width > 0); return b ? Math.round(b.top) : null; };
          const broken_words = (selector, inside) => {
            const found = [];
            for (const cell of document.querySelectorAll(selector)) {
              if (!cell.getClientRects().length) continue;  // not shown in print (the folded per-seed tables)
              const right = cell.getBoundingClientRect().right;
              const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
              for (let node = walk.nextNode(); node; node = walk.nextNode())
                for (const m of node.data.matchAll(/\\S+/g)) {
                  const r = document.createRange(); r.setStart(node, m.index); r.setEnd(node, m.index + m[0].length);
                  let bad = Array.from(r.getClientRects()).some(b => b.width > 0 && b.right > right + 1);
                  for (let i = m.index + 1; i < m.index + m[0].length && !bad; i++)
                    bad = inside(node.data[i - 1], node.data[i]) && top(node, i - 1) !== top(node, i);
                  if (bad) found.push(m[0]);
                }
            }
            return found;
          };
          const heads = broken_words('th', () => true);
          const cells = broken_words('td', (a, b) => /\\w/.test(a) && /\\w/.test(b));
          // a table running past the right edge of the column it sits in
          const wide = Array.from(document.querySelectorAll('table')).filter(t => {
            if (!t.getClientRects().length) return false;
            const column = t.closest('.jp-Cell') || document.body;
            const right = column.getBoundingClientRect().right - parseFloat(getComputedStyle(column).paddingRight);
            return t.getBoundingClientRect().right > right + 1 || t.scrollWidth > t.clientWidth + 1;
          }).map(t => (t.caption ? t.caption.innerText : t.id || 'a table').slice(0, 60));
          const badges = Array.from(document.querySelectorAll('span.verdict'));
          const broken = badges.filter(b => lines(b) > 1).map(b => b.innerText);
          const spilling = badges.filter(b => { const cell = b.closest('td'); if (!cell) return false;
            const box = cell.getBoundingClientRect(), pad = parseFloat(getComputedStyle(cell).paddingRight);
            return b.getBoundingClientRect().right > box.right - pad + 1; }).map(b => b.innerText);
          const figures = Array.from(document.querySelectorAll('figure')).map(f => ({
            id: f.id || f.innerText.slice(0, 40), height: f.getBoundingClientRect().height,
            avoid: getComputedStyle(f).breakInside, captioned: !!f.querySelector('figcaption'),
            stills: Array.from(f.querySelectorAll('img')).filter(i => getComputedStyle(i).display !== 'none'
              && !/\\.gif|image\\/gif/.test(i.currentSrc.slice(0, 30))).length,
            animated: f.querySelectorAll('img[src^="data:image/gif"]').length}));
          return {broken, spilling, heads, cells, wide, figures};
        """)
    finally:
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    problems = [f"the verdict badge {text!r} breaks across lines in print" for text in found["broken"]]
    problems += [f"the verdict badge {text!r} spills out of its cell in print" for text in found["spilling"]]
    problems += [f"the table header word {word!r} breaks or spills out of its cell in print" for word in found["heads"]]
    problems += [f"the table cell word {word!r} breaks inside or spills out of its cell in print"
                 for word in found["cells"]]
    problems += [f"the table {name!r} is wider than its column in print" for name in found["wide"]]
    for figure in found["figures"]:
        name = figure["id"]
        if figure["avoid"] != "avoid" or not figure["captioned"]:
            problems.append(f"figure {name!r} can be split from its caption in print")
        if figure["height"] > PRINT_HEIGHT:
            problems.append(f"figure {name!r} is taller than a printed page ({figure['height']:.0f} px)")
        if figure["animated"] and figure["stills"] < 1:
            problems.append(f"figure {name!r} is animated and shows no still in print")
    return problems


def print_pdf(driver, out: Path) -> Path:
    """The page printed to PDF by Chromium (Letter, default margins, backgrounds kept for the badges): the print
    media as the checks above see it, beside (not instead of) the build's own writeup.pdf."""
    printed = driver.execute_cdp_cmd("Page.printToPDF", {"printBackground": True, "preferCSSPageSize": False})
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(base64.b64decode(printed["data"]))
    return out


def save_full_page(driver, out: Path) -> Path:
    """A screenshot of the whole page, not only the window (Chromium's DevTools capture beyond the viewport)."""
    width = driver.execute_script("return document.documentElement.scrollWidth")
    height = driver.execute_script("return document.documentElement.scrollHeight")
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}})
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(base64.b64decode(shot["data"]))
    return out


@contextmanager
def chromium(width: int = SCREEN_WIDTH, height: int = 900):
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install selenium)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 f"--window-size={width},{height}"):
        options.add_argument(flag)
    # Chromium leaves its singleton folder (org.chromium.Chromium.*) in $TMPDIR: the driver and the browser get a
    # temporary folder of their own, removed with everything in it (short: a socket's path must be)
    with tempfile.TemporaryDirectory(prefix="attnlab-chromium-", ignore_cleanup_errors=True) as scratch:
        driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER, env={**os.environ,
                                                                                      "TMPDIR": scratch}))
        try:
            yield driver
        finally:
            driver.quit()


def open_page(driver, path: Path) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(Path(path).resolve().as_uri())
    WebDriverWait(driver, 60).until(lambda d: d.execute_script(
        "return document.readyState === 'complete' && Array.from(document.images).every(i => i.complete)"))


# ---- the built writeup (conftest's built_writeup: the smoke build, or $ATTNLAB_BROWSER_WORKSPACE)


@pytest.mark.slow
def test_the_built_writeup_reads_as_a_paper_in_chromium_and_in_print(built_writeup):
    page = built_writeup / "results" / "writeup" / "writeup.html"
    assert page.is_file(), f"no writeup at {page}"
    with chromium() as driver:
        open_page(driver, page)
        assert driver.execute_script("return window.innerWidth") == SCREEN_WIDTH
        shot = save_full_page(driver, built_writeup / SCREENSHOT)
        problems = page_problems(driver) + layout_problems(driver) + print_problems(driver)
        figures = driver.execute_script("return document.querySelectorAll('figure figcaption').length")
        pdf = print_pdf(driver, built_writeup / PDF)
    print(f"full-page screenshot: {shot}; printed: {pdf}")
    assert shot.stat().st_size > 10_000
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 100_000
    assert not problems, "\n".join(problems)
    assert figures >= 10, f"only {figures} captioned figures"


# ---- the checks fail where they should


TINY_PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
LEDGER = ("<table><caption>Table 1. The claims ledger.</caption><tbody><tr><td>claim</td></tr></tbody></table>")
SUMMARY = '<table id="table-summary"><tbody><tr><td>claim</td></tr></tbody></table>'
SECTION_1 = "<h2>1. Parameter budget</h2>"
FIGURE = ('<figure style="break-inside: avoid"><img src="data:image/png;base64,{png}">'
          '<figcaption>Figure 1. Maps of layer 0, head 0.</figcaption>'
          '<p class="made-by">Made by rule figure_x from <a href="../tables/contest.csv">contest.csv</a>.</p>'
          '</figure>').format(png=TINY_PNG)


def test_the_checks_pass_a_clean_page_and_catch_a_broken_image(tmp_path):
    clean = tmp_path / "clean.html"
    clean.write_text(f'<html><body><img src="data:image/png;base64,{TINY_PNG}" alt="fine">{LEDGER}</body></html>')
    broken = tmp_path / "broken.html"
    broken.write_text(f'<html><body><img src="data:image/png;base64,{TINY_PNG}" alt="fine">'
                      f'<img src="missing-figure.png" alt="a figure that is not there">{LEDGER}</body></html>')
    with chromium() as driver:
        open_page(driver, clean)
        assert page_problems(driver) == []
        open_page(driver, broken)
        problems = page_problems(driver)
    assert problems == ["image 1 did not load ('a figure that is not there')"]


def test_the_checks_catch_code_prompts_tracebacks_network_fetches_and_a_missing_ledger(tmp_path):
    page = tmp_path / "notebook.html"
    page.write_text(f'<html><head><script src="https://cdn.example.org/require.js"></script></head>'
                    f'<body><img src="data:image/png;base64,{TINY_PNG}">'
                    '<div class="jp-InputPrompt">In [1]:</div><pre>Traceback (most recent call last)</pre>'
                    '<div data-mime-type="application/vnd.jupyter.stderr">UserWarning: something</div>'
                    '</body></html>')
    with chromium() as driver:
        open_page(driver, page)
        problems = page_problems(driver)
    assert "a Traceback is shown" in problems
    assert "1 code cells or input prompts are shown" in problems
    assert "an 'In [n]:' input prompt is shown" in problems
    assert any(p.startswith("error output is shown") for p in problems)
    assert "no claims-ledger table" in problems
    assert any(p.startswith("the page fetches https://cdn.example.org/require.js") for p in problems)


def test_the_layout_checks_pass_a_clean_page_and_catch_each_fault(tmp_path):
    clean = tmp_path / "clean.html"
    clean.write_text(f"<html><body>{SUMMARY}{SECTION_1}{FIGURE}<a href='#table-summary'>summary</a></body></html>")
    wide_row = "".join(f"<td>{'x' * 30}</td>" for _ in range(60))  # wider than any window
    narrow_row = "".join(f"<td>{'x' * 10}</td>" for _ in range(6))  # wider than 300 px only
    faulty = tmp_path / "faulty.html"
    faulty.write_text(
        f"<html><body>{SECTION_1}{SUMMARY}<table><caption>Too wide</caption><tr>{wide_row}</tr></table>"
        f'<div style="overflow-x: auto; width: 300px"><table><caption>Scrolled</caption><tr>{narrow_row}</tr>'
        "</table></div>"
        f'<figure><img src="data:image/png;base64,{TINY_PNG}">'
        "<figcaption>Maps of (figures.map_layer, figures.map_head).</figcaption></figure>"
        "<a href='#table-nowhere'>a dead link</a></body></html>")
    with chromium() as driver:
        open_page(driver, clean)
        assert layout_problems(driver) == []
        open_page(driver, faulty)
        problems = layout_problems(driver)
    assert any(p.startswith("a table is wider than the text column: Too wide") for p in problems)
    assert any(p.startswith("a table is wider than the text column: Scrolled") for p in problems)
    assert "the page scrolls sideways" in problems
    assert "the claim → verdict summary comes after section 1" in problems
    assert "a caption names the config key 'figures.map_layer'" in problems
    assert "a caption names the config key 'figures.map_head'" in problems
    assert any(p.startswith("figure ") and p.endswith("which rule made it from which CSV") for p in problems)
    assert "the link #table-nowhere leads nowhere on the page" in problems


def test_the_print_checks_catch_broken_badges_and_words_wide_tables_splittable_figures_and_stills(tmp_path):
    gif = ("R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==")
    clean = tmp_path / "clean.html"
    clean.write_text('<html><body><table><tr><td style="width: 30px">'
                     '<span class="verdict" style="white-space: nowrap">not testable</span></td></tr></table>'
                     f"{FIGURE}</body></html>")
    faulty = tmp_path / "faulty.html"
    faulty.write_text('<html><body><table><tr><td style="width: 30px">'
                      '<span class="verdict">not testable at default</span></td></tr></table>'
                      '<table style="table-layout: fixed; width: 100px"><tr><td>'
                      '<span class="verdict" style="white-space: nowrap">by construction</span></td></tr></table>'
                      '<table style="table-layout: fixed; width: 60px"><tr><th style="overflow-wrap: anywhere">'
                      'published</th></tr></table>'
                      '<table style="table-layout: fixed; width: 40px"><tr><th>1/σ(3)|</th></tr></table>'
                      '<table style="table-layout: fixed; width: 60px"><tr><td style="overflow-wrap: anywhere">'
                      '(config/composability.yaml)</td></tr></table>'
                      '<table><caption>Too wide</caption><tr><td style="white-space: nowrap">'
                      f'{"a wide row " * 200}</td></tr></table>'
                      f'<figure id="tall"><img src="data:image/png;base64,{TINY_PNG}" style="height: 2000px">'
                      "<figcaption>Tall.</figcaption></figure>"
                      f'<figure id="moving" style="break-inside: avoid"><img src="data:image/gif;base64,{gif}">'
                      "<figcaption>Animated.</figcaption></figure></body></html>")
    with chromium() as driver:
        open_page(driver, clean)
        assert print_problems(driver) == []
        open_page(driver, faulty)
        problems = print_problems(driver)
        assert driver.execute_script("return window.innerWidth") == SCREEN_WIDTH, "print emulation is undone"
    assert problems[:9] == ["the verdict badge 'not testable at default' breaks across lines in print",
                            "the verdict badge 'by construction' spills out of its cell in print",
                            "the table header word 'published' breaks or spills out of its cell in print",
                            "the table header word '1/σ(3)|' breaks or spills out of its cell in print",
                            "the table cell word 'construction' breaks inside or spills out of its cell in print",
                            "the table cell word '(config/composability.yaml)' breaks inside or spills out of its "
                            "cell in print",
                            "the table 'a table' is wider than its column in print",  # the badge's, spilling
                            "the table 'Too wide' is wider than its column in print",
                            "figure 'tall' can be split from its caption in print"]
    assert problems[9].startswith("figure 'tall' is taller than a printed page")
    assert problems[10:] == ["figure 'moving' is animated and shows no still in print"]
