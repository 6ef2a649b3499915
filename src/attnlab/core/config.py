"""Load and validate a config file once, the same way for the command line and the Snakefile.

A file's own values are filled with the schema's defaults (never merged over
another config file), checked against the schema, then against the rules a
schema cannot say. Every refusal names the key and the fix, before any compute.
"""

from __future__ import annotations

import copy
import math
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

import jsonschema
import yaml

from attnlab.core.bundle_format import format_lr
from attnlab.core.config_types import to_json  # noqa: F401  (re-exported: the slice's wire form)
from attnlab.core.errors import ConfigError
from attnlab.core.variants import VARIANTS

SCHEMA_NAME = "config.schema.yaml"
AUTO = "auto"
SEED_LIMIT = 2**32  # seeds are 0 <= s < 2^32 (numpy's and JAX's seed range)
MAX_EXPANDED_NODES = 10_000  # a config expands to far fewer YAML nodes; an alias bomb to far more
MOVED_TO_PROFILES = {
    "threads": "set `set-threads: {train_cell: N}` in a Snakemake profile (workflow/profiles/*) or pass "
               "--set-threads train_cell=N",
    "mem_mb": "set `set-resources: {train_cell: {mem_mb: N}}` in a Snakemake profile or pass "
              "--set-resources train_cell:mem_mb=N",
}


@lru_cache(maxsize=1)
def schema() -> dict:
    """The config schema, parsed once per process (treat it as read-only).

    libyaml's loader when PyYAML has it: the pure-Python one is a visible share of a no-op dry run."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(resources.files("attnlab.core").joinpath(SCHEMA_NAME).read_text(), Loader=loader)


def load_config(path: str | Path) -> dict:
    """Read a YAML config strictly, fill the schema's defaults and validate it."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist or is not a file; pick one of config/*.yaml")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"config file {path} cannot be read as UTF-8 text ({err})") from None
    raw = parse_yaml(text, str(path))
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {path} must hold a mapping of keys, not {type(raw).__name__}")
    return validate_config(raw, source=str(path))


def validate_config(raw: dict, source: str = "config") -> dict:
    """Schema check (unknown keys, types, ranges) then the cross-key rules a schema cannot say."""
    cfg = copy.deepcopy(raw)
    _refuse_moved_keys(cfg, source)
    _refuse_non_finite(cfg, source)
    fill_defaults(cfg, schema())
    validator = _Validator(schema())
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
    """The rules that tie keys together (and the registry of variants)."""
    problems = []
    for variant in cfg["variants"]:
        if variant not in VARIANTS:
            problems.append(f"variants: unknown variant {variant!r}; valid variants are {', '.join(VARIANTS)}")
    for variant in cfg["contest"]["lr"]:
        if variant not in cfg["variants"]:
            problems.append(f"contest.lr.{variant}: {variant!r} is not in this file's variants "
                            f"{cfg['variants']}; remove it or add the variant")
    for variant in cfg["variants"]:
        if variant not in cfg["contest"]["lr"]:
            problems.append(f"contest.lr: no learning rate for {variant!r}; give a number or 'auto'")
    model, train, telemetry = cfg["model"], cfg["train"], cfg["telemetry"]
    if model["d_model"] % model["heads"]:
        problems.append(f"model.heads: {model['heads']} does not divide model.d_model {model['d_model']}")
    if model.get("kv_heads") is not None and model["heads"] % model["kv_heads"]:
        problems.append(f"model.kv_heads: {model['kv_heads']} does not divide model.heads {model['heads']}; "
                        "each key/value head serves a whole group of query heads (null means heads)")
    if train["eval_every"] > train["steps"]:
        problems.append(f"train.eval_every: {train['eval_every']} is larger than train.steps {train['steps']}; "
                        "no evaluation would run, lower it")
    if telemetry["entropy_min_keys"] > model["block_size"]:
        problems.append(f"telemetry.entropy_min_keys: {telemetry['entropy_min_keys']} is larger than "
                        f"model.block_size {model['block_size']}; no row would have that many keys, lower it")
    grid = cfg.get("composability") or {}
    for kv in grid.get("kv_heads", []):
        if model["heads"] % kv:
            problems.append(f"composability.kv_heads: {kv} does not divide model.heads {model['heads']}")
    if grid and any(lr == AUTO for lr in cfg["contest"]["lr"].values()):
        problems.append("contest.lr: the composability grid trains at each variant's contest LR; give numbers, "
                        "not 'auto'")
    problems += _lr_folder_clashes(cfg)
    if problems:
        raise ConfigError(f"{source}: " + "; ".join(problems))


