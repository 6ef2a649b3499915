"""Load and validate a config file once, the same way for the command line and the Snakefile.

A file's own values are filled with the schema's defaults (never merged over
another config file), checked against the schema, then against the rules a
schema cannot say. Every refusal names the key and the fix, before any compute.
"""

from __future__ import annotations

import copy
import math
import os
import re
from pathlib import Path

import jsonschema
import yaml

from attnlab.core import studies as studies_mod
from attnlab.core.bundle_format import format_lr
from attnlab.core.cell import kv_heads_problem
from attnlab.core.config_types import to_json  # noqa: F401  (re-exported: the slice's wire form)
from attnlab.core.errors import ConfigError
from attnlab.core.schema import SCHEMA_NAME, schema  # noqa: F401  (re-exported: the loader's schema)
from attnlab.core.variants import VARIANTS

AUTO = "auto"
MAX_EXPANDED_NODES = 10_000  # a config expands to far fewer YAML nodes; an alias bomb to far more
MAX_DEPTH = 32  # configs nest 3 deep; PyYAML's composer recurses, so thousands of levels crash it
MAX_CONFIG_BYTES = 1 << 20  # configs are a few KB of text
MOVED_TO_PROFILES = {
    "threads": "set `set-threads: {train_cell: N}` in a Snakemake profile (workflow/profiles/*) or pass "
               "--set-threads train_cell=N",
    "mem_mb": "set `set-resources: {train_cell: {mem_mb: N}}` in a Snakemake profile or pass "
              "--set-resources train_cell:mem_mb=N",
}


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
    _refuse_moved_keys(cfg, source)
    _refuse_non_finite(cfg, source)
    check_study_keys(cfg.get("studies"), node_schema, source)
    seed_given = isinstance(cfg.get("sweep"), dict) and "seed" in cfg["sweep"]
    fill_defaults(cfg, node_schema)
    validator = _Validator(node_schema)
    errors = sorted(validator.iter_errors(cfg), key=lambda e: list(e.absolute_path))
    if errors:
        raise ConfigError(f"{source}: " + "; ".join(_describe(e) for e in errors))
    _resolve_sweep_seeds(cfg["sweep"], seed_given, source)
    check_semantics(cfg, source)
    check_bounds(cfg, source)
    check_studies(cfg, source)
    return cfg


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
            problems.append(f"variants: unknown variant {variant!r}; valid variants are {', '.join(VARIANTS)}")
    problems += _per_variant_problems(cfg["contest"]["lr"], "contest.lr", cfg["variants"],
                                      "no learning rate for {!r}; give a number or 'auto'")
    model, train, telemetry = cfg["model"], cfg["train"], cfg["telemetry"]
    if model["d_model"] % model["heads"]:
        problems.append(f"model.heads: {model['heads']} does not divide model.d_model {model['d_model']}")
    if model.get("kv_heads") is not None and (problem := kv_heads_problem(model["kv_heads"], model["heads"])):
        problems.append(f"model.kv_heads: {problem} (null means heads)")
    if train["eval_every"] > train["steps"]:
        problems.append(f"train.eval_every: {train['eval_every']} is larger than train.steps {train['steps']}; "
                        "no evaluation would run, lower it")
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


def _per_variant_problems(mapping: dict, key: str, variants: list, missing: str) -> list[str]:
    """A mapping keyed by variant names exactly this file's variants: none unknown, none missing."""
    problems = [f"{key}.{v}: {v!r} is not in this file's variants {variants}; remove it or add the variant"
                for v in mapping if v not in variants]
    return problems + [f"{key}: {missing.format(v)}" for v in variants if v not in mapping]


SLICE_SECTIONS = ("data", "model", "train", "telemetry")
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
    for section in SLICE_SECTIONS:
        spec = node_schema["properties"][section]
        always = set(spec.get(IDENTITY_KEYS, ()))
        for key, sub in spec.get("properties", {}).items():
            if (key not in always and key in sliced[section] and "default" in sub
                    and to_json(sliced[section][key]) == to_json(sub["default"])):
                del sliced[section][key]
    return sliced


