"""Packs: the cells one training job trains, one after another in one process (attnlab.training.pack).

On a CPU most of a small cell's wall time is the process's own start-up (imports, JAX's runtime, tracing
and compiling), which the later cells of a pack do not pay again. A pack holds cells of one folder and one
variant, so they share one config slice, every shape and one code fingerprint; `execution.pack_size` caps
its length (1: one cell per job, the `train_cell` rule). The partition is a function of the config alone,
never of what is on disk, so the submitting host and a cluster node that parses the Snakefile again agree
on every pack.

Each pack is a Snakemake rule of its own whose outputs are its cells' bundle folders, flagged `update` so
Snakemake does not delete the finished ones before the pack runs again: the trainer leaves a bundle that is
already current (same config slice, cell and code) as it is, so adding a seed trains that seed alone and
editing one variant's module reruns only that variant's packs.

A contest LR of 'auto' is not known when the Snakefile is read. Those cells get packs whose outputs have an
`{lr}` wildcard (one folder, one variant, the seeds listed): the select_lr checkpoint names the LR, and the
job that makes one of them makes its siblings. A seed the sweep also trains at that place is left out of
such a pack: the chosen LR is one of the sweep's, so that cell is the sweep's (`check_covers` holds it).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from attnlab.core.config import AUTO
from attnlab.core.bundle_format import format_lr
from attnlab.core.cell_key import CellKey
from attnlab.pipeline.ground import paths

PENDING_LR = -1.0  # stands for an 'auto' LR not chosen yet: no config can train at it (LRs are positive)
PENDING = format_lr(PENDING_LR)
LR_WILDCARD = "{lr}"


@dataclass(frozen=True)
class Pack:
    """One training job: `cells` are (LR text, seed) of one variant in one folder (`place`); an LR of
    LR_WILDCARD is the contest's 'auto' choice, filled in from the job's `lr` wildcard."""

    rule: str
    place: str
    variant: str
    cells: tuple[tuple[str, int], ...]

    @property
    def pending(self) -> bool:
        """True when the cells wait for the select_lr checkpoint (their LR is the {lr} wildcard)."""
        return any(lr == LR_WILDCARD for lr, _ in self.cells)

    def outputs(self) -> list[str]:
        """The bundle folders this pack writes (patterns with {lr} while its LR is pending)."""
        return [str(paths.RESULTS / self.place / self.variant / f"lr{lr}" / f"seed{seed}") for lr, seed in self.cells]

    def log(self) -> str:
        at = f"-lr{LR_WILDCARD}" if self.pending else ""  # one log per chosen LR, as one pack per chosen LR
        return str(paths.LOGS / "train" / self.place / self.variant / f"{self.rule}{at}.log")

    def cell_arguments(self, wildcards) -> str:
        """The trainer's `--cell LR,SEED` words (a param: a pack that gains a cell runs again, and the trainer
        trains only the cells whose bundles are not current)."""
        chosen = getattr(wildcards, "lr", None)
        return " ".join(f"--cell {chosen if lr == LR_WILDCARD else lr},{seed}" for lr, seed in self.cells)

    def describe(self) -> str:
        """The rule's message (Snakemake fills in the chosen LR)."""
        shown = ", ".join(f"lr={'{wildcards.lr}' if lr == LR_WILDCARD else lr} seed={seed}" for lr, seed in self.cells)
        return f"{self.variant} {shown} in {paths.RESULTS / self.place}"


def pending_lrs(cfg: dict) -> dict[str, float]:
    """PENDING_LR for every 'auto' contest LR: a grid built with it has every cell, the pending ones at it."""
    return {v: PENDING_LR for v in cfg["variants"] if cfg["contest"]["lr"][v] == AUTO}


def partition(trained: list[CellKey], size: int) -> list[Pack]:
    """The packs of every distinct cell (Grid.trained of a grid built with pending_lrs): per folder and
    variant in the grid's order, chunks of at most `size` cells in (LR, seed) order, pending cells apart."""
    groups: dict[tuple[str, str, bool], list[tuple[str, int]]] = {}
    for key in trained:
        pending = key.lr == PENDING
        groups.setdefault((paths.place(key), key.variant, pending), []).append(
            (LR_WILDCARD if pending else key.lr, key.seed))
    packs, names = [], set()
    for (place, variant, pending), cells in groups.items():
        if pending:
            # The sweep's seeds at this folder: their cell at the chosen LR is the sweep's own.
            known = {seed for _, seed in groups.get((place, variant, False), ())}
            cells = [(lr, seed) for lr, seed in cells if seed not in known]
        else:
            cells = sorted(cells, key=lambda cell: (float(cell[0]), cell[1]))
        for start in range(0, len(cells), size):
            name = rule_name(place, variant, pending, start // size)
            if name in names:  # two folders alike but for punctuation: the folder's digest tells them apart
                name += "_" + hashlib.sha256(place.encode()).hexdigest()[:8]
            names.add(name)
            packs.append(Pack(name, place, variant, tuple(cells[start:start + size])))
    return packs


def rule_name(place: str, variant: str, pending: bool, index: int) -> str:
    """The pack's Snakemake rule name, train_pack_<variant>_<folder>_<n>[_auto], from what it trains, so editing
    another part of the config renames no pack (profiles name rules: --set-resources, --set-threads)."""
    folder = re.sub(r"[^A-Za-z0-9]+", "_", place).strip("_")
    return f"train_pack_{variant}_{folder}_{index}" + ("_auto" if pending else "")


def producer(packs: list[Pack], bundle: str) -> list[Pack]:
    """The packs whose outputs match one bundle folder (exactly one for every cell of the build)."""
    found = []
    for pack in packs:
        for pattern in pack.outputs():
            regex = re.escape(pattern).replace(re.escape(LR_WILDCARD), r"[0-9][0-9.e+-]*")
            if re.fullmatch(regex, str(Path(bundle))):
                found.append(pack)
                break
    return found


def check_covers(packs: list[Pack], bundles: list[str]) -> None:
    """Every bundle folder is made by exactly one pack (a planning error otherwise, never a user's)."""
    for bundle in bundles:
        makers = producer(packs, bundle)
        if len(makers) != 1:
            raise AssertionError(f"{bundle} is made by {len(makers)} packs ({', '.join(p.rule for p in makers)})")
