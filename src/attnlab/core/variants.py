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

import ast
import importlib.util
import re
from functools import lru_cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import NamedTuple

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
    "spherical_yat": "attnlab.training.attention.spherical_yat:SphericalYatScore",
    "slay": "attnlab.training.attention.slay:SlayScore",
    "fox": "attnlab.training.attention.fox:ForgettingScore",
    "diff": "attnlab.training.attention.diff:DifferentialScore",
}

BASELINE = "softmax"  # what every paired comparison is against (the table contract re-exports it)

# A user's own score function, from outside this package: an installed distribution that declares
#   [project.entry-points."attnlab.variants"]
#   my_variant = "my_package.my_module:MyScore"
# joins VARIANTS under that name (a class with the interface of attnlab.training.attention.softmax.SoftmaxScore).
# EXTERNAL names each such variant's distribution and version; its cells' code fingerprint covers that
# distribution's files and version (attnlab.core.fingerprint.training_fingerprint). A name that is taken, that
# two distributions register, or that is not a variant name, is left out and said in IGNORED (the build says
# each one when it plans).
ENTRY_POINT_GROUP = "attnlab.variants"
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")  # a variant's name: also its folder and its rules' names
EXTERNAL: dict[str, tuple[str, str]] = {}  # name -> (distribution, version)
IGNORED: dict[str, str] = {}  # entry point name -> why it is not a variant


def _register_installed() -> None:
    points = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name)
    sources: dict[str, set[str]] = {}
    for point in points:
        sources.setdefault(point.name, set()).add(point.dist.name if point.dist else "an unknown distribution")
    for point in points:
        where = f"{point.value} (from {point.dist.name if point.dist else 'an unknown distribution'})"
        if len(sources[point.name]) > 1:  # which one Python finds first is an accident of sys.path
            IGNORED[point.name] = (f"{point.name!r} is registered by {' and '.join(sorted(sources[point.name]))}; "
                                   "uninstall one, or rename its entry point")
        elif point.name in VARIANTS:
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


def plugin_problem(name: str) -> str:
    """Why an installed variant cannot be built ('' when nothing is seen), read from its source without importing
    it (the planning never loads JAX, which a score module imports): its module is found, it defines or imports
    its class, and that class's own __init__, if it has one, takes the keywords every score is built with."""
    module, cls = VARIANTS[name].split(":")
    file = _module_file(module)
    where = f"the installed variant {name!r} ({VARIANTS[name]}, from {EXTERNAL[name][0]})"
    if file is None:
        return f"{where}: no module {module} is installed; reinstall its distribution"
    try:
        tree = ast.parse(file.read_text(encoding="utf-8"), str(file))
    except (OSError, UnicodeDecodeError, SyntaxError) as err:
        return f"{where}: {file} cannot be read as Python ({type(err).__name__}: {err})"
    found = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == cls]
    imported = any(any((alias.asname or alias.name) == cls for alias in node.names) for node in tree.body
                   if isinstance(node, (ast.Import, ast.ImportFrom)))
    assigned = any(any(isinstance(t, ast.Name) and t.id == cls for t in node.targets) for node in tree.body
                   if isinstance(node, ast.Assign))
    if not (found or imported or assigned):
        return f"{where}: {module} has no class {cls}; fix the entry point or the module"
    init = [node for c in found for node in c.body if isinstance(node, ast.FunctionDef) and node.name == "__init__"]
    if init:
        args = init[0].args
        named = {a.arg for a in args.kwonlyargs + args.args}
        missing = [] if args.kwarg else [k for k in SCORE_KEYWORDS if k not in named]
        if missing:
            return (f"{where}: {cls}.__init__ does not take {', '.join(missing)}; a score is built with the keywords "
                    f"{', '.join(SCORE_KEYWORDS)} (add **_ for those it does not use)")
    return ""


SCORE_KEYWORDS = ("layers", "heads", "d_head", "rngs")  # what attnlab.training.attention builds every score with


def _module_file(module: str) -> Path | None:
    """The source file of a dotted module, found without importing it or its packages."""
    parts = module.split(".")
    try:
        spec = importlib.util.find_spec(parts[0])  # a top-level name: found, not imported
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if len(parts) == 1:
        return Path(spec.origin) if spec.origin and spec.origin.endswith(".py") else None
    for location in spec.submodule_search_locations or ():
        base = Path(location, *parts[1:])
        for file in (base.with_suffix(".py"), base / "__init__.py"):
            if file.is_file():
                return file
    return None


class Declared(NamedTuple):
    """What a variant's module declares about itself, read from its source without importing it (the config check
    runs before JAX loads): `settings`, its own settings as JSON-schema properties (each with its default), which a
    config sets under model.variant_options.<variant>; `heads_multiple`, what the model's heads must be a multiple
    of. Shared and read-only."""

    settings: dict = {}
    heads_multiple: int = 1


DECLARED_NAMES = {"SETTINGS": "settings", "HEADS_MULTIPLE": "heads_multiple"}  # module-level literal -> field


@lru_cache(maxsize=None)
def declared(name: str) -> Declared:
    """The module-level literals SETTINGS and HEADS_MULTIPLE of a variant's module (empty and 1 where absent);
    a literal that is not one (a computed value) is refused, naming the module."""
    module = variant_module(name)
    file = _module_file(module)
    if file is None:
        return Declared({})
    found = {}
    for node in ast.parse(file.read_text(encoding="utf-8"), str(file)).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) \
            else []
        for target in targets:
            if isinstance(target, ast.Name) and target.id in DECLARED_NAMES and node.value is not None:
                try:
                    found[DECLARED_NAMES[target.id]] = ast.literal_eval(node.value)
                except ValueError:
                    raise UnknownVariantError(f"{module}: {target.id} must be written as a literal (the config "
                                              "check reads it without importing the module)") from None
    return Declared(**found)


def variant_module(name: str) -> str:
    """Dotted path of the module that implements a variant (the rebuild fingerprint follows it)."""
    return VARIANTS[check_variant(name)].split(":")[0]