# ---- studies: checked key by key before the schema (so a refusal names the study and the key), then
# point by point once the config is whole (so an axis value that makes an invalid model is named)

STUDY_KEYS = ("name", *studies_mod.SECTIONS, "points", "variants", "seeds", "lrs")


def check_study_keys(entries, node_schema: dict, source: str = "config") -> None:
    """Each study's own keys, its override keys and values, and its name (unique, not a built-in study's)."""
    if not isinstance(entries, list):
        return  # absent, or a wrong type the schema names
    problems, seen = [], set(studies_mod.BUILT_IN)
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            continue
        name = entry.get("name")
        where = f"studies.{name}" if isinstance(name, str) and name else f"studies[{i}]"
        if isinstance(name, str):
            if name in seen:
                problems.append(f"{where}: the name {name!r} is taken by "
                                f"{'a built-in study' if name in studies_mod.BUILT_IN else 'another study'}; "
                                "give each study its own name")
            seen.add(name)
        for key in entry:
            if key not in STUDY_KEYS:
                problems.append(f"{where}.{key}: a study sets only model and train keys (a list of values is an "
                                f"axis) and its {', '.join(STUDY_KEYS[3:])}; {key} cannot vary inside a study")
        for section in studies_mod.SECTIONS:
            overrides = entry.get(section)
            if isinstance(overrides, dict):
                problems += _override_problems(overrides, node_schema["properties"][section], f"{where}.{section}")
        if "points" in entry:
            problems += _points_problems(entry, node_schema, where)
    if problems:
        raise ConfigError(f"{source}: " + "; ".join(problems))


def _override_problems(overrides: dict, section_schema: dict, where: str) -> list[str]:
    known = section_schema.get("properties", {})
    problems = []
    for key, value in overrides.items():
        if key not in known:
            problems.append(f"{where}.{key}: unknown key; the keys here are {', '.join(known)}")
            continue
        if isinstance(value, list):
            if not value:
                problems.append(f"{where}.{key}: an axis with no values; list at least one (one value fixes the key)")
            texts = [to_json(v) for v in value]
            problems += [f"{where}.{key}: {text} is listed twice; list each value once"
                         for text in sorted(set(texts)) if texts.count(text) > 1]
        for j, item in enumerate(value if isinstance(value, list) else [value]):
            at = f"{where}.{key}[{j}]" if isinstance(value, list) else f"{where}.{key}"
            problems += [f"{at}: {error.message}" for error in _Validator(known[key]).iter_errors(item)]
    return problems


def _points_problems(entry: dict, node_schema: dict, where: str) -> list[str]:
    """A study's `points`: a non-empty list of distinct mappings of model and train values (one value per key,
    never a list), every point setting the same keys, none of them a key the study also sets outside its points."""
    points = entry["points"]
    if not isinstance(points, list) or not points:
        return [f"{where}.points: a list of at least one point, each a mapping of model and train values "
                "(for example - model: {d_model: 64, layers: 2})"]
    elsewhere = {f"{s}.{k}" for s in studies_mod.SECTIONS if isinstance(entry.get(s), dict) for k in entry[s]}
    problems, first, seen = [], None, set()
    for i, point in enumerate(points):
        at = f"{where}.points[{i}]"
        if not isinstance(point, dict) or not point:
            problems.append(f"{at}: a point is a mapping of model and train values, e.g. model: {{d_model: 64}}")
            continue
        keys = set()
        for section, overrides in point.items():
            if section not in studies_mod.SECTIONS or not isinstance(overrides, dict):
                problems.append(f"{at}.{section}: a point sets model and train keys only, each section a mapping")
                continue
            for key, value in overrides.items():
                if isinstance(value, list):
                    problems.append(f"{at}.{section}.{key}: a point sets one value per key; to vary the key across "
                                    f"every point, give the list as {where}.{section}.{key} instead")
            problems += _override_problems({k: v for k, v in overrides.items() if not isinstance(v, list)},
                                           node_schema["properties"][section], f"{at}.{section}")
            keys |= {f"{section}.{key}" for key in overrides}
        for key in sorted(keys & elsewhere):
            problems.append(f"{at}: {key} is also set by the study outside its points; set it in one place")
        if first is None:
            first = keys
        elif keys != first:
            problems.append(f"{at}: sets {', '.join(sorted(keys)) or 'nothing'}, but points[0] sets "
                            f"{', '.join(sorted(first))}; every point sets the same keys (they are the study's "
                            "columns)")
        text = to_json(point)
        if text in seen:
            problems.append(f"{at}: the same point is listed twice; list each point once")
        seen.add(text)
    return problems


