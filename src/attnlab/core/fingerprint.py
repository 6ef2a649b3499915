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
"""

from __future__ import annotations

import ast
import hashlib
import json
from functools import lru_cache
from pathlib import Path

import yaml

PACKAGE = "attnlab"
SRC = Path(__file__).resolve().parents[2]  # the folder that holds the attnlab package
REGISTRY = "attnlab.core.variants"


def module_file(module: str, src: Path = SRC) -> Path:
    """Source file of an attnlab module or package."""
    path = Path(src).joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def imported_modules(module: str, src: Path = SRC) -> set[str]:
    """attnlab modules imported anywhere in `module` (function-level imports too)."""
    path = module_file(module, src)
    return set(_imports(module, str(src), str(path), path.stat().st_mtime_ns))


@lru_cache(maxsize=None)
def _imports(module: str, src: str, path: str, _mtime: int) -> frozenset[str]:
    found = set()
    for node in ast.walk(_tree(Path(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = node.module
            if node.level:
                base = ".".join(module.split(".")[: -node.level] + [node.module])
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {name for name in names if name.split(".")[0] == PACKAGE and module_file(name, Path(src)).exists()}
    return frozenset(found)


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
    return _module_digest(str(path), path.stat().st_mtime_ns, path.stat().st_size)


@lru_cache(maxsize=None)
def _module_digest(path: str, _mtime: int, _size: int) -> str:
    path = Path(path)
    tree = ast.parse(path.read_text(), filename=str(path))  # a fresh tree: the docstrings are cut from it
    digest = hashlib.sha256(ast.dump(_without_docstrings(tree)).encode())
    for name in sorted(_yaml_files_named(tree)):
        data_file = path.parent / name
        if data_file.is_file():
            data = _drop_descriptions(yaml.safe_load(data_file.read_text()))
            digest.update(f"{name}:{json.dumps(data, sort_keys=True)}".encode())
    return digest.hexdigest()


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


def _tree(path: Path) -> ast.Module:
    return _parse(str(path), Path(path).stat().st_mtime_ns)


@lru_cache(maxsize=None)
def _parse(path: str, _mtime: int) -> ast.Module:
    return ast.parse(Path(path).read_text(), filename=path)


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
