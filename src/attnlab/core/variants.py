"""The registry of attention variants by name.

JAX-free on purpose: the config check and the Snakefile need the valid names
without loading a model. A new variant is one module under
attnlab/training/attention/ plus one line in VARIANTS, whatever its normaliser
(the module carries it: attnlab.training.attention.base.Normaliser), or a
package of one's own that names it in the `attnlab.variants` entry point group.
A training cell's code fingerprint reads only its own line here, so adding a
variant retrains nothing else (attnlab.core.fingerprint).
"""

from __future__ import annotations

import re
from importlib.metadata import entry_points

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

# A user's own score function, from outside this package: an installed distribution that declares
#   [project.entry-points."attnlab.variants"]
#   my_variant = "my_package.my_module:MyScore"
# joins VARIANTS under that name (a class with the interface of attnlab.training.attention.softmax.SoftmaxScore).
# EXTERNAL names each such variant's distribution and version; its cells' code fingerprint covers that
# distribution's files and version (attnlab.core.fingerprint.training_fingerprint). A name that is taken, or is
# not a variant name, is left out and said in IGNORED.
ENTRY_POINT_GROUP = "attnlab.variants"
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")  # a variant's name: also its folder and its rules' names
EXTERNAL: dict[str, tuple[str, str]] = {}  # name -> (distribution, version)
IGNORED: dict[str, str] = {}  # entry point name -> why it is not a variant


def _register_installed() -> None:
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        where = f"{point.value} (from {point.dist.name if point.dist else 'an unknown distribution'})"
        if point.name in VARIANTS:
            IGNORED[point.name] = f"{where}: {point.name!r} is taken by {VARIANTS[point.name]}; rename the entry point"
        elif not NAME_PATTERN.match(point.name):
            IGNORED[point.name] = f"{where}: a variant's name is lower-case letters, digits and _ (a letter first)"
        elif ":" not in point.value:
            IGNORED[point.name] = f"{where}: write the entry point as module:Class"
        else:
            VARIANTS[point.name] = point.value
            EXTERNAL[point.name] = (point.dist.name, point.dist.version) if point.dist else ("unknown", "unknown")


_register_installed()

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
        raise UnknownVariantError(f"unknown attention variant {name!r}; valid variants are: {', '.join(VARIANTS)}"
                                  + (f" (an installed entry point {name!r} was left out: {IGNORED[name]})"
                                     if name in IGNORED else ""))
    return name


def variant_module(name: str) -> str:
    """Dotted path of the module that implements a variant (the rebuild fingerprint follows it)."""
    return VARIANTS[check_variant(name)].split(":")[0]