def check_studies(cfg: dict, source: str = "config") -> None:
    """Every study is within max_cells and trains the config's variants, and every point of every study makes a
    valid config (a model the keys allow, a cell that fits this machine), before any compute."""
    problems = []
    every = studies_mod.studies(cfg)
    total = sum(study.size() for study in every)
    if total > cfg["max_total_cells"]:
        problems.append(f"studies: {total:,} cells in all, more than max_total_cells {cfg['max_total_cells']:,}; check "
                        "the studies' axes, or raise max_total_cells if the grid is meant to be that large")
    for study in every:
        where = study.name if study.name in studies_mod.BUILT_IN else f"studies.{study.name}"
        if study.name == studies_mod.LADDER:
            problems += _ladder_problems(study, where)
        too_long = [text for text in map(studies_mod.point_text, study.points()) if len(text) > MAX_FOLDER_NAME]
        if too_long:
            problems.append(f"{where}: a point's folder name would be {len(too_long[0]):,} characters "
                            f"({too_long[0][:60]}...), more than {MAX_FOLDER_NAME} a file system allows; use shorter "
                            "values or fewer axes")
        if study.size() > cfg["max_cells"]:
            problems.append(f"{where}: {study.size():,} cells, more than max_cells {cfg['max_cells']:,}; check its "
                            "axes, or raise max_cells if the study is meant to be that large")
        unknown = [v for v in study.variants if v not in cfg["variants"]]
        if unknown:
            problems.append(f"{where}.variants: {unknown} are not in this file's variants {cfg['variants']}; "
                            "a study trains some of them")
    if problems:
        raise ConfigError(f"{source}: " + "; ".join(problems))
    for study in studies_mod.studies(cfg)[len(studies_mod.BUILT_IN):]:
        for point in study.points():
            at = f"{source}: studies.{study.name} at {studies_mod.point_text(point)}"
            resolved = studies_mod.resolved(cfg, study.fixed + point)
            check_semantics(resolved, at)
            check_bounds(resolved, at)


MAX_FOLDER_NAME = 200  # a point's folder name: under the 255 bytes most file systems allow, with room to spare
LADDER_SIZE_KEYS = frozenset({"model.d_model", "model.layers", "model.heads", "model.kv_heads", "model.d_ff",
                              "model.a3_embed_dim", "train.steps"})


def _ladder_problems(study, where: str) -> list[str]:
    """The scale ladder compares sizes: its points vary only size keys and train.steps, at one LR per variant."""
    problems = []
    if study.lrs is not None and len(study.lrs) > 1:
        problems.append(f"{where}.lrs: a ladder trains each variant at one LR, not {len(study.lrs)}; give one LR "
                        "(or leave lrs out for each variant's contest LR) and put an LR axis in a study of its own")
    values: dict[str, set] = {}
    for point in study.points():
        for key, value in point:
            values.setdefault(key, set()).add(to_json(value))
    varying = sorted(key for key, seen in values.items() if len(seen) > 1 and key not in LADDER_SIZE_KEYS)
    if varying:
        problems.append(f"{where}: its points differ in {', '.join(varying)}; a ladder's points differ only in model "
                        f"size ({', '.join(sorted(k for k in LADDER_SIZE_KEYS if k.startswith('model.')))}) and "
                        "train.steps: put any other axis in a study of its own")
    return problems


# ---- which file a Snakemake run builds

CONFIG_KEY = "file"  # snakemake --config file=PATH


