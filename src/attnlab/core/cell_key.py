"""The key of one cell: variant, LR as its exact text, seed, study and the study's axis values at the cell.

Kept apart from the grid (attnlab.pipeline.ground.grid, which loads the config
machinery) so that tables reading keys depend on this small value alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.core import studies as studies_mod
from attnlab.core.bundle_format import format_lr


@dataclass(frozen=True)
class CellKey:
    """One cell of one study. `lr` is the exact text that names its folder (format_lr), so two keys are equal
    only when their LRs are the same float; `point` is ((dotted axis key, value), ...) in the study's order
    (attnlab.core.studies: the schema's order of keys, whatever order the config lists them in)."""

    variant: str
    lr: str
    seed: int
    study: str = studies_mod.CONTEST
    point: tuple[tuple[str, object], ...] = ()

    @classmethod
    def of(cls, variant: str, lr, seed, study: str = studies_mod.CONTEST, point=()) -> "CellKey":
        """A key from an LR given as a number or as text (read back to its exact text)."""
        return cls(variant, format_lr(lr), int(seed), study, tuple((k, v) for k, v in point))

    @property
    def lr_value(self) -> float:
        return float(self.lr)

    @property
    def axes(self) -> dict:
        """{axis column: value}: the point as a study table's columns show it."""
        return {studies_mod.axis_column(key): value for key, value in self.point}

    @property
    def built_in(self) -> bool:
        """A cell of the contest or the sweep (they share one folder tree, results/runs)."""
        return self.study in studies_mod.BUILT_IN

    def label(self) -> str:
        where = "" if self.built_in else f" ({self.study} {studies_mod.point_text(self.point)})"
        return f"{self.variant} lr={self.lr} seed={self.seed}{where}"

    def to_json(self) -> dict:
        return {"variant": self.variant, "lr": self.lr, "seed": self.seed, "study": self.study,
                "point": [[key, value] for key, value in self.point]}

    @classmethod
    def from_json(cls, data: dict) -> "CellKey":
        return cls.of(data["variant"], data["lr"], data["seed"], data.get("study", studies_mod.CONTEST),
                      [tuple(pair) for pair in data.get("point", ())])
