"""Where the expectation of a set of bundles lives: a file named by the digest of its content.

Collection compares each bundle's recorded config slice and code fingerprint
with what the grid expects for its cell, so a stale bundle (trained by hand
with another config, or by other code while Snakemake's records were lost with
.snakemake/) stops the build by name instead of being collected. The
expectation is a file inside .snakemake/ on purpose:
  - a changed expectation (a model edit, a new train.steps) is a new file, which
    its rule writes, newer than the tables, so collection reruns and checks even
    when Snakemake has no records left to compare params;
  - an unchanged one keeps its old file and time, so a dry run or a reverted
    edit reruns nothing;
  - removing .snakemake/ removes the files too, and the next run checks every
    bundle again.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

EXPECTED = Path(".snakemake") / "attnlab" / "expected"
RUNS = "runs"  # the contest's and the sweep's expectation; a study's is named by the study
DIGEST_CHARS = 20
PATTERN = EXPECTED / "{expectation}-{digest}.json"  # the write_expected rule's output
DIGEST_PATTERN = f"[0-9a-f]{{{DIGEST_CHARS}}}"


def digest(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()[:DIGEST_CHARS]


def path(name: str, content: str) -> Path:
    """The file that holds `content`, the expectation called `name`."""
    return EXPECTED / f"{name}-{digest(content)}.json"
