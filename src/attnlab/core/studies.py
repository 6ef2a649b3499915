"""Studies: the grid as named sets of cells, each a product of axes over model and train keys.

Every config has two built-in studies, the contest (every variant x contest
seed at its contest LR) and the LR sweep (every variant x sweep LR x sweep
seed), written in their own sections. Further studies are listed under
`studies:`; each overrides model and train keys, and a key given a list is an
axis: the study's cells are the product of its axes x its variants x seeds x
LRs. Keys that must move together (a model size: d_model, layers and heads
rising at once) are listed as `points`, each a set of model and train values;
the points are crossed with the axes like one more axis. A point is one
combination of these values; the config a point trains with is the base
config with the study's fixed overrides and the point's values written in.
JAX-free: the loader checks studies with these, the pipeline's grid expands
them into cells.
"""

from __future__ import annotations

import copy
import itertools
import math
from dataclasses import dataclass

from attnlab.core.schema import schema

CONTEST, SWEEP = "contest", "sweep"
LADDER = "ladder"  # the study that is the scale ladder: it also gets the ladder's tables, figures and ledger rows
TWICE_THE_HEADS = "heads"  # the study of softmax with more heads that the ledger's selective-attention row reads
BUILT_IN = (CONTEST, SWEEP)
SECTIONS = ("model", "train")  # the only config sections a study may override
CONTEST_LRS = "contest"  # a study's `lrs` that means each variant's contest LR
# between the axis values of a point's folder name: kv_heads=2+attention_impl=dense. Not a comma: Snakemake
# hands a cluster job its wildcards as `--target-jobs rule:name=value,name=value` and splits them at commas.
POINT_SEPARATOR = "+"
NO_AXES = "base"  # the folder name of the one point of a study without axes


@dataclass(frozen=True)
class Study:
    """One study: its fixed overrides, its axes, and the variants, seeds and LRs its cells train at.

    `fixed` and `axes` use dotted keys ("model.dropout"); `lrs` is None for each
    variant's contest LR, else the study's own LRs (floats). `variant_lrs`, where
    given, replaces `lrs` for the variants it names ((variant, LRs), ...: the
    sweep's per-variant lists). `listed` holds the study's `points`, each
    ((dotted key, value), ...) with the same keys, crossed with the axes (empty:
    the axes alone).
    """

    name: str
    fixed: tuple[tuple[str, object], ...]
    axes: tuple[tuple[str, tuple], ...]
    variants: tuple[str, ...]
    seeds: tuple[int, ...]
    lrs: tuple[float, ...] | None
    listed: tuple[tuple[tuple[str, object], ...], ...] = ()
    variant_lrs: tuple[tuple[str, tuple[float, ...]], ...] = ()

    def lrs_of(self, variant: str) -> tuple[float, ...] | None:
        """The LRs one variant's cells train at (None: its contest LR)."""
        return dict(self.variant_lrs).get(variant, self.lrs)

    def points(self) -> list[tuple[tuple[str, object], ...]]:
        """Every listed point crossed with every combination of axis values, in the order the config gives them
        (one empty point without either)."""
        keys = [key for key, _ in self.axes]
        combos = [tuple(zip(keys, values)) for values in itertools.product(*(values for _, values in self.axes))]
        return [listed + combo for listed in (self.listed or ((),)) for combo in combos]

    def size(self) -> int:
        """How many cells the study has: points x variants x seeds x each variant's LRs."""
        lrs = sum(len(self.lrs_of(v)) if self.lrs_of(v) is not None else 1 for v in self.variants)
        combos = math.prod(len(values) for _, values in self.axes)
        return max(len(self.listed), 1) * combos * len(self.seeds) * lrs

    @property
    def axis_keys(self) -> tuple[str, ...]:
        listed = tuple(key for key, _ in self.listed[0]) if self.listed else ()
        return listed + tuple(key for key, _ in self.axes)


