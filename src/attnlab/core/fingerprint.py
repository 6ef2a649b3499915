"""Fingerprints of what code does, not of its bytes: the rebuild boundary of every rule.

A module's fingerprint hashes its syntax tree with every docstring dropped
(comments and layout never reach the tree), so rewording a comment or a
docstring, or reformatting, changes nothing. A rule's fingerprint covers the
attnlab modules its command imports, found by walking the import graph, plus
the package YAML files those modules read (parsed, descriptions dropped). The
Snakefile passes it to each rule as a param, so a rule reruns exactly when the
behaviour of code it runs changes.

The variant registry is the one place read more finely: a training cell
depends on its own entries (its module, its normaliser and crossover twin),
not the whole table, so adding a variant retrains nothing else.

Parsing every module on every `snakemake -n` is most of a no-op dry run's own
cost, so what a file's bytes imply (its tree digest, the names it imports, the
YAML files it names) can be kept in a small JSON file between runs
(`persist_to`). Entries are keyed by the sha256 of the bytes and the Python
version, so an edited file is never read from the cache, and a lost or
corrupt cache only costs the parse.
"""

from __future__ import annotations

import ast
import atexit
import hashlib
import json
import sys
from functools import lru_cache
from pathlib import Path

import yaml

PACKAGE = "attnlab"
SRC = Path(__file__).resolve().parents[2]  # the folder that holds the attnlab package
REGISTRY = "attnlab.core.variants"
CACHE_FORMAT = 1  # bump when what a cache entry means changes


def module_file(module: str, src: Path = SRC) -> Path:
    """Source file of an attnlab module or package."""
    path = Path(src).joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def imported_modules(module: str, src: Path = SRC) -> set[str]:
    """attnlab modules imported anywhere in `module` (function-level imports too)."""
    path = module_file(module, src)
    return set(_existing(tuple(_facts(module, path)["imports"]), str(src)))


@lru_cache(maxsize=None)
def _existing(names: tuple[str, ...], src: str) -> frozenset[str]:
    """The names that are attnlab modules or packages (not names defined inside one)."""
    return frozenset(name for name in names if module_file(name, Path(src)).exists())


def _import_candidates(module: str, tree: ast.Module) -> list[str]:
    """Every attnlab name an import statement in `tree` could mean (a module, or a name inside one)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = node.module
            if node.level:
                base = ".".join(module.split(".")[: -node.level] + [node.module])
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {name for name in names if name.split(".")[0] == PACKAGE}
    return sorted(found)


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


def module_fingerprint(module: str, src: Path = SRC) -> str:
    """sha256 of the module's syntax tree without docstrings, and of the package YAML it names."""
    path = module_file(module, src)
    facts = _facts(module, path)
    data_files = {name: path.parent / name for name in facts["yaml"]}
    key = facts["key"] + "|" + ",".join(
        f"{name}={_sha(file) if file.is_file() else '-'}" for name, file in sorted(data_files.items()))
    if not _is_digest(_CACHE.get(key)):
        digest = hashlib.sha256(_tree_dump(path).encode())
        for name, data_file in sorted(data_files.items()):
            if data_file.is_file():
                data = _drop_descriptions(yaml.safe_load(data_file.read_text()))
                digest.update(f"{name}:{json.dumps(data, sort_keys=True)}".encode())
        _CACHE.put(key, digest.hexdigest())
    return _CACHE.entries[key]


def fingerprint(*modules: str, src: Path = SRC, extra: dict | None = None, skip: tuple[str, ...] = ()) -> str:
    """One hash over the closure of `modules` (less `skip`) and any extra JSON-able facts."""
    parts = {m: module_fingerprint(m, src) for m in closure(*modules, src=src) if m not in skip}
    parts["extra"] = extra or {}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


@lru_cache(maxsize=None)
def cached_fingerprint(modules: tuple[str, ...], src: str, extra_json: str = "{}", skip: tuple[str, ...] = ()) -> str:
    """fingerprint() memoised for one process (a Snakemake run asks the same question once per job)."""
    return fingerprint(*modules, src=Path(src), extra=json.loads(extra_json), skip=skip)


