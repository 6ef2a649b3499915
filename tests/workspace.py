"""A copy of the project in a temporary folder, for running Snakemake without touching the repo."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO

COPIED = ("Snakefile", "config", "workflow", "src", "notebooks", "jupytext.toml")


def make_workspace(dest: Path) -> Path:
    for name in COPIED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, dest / name, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.ipynb"))
        elif source.exists():
            shutil.copy2(source, dest / name)
    return dest


def snakemake(workspace: Path, *args: str, corpus: Path | None = None, timeout: int = 1800):
    env = dict(os.environ)
    if corpus is not None:
        env["ATTNLAB_CORPUS"] = str(corpus)
    env["PYTHONPATH"] = str(workspace / "src")
    cmd = [sys.executable, "-m", "snakemake", *args]
    return subprocess.run(cmd, cwd=workspace, env=env, capture_output=True, text=True, timeout=timeout)


def planned_jobs(output: str) -> dict[str, int]:
    """rule -> count from the 'Job stats' table of a dry run."""
    counts = {}
    in_table = False
    for line in output.splitlines():
        if line.startswith("Job stats"):
            in_table = True
            continue
        if in_table:
            match = re.match(r"^(\w+)\s+(\d+)$", line.strip())
            if match and match.group(1) != "total":
                counts[match.group(1)] = int(match.group(2))
            elif line.strip().startswith("total"):
                break
    return counts


def planned_training(output: str) -> list[tuple[str, str, str]]:
    """(variant, lr, seed) of each training job a dry run plans, from the rule's message."""
    return re.findall(r"Training (\w+) lr=([0-9.e+-]+) seed=(\d+)", output)


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