def cell_slice(cfg: dict) -> dict:
    """The part of a config that changes a training cell's numbers.

    Rules pass this (not the whole config) to training jobs and as params, so
    editing a figure setting never retrains. Where the corpus came from does not
    change a number (its checksum does), so data.path and data.url are left out.
    """
    sliced = {key: copy.deepcopy(cfg[key]) for key in ("name", "data", "model", "train", "telemetry")}
    sliced["data"] = {k: v for k, v in sliced["data"].items() if k not in ("path", "url")}
    return sliced


# ---- strict YAML


class _StrictLoader(yaml.SafeLoader):
    """A safe loader that refuses duplicate keys and non-decimal integers (YAML 1.1's 007 is octal)."""


def _construct_mapping(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            raise ConfigError(f"duplicate key {key!r} at line {key_node.start_mark.line + 1}: the later one would "
                              "silently replace the earlier; keep one")
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


def _construct_int(loader, node):
    text = loader.construct_scalar(node)
    if not re.fullmatch(r"[-+]?(0|[1-9][0-9_]*)", text):
        raise ConfigError(f"{text!r} at line {node.start_mark.line + 1} is not a plain decimal integer (YAML would "
                          f"read it as octal, hex or base 60); write it without leading zeros")
    return int(text.replace("_", ""))


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_StrictLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def parse_yaml(text: str, source: str):
    """YAML text -> Python, refusing tags, duplicate keys, odd integers and alias bombs, with the place named."""
    try:
        loader = _StrictLoader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            if _expanded_size(node, {}) > MAX_EXPANDED_NODES:
                raise ConfigError(f"its YAML aliases expand to more than {MAX_EXPANDED_NODES:,} values; "
                                  "write the values out instead of nesting aliases")
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as err:
        raise ConfigError(f"config file {source} is not valid YAML (plain values only): {err}") from None
    except ConfigError as err:
        raise ConfigError(f"config file {source}: {err}") from None


def _expanded_size(node, memo: dict) -> int:
    """How many values the node stands for once aliases are expanded (linear time: shared nodes memoised)."""
    if id(node) in memo:
        return memo[id(node)]
    memo[id(node)] = MAX_EXPANDED_NODES + 1  # a node that contains itself expands without end
    if isinstance(node, yaml.MappingNode):
        size = 1 + sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    elif isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded_size(v, memo) for v in node.value)
    else:
        size = 1
    memo[id(node)] = min(size, MAX_EXPANDED_NODES + 1)
    return memo[id(node)]


# ---- checks


def _is_int(checker, instance) -> bool:
    """Counts are Python ints: 60.0 is not a step count (jsonschema alone would accept it)."""
    return isinstance(instance, int) and not isinstance(instance, bool)


_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_int),
)


def _refuse_moved_keys(cfg: dict, source: str) -> None:
    train = cfg.get("train")
    moved = [key for key in MOVED_TO_PROFILES if isinstance(train, dict) and key in train]
    if moved:
        raise ConfigError(f"{source}: " + "; ".join(
            f"train.{key} is a runtime resource and has moved out of the config: {MOVED_TO_PROFILES[key]}"
            for key in moved))


def _refuse_non_finite(node, source: str, where: str = "") -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            _refuse_non_finite(value, source, f"{where}.{key}" if where else str(key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _refuse_non_finite(value, source, f"{where}[{i}]")
    elif isinstance(node, float) and not math.isfinite(node):
        raise ConfigError(f"{source}: {where}: {node} is not a finite number; give a finite value")


def _lr_folder_clashes(cfg: dict) -> list[str]:
    """Two different LRs must never map to one cell folder."""
    lrs = [float(x) for x in cfg["sweep"]["lrs"]]
    lrs += [float(x) for x in cfg["contest"]["lr"].values() if x != AUTO]
    by_name: dict[str, set[float]] = {}
    for lr in lrs:
        by_name.setdefault(format_lr(lr), set()).add(lr)
    return [f"sweep.lrs / contest.lr: {sorted(v)} all map to the cell folder lr{k}; keep one of them"
            for k, v in by_name.items() if len(v) > 1]


def _describe(error: jsonschema.ValidationError) -> str:
    key = ".".join(str(p) for p in error.absolute_path) or "(top level)"
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        return f"{key}: {error.message}; allowed keys here: {', '.join(allowed)}"
    if isinstance(error.instance, str) and _looks_numeric(error.instance):
        return f"{key}: {error.instance!r} is text, not a number; write it with a decimal point (e.g. 3.0e-4)"
    if error.validator == "type" and "integer" in (error.validator_value if isinstance(error.validator_value, list)
                                                   else [error.validator_value]) and isinstance(error.instance, float):
        return f"{key}: {error.instance!r} is not a whole number; write it without a decimal point"
    if key.startswith(("contest.seeds", "sweep.seed")) and error.validator in ("maximum", "minimum"):
        return f"{key}: seed {error.instance} is outside 0 <= seed < 2^32; pick a seed in that range"
    return f"{key}: {error.message}"


def _looks_numeric(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False
