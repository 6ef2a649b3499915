"""The one line a build ends with when the writeup could not be printed.

Snakemake calls `onsuccess` after a build that ran jobs, `onerror` after one
that failed, and no hook at all after one that had nothing to do. The line is
said in `onsuccess`, or at exit by the submitting process when no hook ran and
a DAG was built for real (not a dry run, not --list-rules and the like), so a
user sees it once per build either way; and only by a build whose targets lead
to the HTML writeup (not `snakemake tables`).
"""

from __future__ import annotations

import atexit
from pathlib import Path


class Ending:
    """`printer_missing`: why no PDF can be printed ('' when it can). With `html` and `pdf`, the line says whether a
    PDF from an earlier print is on disk, and whether it still shows the page."""

    def __init__(self, printer_missing: str, html: Path | None = None, pdf: Path | None = None):
        self.printer_missing = printer_missing
        self.html, self.pdf = html, pdf
        self.hook_ran = False

    def succeeded(self, workflow=None) -> None:
        self.hook_ran = True
        self.say(workflow)

    def failed(self) -> None:
        self.hook_ran = True

    def say(self, workflow=None) -> None:
        if self.printer_missing and self.asks_for_the_writeup(workflow):
            print(self.line())

    def asks_for_the_writeup(self, workflow) -> bool:
        """Whether the build's targets lead to the HTML writeup, which the line is about: `snakemake tables` makes
        none, so it ends without the line. True where the DAG cannot tell (a workflow without one's jobs)."""
        jobs = getattr(getattr(workflow, "dag", None), "jobs", None)
        if jobs is None or self.html is None:
            return True
        html = Path(self.html).resolve()
        return any(Path(str(file)).resolve() == html for job in jobs for file in job.output)

    def line(self) -> str:
        """The line as the files stand when the build ends."""
        if self.pdf is None or not Path(self.pdf).is_file():
            return self.printer_missing
        kept = "was not printed again"
        if self.html is not None and Path(self.html).is_file() \
                and Path(self.pdf).stat().st_mtime < Path(self.html).stat().st_mtime:
            kept = f"is an earlier print, older than {Path(self.html).name}, and " + kept
        else:
            kept = "is an earlier print of this page and " + kept
        return self.printer_missing.replace("was not printed", kept, 1)

    def at_exit(self, workflow) -> None:
        """Register the exit-time line for the submitting process (`workflow.is_main_process`)."""
        if workflow.is_main_process:
            atexit.register(self._at_exit, workflow)

    def _at_exit(self, workflow) -> None:
        if not (self.hook_ran or workflow.dryrun or workflow.dag is None):
            self.say(workflow)
