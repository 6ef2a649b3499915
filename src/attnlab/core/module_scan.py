"""What one attnlab module file says about its dependencies, read from its syntax tree alone.

The names it imports (static, relative, and `importlib` calls with a literal
name), the packages it hands to `importlib.resources.files`, the string
literals that could name a data file, and the lines that import a name
computed at run time. Also the tree as a fingerprint hashes it: docstrings
cut, YAML descriptions dropped. attnlab.core.fingerprint caches these facts by
the file's bytes and walks the import graph with them.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path, PurePosixPath

PACKAGE = "attnlab"
SRC = Path(__file__).resolve().parents[2]  # the folder that holds the attnlab package
SOURCE_SUFFIXES = (".py", ".pyc", ".pyo")  # modules: followed through imports, never as data
_PATH_LIKE = re.compile(r"[A-Za-z0-9_.\-/]{1,255}")  # a string literal that could name a file
_DYNAMIC_IMPORTS = ("import_module", "__import__")


def module_file(module: str, src: Path = SRC) -> Path:
    """Source file of an attnlab module or package (string paths: a parse asks this about a thousand times)."""
    base = os.path.join(src, *module.split("."))
    return Path(base, "__init__.py") if os.path.isdir(base) else Path(base + ".py")


def scan(module: str, tree: ast.Module, is_package: bool) -> dict:
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


def tree_dump(path: Path) -> str:
    tree = ast.parse(path.read_bytes(), filename=str(path))  # a fresh tree: the docstrings are cut from it
    return ast.dump(without_docstrings(tree))


def without_docstrings(tree: ast.Module) -> ast.Module:
    """The tree, its modules, classes and functions cut of their leading string statement (in place)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def drop_descriptions(node):
    if isinstance(node, dict):
        return {k: drop_descriptions(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [drop_descriptions(v) for v in node]
    return node

