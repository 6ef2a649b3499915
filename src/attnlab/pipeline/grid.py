"""The cells to train: the contest united with the LR sweep, each cell once."""

from __future__ import annotations

from attnlab.core.config import AUTO


def grid(cfg: dict, selected_lr: dict[str, float] | None = None) -> dict:
    """The cells to train: the contest united with the LR sweep, each once.

    A contest LR of 'auto' resolves through selected_lr (the sweep's best);
    unresolved auto variants contribute only their sweep cells. The sweep
    trains every sweep LR at each of its seeds (sweep.seeds, which defaults to
    the one sweep.seed).
    """
    selected_lr = selected_lr or {}
    contest_lr = {}
    for variant in cfg["variants"]:
        lr = cfg["contest"]["lr"][variant]
        if lr == AUTO:
            lr = selected_lr.get(variant)
        if lr is not None:
            contest_lr[variant] = float(lr)
    seeds = sweep_seeds(cfg)
    cells = {(v, float(lr), seed) for v in cfg["variants"] for lr in cfg["sweep"]["lrs"] for seed in seeds}
    cells |= {(v, lr, seed) for v, lr in contest_lr.items() for seed in cfg["contest"]["seeds"]}
    return {
        "cells": sorted(cells),
        "contest_lr": contest_lr,
        "auto": [v for v in cfg["variants"] if cfg["contest"]["lr"][v] == AUTO],
        "contest_seeds": list(cfg["contest"]["seeds"]),
        "sweep_lrs": [float(x) for x in cfg["sweep"]["lrs"]],
        "sweep_seed": cfg["sweep"]["seed"],
        "sweep_seeds": seeds,
        "variants": list(cfg["variants"]),
        "protocol": cfg["name"],
    }


def sweep_seeds(cfg: dict) -> list[int]:
    """The seeds the sweep trains at: sweep.seeds, else the one sweep.seed."""
    return list(cfg["sweep"].get("seeds") or [cfg["sweep"]["seed"]])
