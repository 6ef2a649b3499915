"""One rule per figure of the figure catalog, and the writeup's (figures.smk, writeup.smk).

A part of attnlab.pipeline.plan.rules.Plan, which holds the state these methods read."""

from __future__ import annotations

import shlex
from pathlib import Path

from attnlab.core.config import to_json
from attnlab.core.packages import installed_versions
from attnlab.pipeline.ground import environment

from attnlab.pipeline.plan.common import (quoted)


class ReportRules:
    """One rule per figure of the figure catalog, and the writeup's."""

    def figure_style(self, wildcards=None) -> str:
        """The `figures` config section: presentation only, never retrains."""
        return quoted(self.config.get("figures", {}))


    @staticmethod
    def figure_outputs(entry, report, keep=lambda path: path) -> dict:
        """The figure's file, as a Snakemake report item (`report` is Snakemake's function) captioned from
        workflow/report, and an animation's poster; each flagged by `keep` (Snakemake's `update`: a failed
        drawing puts the last good figure back)."""
        found = entry.output_paths()
        outputs = {"file": keep(report(str(found["file"]), caption=str(Path("..") / "report" / entry.caption.name),
                                       category="Figures"))}
        if "poster" in found:
            outputs["poster"] = keep(str(found["poster"]))
        return outputs


    @staticmethod
    def figure_inputs(entry) -> dict[str, str]:
        return {name: str(path) for name, path in entry.table_paths().items()}


    @staticmethod
    def figure_priority(entry) -> int:
        """An animation drawn from the runs (the longest figure job, on the path to the writeup) starts before
        the other figures once the tables are in; one that needs no runs waits, as every figure does, for the
        training (whose priorities are higher) to leave a core free."""
        return 1 if entry.animated and entry.table_paths() else 0


    @staticmethod
    def figure_arguments(entry) -> str:
        """The command line's --table NAME=PATH for each table the figure reads (their paths are its inputs)."""
        return " ".join(shlex.quote(f"--table={name}={path}") for name, path in entry.table_paths().items())


    @staticmethod
    def figure_poster(entry) -> str:
        return f"--poster {entry.output_paths()['poster']}" if entry.animated else ""


    def locked_versions(self, wildcards=None) -> str:
        """The installed version of every package the lock pins (none when there is no lock), so installing other
        versions reruns the writeup (its "Version drift" line)."""
        if not self.lock:
            return "{}"
        try:
            pinned = environment.read_lock(environment.LOCK)
        except (OSError, UnicodeDecodeError) as err:
            raise LookupError(f"cannot read {environment.LOCK} ({err}); restore it (git checkout constraints.txt)")
        return to_json(installed_versions(pinned))
