"""The printed writeup (results/writeup/writeup.pdf), read back page by page, and the command that prints it.

On the smoke build's PDF (conftest's built_writeup: the shared smoke build, or
$ATTNLAB_BROWSER_WORKSPACE): a page count in a sane range at the configured
paper size; the running title and "page n of N" on every page; the cited
posts' addresses in the text; every table's caption, the per-seed tables'
included; every figure at the width print_scale gives it; and no page but the
last less than a third full. A page's fill is how far down its text area the
ink reaches: the page is rendered (pdftoppm) and the lowest row of dark pixels
inside the margins, where the title and the page number are not, is measured
against the area's height. Content flows from the top of every page, so that
depth is how much of the page is used.

The command: a missing browser stops it with one line that says how to install
one, a browser that prints nothing leaves the old PDF in place and no
temporary file behind, and a page prints at the size asked for.

Skipped, with the reason, where Chromium (which prints) or poppler-utils
(which read the PDF back) is not installed.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from attnlab.core.config import load_config
from attnlab.pipeline.ground.published import published
from attnlab.pipeline.report import page, pdf
from attnlab.pipeline.report.style import print_scale
from conftest import BROWSER_WORKSPACE_ENV, REPO

try:
    BROWSER = pdf.find_browser()
except pdf.PrintError:
    BROWSER = None
POPPLER = all(shutil.which(tool) for tool in ("pdfinfo", "pdftotext", "pdftoppm", "pdfimages"))
needs_browser = pytest.mark.skipif(BROWSER is None, reason="no Chromium to print with: apt-get install chromium")
needs_poppler = pytest.mark.skipif(not POPPLER, reason="no pdfinfo/pdftotext/pdftoppm/pdfimages to read the PDF "
                                                        "with: apt-get install poppler-utils")
PDF = Path("results") / "writeup" / "writeup.pdf"
HTML = Path("results") / "writeup" / "writeup.html"
TITLE = "Does attention need the exponential?"
MIN_FILL = 1 / 3  # every page but the last reaches at least this far down its text area
FILL_DPI = 36
INK = 200  # grey level (0 black, 255 white) below which a pixel is ink: text and lines, not table stripes


def pdf_info(path: Path) -> dict[str, str]:
    out = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True, check=True).stdout
    return {key.strip(): value.strip() for key, _, value in (line.partition(":") for line in out.splitlines())}


def page_texts(path: Path) -> list[str]:
    """The text of each page, in reading order."""
    out = subprocess.run(["pdftotext", "-enc", "UTF-8", str(path), "-"], capture_output=True, text=True,
                         check=True).stdout
    return out.split("\f")[:-1] if out.endswith("\f") else out.split("\f")


def flat(text: str) -> str:
    """Text with its line breaks and runs of spaces made one space (the PDF wraps where the page does)."""
    return " ".join(text.replace("\u00a0", " ").split())


def page_fills(path: Path, paper: str, tmp_path: Path) -> list[float]:
    """Per page: how far down the text area (inside the margins) its ink reaches, from 0 (blank) to 1."""
    subprocess.run(["pdftoppm", "-gray", "-r", str(FILL_DPI), str(path), str(tmp_path / "page")], check=True)
    top, _, bottom, _ = pdf.MARGINS_MM
    fills = []
    for image in sorted(tmp_path.glob("page-*.pgm"), key=lambda p: int(p.stem.split("-")[-1])):
        pixels = np.asarray(Image.open(image))
        per_mm = pixels.shape[0] / pdf.PAPER_MM[paper][1]
        area = pixels[int(round(top * per_mm)): pixels.shape[0] - int(round(bottom * per_mm))]
        rows = np.flatnonzero((area < INK).any(axis=1))
        fills.append((rows[-1] + 1) / area.shape[0] if rows.size else 0.0)
    return fills


def html_captions(page: str) -> list[str]:
    """Every table caption of the HTML page as plain text ('Table 3. Trainable parameters per variant.')."""
    found = re.findall(r"<caption>(.*?)</caption>", page, re.S)
    return [flat(html.unescape(re.sub(r"<[^>]+>", "", caption))) for caption in found]


# ---- the smoke build's PDF


def paper_of(info: dict[str, str]) -> str | None:
    """The paper a PDF's first page is (pdfinfo's size in points), or None for another size."""
    width, height = (float(x) for x in re.findall(r"[\d.]+", info["Page size"])[:2])
    for paper, (w, h) in pdf.PAPER_MM.items():
        if abs(width - w / 25.4 * 72) < 1 and abs(height - h / 25.4 * 72) < 1:
            return paper
    return None


@pytest.fixture(scope="module")
def printed(built_writeup):
    if BROWSER is None:
        pytest.skip("no Chromium: the writeup rule cannot print (apt-get install chromium)")
    if not POPPLER:
        pytest.skip("no poppler-utils to read the PDF with (apt-get install poppler-utils)")
    path = built_writeup / PDF
    assert path.is_file(), f"the writeup rule wrote no {PDF}"
    info = pdf_info(path)
    return {"path": path, "html": (built_writeup / HTML).read_text(), "info": info, "paper": paper_of(info),
            "pages": page_texts(path), "given": bool(os.environ.get(BROWSER_WORKSPACE_ENV))}


@pytest.mark.slow
def test_the_printed_writeup_has_a_sane_number_of_pages_of_the_configured_size(printed):
    assert printed["paper"] in pdf.PAPERS, f"pages of {printed['info']['Page size']}: neither A4 nor Letter"
    if not printed["given"]:  # the smoke build: config/smoke.yaml names no paper, so the schema's default
        assert printed["paper"] == load_config(REPO / "config" / "smoke.yaml")["writeup"]["paper"] == "a4"
    pages = int(printed["info"]["Pages"])
    # a sanity range, not a layout target: the smoke build prints every ledger row, most of them not testable at
    # smoke, and two more rows (differential attention, SLAY by feature count) took it from 40 to 41 pages
    assert 10 <= pages <= 45, f"{pages} pages"
    assert len(printed["pages"]) == pages


@pytest.mark.slow
def test_every_page_carries_the_running_title_and_its_number(printed):
    total = len(printed["pages"])
    for number, text in enumerate(printed["pages"], start=1):
        assert TITLE in text, f"page {number} has no running title"
        assert f"page {number} of {total}" in text, f"page {number} is not numbered"


@pytest.mark.slow
def test_the_paper_ends_with_its_provenance_whole_never_a_stranded_line(printed):
    last = flat(printed["pages"][-1])
    assert "Provenance" in last and "What the trained cells ran on" in last and "Version drift:" in last


@pytest.mark.slow
def test_the_cited_posts_print_their_addresses(printed):
    urls = [source["url"] for source in published()["sources"].values() if source.get("url")
            and source.get("cited", True)]
    assert urls
    text = "".join("".join(printed["pages"]).split())  # an address may wrap anywhere
    for url in urls:
        assert url in text, f"{url} is only a link target in the PDF, not printed"


@pytest.mark.slow
def test_every_table_caption_prints_the_per_seed_tables_included(printed):
    captions = html_captions(printed["html"])
    assert len(captions) >= 15
    assert any(caption.startswith("Per seed (Table") for caption in captions), "the smoke build has per-seed tables"
    # spaces aside: the PDF wraps a caption where the page does, and sets a space around inline code
    text = "".join("".join(printed["pages"]).split())
    missing = [caption for caption in captions if "".join(caption.split()) not in text]
    assert not missing, f"captions not in the PDF: {missing}"


@pytest.mark.slow
def test_every_figure_prints_at_the_size_print_scale_gives_it(printed):
    """Each figure in the PDF (pdfimages: its pixels and pixels per inch on the page) is as wide on paper as its
    file was drawn, times print_scale: the arithmetic the figure tests hold every figure's lettering and maps
    to."""
    drawn = {}
    for path in (printed["path"].parent.parent / "figures").glob("*.png"):
        with Image.open(path) as image:
            drawn[image.size] = (path.name, page.drawn_width(path))
    listed = subprocess.run(["pdfimages", "-list", str(printed["path"])], capture_output=True, text=True,
                            check=True).stdout
    found = {}
    for line in listed.splitlines()[2:]:  # page num type width height color comp bpc enc interp object ID x-ppi ...
        fields = line.split()
        size = (int(fields[3]), int(fields[4]))
        if fields[2] == "image" and size in drawn:
            name, inches = drawn[size]
            found[name] = (size[0] / float(fields[12]), inches * print_scale(inches))
    assert len(found) >= 10, f"only {sorted(found)} of the figures found in the PDF"
    wrong = {name: (round(on_paper, 3), round(expected, 3)) for name, (on_paper, expected) in found.items()
             if on_paper != pytest.approx(expected, rel=0.01)}
    assert not wrong, f"figures printed at another width than print_scale gives (inches: printed, expected): {wrong}"


@pytest.mark.slow
def test_no_page_but_the_last_is_less_than_a_third_full(printed, tmp_path):
    fills = page_fills(printed["path"], printed["paper"], tmp_path)
    assert len(fills) == len(printed["pages"])
    print("fill per page: " + " ".join(f"{i}:{fill:.2f}" for i, fill in enumerate(fills, start=1)))
    sparse = [(i, round(fill, 2)) for i, fill in enumerate(fills[:-1], start=1) if fill < MIN_FILL]
    assert not sparse, f"pages under a third full (page, fill): {sparse}"
    assert fills[-1] > 0.02, "the last page is blank"


# ---- the measurements themselves


@needs_browser
@needs_poppler
def test_the_fill_measure_tells_a_near_empty_page_from_a_full_one(tmp_path):
    lines = "".join(f"<p>line {i} of a page that fills its text area</p>" for i in range(60))
    page = tmp_path / "two.html"
    page.write_text(f"<html><head><title>t</title></head><body>{lines}"
                    "<p style='break-before: page'>a lone line</p></body></html>")
    out = pdf.print_pdf(page, tmp_path / "two.pdf", "a4")
    fills = page_fills(out, "a4", tmp_path)
    assert len(fills) >= 2 and fills[0] > 0.9 and fills[-1] < 0.1, fills


# ---- the command


def test_a_missing_browser_stops_the_print_with_one_line_naming_the_install(tmp_path):
    page = tmp_path / "page.html"
    page.write_text("<html><head><title>t</title></head><body>text</body></html>")
    result = subprocess.run([sys.executable, "-m", "attnlab.pipeline.report.pdf", "--html", str(page),
                             "--out", str(tmp_path / "page.pdf")], capture_output=True, text=True,
                            env={"PATH": str(tmp_path), "PYTHONPATH": str(REPO / "src")})
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "apt-get install chromium" in lines[0], result.stderr
    assert not (tmp_path / "page.pdf").exists()


def test_a_browser_that_prints_nothing_leaves_the_old_pdf_and_no_temporary_file(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "chromium"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'cannot open display' >&2\nexit 3\n")
    fake.chmod(0o755)
    folder = tmp_path / "writeup"
    folder.mkdir()
    (folder / "writeup.html").write_text("<html><head><title>t</title></head><body>text</body></html>")
    (folder / "writeup.pdf").write_bytes(b"%PDF-1.4 the previous build's")
    with pytest.raises(pdf.PrintError, match="printed no whole PDF.*exit 3.*cannot open display"):
        pdf.print_pdf(folder / "writeup.html", folder / "writeup.pdf", "a4", browser=str(fake))
    assert (folder / "writeup.pdf").read_bytes() == b"%PDF-1.4 the previous build's"
    assert sorted(p.name for p in folder.iterdir()) == ["writeup.html", "writeup.pdf"]


def test_the_page_rules_name_the_paper_the_title_and_the_page_numbers():
    page = "<html><head><title>Does &quot;x&quot; hold?</title><style>p {}</style></head><body></body></html>"
    styled = pdf.with_page_style(page, "letter")
    assert styled.index("@page") > styled.index("p {}"), "the page rules come after the page's own styles"
    assert "size: letter" in styled and 'content: "Does \\"x\\" hold?"' in styled
    assert 'counter(page) " of " counter(pages)' in styled
    with pytest.raises(pdf.PrintError, match="unknown paper size"):
        pdf.page_style("a5", "t")


@pytest.fixture
def temporary(monkeypatch):
    """A temporary folder of its own for this process and the browser it starts ($TMPDIR; short, as the path of
    the browser's socket in it must be), removed after the test."""
    with tempfile.TemporaryDirectory(prefix="attnlab-test-", ignore_cleanup_errors=True) as folder:
        monkeypatch.setenv("TMPDIR", folder)
        monkeypatch.setattr(tempfile, "tempdir", folder)
        yield Path(folder)


@needs_browser
@needs_poppler
@pytest.mark.parametrize("paper", sorted(pdf.PAPERS))
def test_a_page_prints_at_the_paper_size_asked_for_with_its_title_and_number(tmp_path, paper, temporary):
    page = tmp_path / "page.html"
    page.write_text(f"<html><head><title>{TITLE}</title></head><body>"
                    '<p>See <a href="https://example.org/post">the post</a>.</p></body></html>')
    out = pdf.print_pdf(page, tmp_path / "out" / "page.pdf", paper)
    width, height = (float(x) for x in re.findall(r"[\d.]+", pdf_info(out)["Page size"])[:2])
    assert (round(width / 72 * 25.4), round(height / 72 * 25.4)) == tuple(round(mm) for mm in pdf.PAPER_MM[paper])
    (text,) = page_texts(out)
    assert TITLE in text and "page 1 of 1" in text
    assert sorted(p.name for p in out.parent.iterdir()) == ["page.pdf"]
    assert out.stat().st_mode & 0o777 == (page.stat().st_mode & 0o777), "as readable as the page it prints"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "page.html"], "the print copy is removed"
    assert not list(temporary.iterdir()), "nothing of the print's or its browser's is left in the temporary folder"