def studies(cfg: dict) -> list[Study]:
    """The contest, the sweep, then the config's own studies, in that order (a validated config)."""
    variants = tuple(cfg["variants"])
    sweep_seeds = cfg["sweep"].get("seeds") or [cfg["sweep"]["seed"]]
    by_variant = sweep_lrs(cfg)
    built_in = [
        Study(CONTEST, (), (), variants, tuple(cfg["contest"]["seeds"]), None),
        Study(SWEEP, (), (), variants, tuple(sweep_seeds), all_sweep_lrs(cfg),
              variant_lrs=tuple((v, by_variant[v]) for v in variants)),
    ]
    return built_in + [study(entry, cfg) for entry in cfg.get("studies") or ()]


def sweep_lrs(cfg: dict) -> dict[str, tuple[float, ...]]:
    """Each variant's sweep LRs, ascending: sweep.lrs when it is one list, else the variant's own list."""
    lrs = cfg["sweep"]["lrs"]
    own = lrs if isinstance(lrs, dict) else {v: lrs for v in cfg["variants"]}
    return {v: tuple(sorted(float(lr) for lr in own.get(v, ()))) for v in cfg["variants"]}


def all_sweep_lrs(cfg: dict) -> tuple[float, ...]:
    """Every LR some variant sweeps, ascending."""
    return tuple(sorted({lr for lrs in sweep_lrs(cfg).values() for lr in lrs}))


def study(entry: dict, cfg: dict) -> Study:
    """One entry of `studies:` as a Study; absent variants, seeds and lrs mean the contest's."""
    fixed, axes = [], []
    for section in SECTIONS:
        for key, value in (entry.get(section) or {}).items():
            (axes if isinstance(value, list) else fixed).append(
                (f"{section}.{key}", tuple(value) if isinstance(value, list) else value))
    lrs = entry.get("lrs", CONTEST_LRS)
    listed = tuple(tuple(sorted(((f"{section}.{key}", value) for section in SECTIONS
                                 for key, value in (point.get(section) or {}).items()),
                                key=lambda pair: key_order(pair[0])))
                   for point in entry.get("points") or ())
    return Study(
        name=entry["name"], fixed=tuple(fixed), axes=tuple(sorted(axes, key=lambda axis: key_order(axis[0]))),
        variants=tuple(entry.get("variants") or cfg["variants"]),
        seeds=tuple(entry.get("seeds") or cfg["contest"]["seeds"]),
        lrs=None if lrs == CONTEST_LRS else tuple(float(lr) for lr in lrs), listed=listed,
    )


def key_order(key: str) -> tuple:
    """Where a dotted key stands in the schema (model before train, then the order each section lists its keys):
    the order of a point's keys, so the order a config happens to list them in (or a tool that rewrites the
    YAML sorted) moves no cell to another folder and changes no cell's key."""
    section, name = key.split(".", 1)
    names = list(schema()["properties"][section].get("properties", {}))
    return SECTIONS.index(section), names.index(name) if name in names else len(names), name


def resolved(cfg: dict, overrides) -> dict:
    """The config with dotted-key overrides written in: what one point of a study trains with.

    Only what the overrides touch is copied (the config's top level and the sections they set), so planning
    many points costs what their overrides cost, not a copy of the whole config each; the untouched sections
    are the config's own, shared, and callers only read them.
    """
    out = dict(cfg)
    for key, value in overrides:
        section, name = key.split(".", 1)
        if out[section] is cfg[section]:
            out[section] = dict(cfg[section])
        out[section][name] = copy.deepcopy(value)
    return out


def value_text(value) -> str:
    """An axis value as text in a folder name and a table: 4, 0.1, dense, null, true."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)  # lossless, like an LR's folder name
    return str(value)


def point_text(point) -> str:
    """A point as a folder name and in messages: each key without its section, then its value (kv_heads=2+...),
    in the point's order (the schema's order of keys, see study)."""
    if not point:
        return NO_AXES
    return POINT_SEPARATOR.join(f"{key.split('.', 1)[1]}={value_text(value)}" for key, value in point)


def axis_column(key: str) -> str:
    """The column of an axis in a study's tables: its key without the section (model.kv_heads -> kv_heads)."""
    return key.split(".", 1)[1]
