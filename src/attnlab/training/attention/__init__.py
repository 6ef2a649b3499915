"""Score functions by variant name; each module is imported only when its variant is built.

The names and their modules are listed in attnlab.core.variants, so that a
training cell's code fingerprint covers only its own variant's module.
"""

from __future__ import annotations

import importlib

from attnlab.core.variants import VARIANTS, check_variant


def score_class(name: str):
    module_name, class_name = VARIANTS[check_variant(name)].split(":")
    return getattr(importlib.import_module(module_name), class_name)
