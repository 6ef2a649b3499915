"""Fingerprints of what code does, not of its bytes: the rebuild boundary of every rule.

A module's fingerprint hashes its syntax tree with every docstring dropped
(comments and layout never reach the tree), so rewording a comment or a
docstring, or reformatting, changes nothing. A rule's fingerprint covers the
attnlab modules its command imports, found by walking the import graph, plus
the package data files those modules name. The Snakefile passes it to each
rule as a param, so a rule reruns exactly when the behaviour of code it runs
changes.

What counts as an import: `import attnlab.x`, `from attnlab.x import y`,
relative imports (`from . import y`, `from .x import y`, in a package's
`__init__.py` too), `importlib.import_module` / `__import__` of a literal
attnlab name, and `importlib.resources.files` of a literal attnlab package. An
import of a name computed at run time cannot be followed; the variant registry
is the one place allowed to do that (tests keep it so).

What counts as a data file: a file in the package that is not Python source,
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
whole by the Python version and the sha256 of this module's own source, so an
edited file is never read from the cache and a change to the scanner starts
from an empty one. The file carries a checksum of its entries: one edited by
hand is ignored whole. A lost, corrupt or foreign cache only costs the parse.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import os
import re
import sys
from functools import lru_cache
from pathlib import Path, PurePosixPath

import yaml

from attnlab.core import fact_cache
from attnlab.core.fact_cache import FactCache
from attnlab.core.schema import SCHEMA_NAME, training_part

PACKAGE = "attnlab"
SRC = Path(__file__).resolve().parents[2]  # the folder that holds the attnlab package
REGISTRY = "attnlab.core.variants"
CACHE_FORMAT = 2  # bump when what a cache entry means changes
SOURCE_SUFFIXES = (".py", ".pyc", ".pyo")  # modules: followed through imports, never as data
_PATH_LIKE = re.compile(r"[A-Za-z0-9_.\-/]{1,255}")  # a string literal that could name a file
_DYNAMIC_IMPORTS = ("import_module", "__import__")


def module_file(module: str, src: Path = SRC) -> Path:
    """Source file of an attnlab module or package (string paths: a parse asks this about a thousand times)."""
    base = os.path.join(src, *module.split("."))
    return Path(base, "__init__.py") if os.path.isdir(base) else Path(base + ".py")


def imported_modules(module: str, src: Path = SRC) -> set[str]:
    """attnlab modules imported anywhere in `module` (function-level imports too)."""
    path = module_file(module, src)
    return set(_existing(tuple(_facts(module, path)["imports"]), str(src)))


@lru_cache(maxsize=None)
def _existing(names: tuple[str, ...], src: str) -> frozenset[str]:
    """The names that are attnlab modules or packages (not names defined inside one)."""
    return frozenset(name for name in names if module_file(name, Path(src)).exists())


def _scan(module: str, tree: ast.Module, is_package: bool) -> dict:
    """What one module's tree says about its dependencies (the cached facts, less the key)."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    imports, anchors, dynamic = set(), set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imports |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node.module or "", node.level, package)
            if base:
                imports |= {base} | {f"{base}.{alias.name}" for alias in node.names if alias.name != "*"}
        elif isinstance(node, ast.Call):
            name = _called_name(node)
            target = _literal_import(node, package) if name in _DYNAMIC_IMPORTS + ("files",) else None
            if name in _DYNAMIC_IMPORTS:
                if target is None:
                    dynamic.add(node.lineno)
                else:
                    imports.add(target)
            elif name == "files" and target is not None:  # importlib.resources.files("attnlab.x")
                imports.add(target)
                anchors.add(target)
    strings = {PurePosixPath(node.value).as_posix() for node in ast.walk(tree)
               if isinstance(node, ast.Constant) and isinstance(node.value, str)
               and _PATH_LIKE.fullmatch(node.value) and _relative_inside(node.value)}
    return {"imports": _ours(imports), "anchors": _ours(anchors), "strings": sorted(strings),
            "dynamic": sorted(dynamic)}


def _ours(names: set[str]) -> list[str]:
    return sorted(name for name in names if name.split(".")[0] == PACKAGE)


