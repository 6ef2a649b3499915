"""Fingerprints of what code does, not of its bytes: the rebuild boundary of every rule.

A module's fingerprint hashes its syntax tree with every docstring dropped
(comments and layout never reach the tree), so rewording a comment or a
docstring, or reformatting, changes nothing. A rule's fingerprint covers the
attnlab modules its command imports, found by walking the import graph, plus
the package data files those modules name. The Snakefile passes it to each
rule as a param, so a rule reruns exactly when the behaviour of code it runs
changes.

What counts as an import (attnlab.core.module_scan reads it): `import attnlab.x`, `from attnlab.x import y`,
relative imports (`from . import y`, `from .x import y`, in a package's
`__init__.py` too), `importlib.import_module` / `__import__` of a literal
attnlab name, and `importlib.resources.files` of a literal attnlab package. An
import of a name computed at run time cannot be followed; the variant registry
is the one place allowed to do that (tests keep it so).

What counts as a data file (attnlab.core.package_data): a file in the package that is not Python source,
named by a string literal in the module, as a path from the module's folder or
from a package it passes to `resources.files` (else anywhere in the package
whose path ends with that string). YAML is compared parsed with its
`description` keys dropped and JSON parsed, so their comments and layout do not
count; any other file counts by its bytes.

The variant registry is the one place read more finely: a training cell
depends on its own entries (its module, its normaliser and crossover twin),
not the whole table, so adding a variant retrains nothing else.

Parsing every module on every `snakemake -n` is most of a no-op dry run's own
cost, so what a file's bytes imply (its tree digest, the names it imports, the
strings that may name data files) can be kept in a small JSON file between runs
(`persist_to`). Entries are keyed by the sha256 of the bytes; the file as a
whole by the Python version and the sha256 of the scanner's source, so an
edited file is never read from the cache and a change to the scanner starts
from an empty one. The file carries a checksum of its entries: one edited by
hand is ignored whole. A lost, corrupt or foreign cache only costs the parse.
"""

from __future__ import annotations

import ast
import hashlib
import json
import sys
from functools import lru_cache
from pathlib import Path

import yaml

from attnlab.core import fact_cache, module_scan, package_data
from attnlab.core.fact_cache import FactCache
from attnlab.core.installed_code import external_package
from attnlab.core.module_scan import SRC, drop_descriptions, module_file, scan, tree_dump
from attnlab.core.package_data import data_text, named_data_files, package_files, sha
from attnlab.core.schema import SCHEMA_NAME, training_part

REGISTRY = "attnlab.core.variants"
CACHE_FORMAT = 2  # bump when what a cache entry means changes


def imported_modules(module: str, src: Path = SRC) -> set[str]:
    """attnlab modules imported anywhere in `module` (function-level imports too)."""
    path = module_file(module, src)
    return set(_existing(tuple(_facts(module, path)["imports"]), str(src)))


@lru_cache(maxsize=None)
def _existing(names: tuple[str, ...], src: str) -> frozenset[str]:
    """The names that are attnlab modules or packages (not names defined inside one)."""
    return frozenset(name for name in names if module_file(name, Path(src)).exists())


def closure(*modules: str, src: Path = SRC) -> list[str]:
    """Every attnlab module that importing `modules` executes, parent packages included, sorted."""
    seen, todo = set(), list(modules)
    while todo:
        parts = todo.pop().split(".")
        for i in range(1, len(parts) + 1):
            name = ".".join(parts[:i])
            if name not in seen:
                seen.add(name)
                todo.extend(imported_modules(name, src))
    return sorted(seen)


def module_fingerprint(module: str, src: Path = SRC, _files: frozenset | None = None) -> str:
    """sha256 of the module's syntax tree without docstrings, and of the package data files it names."""
    path = module_file(module, src)
    facts = _facts(module, path)
    named = named_data_files(module, path, Path(src), facts,
                              package_files(Path(src)) if _files is None else _files)
    key = facts["key"] + "|" + ",".join(f"{name}={sha(file)}" for name, file in sorted(named.items()))
    if not _is_digest(_CACHE.get(key)):
        digest = hashlib.sha256(tree_dump(path).encode())
        for name, data_file in sorted(named.items()):
            digest.update(f"{name}:{data_text(data_file)}".encode())
        _CACHE.put(key, digest.hexdigest())
    return _CACHE.entries[key]