def training_fingerprint(variant: str, src: Path = SRC) -> str:
    """The code a training cell of `variant` runs: the trainer, its variant's module, its registry line."""
    from attnlab.core import variants

    entry = {"registry": variants.VARIANTS[variant], "normaliser": variants.NORMALISERS.get(variant),
             "twin": variants.NORMALISER_TWINS.get(variant)}  # what the registry means for this cell
    return cached_fingerprint(("attnlab.training.train", variants.variant_module(variant)), str(src),
                              json.dumps(entry, sort_keys=True), (REGISTRY,))


class _FactCache:
    """What file bytes imply, keyed by their sha256; optionally kept in a JSON file between processes.

    A save keeps only the entries this process used, so the file tracks the checkout, not its history."""

    def __init__(self):
        self.entries: dict = {}
        self.used: set[str] = set()
        self.path: Path | None = None
        self.dirty = False
        self.tag = f"{CACHE_FORMAT}:{sys.version_info[0]}.{sys.version_info[1]}"

    def load(self, path: Path) -> None:
        self.path = Path(path)
        try:
            stored = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return  # absent or unreadable: start empty, the parse is the fallback
        if isinstance(stored, dict) and stored.get("tag") == self.tag and isinstance(stored.get("entries"), dict):
            self.entries = {**stored["entries"], **self.entries}

    def get(self, key: str):
        if key in self.entries:
            self.used.add(key)
        return self.entries.get(key)

    def put(self, key: str, value) -> None:
        self.entries[key] = value
        self.used.add(key)
        self.dirty = True

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        from attnlab.core.io import atomic_write_text

        try:
            kept = {key: self.entries[key] for key in self.used}
            atomic_write_text(self.path, json.dumps({"tag": self.tag, "entries": kept}, sort_keys=True))
            self.dirty = False
        except OSError:
            pass  # a read-only workspace just parses again next time


_CACHE = _FactCache()


def persist_to(path: Path) -> None:
    """Keep parse results in `path` between runs (written atomically when the process exits)."""
    if _CACHE.path is None:
        atexit.register(_CACHE.save)
    _CACHE.load(path)


def save_cache() -> None:
    """Write the parse cache now (it is also written at exit), so jobs started meanwhile find it warm."""
    _CACHE.save()


@lru_cache(maxsize=None)
def _sha_of(path: str, _mtime: int, _size: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _sha(path: Path) -> str:
    stat = path.stat()
    return _sha_of(str(path), stat.st_mtime_ns, stat.st_size)


def _facts(module: str, path: Path) -> dict:
    """The attnlab names one module file imports and the YAML files it names, from its bytes."""
    key = f"{module}:{_sha(path)}"
    if not _is_facts(_CACHE.get(key)):
        tree = ast.parse(path.read_bytes(), filename=str(path))
        _CACHE.put(key, {"imports": _import_candidates(module, tree), "yaml": sorted(_yaml_files_named(tree))})
    return {"key": key, **_CACHE.entries[key]}


def _is_digest(value) -> bool:
    return isinstance(value, str) and len(value) == 64


def _is_facts(value) -> bool:
    return isinstance(value, dict) and all(isinstance(value.get(k), list) for k in ("imports", "yaml"))


def _tree_dump(path: Path) -> str:
    tree = ast.parse(path.read_bytes(), filename=str(path))  # a fresh tree: the docstrings are cut from it
    return ast.dump(_without_docstrings(tree))


def _without_docstrings(tree: ast.Module) -> ast.Module:
    """The tree, its modules, classes and functions cut of their leading string statement (in place)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def _yaml_files_named(tree: ast.Module) -> set[str]:
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(".yaml")
            and "/" not in node.value}


def _drop_descriptions(node):
    if isinstance(node, dict):
        return {k: _drop_descriptions(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_drop_descriptions(v) for v in node]
    return node
