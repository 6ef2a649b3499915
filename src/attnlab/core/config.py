"""Load and validate a config file once, the same way for the command line and the Snakefile.

A file's own values are filled with the schema's defaults (never merged over
another config file), checked against the schema, then against the rules a
schema cannot say. Every refusal names the key and the fix, before any compute.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import jsonschema

from attnlab.core import studies as studies_mod
from attnlab.core import study_checks
from attnlab.core.bundle_format import format_lr
from attnlab.core.cell import kv_heads_problem
from attnlab.core.config_types import to_json  # noqa: F401  (re-exported: the slice's wire form)
from attnlab.core.errors import ConfigError
from attnlab.core.estimate import check_bounds
from attnlab.core.schema import SCHEMA_NAME, SLICE_SECTIONS, Validator, schema  # noqa: F401  (re-exported)
from attnlab.core.strict_yaml import parse_yaml
from attnlab.core.variants import EXTERNAL, VARIANTS, UnknownVariantError, check_variant, declared, \
    plugin_problem

AUTO = "auto"
MAX_CONFIG_BYTES = 1 << 20  # configs are a few KB of text


def load_config(path: str | Path) -> dict:
    """Read a YAML config strictly, fill the schema's defaults and validate it."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist or is not a file; pick one of config/*.yaml")
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
        if len(data) > MAX_CONFIG_BYTES:
            raise ConfigError(f"config file {path} is larger than {MAX_CONFIG_BYTES >> 20} MiB; a config is a few "
                              "KB of YAML: check that this is the file you meant")
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"config file {path} cannot be read as UTF-8 text ({err})") from None
    raw = parse_yaml(text, str(path))
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {path} must hold a mapping of keys, not {type(raw).__name__}")
    return validate_config(raw, source=str(path))


def validate_config(raw: dict, source: str = "config", node_schema: dict | None = None) -> dict:
    """Schema check (unknown keys, types, ranges) then the cross-key rules a schema cannot say, then every
    study's cells (see check_studies). `node_schema` replaces the project's schema (tests)."""
    node_schema = schema() if node_schema is None else node_schema
    cfg = copy.deepcopy(raw)
    _refuse_non_finite(cfg, source)
    study_checks.check_study_keys(cfg.get("studies"), node_schema, source)
    seed_given = isinstance(cfg.get("sweep"), dict) and "seed" in cfg["sweep"]
    fill_defaults(cfg, node_schema)
    validator = Validator(node_schema)
    errors = sorted(validator.iter_errors(cfg), key=lambda e: list(e.absolute_path))
    if errors:
        raise ConfigError(f"{source}: " + "; ".join(_describe(e) for e in errors))
    _resolve_sweep_seeds(cfg["sweep"], seed_given, source)
    cfg["train"]["eval_context_multiples"] = sorted(cfg["train"]["eval_context_multiples"])  # one cell, any order
    check_semantics(cfg, source)
    check_bounds(cfg, source)
    study_checks.check_studies(cfg, _check_point, source)
    return cfg


def _check_point(resolved: dict, where: str) -> None:
    """One study point's whole config: the rules that tie keys together, and what a cell of it costs."""
    check_semantics(resolved, where)
    check_bounds(resolved, where)