@pytest.mark.slow
def test_without_a_browser_the_build_succeeds_with_the_html_and_says_how_to_print(smoke_workspace, corpus_path,
                                                                                tmp_path):
    """The main job never fails for the optional printer: with no browser, `all` does not ask for the PDF, the
    build exits 0 with the page and the notebook in place and ends with one line naming the fix, and asking for
    the PDF itself (`snakemake writeup_pdf`) stops with that line, not a traceback."""
    from processes import run

    ws = Path(shutil.copytree(smoke_workspace, tmp_path / "ws", symlinks=True))  # its writeup is rerun here
    (ws / PDF).unlink(missing_ok=True)  # printed only where the smoke build found a browser
    env = {"PYTHONPATH": ws / "src", "ATTNLAB_CORPUS": corpus_path, pdf.BROWSER_ENV: str(ws / "no-such-chromium")}
    (ws / HTML).unlink()  # a build that runs the writeup's rule, then one that has nothing to do
    for _ in range(2):
        built = run(["-m", "snakemake", "--cores", "1", "--configfile", "config/smoke.yaml"], ws, env)
        assert built.returncode == 0, built.stderr[-3000:]
        assert (ws / HTML).is_file() and (ws / "results" / "writeup" / "writeup.ipynb").is_file()
        assert not (ws / PDF).exists()
        said = [line for line in (built.stdout + built.stderr).splitlines()
                if "writeup.pdf was not printed" in line]
        assert len(said) == 1 and "snakemake writeup_pdf" in said[0], built.stdout[-2000:]
    assert "Nothing to be done" in built.stdout + built.stderr
    # `snakemake tables` makes no writeup, so it ends without a line about printing one
    tables = run(["-m", "snakemake", "tables", "--cores", "1", "--configfile", "config/smoke.yaml"], ws, env)
    assert tables.returncode == 0 and "writeup" not in tables.stdout + tables.stderr, tables.stdout[-2000:]
    asked = run(["-m", "snakemake", "writeup_pdf", "--cores", "1", "--configfile", "config/smoke.yaml"], ws, env)
    assert asked.returncode != 0 and "is not an executable; install Chromium" in asked.stderr + asked.stdout
    assert "Traceback" not in asked.stderr and not (ws / PDF).exists()


