"""Load, validate and slice pipeline configs; errors name the key and the fix."""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from attnlab.attention import VARIANTS
from attnlab.model import ModelConfig

SCHEMA_NAME = "config.schema.yaml"
AUTO = "auto"


class ConfigError(ValueError):
    """A config that cannot run; the message names the key and how to fix it."""


@dataclass(frozen=True)
class TrainConfig:
    steps: int  # optimiser steps
    batch_size: int  # sequences per step
    eval_every: int  # steps between validation evaluations
    eval_batches: int  # fixed held-out batches per evaluation
    weight_decay: float  # AdamW weight decay
    checkpoint_every: int  # steps between resumable checkpoints
    diverge_loss: float  # training loss ceiling; above it (or non-finite) the cell stops


def schema() -> dict:
    return yaml.safe_load(resources.files("attnlab").joinpath(SCHEMA_NAME).read_text())


def load_config(path: str | Path) -> dict:
    """Read a YAML config with a safe loader, fill defaults, validate it."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist; pick one of config/*.yaml")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise ConfigError(f"config file {path} is not valid YAML: {err}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {path} must hold a mapping of keys, not {type(raw).__name__}")
    return validate_config(raw, source=str(path))


def validate_config(raw: dict, source: str = "config") -> dict:
    """Schema check (unknown keys, types) then the cross-key rules a schema cannot say."""
    cfg = copy.deepcopy(raw)
    fill_defaults(cfg, schema())
    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(cfg), key=lambda e: list(e.absolute_path))
    if errors:
        raise ConfigError(f"{source}: " + "; ".join(_describe(e) for e in errors))
    check_semantics(cfg, source)
    return cfg


def fill_defaults(node: dict, node_schema: dict) -> None:
    """Insert each missing key's schema default, recursing into objects."""
    for key, sub in node_schema.get("properties", {}).items():
        if key not in node and "default" in sub:
            node[key] = copy.deepcopy(sub["default"])
        if isinstance(node.get(key), dict) and sub.get("type") == "object":
            fill_defaults(node[key], sub)


def check_semantics(cfg: dict, source: str = "config") -> None:
    problems = []
    for variant in cfg["variants"]:
        if variant not in VARIANTS:
            problems.append(f"variants: unknown variant {variant!r}; valid variants are {', '.join(VARIANTS)}")
    for variant in cfg["contest"]["lr"]:
        if variant not in cfg["variants"]:
            problems.append(f"contest.lr.{variant}: not in variants {cfg['variants']}; remove it or add the variant")
    for variant in cfg["variants"]:
        if variant not in cfg["contest"]["lr"]:
            problems.append(f"contest.lr: no learning rate for {variant!r}; give a number or 'auto'")
    model, train = cfg["model"], cfg["train"]
    if model["d_model"] % model["heads"]:
        problems.append(f"model.heads: {model['heads']} does not divide model.d_model {model['d_model']}")
    if train["eval_every"] > train["steps"]:
        problems.append(
            f"train.eval_every: {train['eval_every']} is larger than train.steps {train['steps']}; "
            "no evaluation would run, lower it"
        )
    if problems:
        raise ConfigError(f"{source}: " + "; ".join(problems))


def _describe(error: jsonschema.ValidationError) -> str:
    key = ".".join(str(p) for p in error.absolute_path) or "(top level)"
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        return f"{key}: {error.message}; allowed keys here: {', '.join(allowed)}"
    if isinstance(error.instance, str) and _looks_numeric(error.instance):
        return f"{key}: {error.instance!r} is text, not a number; write it with a decimal point (e.g. 3.0e-4)"
    return f"{key}: {error.message}"


def _looks_numeric(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def model_config(cfg: dict, variant: str, vocab_size: int) -> ModelConfig:
    m = cfg["model"]
    return ModelConfig(
        vocab_size=vocab_size,
        d_model=m["d_model"],
        layers=m["layers"],
        heads=m["heads"],
        block_size=m["block_size"],
        d_ff=m["d_ff"],
        dropout=float(m["dropout"]),
        variant=variant,
        a3_embed_dim=m.get("a3_embed_dim"),
    )


def train_config(cfg: dict) -> TrainConfig:
    t = cfg["train"]
    return TrainConfig(
        steps=t["steps"],
        batch_size=t["batch_size"],
        eval_every=t["eval_every"],
        eval_batches=t["eval_batches"],
        weight_decay=float(t["weight_decay"]),
        checkpoint_every=t.get("checkpoint_every") or t["eval_every"],
        diverge_loss=float(t["diverge_loss"]),
    )


def cell_slice(cfg: dict) -> dict:
    """The part of a config that changes a training cell's numbers.

    Rules pass this (not the whole config) to training jobs and as params, so
    editing a figure setting never retrains.
    """
    sliced = {key: copy.deepcopy(cfg[key]) for key in ("name", "data", "model", "train", "telemetry")}
    # Where the corpus came from does not change a number: its checksum does. Nor do the
    # resources a job declares (raising mem_mb after an out-of-memory kill must not retrain).
    sliced["data"] = {k: v for k, v in sliced["data"].items() if k not in ("path", "url")}
    sliced["train"] = {k: v for k, v in sliced["train"].items() if k not in ("threads", "mem_mb")}
    return sliced


def to_json(obj) -> str:
    """Compact, key-sorted JSON: the form config slices travel in (and are compared as params)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def grid(cfg: dict, selected_lr: dict[str, float] | None = None) -> dict:
    """The cells to train: the contest united with the LR sweep, each once.

    A contest LR of 'auto' resolves through selected_lr (the sweep's best);
    unresolved auto variants contribute only their sweep cells.
    """
    selected_lr = selected_lr or {}
    contest_lr = {}
    for variant in cfg["variants"]:
        lr = cfg["contest"]["lr"][variant]
        if lr == AUTO:
            lr = selected_lr.get(variant)
        if lr is not None:
            contest_lr[variant] = float(lr)
    cells = {(v, float(lr), cfg["sweep"]["seed"]) for v in cfg["variants"] for lr in cfg["sweep"]["lrs"]}
    cells |= {(v, lr, seed) for v, lr in contest_lr.items() for seed in cfg["contest"]["seeds"]}
    return {
        "cells": sorted(cells),
        "contest_lr": contest_lr,
        "contest_seeds": list(cfg["contest"]["seeds"]),
        "sweep_lrs": [float(x) for x in cfg["sweep"]["lrs"]],
        "sweep_seed": cfg["sweep"]["seed"],
        "variants": list(cfg["variants"]),
        "protocol": cfg["name"],
    }
