"""The built writeup opened in a real browser (headless Chromium), as a reader would open it.

Every image has loaded, no traceback or error output shows, no code or input
prompt shows, nothing is fetched from the network, and the claims ledger is
there; a full-page screenshot is saved
under the workspace's results/. Skipped, with the reason, where no Chromium is
installed (CI installs the distribution's chromium and chromium-driver: .ci/run).

ATTNLAB_BROWSER_WORKSPACE=<a built workspace> checks that build (the default
build, say) instead of building the smoke workspace here.
"""

from __future__ import annotations

import base64
import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest



CHROMIUM = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(name)), None)
CHROMEDRIVER = shutil.which("chromedriver")
NO_BROWSER = ("no headless browser: install the Debian packages chromium and chromium-driver "
              "(apt-get install chromium chromium-driver, as .ci/run does)")
WORKSPACE_ENV = "ATTNLAB_BROWSER_WORKSPACE"
SCREENSHOT = Path("results") / "writeup" / "writeup_screenshot.png"
# What a reader of the paper must never meet: code cells and their prompts, and error output.
CODE_SELECTORS = (".jp-InputPrompt, .jp-OutputPrompt, .jp-InputArea-editor, .jp-CodeMirrorEditor, "
                  ".input_prompt, .output_prompt, div.input_area")
ERROR_SELECTORS = ('[data-mime-type="application/vnd.jupyter.stderr"], '
                   '[data-mime-type="application/vnd.jupyter.error"], .jp-RenderedText.jp-mod-error')

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
def chromium(width: int = 1200, height: int = 900):
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install selenium)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 f"--window-size={width},{height}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


def open_page(driver, path: Path) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(Path(path).resolve().as_uri())
    WebDriverWait(driver, 60).until(lambda d: d.execute_script(
        "return document.readyState === 'complete' && Array.from(document.images).every(i => i.complete)"))


# ---- the built writeup


@pytest.fixture(scope="module")
def built_writeup(tmp_path_factory, request) -> Path:
    """The workspace in $ATTNLAB_BROWSER_WORKSPACE, else the smoke config built here."""
    given = os.environ.get(WORKSPACE_ENV)
    if given:
        return Path(given)
    return request.getfixturevalue("smoke_workspace")  # one smoke build, shared with tests/test_pipeline.py


@pytest.mark.slow
def test_the_built_writeup_reads_as_a_paper_in_chromium(built_writeup):
    page = built_writeup / "results" / "writeup" / "writeup.html"
    assert page.is_file(), f"no writeup at {page}"
    with chromium() as driver:
        open_page(driver, page)
        shot = save_full_page(driver, built_writeup / SCREENSHOT)
        problems = page_problems(driver)
        figures = driver.execute_script("return document.querySelectorAll('figure figcaption').length")
    print(f"full-page screenshot: {shot}")
    assert shot.stat().st_size > 10_000
    assert not problems, "\n".join(problems)
    assert figures >= 10, f"only {figures} captioned figures"


# ---- the checks fail where they should


TINY_PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
LEDGER = ("<table><caption>Table 1. The claims ledger.</caption><tbody><tr><td>claim</td></tr></tbody></table>")


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