def _browser_writing(tmp_path, body: str) -> Path:
    """A stand-in browser: a shell script that finds --print-to-pdf=PATH among its arguments, then runs `body`."""
    fake = tmp_path / "bin" / "chromium"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text("#!/bin/sh\nfor arg; do case $arg in --print-to-pdf=*) out=${arg#--print-to-pdf=};; esac; done\n"
                    + body + "\n")
    fake.chmod(0o755)
    return fake


WHOLE = b"%PDF-1.4\n" + b"3 0 obj <</Type /Page /Parent 2 0 R>> endobj\n" * 100 + b"startxref\n9\n%%EOF\n"


@pytest.mark.parametrize("printed, problem", [
    (WHOLE[:3000], "no end-of-file trailer"),
    (b"%PDF-" + b"x" * 24, "no end-of-file trailer"),
    (b"%PDF-1.4\nstartxref\n0\n%%EOF\n", "no page"),
    (b"%PDF-1.4\n1 0 obj <</Type /Page>> endobj\nstartxref\n0\n%%EOF\n", "points at no cross-reference"),
])
def test_a_cut_short_or_garbage_pdf_is_never_moved_into_place(tmp_path, printed, problem):
    source = tmp_path / "printed.bin"
    source.write_bytes(printed)
    browser = _browser_writing(tmp_path, f'cp "{source}" "$out"')
    folder = tmp_path / "writeup"
    folder.mkdir()
    (folder / "writeup.html").write_text("<html><head><title>t</title></head><body>text</body></html>")
    (folder / "writeup.pdf").write_bytes(WHOLE)
    with pytest.raises(pdf.PrintError, match=problem):
        pdf.print_pdf(folder / "writeup.html", folder / "writeup.pdf", "a4", browser=str(browser))
    assert (folder / "writeup.pdf").read_bytes() == WHOLE
    assert sorted(p.name for p in folder.iterdir()) == ["writeup.html", "writeup.pdf"]
    assert pdf.pdf_problem(source) and not pdf.pdf_problem(folder / "writeup.pdf")


