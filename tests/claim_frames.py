"""Synthetic tables at and off a claim's protocol, for the ledger's checks.

A check judges a claim only at the protocol its number was made at (each variant at its own best sweep LR,
that LR inside its sweep grid, the cells trained to a plateau: attnlab.pipeline.claims.protocol). These helpers
put synthetic tables on that protocol, or take them off it in one named way, so a test can show that a rule
gives the right verdict in each case.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnlab.pipeline.ground import contract

OFF = ("wrong LR", "LR at the grid's edge", "still improving")


def on_protocol(t: dict) -> dict:
    """The tables with a best_lr row per contest variant at its contest LR (inside its grid) and every run
    trained to a plateau."""
    t = dict(t)
    contest = t.get("contest", pd.DataFrame())
    rows = [{"variant": r.variant, "best_lr": float(r.lr), "lr_edge": ""} for r in contest.itertuples()]
    t["best_lr"] = pd.DataFrame(rows, columns=contract.columns("best_lr")) if rows else pd.DataFrame(
        columns=contract.columns("best_lr"))
    if "runs" in t and not t["runs"].empty:
        runs = t["runs"].copy()
        runs["improving"] = False
        runs["late_gain"] = 0.001
        if "study" not in runs:
            runs["study"] = "contest sweep"
        t["runs"] = runs
    return t


def off_protocol(t: dict, how: str, variant: str) -> dict:
    """On-protocol tables with one precondition broken for `variant`: its sweep's best LR is another one (wrong
    LR), its best LR is the highest of its grid (edge), or its cells are still improving."""
    t = on_protocol(t)
    best = t["best_lr"].copy()
    at = best.variant == variant
    if how == "wrong LR":
        best.loc[at, "best_lr"] = best.loc[at, "best_lr"] * 3.3
    elif how == "LR at the grid's edge":
        best.loc[at, "lr_edge"] = "highest"
    elif how == "still improving":
        runs = t["runs"].copy()
        runs.loc[runs.variant == variant, "improving"] = True
        runs.loc[runs.variant == variant, "late_gain"] = 0.03
        t["runs"] = runs
    else:
        raise ValueError(how)
    t["best_lr"] = best
    return t


def sweep_frame(variant, losses, diverged=(), seeds=(0,)):
    """An lr_sweep table: losses: lr -> loss (the same at every seed, plus a little per seed); diverged: (lr, seed)
    or lr."""
    return pd.DataFrame([{"variant": variant, "lr": lr, "seed": s, "best_val_loss": loss + 0.001 * s,
                          "final_val_loss": loss, "diverged": lr in diverged or (lr, s) in diverged,
                          "diverged_step": np.nan} for lr, loss in losses.items() for s in seeds])
