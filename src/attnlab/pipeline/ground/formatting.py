"""How every number is written for reading, once: losses, differences, intervals, percents, LRs.

A loss is mean ± std at the precision its spread supports; a difference
carries its sign; an interval is the statistics module's, or the reason there
is none; a missing value is '—'. The writeup (attnlab.pipeline.report)
writes every number through these functions, so a number reads the same in a
table and in the sentence beside it (a ratio of scores: score_scale.times).
"""

from __future__ import annotations

import math

import numpy as np

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.ground import statistics

MISSING = "—"


def finite(value) -> bool:
    """A real number that is not NaN or infinite (None and text are not)."""
    try:
        return value is not None and bool(np.isfinite(float(value)))
    except (TypeError, ValueError):
        return False


def cell_text(value) -> str:
    """A table cell as text: a missing or non-finite number is '—'."""
    if value is None or (isinstance(value, (float, np.floating)) and not np.isfinite(value)):
        return MISSING
    return str(value)


def mean_pm(means, stds, digits: int | None = None) -> list[str]:
    """'mean ± std' for a column, every row at the precision two significant digits of the smallest std need."""
    means, stds = np.asarray(means, dtype=float), np.asarray(stds, dtype=float)
    if digits is None:
        digits = decimals_for(stds)
    return [f"{m:.{digits}f} ± {s:.{digits}f}" if np.isfinite(s) else f"{m:.{digits}f}"
            for m, s in zip(means, stds)]


def decimals_for(stds, low: int = 2, high: int = 4) -> int:
    """Decimals that show two significant digits of the smallest positive spread, within [low, high]."""
    stds = np.asarray(stds, dtype=float)
    stds = stds[np.isfinite(stds) & (stds > 0)]
    if stds.size == 0:
        return high
    return int(np.clip(1 - math.floor(math.log10(stds.min())), low, high))


def signed(value, digits: int = 4) -> str:
    """A difference with its sign: '+0.0123'; '—' for a missing one."""
    return f"{float(value):+.{digits}f}" if finite(value) else MISSING


def interval(low, high, digits: int = 4) -> str:
    """'[−0.0412, −0.0251]', or the reason there is none (one shared seed gives no interval)."""
    if not (finite(low) and finite(high)):
        return statistics.ONE_SEED
    return f"[{float(low):+.{digits}f}, {float(high):+.{digits}f}]"


def difference(mean, low, high, digits: int = 4) -> str:
    """A paired difference with its interval: '+0.0123 [+0.0050, +0.0196]' or '+0.0123 (one seed: no interval)'."""
    if not finite(mean):
        return MISSING
    if finite(low) and finite(high):
        return f"{signed(mean, digits)} {interval(low, high, digits)}"
    return f"{signed(mean, digits)} ({statistics.ONE_SEED})"


def percent(value, signed: bool = True, digits: int = 1) -> str:
    """A share or a gap in percent: '+1.3%' (signed) or '1.3%'."""
    if not finite(value):
        return MISSING
    return f"{float(value):+.{digits}%}" if signed else f"{float(value):.{digits}%}"


def number(value, significant: int = 4) -> str:
    """A score-like number: thousands separators, `significant` digits."""
    if not finite(value):
        return MISSING
    value = float(value)
    return f"{value:,.{significant}g}" if abs(value) < 10 ** significant else f"{value:,.0f}"


def fixed(value, digits: int = 3) -> str:
    """A number at a fixed precision ('0.953'); '—' for a missing one."""
    return f"{float(value):.{digits}f}" if finite(value) else MISSING


def lr_text(lr, choice: str = "given") -> str:
    """An LR as the tables, the ledger, the figures and the trainer's log show it: its exact text (the text that
    names its folder, attnlab.core.bundle_format.format_lr), '0.01 (auto)' when the sweep chose it."""
    if not finite(lr):
        return MISSING
    return format_lr(float(lr)) + (" (auto)" if choice == "auto" else "")


def plural(count: int, word: str, words: str | None = None) -> str:
    """'1 seed', '3 seeds'."""
    return f"{count} {word if count == 1 else (words or word + 's')}"
