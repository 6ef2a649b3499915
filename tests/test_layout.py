"""The two sides of src/attnlab and their one-way edge: the pipeline never loads JAX, training never reads the pipeline."""

from __future__ import annotations

import json
import pkgutil

from attnlab.core import fingerprint
from conftest import REPO
from processes import run

SRC = REPO / "src"


def modules_under(package: str) -> list[str]:
    root = SRC.joinpath(*package.split("."))
    return sorted(f"{package}.{m.name}" for m in pkgutil.walk_packages([str(root)]) if not m.name.startswith("_")
                  or m.ispkg) + [package]


def test_every_pipeline_and_core_module_imports_without_jax_or_flax():
    mods = modules_under("attnlab.pipeline") + modules_under("attnlab.core") + ["attnlab", "attnlab.cli"]
    code = ("import importlib, json, sys\n"
            f"for m in {mods!r}: importlib.import_module(m)\n"
            "print(json.dumps(sorted(k for k in sys.modules if k.split('.')[0] in ('jax', 'jaxlib', 'flax', 'optax', "
            "'orbax'))))")
    result = run(["-c", code], cwd=REPO, env={"PYTHONPATH": SRC})
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [], "a pipeline-side import loaded JAX/Flax"
    assert len(mods) > 20


def test_training_side_never_imports_the_pipeline_side():
    training = modules_under("attnlab.training")
    for module in training:
        imported = fingerprint.imported_modules(module)
        assert not [m for m in imported if m.startswith("attnlab.pipeline")], (module, imported)


def test_core_imports_neither_side():
    for module in modules_under("attnlab.core"):
        assert not [m for m in fingerprint.imported_modules(module)
                    if m.startswith(("attnlab.pipeline", "attnlab.training"))], module


def test_the_folder_tree_shows_the_sides():
    root = SRC / "attnlab"
    assert {p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("__")} == {
        "core", "training", "pipeline"}
