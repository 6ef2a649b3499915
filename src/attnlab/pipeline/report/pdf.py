"""The writeup printed to PDF by headless Chromium: A4 or Letter, the running title and page numbers on every page.

    python -m attnlab.pipeline.report.pdf --html results/writeup/writeup.html \\
        --out results/writeup/writeup.pdf --paper a4

The page's own print stylesheet (attnlab.pipeline.report.style) lays out the
text column; this module adds the page box: the paper size the config names
(`writeup.paper`), the margins, the page's title at the top of every page and
"page n of N" at its foot (CSS @page margin boxes, which Chromium prints since
version 131). The HTML is printed from a copy beside it, so its relative links
resolve as they do on screen, and the PDF is written whole: to a temporary file
renamed into place once Chromium has finished, so a print that fails, hangs or
is interrupted leaves the last good PDF as it was (the rule flags its output
`update`, so Snakemake neither removes it first nor keeps a failed one). An
interrupted print stops the browser with every process it started and removes
its temporary files. Without a browser, or when it prints nothing, the command
stops with one line that says why and what to do.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import html
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

# The browser is found by the planning too (it asks for the PDF only where one is): one definition, there.
from attnlab.pipeline.ground.printer import BROWSER_ENV as BROWSER_ENV, PrintError, find_browser

PAPERS = {"a4": "A4", "letter": "letter"}  # the config's name -> CSS @page size
PAPER_MM = {"a4": (210.0, 297.0), "letter": (215.9, 279.4)}  # width, height
# Page margins in mm (top, right, bottom, left): the running title and the page number sit inside the top
# and bottom ones. The text column left between the side margins is 180 mm on A4 and 186 mm on Letter,
# wider than the figures' design width (attnlab.pipeline.figures.style.TEXT_WIDTH, 165 mm), so no figure
# is scaled down.
MARGINS_MM = (17.0, 15.0, 16.0, 15.0)
MARGINS = " ".join(f"{m:g}mm" for m in MARGINS_MM)


def text_area_mm(paper: str) -> tuple[float, float]:
    """The width and height (mm) of a page of `paper` inside its margins, where the page's content goes."""
    width, height = PAPER_MM[paper]
    top, right, bottom, left = MARGINS_MM
    return width - left - right, height - top - bottom


TIMEOUT_S = 300
STOPS = {signal.SIGTERM, signal.SIGINT}  # how a print is interrupted: Snakemake giving up on it, Ctrl-C


def page_title(page: str) -> str:
    """The HTML page's <title>, as plain text ('' when it has none)."""
    match = re.search(r"<title>(.*?)</title>", page, re.S | re.I)
    return " ".join(html.unescape(match.group(1)).split()) if match else ""


def css_string(text: str) -> str:
    """`text` as a CSS string literal."""
    return '"' + re.sub(r'(["\\])', r"\\\1", text).replace("\n", " ") + '"'


def page_style(paper: str, title: str) -> str:
    """The @page rules the PDF is printed with: size, margins, running title, page n of N."""
    if paper not in PAPERS:
        raise PrintError(f"unknown paper size {paper!r}: use one of {', '.join(PAPERS)}")
    margin_box = "font-family: sans-serif; font-size: 8pt; color: #555;"
    head = f"@top-center {{ content: {css_string(title)}; {margin_box} }}" if title else ""
    return (f"<style>@page {{ size: {PAPERS[paper]}; margin: {MARGINS}; {head} "
            f'@bottom-center {{ content: "page " counter(page) " of " counter(pages); {margin_box} }} }}</style>')


def with_page_style(page: str, paper: str) -> str:
    """The page with its @page rules added at the end of its head (after every stylesheet it has)."""
    style = page_style(paper, page_title(page))
    at = page.lower().find("</head>")
    return page[:at] + style + page[at:] if at >= 0 else style + page