def test_a_hung_browser_is_stopped_with_every_process_it_started(tmp_path):
    child = tmp_path / "child.pid"
    browser = _browser_writing(tmp_path, f'sleep 600 & echo $! > "{child}"; sleep 600')
    page = tmp_path / "page.html"
    page.write_text("<html><head><title>t</title></head><body>text</body></html>")
    with pytest.raises(pdf.PrintError, match="did not finish printing"):
        pdf.print_pdf(page, tmp_path / "page.pdf", "a4", browser=str(browser), timeout=2)
    pid = int(child.read_text())
    for _ in range(100):  # the kill is sent; the child is gone, or a zombie waiting for init, a moment later
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except FileNotFoundError:
            break
        if "\nState:\tZ" in status:
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"the browser's child {pid} outlived it")


class _Workflow:
    def __init__(self, dryrun=False, dag=object()):
        self.dryrun, self.dag, self.is_main_process = dryrun, dag, True


def test_the_ending_line_is_said_once_whether_a_hook_ran_or_not(capsys):
    """onsuccess says the line and the exit check stays quiet; without a hook the exit check says it, but
    not after a dry run, a failed build, or a command that built no DAG."""
    from attnlab.pipeline.plan.ending import Ending

    ran = Ending("no printer")
    ran.succeeded()
    ran._at_exit(_Workflow())
    assert capsys.readouterr().out == "no printer\n"
    for workflow, fail in [(_Workflow(), False), (_Workflow(dryrun=True), False), (_Workflow(dag=None), False),
                           (_Workflow(), True)]:
        end = Ending("no printer")
        if fail:
            end.failed()
        end._at_exit(workflow)
        said = capsys.readouterr().out
        assert said == ("no printer\n" if not (fail or workflow.dryrun or workflow.dag is None) else "")
    Ending("")._at_exit(_Workflow())
    assert capsys.readouterr().out == ""


