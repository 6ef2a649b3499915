"""The registry of attention variants by name.

JAX-free on purpose: the config check and the Snakefile need the valid names
without loading a model. A new variant is one module under
attnlab/training/attention/ plus one line in VARIANTS, whatever its normaliser
(the module carries it: attnlab.training.attention.base.Normaliser). A
training cell's code fingerprint reads only its own line here, so adding a
variant retrains nothing else (attnlab.core.fingerprint).
"""

from __future__ import annotations

# variant name -> "module:class" of its score function (imported only when a model is built)
VARIANTS: dict[str, str] = {
    "softmax": "attnlab.training.attention.softmax:SoftmaxScore",
    "yat": "attnlab.training.attention.yat:YatScore",
    "yat_b": "attnlab.training.attention.yat_b:YatBiasScore",
    "a3": "attnlab.training.attention.a3:A3Score",
    "yat_exp": "attnlab.training.attention.yat_exp:YatExpScore",
    "yat_b_exp": "attnlab.training.attention.yat_b_exp:YatBiasExpScore",
    "softmax_t": "attnlab.training.attention.softmax_t:SoftmaxTemperatureScore",
    "a3_heads": "attnlab.training.attention.a3_heads:A3HeadsScore",
    "sigmoid": "attnlab.training.attention.sigmoid:SigmoidScore",
    "softmax_sink": "attnlab.training.attention.softmax_sink:SoftmaxSinkScore",
    "cog": "attnlab.training.attention.cog:CogScore",
    "ssmax": "attnlab.training.attention.ssmax:SSMaxScore",
    "softpick": "attnlab.training.attention.softpick:SoftpickScore",
    "stickbreaking": "attnlab.training.attention.stickbreaking:StickBreakingScore",
    "selective": "attnlab.training.attention.selective:SelectiveScore",
}

BASELINE = "softmax"  # what every paired comparison is against (the table contract re-exports it)

# The normaliser crossover (bundle field "normswap"): each kappa variant, the normaliser it trains
# with, and its twin, the variant that computes the same kappa under the other normaliser (the same
# parameters under the same names). "kernel" is kappa / sum(kappa), "softmax" a softmax over kappa: the
# names of attnlab.training.attention.normalisers.CROSSOVER (the score modules themselves carry their normaliser;
# these entries say only which kernel cells the crossover applies to, and under which name).
NORMALISERS: dict[str, str] = {"yat": "kernel", "yat_b": "kernel", "yat_exp": "softmax", "yat_b_exp": "softmax"}
NORMALISER_TWINS: dict[str, str] = {"yat": "yat_exp", "yat_exp": "yat", "yat_b": "yat_b_exp", "yat_b_exp": "yat_b"}


class UnknownVariantError(ValueError):
    """A variant name that is not in VARIANTS; the message lists the valid ones."""


def check_variant(name: str) -> str:
    if name not in VARIANTS:
        raise UnknownVariantError(f"unknown attention variant {name!r}; valid variants are: {', '.join(VARIANTS)}")
    return name


def variant_module(name: str) -> str:
    """Dotted path of the module that implements a variant (the rebuild fingerprint follows it)."""
    return VARIANTS[check_variant(name)].split(":")[0]