def config_values_given(argv) -> list[str]:
    """The KEY=VALUE words a Snakemake command line gives after --config (Snakemake keeps only the last of each
    key, so two file= values would silently build the second)."""
    values, taking = [], False
    for word in map(str, argv or ()):
        if word == "--config" or word.startswith("--config="):
            taking = word == "--config"
            if word.startswith("--config="):
                values.append(word.split("=", 1)[1])
            continue
        if word.startswith("-"):
            taking = False
        elif taking:
            values.append(word)
    return values


def snakemake_config_file(configfiles, overrides, default: Path, reparse=None, argv=None) -> Path:
    """The config file a Snakemake run names, from its --configfile list and its --config values.

    `--config file=PATH` hands Snakemake only a path: the file itself is read by load_config alone,
    so it is safe for a file from anyone. `--configfile PATH` also works, but Snakemake parses that
    file itself first (a YAML file marked `__use_yte__: true` is a YTE template, which runs code):
    trusted files only. Neither given: `default`. `overrides` is what Snakemake made of the
    --config values (it parses each as YAML); `reparse`, Snakemake's own parser of them
    (snakemake.cli.parse_config), checks that its jobs, handed the value again, read the same path;
    `argv`, the command line, tells a file= given twice (which `overrides` no longer shows).
    """
    configfiles = [str(f) for f in configfiles or ()]
    overrides = dict(overrides or {})
    named = [v for v in config_values_given(argv) if v.split("=", 1)[0] == CONFIG_KEY]
    if len(named) > 1:
        raise ConfigError(f"--config {CONFIG_KEY}= is given {len(named)} times ({', '.join(named)}); Snakemake would "
                          f"build the last one only: give the config file once")
    others = sorted(str(key) for key in overrides if key != CONFIG_KEY)
    if others:
        raise ConfigError(f"--config {', '.join(f'{k}=...' for k in others)}: --config takes only "
                          f"{CONFIG_KEY}=PATH, the config file to build; KEY=VALUE overrides are not supported: write "
                          f"the values into a copy of the config file and pass it with --config {CONFIG_KEY}=PATH")
    if len(configfiles) > 1:
        raise ConfigError(f"give one config file, not {len(configfiles)} --configfile: a config file is read whole, "
                          "never merged")
    if CONFIG_KEY not in overrides:
        return Path(configfiles[0]) if configfiles else Path(default)
    if configfiles:
        raise ConfigError(f"give the config file once: --config {CONFIG_KEY}=PATH (read by attnlab alone, safe for any "
                          "file) or --configfile PATH (Snakemake parses it too: trusted files only), not both")
    value = overrides[CONFIG_KEY]
    if value is None or value == "":
        raise ConfigError(f"--config {CONFIG_KEY}= names no file; give its path: --config {CONFIG_KEY}=PATH")
    if not isinstance(value, str):
        raise ConfigError(f"--config {CONFIG_KEY}=: Snakemake read the value as the {type(value).__name__} {value!r}, "
                          "not as a path (it parses --config values as YAML); write the path so that it reads as "
                          "text, for example starting with ./")
    again = reparse([f"{CONFIG_KEY}={value}"]).get(CONFIG_KEY) if reparse is not None else value
    if again != value:
        raise ConfigError(f"--config {CONFIG_KEY}={value}: Snakemake would read this path back as {again!r} in its "
                          "jobs (it parses --config values as YAML); rename the file or its folder to plain "
                          "characters")
    return Path(value)


# ---- bounds: what one cell of a config would cost, estimated before any compute
#
# A few terms, each tied to the keys that drive it, so that a runaway value is refused naming its key
# instead of ending in a MemoryError or a run that never ends. Memory is an estimate of the trainer's
# peak (the activation term is the one train_mem_mb in workflow/rules/common.smk declares to schedulers);
# time is a lower bound (an optimistic device and host), so only a config that no machine could finish
# is refused. `estimate(cfg)` shows the numbers.