def _resolve_sweep_seeds(sweep: dict, seed_given: bool, source: str) -> None:
    """sweep.seeds null means [sweep.seed]; a list without sweep.seed makes its first seed sweep.seed."""
    if sweep.get("seeds") is None:
        sweep["seeds"] = [sweep["seed"]]
    elif not seed_given:
        sweep["seed"] = sweep["seeds"][0]
    elif sweep["seed"] not in sweep["seeds"]:
        raise ConfigError(f"{source}: sweep.seed: {sweep['seed']} is not one of sweep.seeds {sweep['seeds']}; "
                          "drop sweep.seed (the first of sweep.seeds stands for it) or add it to sweep.seeds")


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
            try:
                check_variant(variant)
            except UnknownVariantError as err:
                problems.append(f"variants: {str(err).replace('unknown attention variant', 'unknown variant')}")
        elif variant in EXTERNAL and (problem := plugin_problem(variant)):
            problems.append(f"variants: {problem}")
    problems += _per_variant_problems(cfg["contest"]["lr"], "contest.lr", cfg["variants"],
                                      "no learning rate for {!r}; give a number or 'auto'")
    model, train, telemetry = cfg["model"], cfg["train"], cfg["telemetry"]
    if model["d_model"] % model["heads"]:
        problems.append(f"model.heads: {model['heads']} does not divide model.d_model {model['d_model']}")
    problems += _variant_problems(cfg)
    if model.get("kv_heads") is not None and (problem := kv_heads_problem(model["kv_heads"], model["heads"])):
        problems.append(f"model.kv_heads: {problem} (null means heads)")
    if train["eval_every"] > train["steps"]:
        problems.append(f"train.eval_every: {train['eval_every']} is larger than train.steps {train['steps']}; "
                        "no evaluation would run, lower it")
    if (plateau := train.get("plateau")) is not None:
        if plateau["patience"] % train["eval_every"]:
            problems.append(f"train.plateau.patience: {plateau['patience']} is not a multiple of train.eval_every "
                            f"{train['eval_every']}; make the window span whole evaluations")
        elif max(plateau["patience"], plateau.get("min_steps", 0)) >= train["steps"]:
            problems.append(f"train.plateau: patience {plateau['patience']} or min_steps {plateau.get('min_steps', 0)} "
                            f"is not below train.steps {train['steps']} (the ceiling); no cell could stop before it, "
                            "raise train.steps")
    if train.get("eval_context_multiples") and model.get("position", "learned") != "none":
        problems.append(f"train.eval_context_multiples: {train['eval_context_multiples']} needs model.position: none; "
                        "a learned position embedding stops at model.block_size, so the model cannot read a longer "
                        "window")
    if telemetry["entropy_min_keys"] > model["block_size"]:
        problems.append(f"telemetry.entropy_min_keys: {telemetry['entropy_min_keys']} is larger than "
                        f"model.block_size {model['block_size']}; no row would have that many keys, lower it")
    if isinstance(cfg["sweep"]["lrs"], dict):
        problems += _per_variant_problems(cfg["sweep"]["lrs"], "sweep.lrs", cfg["variants"],
                                          "no learning rates for {!r}; give it a list (a mapping of sweep.lrs "
                                          "names every variant's LRs)")
    problems += _lr_folder_clashes(cfg)
    if problems:
        raise ConfigError(f"{source}: " + "; ".join(problems))


def _variant_problems(cfg: dict) -> list[str]:
    """What a variant's module declares (attnlab.core.variants.declared): the settings model.variant_options gives
    it within their declared ranges, and a head count it can pair."""
    problems = []
    for variant in (v for v in cfg["variants"] if v in VARIANTS):
        multiple = declared(variant).heads_multiple
        if cfg["model"]["heads"] % multiple:
            problems.append(f"model.heads: {variant} needs a multiple of {multiple} heads, not "
                            f"{cfg['model']['heads']}; pick another head count or leave {variant} out")
    for variant, given in cfg["model"].get("variant_options", {}).items():
        key = f"model.variant_options.{variant}"
        if variant not in VARIANTS:
            problems.append(f"{key}: {variant!r} is no variant; valid variants are: {', '.join(VARIANTS)}")
            continue
        settings = declared(variant).settings
        if not settings:
            problems.append(f"{key}: {variant} declares no settings; remove the entry")
            continue
        spec = {"type": "object", "additionalProperties": False, "properties": settings}
        for error in sorted(Validator(spec).iter_errors(given), key=lambda e: list(e.absolute_path)):
            where = ".".join([key, *map(str, error.absolute_path)])
            if error.validator == "additionalProperties":
                problems.append(f"{where}: {error.message}; {variant}'s settings are {', '.join(settings)}")
            else:
                name = error.absolute_path[0] if error.absolute_path else None
                allowed = _allowed(settings[name]) if name in settings else ""
                problems.append(f"{where}: {error.message}" + (f" (allowed: {allowed})" if allowed else ""))
    return problems


def _allowed(setting: dict) -> str:
    """A declared setting's valid values in words: 'an integer from 1 to 16'."""
    kind = {"integer": "an integer", "number": "a number", "boolean": "true or false"}.get(setting.get("type"), "")
    if "enum" in setting:
        return "one of " + ", ".join(map(str, setting["enum"]))
    low, high = setting.get("minimum"), setting.get("maximum")
    bounds = (f" from {low} to {high}" if low is not None and high is not None else
              f" of at least {low}" if low is not None else f" of at most {high}" if high is not None else "")
    return f"{kind}{bounds}".strip()


def variant_slice(sliced: dict, variant: str) -> dict:
    """A folder's config slice as one variant's cells are identified by it: model.variant_options narrowed to that
    variant's entry (the key left out where it has none), so one variant's settings never change another's cells."""
    options = sliced.get("model", {}).get("variant_options")
    if options is None:
        return sliced
    model = {k: v for k, v in sliced["model"].items() if k != "variant_options"}
    if options.get(variant):
        model["variant_options"] = {variant: options[variant]}
    return {**sliced, "model": model}


