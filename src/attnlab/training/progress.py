"""Where a cell's training stands, saved with every checkpoint as JSON so that a resumed run ends the same."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from attnlab.core.bundle_format import CURVE_COLUMNS

# Where an evaluation row of the curve keeps each number (the bundle's curve.csv columns).
VAL, SELECT, REPORT = (CURVE_COLUMNS.index(name) for name in ("val_loss", "val_loss_select", "val_loss_report"))


@dataclass
class Progress:
    """Where a cell stands; saved with every checkpoint as JSON."""

    cell: str  # the cell's identity (config slice, cell, code fingerprint)
    step: int = 0
    # [step, mean train loss since last eval, val loss, elapsed s, val loss of the select half, of the report half]
    curve: list = field(default_factory=list)
    pending_losses: list = field(default_factory=list)  # train losses since the last evaluation
    elapsed_s: float = 0.0
    diverged_step: int | None = None
    resumed_from: list = field(default_factory=list)
    plateau_step: int | None = None  # the evaluation at which the plateau rule stopped the cell (train.plateau)

    @classmethod
    def from_json(cls, data: dict) -> "Progress":
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})
