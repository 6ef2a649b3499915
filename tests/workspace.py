"""A copy of the project in a temporary folder, for running Snakemake without touching the repo."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from conftest import CACHE_DIR_ENV, REPO
from processes import snakemake

def _printer() -> bool:
    from attnlab.pipeline.ground.printer import PrintError, find_browser

    try:
        return bool(find_browser())
    except PrintError:
        return False


# The rules that remake the writeup: the page, and its PDF where the planning finds a browser to print it with.
WRITEUP_RULES = frozenset({"writeup", "writeup_pdf"} if _printer() else {"writeup"})

COPIED = ("Snakefile", "config", "workflow", "src", "notebooks", "jupytext.toml", "constraints.txt")


def make_workspace(dest: Path, share_compile_cache: bool = False) -> Path:
    """The project's files under `dest`; with share_compile_cache, its builds compile into the run's one cache.

    The rules compile into results/jax-cache: for a workspace that trains, that
    is made a link to this test run's cache (conftest), so its cells load what
    other processes compiled. Workspaces that must stay without results/ (a
    refused build) are made without it.
    """
    for name in COPIED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, dest / name, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.ipynb"))
        elif source.exists():
            shutil.copy2(source, dest / name)
    shared = os.environ.get(CACHE_DIR_ENV)
    if share_compile_cache and shared:
        (dest / "results").mkdir()
        (dest / "results" / "jax-cache").symlink_to(shared, target_is_directory=True)
    return dest


def plan(workspace: Path, configfile: str = "config/smoke.yaml", corpus: Path | None = None,
         extra: tuple[str, ...] = ()) -> dict[str, set[str]]:
    """rule -> output files Snakemake would (re)make, from its machine-readable `--summary` table (with `extra`
    command-line words)."""
    result = snakemake(workspace, "--summary", "--configfile", configfile, *extra, corpus=corpus)
    assert result.returncode == 0, result.stderr[-3000:]
    planned: dict[str, set[str]] = {}
    rows = [line.split("\t") for line in result.stdout.splitlines() if "\t" in line]
    header = rows[0]
    for row in rows[1:]:
        record = dict(zip(header, row))
        if record["plan"] != "no update":
            planned.setdefault(record["rule"], set()).add(record["output_file"])
    return planned


def training_outputs(planned: dict[str, set[str]]) -> set[str]:
    """The bundle folders of every training job a plan would run: train_cell's, or every pack rule's (a pack's
    job lists all its cells, the current ones included, which its trainer then leaves as they are)."""
    return {path for rule, outputs in planned.items() if rule == "train_cell" or rule.startswith("train_pack_")
            for path in outputs}


def planned_cells(planned: dict[str, set[str]], place: str = "runs") -> set[tuple[str, str, str]]:
    """(variant, lr, seed) of every training cell a plan would retrain under results/<place> (the contest and
    the sweep's folder by default; a study's point is studies/<study>/<axis values>)."""
    cells = set()
    for path in training_outputs(planned):
        match = re.search(r"results/(.+)/(\w+)/lr([0-9.e+-]+)/seed(\d+)", path)
        if match.group(1) == place:
            cells.add(match.groups()[1:])
    return cells


class edited:
    """Append a harmless line to a file for the duration of a `with` block (content changes, not just mtime)."""

    def __init__(self, path: Path, line: str = "# edited by a dependency test"):
        self.path, self.line = Path(path), line

    def __enter__(self):
        self.original = self.path.read_text()
        self.path.write_text(self.original + f"\n{self.line}\n")
        return self.path

    def __exit__(self, *exc):
        self.path.write_text(self.original)
