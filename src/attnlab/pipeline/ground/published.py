"""The posts' published numbers (published.yaml beside this module): what the ledger, the tables' displays and
the writeup set beside this build's. Pure data, read once."""

from __future__ import annotations

from functools import cache
from importlib import resources

import yaml


@cache
def _text() -> str:
    return resources.files("attnlab.pipeline.ground").joinpath("published.yaml").read_text()


def published() -> dict:
    """The posts' numbers, a fresh copy per call (callers may not change the shared one)."""
    return yaml.safe_load(_text())


@cache
def table_gap(kernel: str = "yat_b", baseline: str = "softmax") -> tuple[float, float, float]:
    """The post's own table gap kernel / baseline − 1 with its Welch 95% interval: (low, gap, high).

    From the contest rows' means and spreads (three seeds each; the table's std is ddof 0, so it is scaled by
    √(n / (n − 1)) to the sample standard deviation), on the log scale the build reads a ratio on (the mean
    log-ratio; each side's log spread is its std over its mean), with Welch's degrees of freedom. Where the
    table has a kernel at two LRs, the row at the kernel's contest LR is the first listed.
    """
    import math

    from scipy import stats

    rows = {}
    for row in published()["contest"]:
        rows.setdefault(row["variant"], row)
    k, b, n = rows[kernel], rows[baseline], SEEDS
    parts = [(row["std"] * math.sqrt(n / (n - 1)) / row["mean"]) ** 2 / n for row in (k, b)]
    se = math.sqrt(sum(parts))
    df = sum(parts) ** 2 / sum(part ** 2 / (n - 1) for part in parts)
    half = float(stats.t.ppf(0.975, df)) * se
    centre = math.log(k["mean"] / b["mean"])
    return math.expm1(centre - half), math.expm1(centre), math.expm1(centre + half)


SEEDS = 3  # the posts' seeds per contest row (seeds 0-2)


def quality_band(kernel: str = "yat_b") -> tuple[float, float]:
    """The quality reading's band for kernel / softmax − 1: softmax ahead (above 0), by less than the upper end
    of the post's own interval of its table gap (about 2.2% for yat_b). 0 is the post's direction; the upper
    edge is the post's figures read through a Welch interval (this project's reading of its table)."""
    return 0.0, table_gap(kernel)[2]