RUNTIME_BYTES = 1000 * 2**20  # Python, JAX and XLA themselves
ACTIVATION_FACTOR = 24  # a step's peak bytes per byte of one float32 attention tensor (fitted to measured peaks)
STATE_COPIES = 6  # parameters, gradients, two Adam moments, the last finite copy, the probe's
BYTES_PER_EVALUATION = 560  # one evaluation's entries in the step plan and the loss curve (Python objects)
BYTES_PER_CHECKPOINT = 160  # one checkpoint's entry in the step plan
BYTES_PER_HELD_OUT_TOKEN = 16  # inputs and targets on the device, the windows they are sliced from
VOCAB_BOUND = 256  # parameters are estimated at a byte-sized vocabulary, above the corpus's 65 characters
HOST_SECONDS_PER_BATCH = 10e-6  # each batch's offsets are drawn on the host (about 40 us on a laptop core)
DEVICE_FLOPS = 1e15  # a fast accelerator; real runs are slower, so the time estimate is a lower bound
MAX_CELL_SECONDS = 7 * 86400
STEP_LIMIT = 2**31 - 1  # the trainer's step counter is a 32-bit integer on the device


def estimate(cfg: dict) -> dict:
    """One training cell's estimated peak memory (bytes) and least time (seconds), term by term.

    Each term is (what, key, value, fix, amount): the key that drives it, that key's value and how to
    lower the term. `memory` and `seconds` are the totals; `cfg` is a validated config.
    """
    model, train, telemetry = cfg["model"], cfg["train"], cfg["telemetry"]
    d, layers, heads, T, d_ff = (model[k] for k in ("d_model", "layers", "heads", "block_size", "d_ff"))
    B, steps, every = train["batch_size"], train["steps"], train["eval_every"]
    checkpoint_every = train.get("checkpoint_every") or every
    telemetry_batches = telemetry.get("batches") or train["eval_batches"]
    telemetry_key = "telemetry.batches" if telemetry.get("batches") else "train.eval_batches"
    telemetry_fix = ("lower telemetry.batches" if telemetry.get("batches") else
                     "lower train.eval_batches (telemetry.batches, when null, follows it)")
    params = layers * (4 * d * d + 2 * d * d_ff) + (2 * VOCAB_BOUND + T) * d
    step_flops = 6 * params * B * T + 12 * B * layers * T * T * d  # forward and backward
    batch_flops = step_flops / 3  # forward only
    evaluations = steps // every + 2
    chunk = min(steps, every, checkpoint_every)
    chunk_key = ("train.steps" if chunk == steps else "train.eval_every" if chunk == every
                 else "train.checkpoint_every")
    snapshots = len(set(telemetry["snapshot_fractions"])) + 1
    size = ("model.d_model", d, "lower model.d_model, model.d_ff or model.layers")
    window = ("model.block_size", T) if T >= B else ("train.batch_size", B)  # the activations grow as B * T^2
    memory = [
        ("the Python, JAX and XLA runtime", None, None, "", RUNTIME_BYTES),
        ("parameters and optimiser state", *size, STATE_COPIES * 4 * params),
        ("the activations of one step", *window, "lower model.block_size or train.batch_size",
         ACTIVATION_FACTOR * 4 * B * heads * T * T * layers),
        ("the step plan and loss curve", "train.steps", steps, "lower train.steps or raise train.eval_every",
         evaluations * BYTES_PER_EVALUATION + steps // checkpoint_every * BYTES_PER_CHECKPOINT),
        ("the batch offsets and losses of one run of steps between stops", chunk_key, train[chunk_key.split(".")[1]],
         f"lower {chunk_key}", chunk * (8 * B + 8) + every * 32),
        ("the validation batches", "train.eval_batches", train["eval_batches"], telemetry_fix if
         telemetry_key == "train.eval_batches" else "lower train.eval_batches",
         train["eval_batches"] * B * T * BYTES_PER_HELD_OUT_TOKEN),
        ("the telemetry batches with their per-head statistics", telemetry_key, telemetry_batches,
         telemetry_fix, telemetry_batches * B * T * (BYTES_PER_HELD_OUT_TOKEN + 4 * layers * heads)),
        ("the attention snapshots", "telemetry.snapshot_fractions", len(telemetry["snapshot_fractions"]),
         "store fewer snapshots or lower model.block_size", snapshots * layers * heads * T * T * 8),
    ]
    seconds = [
        ("training", "train.steps", steps, "lower train.steps or the model size",
         steps * (HOST_SECONDS_PER_BATCH + step_flops / DEVICE_FLOPS)),
        ("evaluation", "train.eval_batches", train["eval_batches"],
         "lower train.eval_batches or raise train.eval_every",
         train["eval_batches"] * (HOST_SECONDS_PER_BATCH + evaluations * batch_flops / DEVICE_FLOPS)),
        ("the telemetry probe", telemetry_key, telemetry_batches, telemetry_fix,
         telemetry_batches * (HOST_SECONDS_PER_BATCH + 2 * batch_flops / DEVICE_FLOPS)),
    ]
    return {"memory": sum(t[-1] for t in memory), "seconds": sum(t[-1] for t in seconds),
            "memory_terms": memory, "time_terms": seconds}


def machine_memory() -> int | None:
    """Physical memory of this machine in bytes (os.sysconf), or None where the system does not say."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None
    return total if total > 0 else None


def check_bounds(cfg: dict, source: str = "config") -> None:
    """Refuse a config whose cell could not fit in this machine's memory or finish in MAX_CELL_SECONDS."""
    problems = []
    est, have = estimate(cfg), machine_memory()
    summary = (f"estimated {_bytes(est['memory'])} of memory and at least {_duration(est['seconds'])} per cell; "
               f"this machine has {_bytes(have) + ' of' if have else 'an unknown amount of'} memory")
    if have is not None and est["memory"] > have:
        whats, key, value, fix, amount = _largest(est["memory_terms"])
        problems.append(f"{key}: {value:,} is too large: {whats} would take {_bytes(amount)} ({summary}); {fix}")
    if est["seconds"] > MAX_CELL_SECONDS:
        whats, key, value, fix, amount = _largest(est["time_terms"])
        problems.append(f"{key}: {value:,} is too large: {whats} would take at least {_duration(amount)} even on a "
                        f"fast machine, past the limit of {_duration(MAX_CELL_SECONDS)} per cell ({summary}); {fix}")
    if cfg["train"]["steps"] > STEP_LIMIT:
        problems.append(f"train.steps: {cfg['train']['steps']:,} is more than the trainer's 32-bit step counter "
                        f"holds ({STEP_LIMIT:,}); lower it")
    if problems:
        raise ConfigError(f"{source}: " + "; ".join(problems))


def _largest(terms: list) -> tuple:
    """The key whose terms add up to the most, with what those terms are, its value, its fix and their sum."""
    by_key: dict = {}
    for what, key, value, fix, amount in terms:
        if key is not None:
            entry = by_key.setdefault(key, [[], key, value, fix, 0])
            entry[0].append(what)
            entry[4] += amount
    whats, key, value, fix, amount = max(by_key.values(), key=lambda entry: entry[4])
    return " and ".join(whats), key, value, fix, amount


def _bytes(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB", "TB", "PB"):
        if n < 1000 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.1f} s"


# ---- strict YAML


class _StrictLoader(yaml.SafeLoader):
    """A safe loader that refuses duplicate keys, keys that are lists or mappings, nesting deeper than
    MAX_DEPTH and non-decimal integers (YAML 1.1's 007 is octal)."""

    depth = 0

    def compose_node(self, parent, index):
        # The composer recurses once per level: stop long before Python's recursion limit would.
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                line = self.peek_event().start_mark.line + 1
                raise ConfigError(f"values nested more than {MAX_DEPTH} deep at line {line}; a config nests a "
                                  "few levels (section, key, list): flatten it")
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def _construct_mapping(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            kind = "a list" if isinstance(key_node, yaml.SequenceNode) else "a mapping"
            raise ConfigError(f"{kind} used as a key at line {key_node.start_mark.line + 1}; keys are plain "
                              "names (write `name: value`)")
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
            memo: dict = {}
            if _expanded_size(node, memo) > MAX_EXPANDED_NODES:
                if len(memo) > MAX_EXPANDED_NODES:  # as written, without an alias: simply too many values
                    raise ConfigError(f"it holds more than {MAX_EXPANDED_NODES:,} values; a config lists tens "
                                      "of them, and an axis that long is no grid a build could train: shorten it")
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