def print_pdf(html_path: Path, out: Path, paper: str = "a4", browser: str | None = None,
              timeout: float = TIMEOUT_S) -> Path:
    """Print `html_path` to `out` (written whole: a temporary file renamed into place)."""
    html_path, out = Path(html_path), Path(out)
    if not html_path.is_file():
        raise PrintError(f"no page to print: {html_path} does not exist")
    browser = browser or find_browser()
    page = with_page_style(html_path.read_text(encoding="utf-8"), paper)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="attnlab-pdf-") as scratch:
        # The copy sits beside the page, so that relative links mean what they mean on screen.
        fd, copy = tempfile.mkstemp(prefix=f".{html_path.stem}.print.", suffix=".html", dir=html_path.parent)
        fd_pdf, partial = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent)
        os.close(fd_pdf)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(page)
            command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                       "--no-first-run", "--no-default-browser-check", f"--user-data-dir={scratch}",
                       "--no-pdf-header-footer", f"--print-to-pdf={partial}", Path(copy).resolve().as_uri()]
            returncode, stderr = _run_browser(command, browser, html_path, timeout)
            problem = pdf_problem(Path(partial))
            if returncode != 0 or problem:
                said = [line for line in (stderr or "").splitlines() if line.strip()]
                raise PrintError(f"{browser} printed no whole PDF of {html_path} (exit {returncode}"
                                 + (f"; {problem}" if problem else "") + ")"
                                 + (f": {said[-1].strip()}" if said else ""))
            os.chmod(partial, 0o666 & ~_umask())  # a temporary file is private; the PDF is as any file made here
            os.replace(partial, out)
        finally:
            for leftover in (copy, partial):
                Path(leftover).unlink(missing_ok=True)
    return out


def _run_browser(command: list, browser: str, html_path: Path, timeout: float) -> tuple[int, str]:
    """Run the browser in a process group of its own, so that a browser that hangs, or a print that is
    interrupted, is stopped with every process it started (Chromium's renderer and GPU helpers), none left
    orphaned. Its output goes to a file, not a pipe: a helper that escaped to a session of its own would hold a
    pipe open, and the print with it, past its timeout."""
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as said:
        # A stop that arrives while the browser starts is held until `process` names it, so it is never orphaned;
        # the browser itself starts with this process's own signal mask.
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
        try:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=said,
                                       start_new_session=True,
                                       preexec_fn=functools.partial(signal.pthread_sigmask, signal.SIG_SETMASK,
                                                                    previous))
        except BaseException:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
            raise
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)  # a held stop arrives here, inside the try
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop(process)
            raise PrintError(f"{browser} did not finish printing {html_path} within {timeout:.0f} s") from None
        except BaseException:  # interrupted (Ctrl-C, or the SIGTERM main turns into SystemExit)
            _stop(process)
            raise
        said.seek(0)
        return process.returncode, said.read()


def _stop(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def pdf_problem(path: Path) -> str:
    """Why a printed file is not a whole PDF ('' when it is): its header, its end-of-file trailer, at least one
    page. A file cut short or a few bytes that only start like a PDF are never moved into place."""
    try:
        data = path.read_bytes()
    except OSError as err:
        return f"unreadable: {err}"
    if not data.startswith(b"%PDF-"):
        return "no PDF header"
    if b"%%EOF" not in data[-1024:] or b"startxref" not in data[-1024:]:
        return "no end-of-file trailer: the file is cut short"
    if not re.search(rb"/Type\s*/Page(?!s)", data):
        return "no page"
    # The trailer's startxref names where the cross-reference table (or stream) starts: a few bytes that only
    # look like a PDF point nowhere.
    offsets = re.findall(rb"startxref\s+(\d+)\s+%%EOF", data[-1024:])
    at = int(offsets[-1]) if offsets else -1
    if not 0 < at < len(data) or not re.match(rb"xref\b|\d+\s+\d+\s+obj\b", data[at:at + 32]):
        return "its trailer points at no cross-reference table"
    return ""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--html", type=Path, help="the page to print")
    parser.add_argument("--out", type=Path, help="the PDF to write")
    parser.add_argument("--paper", choices=sorted(PAPERS), default="a4", help="paper size (default a4)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds the browser may take")
    parser.add_argument("--check", action="store_true",
                        help="only check that a browser to print with is installed, and say which")
    args = parser.parse_args(argv)
    # Snakemake stops a job it gives up on with SIGTERM: as SystemExit, the print's cleanup runs and its browser
    # is stopped (a signal's default would leave both behind).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        if args.check:
            print(f"printing with {find_browser()}")
            return 0
        if args.html is None or args.out is None:
            parser.error("--html and --out are required (or --check)")
        print_pdf(args.html, args.out, args.paper, timeout=args.timeout)
    except PrintError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {args.out} ({args.paper})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
