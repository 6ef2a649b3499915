"""Where the expectation of a set of bundles lives: a file named by the digest of its content.

Collection compares each bundle's recorded config slice and code fingerprint
with what the grid expects for its cell, so a stale bundle (trained by hand
with another config, or by other code while Snakemake's records were lost with
.snakemake/) stops the build by name instead of being collected. The
expectation is a file inside .snakemake/ on purpose:
  - a changed expectation (a model edit, a new train.steps) is a new file,
    newer than the tables, so collection reruns and checks, even when Snakemake
    has no records left to compare params;
  - an unchanged one keeps its old file and time, so a dry run or a reverted
    edit reruns nothing;
  - removing .snakemake/ removes the files too, and the next run checks every
    bundle again.
The files are written while the Snakefile is read (Plan.write_expectations, the
one thing the planning writes), before Snakemake builds its DAG: Snakemake
never makes a missing input of a job whose outputs exist, so a rule that wrote
them would not run exactly when records are lost, which is when they matter.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from attnlab.core.io import atomic_write_text

EXPECTED = Path(".snakemake") / "attnlab" / "expected"
RUNS = "runs"  # the contest's and the sweep's expectation; a study's is named by the study
CONTEST_SETTINGS = "contest-settings"  # what collection reads of the config (no study name has a hyphen)
ROUNDS_SETTINGS = "rounds-settings"  # what the seed_round rule reads (the variants, contest, sweep, studies' seeds)
SWEEP_SETTINGS = "sweep-settings"  # what one variant's extend_sweep steps read (its grid and sweep.extend)
DIGEST_CHARS = 20


def digest(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()[:DIGEST_CHARS]


def path(name: str, content: str) -> Path:
    """The file that holds `content`, the expectation called `name`."""
    return EXPECTED / f"{name}-{digest(content)}.json"


def write(file: Path, content: str) -> None:
    """Write an expectation file unless it already holds exactly this content (its time then stays)."""
    file = Path(file)
    if not file.is_file() or file.read_text() != content:
        atomic_write_text(file, content)