# ---- a reprint never loses the last good PDF, and an interrupted one leaves nothing behind


def _chromium_saying_its_version(tmp_path, body: str) -> Path:
    """A stand-in browser that says it is Chromium when asked its version, and otherwise runs `body`."""
    return _browser_writing(tmp_path, 'case "$1" in --version) echo "Chromium 131.0"; exit 0;; esac\n' + body)


@pytest.mark.parametrize("body, refused", [("exit 0", "is not Chromium or Chrome (`--version` said nothing)"),
                                           ("echo 'Firefox 128'", "said 'Firefox 128'"), (None, "")])
def test_a_browser_named_by_the_environment_must_say_it_is_chromium(tmp_path, monkeypatch, body, refused):
    """/bin/true as $ATTNLAB_CHROMIUM leaves the build without a printer (one line, the build succeeds), as a
    missing browser does, instead of failing the whole build at its last job."""
    fake = _chromium_saying_its_version(tmp_path, "exit 0") if body is None else _browser_writing(tmp_path, body)
    monkeypatch.setenv(pdf.BROWSER_ENV, str(fake))
    if refused:
        with pytest.raises(pdf.PrintError, match=re.escape(refused)):
            pdf.find_browser()
    else:
        assert pdf.find_browser() == str(fake)


def test_an_interrupted_print_stops_its_browser_and_leaves_the_old_pdf_and_no_temporary_file(tmp_path):
    child = tmp_path / "child.pid"
    browser = _chromium_saying_its_version(tmp_path, f'sleep 600 & echo $! > "{child}"; sleep 600')
    folder = tmp_path / "writeup"
    folder.mkdir()
    (folder / "writeup.html").write_text("<html><head><title>t</title></head><body>text</body></html>")
    (folder / "writeup.pdf").write_bytes(WHOLE)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), pdf.BROWSER_ENV: str(browser)}
    printing = subprocess.Popen([sys.executable, "-m", "attnlab.pipeline.report.pdf", "--html",
                                 str(folder / "writeup.html"), "--out", str(folder / "writeup.pdf")], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(200):
        if child.exists() and child.read_text().strip():
            break
        time.sleep(0.05)
    printing.terminate()  # what Snakemake does to a job it gives up on
    printing.communicate(timeout=30)
    assert printing.returncode != 0
    assert _gone(int(child.read_text())), "the browser's child outlived the interrupted print"
    assert sorted(p.name for p in folder.iterdir()) == ["writeup.html", "writeup.pdf"]
    assert (folder / "writeup.pdf").read_bytes() == WHOLE


def test_a_helper_that_escapes_the_browsers_session_does_not_hold_the_print(tmp_path):
    """A helper in a session of its own keeps the browser's stdout and stderr open after the browser exits: the
    print reads them from a file, so it returns when the browser does, not when the helper does."""
    helper = tmp_path / "helper.pid"
    browser = _browser_writing(tmp_path, f'setsid sleep 600 & echo $! > "{helper}"; exit 0')
    page = tmp_path / "page.html"
    page.write_text("<html><head><title>t</title></head><body>text</body></html>")
    started = time.monotonic()
    try:
        with pytest.raises(pdf.PrintError, match="printed no whole PDF"):
            pdf.print_pdf(page, tmp_path / "page.pdf", "a4", browser=str(browser), timeout=60)
        assert time.monotonic() - started < 30
    finally:
        with_pid = helper.read_text().strip() if helper.exists() else ""
        if with_pid:
            subprocess.run(["kill", "-9", with_pid], check=False)


def _gone(pid: int) -> bool:
    """Whether a process has ended (gone, or a zombie waiting for init), within thirty seconds (a loaded machine
    may take a while to reap it)."""
    for _ in range(600):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except FileNotFoundError:
            return True
        if "\nState:\tZ" in status:
            return True
        time.sleep(0.05)
    return False


def test_the_ending_says_whether_an_earlier_print_is_on_disk_and_still_shows_the_page(tmp_path):
    from attnlab.pipeline.plan.ending import Ending

    html_file, pdf_file = tmp_path / "writeup.html", tmp_path / "writeup.pdf"
    html_file.write_text("page")
    ending = Ending("writeup.pdf was not printed: no Chromium; then run `snakemake writeup_pdf`", html_file, pdf_file)
    assert ending.line().startswith("writeup.pdf was not printed: no Chromium")
    pdf_file.write_bytes(WHOLE)
    os.utime(html_file, (1, 1))
    assert ending.line().startswith("writeup.pdf is an earlier print of this page and was not printed again")
    os.utime(pdf_file, (0, 0))
    assert "an earlier print, older than writeup.html, and was not printed again" in ending.line()


@pytest.mark.slow
def test_a_failed_reprint_keeps_the_last_good_pdf(smoke_workspace, corpus_path, tmp_path):
    """Snakemake removes a job's outputs before it runs: the rule's PDF is flagged `update`, so a reprint whose
    browser fails leaves the earlier PDF in place and the build says why, exit status not 0."""
    from processes import run

    ws = Path(shutil.copytree(smoke_workspace, tmp_path / "ws", symlinks=True))
    (ws / PDF).write_bytes(WHOLE)
    older = (ws / HTML).stat().st_mtime - 600
    os.utime(ws / PDF, (older, older))  # the page is newer: the PDF is reprinted
    failing = _chromium_saying_its_version(tmp_path, "echo 'cannot open display' >&2; exit 3")
    env = {"PYTHONPATH": ws / "src", "ATTNLAB_CORPUS": corpus_path, pdf.BROWSER_ENV: str(failing)}
    asked = run(["-m", "snakemake", "writeup_pdf", "--cores", "1", "--configfile", "config/smoke.yaml"], ws, env)
    assert asked.returncode != 0 and "cannot open display" in asked.stderr + asked.stdout
    assert (ws / PDF).read_bytes() == WHOLE
    assert not [p.name for p in (ws / PDF).parent.iterdir() if p.name.startswith(".")]
