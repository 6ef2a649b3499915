"""The registry of attention variants by name.

JAX-free on purpose: the config check and the Snakefile need the valid names
without loading a model. A new variant is one module under
attnlab/training/attention/ plus one line in VARIANTS; a training cell's code
fingerprint reads only its own line here, so adding a variant retrains nothing
else (attnlab.core.fingerprint).
"""

from __future__ import annotations

# variant name -> "module:class" of its score function (imported only when a model is built)
VARIANTS: dict[str, str] = {
    "softmax": "attnlab.training.attention.softmax:SoftmaxScore",
    "yat": "attnlab.training.attention.yat:YatScore",
    "yat_b": "attnlab.training.attention.yat_b:YatBiasScore",
    "a3": "attnlab.training.attention.a3:A3Score",
}

KERNEL_VARIANTS = ("yat", "yat_b")  # variants whose weights are kappa / sum(kappa): they report a row mass


class UnknownVariantError(ValueError):
    """A variant name that is not in VARIANTS; the message lists the valid ones."""


def check_variant(name: str) -> str:
    if name not in VARIANTS:
        raise UnknownVariantError(f"unknown attention variant {name!r}; valid variants are: {', '.join(VARIANTS)}")
    return name


def variant_module(name: str) -> str:
    """Dotted path of the module that implements a variant (the rebuild fingerprint follows it)."""
    return VARIANTS[check_variant(name)].split(":")[0]
