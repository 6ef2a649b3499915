"""Which browser prints the writeup to PDF, found while the plan is built: the build asks for the PDF only where
one is (the planning finds GPUs the same way); attnlab.pipeline.report.pdf prints with it."""

from __future__ import annotations

import os
import shutil

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
        return found
    for name in BROWSERS:
        found = shutil.which(name, path=environ.get("PATH"))
        if found:
            return found
    raise PrintError(f"no Chromium to print the writeup to PDF with (looked for {', '.join(BROWSERS)} on PATH): "
                     f"{INSTALL}")
