"""The config schema (config.schema.yaml beside this module), parsed once per process.

Its own module so that the loader (attnlab.core.config) and the studies it
checks (attnlab.core.studies) both read it without importing each other.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import yaml

SCHEMA_NAME = "config.schema.yaml"


@lru_cache(maxsize=1)
def schema() -> dict:
    """The config schema, parsed once per process (treat it as read-only).

    libyaml's loader when PyYAML has it: the pure-Python one is a visible share of a no-op dry run."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(resources.files("attnlab.core").joinpath(SCHEMA_NAME).read_text(), Loader=loader)
