"""The package's data files a module names, and what each one means to a fingerprint.

A string literal in a module names a data file when it is a path from the
module's folder or from a package the module hands to `resources.files` (else
when it ends a data file's path anywhere in the package: a file reached
through a computed folder is better over-counted than missed). YAML counts
parsed with its `description` keys dropped, JSON parsed, anything else by its
bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path

import yaml

from attnlab.core.module_scan import PACKAGE, SOURCE_SUFFIXES, drop_descriptions


def named_data_files(module: str, path: Path, src: Path, facts: dict, files: frozenset) -> dict[str, Path]:
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


def package_files(src: Path) -> frozenset:
    return _LISTING.files(src)


def data_text(path: Path) -> str:
    """What a data file means: YAML parsed without descriptions, JSON parsed, anything else its bytes' sha256."""
    if path.suffix in (".yaml", ".yml"):
        try:
            return json.dumps(drop_descriptions(yaml.safe_load(path.read_text())), sort_keys=True)
        except (yaml.YAMLError, UnicodeDecodeError, TypeError, ValueError):
            pass  # not plain YAML data: its bytes are what it is
    elif path.suffix == ".json":
        try:
            return json.dumps(json.loads(path.read_bytes()), sort_keys=True)
        except (UnicodeDecodeError, ValueError):
            pass
    return f"sha256={sha(path)}"


@lru_cache(maxsize=None)
def _sha_of(path: str, _mtime: int, _size: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def sha(path: Path) -> str:
    stat = path.stat()
    return _sha_of(str(path), stat.st_mtime_ns, stat.st_size)