def _set_away_from_defaults(options: dict) -> dict:
    """model.variant_options with every setting at its declared default left out, and every variant left with
    none: a setting given at its default changes no cell."""
    kept = {}
    for variant, given in sorted(options.items()):
        settings = declared(variant).settings if variant in VARIANTS else {}
        own = {name: value for name, value in sorted(given.items())
               if name not in settings or to_json(value) != to_json(settings[name].get("default"))}
        if own:
            kept[variant] = own
    return kept


def _per_variant_problems(mapping: dict, key: str, variants: list, missing: str) -> list[str]:
    """A mapping keyed by variant names exactly this file's variants: none unknown, none missing."""
    problems = [f"{key}.{v}: {v!r} is not in this file's variants {variants}; remove it or add the variant"
                for v in mapping if v not in variants]
    return problems + [f"{key}: {missing.format(v)}" for v in variants if v not in mapping]


IDENTITY_KEYS = "x-identity-keys"  # the schema's list, per section, of keys always in a cell's identity


def cell_slice(cfg: dict, node_schema: dict | None = None) -> dict:
    """The part of a config that changes a training cell's numbers: its identity.

    Rules pass this (not the whole config) to training jobs and as params, so
    editing a figure setting never retrains. Where the corpus came from does not
    change a number (its checksum does), so data.path and data.url are left out.
    A key outside its section's x-identity-keys (in the schema) is left out
    while it holds its default, so adding a key whose default keeps the old
    behaviour changes no built cell's identity; the trainer's typed views
    (attnlab.core.config_types) read such a key's default when it is absent.
    """
    node_schema = schema() if node_schema is None else node_schema
    sliced = {key: copy.deepcopy(cfg[key]) for key in ("name", *SLICE_SECTIONS)}
    sliced["data"] = {k: v for k, v in sliced["data"].items() if k not in ("path", "url")}
    if "variant_options" in sliced["model"]:
        sliced["model"]["variant_options"] = _set_away_from_defaults(sliced["model"]["variant_options"])
    for section in SLICE_SECTIONS:
        spec = node_schema["properties"][section]
        always = set(spec.get(IDENTITY_KEYS, ()))
        for key, sub in spec.get("properties", {}).items():
            if (key not in always and key in sliced[section] and "default" in sub
                    and to_json(sliced[section][key]) == to_json(sub["default"])):
                del sliced[section][key]
    return sliced


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
    lrs = list(studies_mod.all_sweep_lrs(cfg))
    lrs += [float(x) for x in cfg["contest"]["lr"].values() if x != AUTO]
    by_name: dict[str, set[float]] = {}
    for lr in lrs:
        by_name.setdefault(format_lr(lr), set()).add(lr)
    return [f"sweep.lrs / contest.lr: {sorted(v)} all map to the cell folder lr{k}; keep one of them"
            for k, v in by_name.items() if len(v) > 1]


def _describe(error: jsonschema.ValidationError) -> str:
    if error.validator == "oneOf" and error.context:  # name what is wrong inside the form the value was meant as
        error = max(error.context, key=lambda e: (e.validator != "type", len(e.absolute_path)))
    key = ".".join(str(p) for p in error.absolute_path) or "(top level)"
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        return f"{key}: {error.message}; allowed keys here: {', '.join(allowed)}"
    if isinstance(error.instance, str) and _looks_numeric(error.instance):
        if error.validator == "type" and "integer" in _types(error.validator_value):
            return f"{key}: {error.instance!r} is text, not a number; write it without quotes (e.g. 4)"
        return f"{key}: {error.instance!r} is text, not a number; write it with a decimal point (e.g. 3.0e-4)"
    if isinstance(error.instance, str) and len(error.instance) > MAX_SHOWN:
        # a long text is shown by its start and its length, never whole (a refusal is one readable line)
        shown = f"{error.instance[:MAX_SHOWN // 2]!r}… ({len(error.instance):,} characters)"
        return f"{key}: {error.message.replace(repr(error.instance), shown)}"
    if error.validator == "type" and "integer" in (error.validator_value if isinstance(error.validator_value, list)
                                                   else [error.validator_value]) and isinstance(error.instance, float):
        return f"{key}: {error.instance!r} is not a whole number; write it without a decimal point"
    if key.startswith(("contest.seeds", "sweep.seed")) and error.validator in ("maximum", "minimum"):
        return f"{key}: seed {error.instance} is outside 0 <= seed < 2^32; pick a seed in that range"
    return f"{key}: {error.message}"


MAX_SHOWN = 80  # characters of a refused text shown in the refusal


def _types(value) -> list:
    return value if isinstance(value, list) else [value]


def _looks_numeric(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False
