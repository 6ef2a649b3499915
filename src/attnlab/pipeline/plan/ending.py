"""The one line a build ends with when the writeup could not be printed.

Snakemake calls `onsuccess` after a build that ran jobs, `onerror` after one
that failed, and no hook at all after one that had nothing to do. The line is
said in `onsuccess`, or at exit by the submitting process when no hook ran and
a DAG was built for real (not a dry run, not --list-rules and the like), so a
user sees it once per build either way.
"""

from __future__ import annotations

import atexit


class Ending:
    def __init__(self, printer_missing: str):
        self.printer_missing = printer_missing
        self.hook_ran = False

    def succeeded(self) -> None:
        self.hook_ran = True
        self.say()

    def failed(self) -> None:
        self.hook_ran = True

    def say(self) -> None:
        if self.printer_missing:
            print(self.printer_missing)

    def at_exit(self, workflow) -> None:
        """Register the exit-time line for the submitting process (`workflow.is_main_process`)."""
        if workflow.is_main_process:
            atexit.register(self._at_exit, workflow)

    def _at_exit(self, workflow) -> None:
        if not (self.hook_ran or workflow.dryrun or workflow.dag is None):
            self.say()
