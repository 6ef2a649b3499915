"""The contest and the LR sweep as the tables read them: one typed value, made by the plan, read by collection.

It travels to the collect step as JSON (`to_json`, `from_json`); every table
function takes it (or its JSON form, which `of` reads) and reads its fields by
name, so a key the tables need and the plan forgot (the variants, the contest's
LRs and seeds) is an error here, not a silent default three modules away.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from attnlab.core.cell_key import CellKey


@dataclass(frozen=True)
class ContestGrid:
    variants: tuple[str, ...]
    contest_lr: dict[str, float]  # each variant's contest LR; an 'auto' variant only once its sweep has chosen
    contest_seeds: tuple[int, ...]
    sweep_seeds: tuple[int, ...] = ()  # the seeds the sweep trains at (none: a grid of the contest alone)
    sweep_lrs: tuple[float, ...] = ()  # every LR any variant sweeps
    sweep_lrs_by_variant: dict[str, tuple[float, ...]] = field(default_factory=dict)
    auto: tuple[str, ...] = ()  # the variants whose contest LR the sweep chooses
    cells: tuple[tuple[str, float, int], ...] = ()  # each distinct cell once: (variant, LR, seed)
    keys: tuple[CellKey, ...] = ()  # every cell of the contest and of the sweep (a shared cell once in each)
    protocol: str = ""  # the config's name
    rounds_design: dict = field(default_factory=dict)  # seeds added under a design (design.Design.to_json); {}: fixed
    sweep_extend: int = 0  # how many LRs a sweep may add beyond its grid (sweep.extend)
    sweep_given: dict[str, tuple[float, ...]] = field(default_factory=dict)  # each grid as the config gave it

    def sweep_added(self, variant: str) -> int:
        """How many LRs the variant's sweep added beyond the grid the config gave (0 where none may be)."""
        if variant not in self.sweep_given:
            return 0
        return len(set(self.sweep_lrs_of(variant)) - set(self.sweep_given[variant]))

    def sweep_lrs_of(self, variant: str) -> list[float]:
        """The LRs one variant's sweep trains, in order (its own list, else the one every variant sweeps)."""
        return sorted(float(lr) for lr in self.sweep_lrs_by_variant.get(variant, self.sweep_lrs))

    def lr_choice(self, variant: str) -> str:
        return "auto" if variant in self.auto else "given"

    def to_json(self) -> dict:
        data = {"variants": list(self.variants), "contest_lr": dict(self.contest_lr),
                "contest_seeds": list(self.contest_seeds), "sweep_seeds": list(self.sweep_seeds),
                "sweep_lrs": list(self.sweep_lrs),
                "sweep_lrs_by_variant": {v: list(lrs) for v, lrs in self.sweep_lrs_by_variant.items()},
                "auto": list(self.auto), "cells": [list(c) for c in self.cells],
                "keys": [key.to_json() for key in self.keys], "protocol": self.protocol}
        # only where seeds are added (a sweep extended), so another build's collect step keeps its params
        if self.rounds_design:
            data["rounds_design"] = self.rounds_design
        if self.sweep_extend:
            data.update(sweep_extend=self.sweep_extend,
                        sweep_given={v: list(lrs) for v, lrs in self.sweep_given.items()})
        return data

    @classmethod
    def from_json(cls, data: dict) -> "ContestGrid":
        return cls(variants=tuple(data["variants"]),
                   contest_lr={v: float(lr) for v, lr in data["contest_lr"].items()},
                   contest_seeds=tuple(int(s) for s in data["contest_seeds"]),
                   sweep_seeds=tuple(int(s) for s in data.get("sweep_seeds") or ()),
                   sweep_lrs=tuple(float(lr) for lr in data.get("sweep_lrs") or ()),
                   sweep_lrs_by_variant={v: tuple(float(lr) for lr in lrs)
                                         for v, lrs in (data.get("sweep_lrs_by_variant") or {}).items()},
                   auto=tuple(data.get("auto") or ()),
                   cells=tuple((v, float(lr), int(s)) for v, lr, s in data.get("cells") or ()),
                   keys=tuple(CellKey.from_json(k) for k in data.get("keys") or ()),
                   protocol=str(data.get("protocol", "")),
                   rounds_design=dict(data.get("rounds_design") or {}),
                   sweep_extend=int(data.get("sweep_extend") or 0),
                   sweep_given={v: tuple(float(lr) for lr in lrs)
                                for v, lrs in (data.get("sweep_given") or {}).items()})

    @classmethod
    def of(cls, value) -> "ContestGrid":
        """The grid itself, or one read from its JSON form."""
        return value if isinstance(value, cls) else cls.from_json(value)