def _resolve(name: str, level: int, package: list[str]) -> str:
    """The absolute name of `from <level dots><name> import ...` inside `package`."""
    if not level:
        return name
    if level - 1 > len(package):
        return ""  # above the top package: Python refuses it too
    base = package[: len(package) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _called_name(node: ast.Call) -> str | None:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _literal_import(node: ast.Call, package: list[str]) -> str | None:
    """The module a call like import_module("attnlab.x") or import_module(".x", __package__) names, if literal."""
    if not node.args or not isinstance(node.args[0], ast.Constant) or not isinstance(node.args[0].value, str):
        return None
    name = node.args[0].value
    if not name.startswith("."):
        return name
    anchor = node.args[1] if len(node.args) > 1 else next(
        (k.value for k in node.keywords if k.arg == "package"), None)
    if isinstance(anchor, ast.Constant) and isinstance(anchor.value, str):
        anchor_parts = anchor.value.split(".")
    elif isinstance(anchor, ast.Name) and anchor.id == "__package__":
        anchor_parts = package
    else:
        return None
    level = len(name) - len(name.lstrip("."))
    return _resolve(name[level:], level, anchor_parts) or None


def _relative_inside(text: str) -> bool:
    return not text.startswith("/") and ".." not in PurePosixPath(text).parts and PurePosixPath(text).parts != ()


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
    named = _named_data_files(module, path, Path(src), facts,
                              _package_files(Path(src)) if _files is None else _files)
    key = facts["key"] + "|" + ",".join(f"{name}={_sha(file)}" for name, file in sorted(named.items()))
    if not _is_digest(_CACHE.get(key)):
        digest = hashlib.sha256(_tree_dump(path).encode())
        for name, data_file in sorted(named.items()):
            digest.update(f"{name}:{_data_text(data_file)}".encode())
        _CACHE.put(key, digest.hexdigest())
    return _CACHE.entries[key]


def fingerprint(*modules: str, src: Path = SRC, extra: dict | None = None, skip: tuple[str, ...] = ()) -> str:
    """One hash over the closure of `modules` (less `skip`) and any extra JSON-able facts."""
    files = _package_files(Path(src))
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
    data = _drop_descriptions(training_part(yaml.safe_load((path.parent / SCHEMA_NAME).read_text())))
    return hashlib.sha256((_tree_dump(path) + json.dumps(data, sort_keys=True)).encode()).hexdigest()


@lru_cache(maxsize=None)
def external_package(variant: str) -> dict:
    """An installed variant's distribution and version, and one hash over every file that distribution installed
    (its RECORD: every top-level module and package, found without importing them; byte code and the metadata
    folder left out), so an edit anywhere in it retrains its cells alone. A distribution without a RECORD is
    read by the top-level package its module is in."""
    from attnlab.core import variants

    distribution, version = variants.EXTERNAL[variant]
    files = _installed_files(distribution) or _package_files_of(variant)
    digest, imports = hashlib.sha256(), set()
    for name, file in files:
        digest.update(f"{name}\0".encode() + file.read_bytes() + b"\0")
        if file.suffix == ".py":  # the attnlab modules it imports, as the import graph reads attnlab's own
            parts = PurePosixPath(name).with_suffix("").parts
            module = ".".join(parts[:-1] if file.name == "__init__.py" else parts)
            try:
                imports |= set(_scan(module, ast.parse(file.read_text(errors="replace")),
                                     file.name == "__init__.py")["imports"])
            except SyntaxError:
                pass
    return {"distribution": distribution, "version": version, "files": digest.hexdigest()[:16],
            "imports": sorted(imports)}


def _kept(parts: tuple[str, ...], suffix: str) -> bool:
    """A file of the installed code: not byte code, not the distribution's metadata."""
    return (suffix not in (".pyc", ".pyo") and "__pycache__" not in parts
            and not any(part.endswith((".dist-info", ".egg-info")) for part in parts))


def _installed_files(distribution: str) -> list[tuple[str, Path]]:
    """(name in the RECORD, file) of every file the distribution installed, sorted ([] without a RECORD)."""
    import importlib.metadata

    try:
        listed = importlib.metadata.distribution(distribution).files or []
    except importlib.metadata.PackageNotFoundError:
        return []
    found = [(str(f), Path(f.locate())) for f in listed if _kept(tuple(f.parts), f.suffix)]
    return sorted((name, path) for name, path in found if path.is_file() and ".." not in PurePosixPath(name).parts)


def _package_files_of(variant: str) -> list[tuple[str, Path]]:
    """(name, file) of every file of the top-level package the variant's module is in."""
    from attnlab.core import variants

    top = variants.variant_module(variant).split(".")[0]
    spec = importlib.util.find_spec(top)
    if spec is None:
        raise LookupError(f"variant {variant!r}: its package {top!r} cannot be found; install it again")
    roots = [Path(p) for p in spec.submodule_search_locations or ()] or [Path(spec.origin)]
    return [(file.relative_to(root.parent).as_posix(), file) for root in roots
            for file in sorted(f for f in ([root] if root.is_file() else root.rglob("*"))
                               if f.is_file() and _kept(f.parts, f.suffix))]


def _named_data_files(module: str, path: Path, src: Path, facts: dict, files: frozenset) -> dict[str, Path]:
    """{name: file} of the package's data files that the module's string literals name.

    A string is read as a path from the module's folder and from each package
    the module hands to resources.files; a file found there is named by the
    string itself when it sits in the module's folder (or below it), else by
    its path in the package. A string that names no such file but ends a data
    file's path anywhere in the package still counts (a file reached through a
    computed folder is better over-counted than missed).
    """
    memo_key = (facts["key"], files)
    if memo_key not in _NAMED:
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        own = "/".join(package)
        anchors = [own] + ["/".join(name.split(".")) for name in facts["anchors"]]
        found: dict[str, str] = {}
        for text in facts["strings"]:
            direct = [f"{anchor}/{text}" for anchor in anchors if f"{anchor}/{text}" in files]
            for rel in direct:
                found.setdefault(rel, text if rel == f"{own}/{text}" else rel)
            if not direct:
                for rel in files:
                    if rel.endswith("/" + text):
                        found.setdefault(rel, rel)
        _NAMED[memo_key] = {name: rel for rel, name in found.items()}
    return {name: src / rel for name, rel in _NAMED[memo_key].items()}


_NAMED: dict = {}  # (facts key, package listing) -> {name: path in the package}


class _Listing:
    """The package's non-source files as paths from the source root ('attnlab/core/x.yaml'),
    listed again only when a folder of the package changes."""

    def __init__(self):
        self.known: dict[str, tuple[dict[str, int], frozenset]] = {}

    def files(self, src: Path) -> frozenset:
        root = Path(src) / PACKAGE
        stored = self.known.get(str(root))
        if stored is not None and all(_mtime(folder) == mtime for folder, mtime in stored[0].items()):
            return stored[1]
        folders, files = {}, set()
        for folder, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            folders[folder] = _mtime(folder)
            rel = Path(folder).relative_to(src).as_posix()
            files |= {f"{rel}/{name}" for name in names if not name.endswith(SOURCE_SUFFIXES)}
        listed = frozenset(files)
        self.known[str(root)] = (folders, listed)
        return listed


def _mtime(folder: str) -> int | None:
    try:
        return os.stat(folder).st_mtime_ns
    except OSError:
        return None


_LISTING = _Listing()


def _package_files(src: Path) -> frozenset:
    return _LISTING.files(src)


def _data_text(path: Path) -> str:
    """What a data file means: YAML parsed without descriptions, JSON parsed, anything else its bytes' sha256."""
    if path.suffix in (".yaml", ".yml"):
        try:
            return json.dumps(_drop_descriptions(yaml.safe_load(path.read_text())), sort_keys=True)
        except (yaml.YAMLError, UnicodeDecodeError, TypeError, ValueError):
            pass  # not plain YAML data: its bytes are what it is
    elif path.suffix == ".json":
        try:
            return json.dumps(json.loads(path.read_bytes()), sort_keys=True)
        except (UnicodeDecodeError, ValueError):
            pass
    return f"sha256={_sha(path)}"


# ---- the cache of what file bytes imply (attnlab.core.fact_cache)


def _scanner_digest() -> str:
    """sha256 of the scanner's source (this module and the cache's): a change to how files are read empties every
    cache."""
    return hashlib.sha256(b"".join(Path(m.__file__).read_bytes() for m in (sys.modules[__name__], fact_cache))
                          ).hexdigest()


def _new_cache() -> FactCache:
    return FactCache(_scanner_digest(), CACHE_FORMAT)


_CACHE = _new_cache()


def persist_to(path: Path) -> None:
    """Keep parse results in `path` between runs (written atomically when the process exits)."""
    _CACHE.persist_to(path)


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
    """What one module file implies, from its bytes: the attnlab names it imports, its path-like strings.

    Keyed by the bytes' sha256, so an entry the cache has checked once (its `checked`) stays right.
    """
    key = f"{module}:{_sha(path)}"
    checked = _CACHE.checked.get(key)
    if checked is None:
        if not _is_facts(_CACHE.get(key)):
            tree = ast.parse(path.read_bytes(), filename=str(path))
            _CACHE.put(key, _scan(module, tree, path.name == "__init__.py"))
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


def _drop_descriptions(node):
    if isinstance(node, dict):
        return {k: _drop_descriptions(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_drop_descriptions(v) for v in node]
    return node
