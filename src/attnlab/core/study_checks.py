"""The config's studies, checked before any compute.

Key by key before the schema (so a refusal names the study and the key), then
point by point once the config is whole (so an axis value that makes an
invalid model is named). The scale ladder's own rule (sizes and steps only, one
LR) is here too.
"""

from __future__ import annotations

from attnlab.core import studies as studies_mod
from attnlab.core.config_types import to_json
from attnlab.core.errors import ConfigError
from attnlab.core.schema import Validator

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
            problems += [f"{at}: {error.message}" for error in Validator(known[key]).iter_errors(item)]
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


def check_studies(cfg: dict, check_config, source: str = "config") -> None:
    """Every study is within max_cells and trains the config's variants, and every point of every study makes a
    valid config (a model the keys allow, a cell that fits this machine), before any compute.

    `check_config(resolved, where)` checks one point's whole config (the loader's own rules, handed in so that
    the loader and these checks need not import each other)."""
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
            check_config(resolved, at)


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
