"""The code of a variant installed from another distribution (the `attnlab.variants` entry point group).

Its training fingerprint covers the distribution's name, version and one hash
over every file it installed (read from its RECORD, found without importing
it), so an edit anywhere in that package retrains its cells alone; the attnlab
modules it imports join the fingerprint as attnlab's own do.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
from functools import lru_cache
from pathlib import Path, PurePosixPath

from attnlab.core.module_scan import scan


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
                imports |= set(scan(module, ast.parse(file.read_text(errors="replace")),
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