def fingerprint(*modules: str, src: Path = SRC, extra: dict | None = None, skip: tuple[str, ...] = ()) -> str:
    """One hash over the closure of `modules` (less `skip`) and any extra JSON-able facts."""
    files = package_files(Path(src))
    parts = {m: module_fingerprint(m, src, files) for m in closure(*modules, src=src) if m not in skip}
    parts["extra"] = extra or {}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


@lru_cache(maxsize=None)
def cached_fingerprint(modules: tuple[str, ...], src: str, extra_json: str = "{}", skip: tuple[str, ...] = ()) -> str:
    """fingerprint() memoised for one process (a Snakemake run asks the same question once per job)."""
    return fingerprint(*modules, src=Path(src), extra=json.loads(extra_json), skip=skip)


def training_fingerprint(variant: str, src: Path = SRC) -> str:
    """The code a training cell of `variant` runs: the trainer, its variant's module, its registry line; for a
    variant installed through the entry point group, its distribution's name, version and package files."""
    from attnlab.core import variants

    entry = {"registry": variants.VARIANTS[variant], "normaliser": variants.NORMALISERS.get(variant),
             "twin": variants.NORMALISER_TWINS.get(variant),  # what the registry means for this cell
             "schema": schema_for_training(Path(src))}  # the schema's training part alone
    if variant in variants.EXTERNAL:
        entry["package"] = external_package(variant)
        own = tuple(m for m in entry["package"]["imports"] if module_file(m, src).is_file())  # attnlab code it uses
        return cached_fingerprint(("attnlab.training.train", *own), str(src), json.dumps(entry, sort_keys=True),
                                  (REGISTRY, SCHEMA_MODULE))
    return cached_fingerprint(("attnlab.training.train", variants.variant_module(variant)), str(src),
                              json.dumps(entry, sort_keys=True), (REGISTRY, SCHEMA_MODULE))


SCHEMA_MODULE = "attnlab.core.schema"


@lru_cache(maxsize=None)
def schema_for_training(src: Path = SRC) -> str:
    """The config schema as a training cell depends on it: the schema module's code and the sections of the
    schema its slice reads (attnlab.core.schema.training_part, descriptions left out), so an edit to the contest,
    the sweep, the figures or the studies retrains no cell."""
    path = module_file(SCHEMA_MODULE, src)
    data = drop_descriptions(training_part(yaml.safe_load((path.parent / SCHEMA_NAME).read_text())))
    return hashlib.sha256((tree_dump(path) + json.dumps(data, sort_keys=True)).encode()).hexdigest()


# ---- the cache of what file bytes imply (attnlab.core.fact_cache)


def _scanner_digest() -> str:
    """sha256 of the scanner's source (this module, the tree scan, the data-file reading and the cache's): a
    change to how files are read empties every cache."""
    scanner = (sys.modules[__name__], module_scan, package_data, fact_cache)
    return hashlib.sha256(b"".join(Path(m.__file__).read_bytes() for m in scanner)).hexdigest()


def _new_cache() -> FactCache:
    return FactCache(_scanner_digest(), CACHE_FORMAT)


_CACHE = _new_cache()


def persist_to(path: Path) -> None:
    """Keep parse results in `path` between runs (written atomically when the process exits)."""
    _CACHE.persist_to(path)


def save_cache() -> None:
    """Write the parse cache now (it is also written at exit), so jobs started meanwhile find it warm."""
    _CACHE.save()


def _facts(module: str, path: Path) -> dict:
    """What one module file implies, from its bytes: the attnlab names it imports, its path-like strings.

    Keyed by the bytes' sha256, so an entry the cache has checked once (its `checked`) stays right.
    """
    key = f"{module}:{sha(path)}"
    checked = _CACHE.checked.get(key)
    if checked is None:
        if not _is_facts(_CACHE.get(key)):
            tree = ast.parse(path.read_bytes(), filename=str(path))
            _CACHE.put(key, scan(module, tree, path.name == "__init__.py"))
        checked = _CACHE.checked[key] = {"key": key, **_CACHE.entries[key]}
    _CACHE.used.add(key)
    return checked


def _is_digest(value) -> bool:
    return isinstance(value, str) and len(value) == 64


def _is_facts(value) -> bool:
    return (isinstance(value, dict)
            and all(isinstance(value.get(k), list) and all(isinstance(x, str) for x in value[k])
                    for k in ("imports", "anchors", "strings"))
            and isinstance(value.get("dynamic"), list) and all(isinstance(x, int) for x in value["dynamic"]))

