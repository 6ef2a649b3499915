"""Which browser prints the writeup to PDF, found while the plan is built: the build asks for the PDF only where
one is (the planning finds GPUs the same way); attnlab.pipeline.report.pdf prints with it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

BROWSER_ENV = "ATTNLAB_CHROMIUM"  # a Chromium or Chrome binary to print with, where none is on PATH
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
INSTALL = (f"install Chromium (Debian or Ubuntu: apt-get install chromium) or set {BROWSER_ENV} to a "
           "Chromium or Chrome binary")


class PrintError(RuntimeError):
    """The PDF could not be printed; the message says why in one line."""


def find_browser(environ=os.environ) -> str:
    """The browser to print with: $ATTNLAB_CHROMIUM, else the first of BROWSERS on PATH."""
    given = environ.get(BROWSER_ENV)
    if given:
        found = shutil.which(given)
        if not found:
            raise PrintError(f"{BROWSER_ENV}={given} is not an executable; {INSTALL}")
        check_chromium(found, given)
        return found
    for name in BROWSERS:
        found = shutil.which(name, path=environ.get("PATH"))
        if found:
            return found
    raise PrintError(f"no Chromium to print the writeup to PDF with (looked for {', '.join(BROWSERS)} on PATH): "
                     f"{INSTALL}")


def check_chromium(found: str, given: str) -> None:
    """A browser named by $ATTNLAB_CHROMIUM says it is Chromium or Chrome (`--version`), so a wrong binary
    (/bin/true) leaves the build without a printer, as a missing one does, instead of failing its last job."""
    try:
        said = subprocess.run([found, "--version"], capture_output=True, text=True, errors="replace", timeout=30)
        words = (said.stdout + said.stderr).strip()
    except (OSError, subprocess.TimeoutExpired) as err:
        raise PrintError(f"{BROWSER_ENV}={given} did not say its version ({type(err).__name__}); {INSTALL}") from None
    if said.returncode != 0 or not re.search(r"chrom", words, re.I):
        shown = repr(words.splitlines()[0][:80]) if words else "nothing"
        raise PrintError(f"{BROWSER_ENV}={given} is not Chromium or Chrome (`--version` said {shown}); {INSTALL}")
