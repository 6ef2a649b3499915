"""Registry of attention score functions, keyed by variant name.

Variant modules are imported on lookup, not here, so a rule that trains one
variant depends only on that variant's module (see workflow/rules/common.smk).
A new variant is one new module plus one line below.
"""

from __future__ import annotations

import importlib

VARIANTS: dict[str, str] = {
    "softmax": "attnlab.attention.softmax:SoftmaxScore",
    "yat": "attnlab.attention.yat:YatScore",
    "yat_b": "attnlab.attention.yat_b:YatBiasScore",
    "a3": "attnlab.attention.a3:A3Score",
}


class UnknownVariantError(ValueError):
    pass


def check_variant(name: str) -> str:
    if name not in VARIANTS:
        raise UnknownVariantError(
            f"unknown attention variant {name!r}; valid variants are: {', '.join(VARIANTS)}"
        )
    return name


def variant_module(name: str) -> str:
    """Dotted module path that implements a variant (used by the import-graph helper)."""
    return VARIANTS[check_variant(name)].split(":")[0]


def score_class(name: str):
    module_name, class_name = VARIANTS[check_variant(name)].split(":")
    return getattr(importlib.import_module(module_name), class_name)
