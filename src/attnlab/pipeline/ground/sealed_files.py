"""The decision files a build's checkpoints write (a variant's LR choice, a sweep's extension step, a round's
decision): each sealed like a bundle (its content checksum, attnlab.core.bundle_format.sealed), read back only
whole, unedited and of this version, and checked against what it says it was derived from.

A decision file decides which cells train and at which LR, and no table shows it. One that was edited by hand
(an LR changed, a step's `next` cleared), cut short, or written by an older version of its rule, is refused
naming the file and the command that writes it anew, before any job: never read as if its rule had decided it.
"""

from __future__ import annotations

import json
from pathlib import Path

from attnlab.core.bundle_format import SELF_KEY, content_digest, format_lr, sealed
from attnlab.core.errors import ConfigError
from attnlab.core.io import atomic_write_json


def write_sealed(path: Path, decision: dict) -> None:
    """The decision, sealed, written atomically."""
    atomic_write_json(path, sealed(decision))


def read_sealed(path: Path, what: str, rule: str) -> dict:
    """The JSON object at `path` as its rule wrote it; `what` names the file in a refusal ('a contest LR chosen by
    select_lr'), `rule` the rule that writes it. Refused when it cannot be read, is no object, carries no content
    checksum (an older version's) or its checksum differs."""
    try:
        decision = json.loads(Path(path).read_text())
    except (OSError, ValueError) as err:
        raise refusal(path, f"not {what} ({type(err).__name__}: {err})") from None
    if not isinstance(decision, dict):
        raise refusal(path, f"not {what}")
    if SELF_KEY not in decision:
        raise refusal(path, f"not {what} of this version (it carries no content checksum)")
    if decision[SELF_KEY] != content_digest(decision):
        raise refusal(path, f"changed after the {rule} rule wrote it (its content checksum differs)")
    return decision


def refusal(path: Path, why: str) -> ConfigError:
    """The one line a refused decision file stops the build with: the file, why, and what writes it anew."""
    return ConfigError(f"{path}: {why}; remove it and build again (rm {path}), which writes it anew from the cells "
                       "on disk")


def best_of(candidates: dict[str, float], excluded=()) -> str | None:
    """The LR text with the lowest value among `candidates` less `excluded` (a tie goes to the smaller LR): what a
    choice and a sweep step must name as their best."""
    kept = {lr: value for lr, value in candidates.items() if lr not in set(excluded)}
    if not kept:
        return None
    return min(kept, key=lambda lr: (kept[lr], float(lr)))


def check_best(path: Path, decision: dict, best_key: str, lrs=None) -> None:
    """A decision's best LR is the best of its own candidates (the select-half means it lists, less the LRs it
    left out for a divergence), and its candidates are the LRs `lrs` (the sweep's, where the reader knows them)."""
    candidates, excluded = decision.get("candidates"), decision.get("excluded", [])
    if not (isinstance(candidates, dict) and isinstance(excluded, list)
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in candidates.values())):
        raise refusal(path, "its candidates are not a mapping of LRs to their select-half means")
    if lrs is not None and set(candidates) != {format_lr(float(lr)) for lr in lrs}:
        raise refusal(path, f"its candidates {sorted(candidates, key=float)} are not this sweep's LRs "
                            f"{sorted({format_lr(float(lr)) for lr in lrs}, key=float)}")
    best = decision.get(best_key)
    if isinstance(best, bool) or not isinstance(best, (int, float)) or not best > 0:
        raise refusal(path, f"its {best_key} {best!r} is no positive number")
    expected = best_of(candidates, excluded)
    if format_lr(float(best)) != expected:
        raise refusal(path, f"its {best_key} {format_lr(float(best))} is not the best of its own candidates "
                            f"({expected})")


# ---- a variant's contest LR, as the select_lr checkpoint chose it


def read_choice(path: Path, variant: str | None = None, lrs=None) -> float:
    """A variant's contest LR as its select_lr checkpoint wrote it: sealed, of `variant`, its candidates the
    sweep's LRs `lrs` (the grid and any the sweep added, where the reader knows them), and its LR the best of
    them."""
    choice = read_sealed(path, "a contest LR chosen by select_lr", "select_lr")
    if variant is not None and choice.get("variant") != variant:
        raise refusal(path, f"it chose for {choice.get('variant')!r}, not {variant!r}")
    check_best(path, choice, "lr", lrs)
    return float(choice["lr"])
