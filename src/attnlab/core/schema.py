"""The config schema (config.schema.yaml beside this module), parsed once per process, and its validator.

Its own module so that the loader (attnlab.core.config) and the study checks
(attnlab.core.study_checks, attnlab.core.studies) read it without importing
each other. The validator counts only Python ints as integers: 60.0 is no step
count.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import jsonschema
import yaml

SCHEMA_NAME = "config.schema.yaml"
# The sections of a config a training cell reads (attnlab.core.config.cell_slice keeps these alone).
SLICE_SECTIONS = ("data", "model", "train", "telemetry")


def training_part(parsed: dict) -> dict:
    """What of the schema a training cell depends on: its slice's sections (their keys, types and defaults). The
    code fingerprint reads the schema through this, so a change to the contest, the sweep, the figures or the
    studies retrains no cell."""
    properties = parsed.get("properties", {}) if isinstance(parsed, dict) else {}
    return {section: properties.get(section) for section in SLICE_SECTIONS}


@lru_cache(maxsize=1)
def schema() -> dict:
    """The config schema, parsed once per process (treat it as read-only).

    libyaml's loader when PyYAML has it: the pure-Python one is a visible share of a no-op dry run."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(resources.files("attnlab.core").joinpath(SCHEMA_NAME).read_text(), Loader=loader)


def _is_int(checker, instance) -> bool:
    """Counts are Python ints: 60.0 is not a step count (jsonschema alone would accept it)."""
    return isinstance(instance, int) and not isinstance(instance, bool)


Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_int),
)
