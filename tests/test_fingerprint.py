"""The rebuild boundary's fingerprints, and the parse cache that keeps a no-op dry run fast.

The rerun matrix itself is tested through Snakemake in test_pipeline.py; these tests pin the
pieces on a tiny package written to tmp_path, where each edit is cheap and exact.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import pkgutil

import pytest

from attnlab.core import fingerprint, module_scan, package_data
from conftest import REPO


def dynamic_imports(module: str, src) -> list[int]:
    """Lines of `module` the fingerprint's scan found importing a module whose name is computed at run time."""
    return list(fingerprint._facts(module, fingerprint.module_file(module, src))["dynamic"])


def data_files(module: str, src) -> dict:
    """The package data files the fingerprint's scan finds `module` naming: {name in the digest: file}."""
    path = fingerprint.module_file(module, src)
    return package_data.named_data_files(module, path, src, fingerprint._facts(module, path),
                                         package_data.package_files(src))

MODULES = {
    "attnlab/__init__.py": "",
    "attnlab/top.py": '"""Top."""\nfrom attnlab import helper\n\n\ndef run():\n    return helper.twice(2)\n',
    "attnlab/helper.py": ('import yaml\n\nTABLE = "table.yaml"\n\n\n'
                          'def twice(x):\n    """Double."""\n    return 2 * x\n'),
    "attnlab/table.yaml": "a: 1\ndescription: words\n",
    "attnlab/unused.py": "X = 1\n",
}


@pytest.fixture()
def src(tmp_path, monkeypatch):
    for name, text in MODULES.items():
        path = tmp_path / "src" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    fresh_cache(monkeypatch)
    return tmp_path / "src"


def fresh_cache(monkeypatch, path=None):
    """A new, empty in-process cache (as a new process would have), optionally backed by `path`."""
    cache = fingerprint._new_cache()
    if path is not None:
        cache.load(path)
    monkeypatch.setattr(fingerprint, "_CACHE", cache)
    return cache


def edit(path, text):
    """Rewrite a file and move its mtime on, so no stat-keyed memo can mistake it for the old one."""
    stat = path.stat()
    path.write_text(text)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def add(src, files: dict[str, str]):
    """Write more files into the tiny package (folders made as needed)."""
    for name, text in files.items():
        path = src / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def fp(src, module="attnlab.top"):
    return fingerprint.fingerprint(module, src=src)


def test_closure_follows_imports_and_leaves_out_unimported_modules(src):
    assert fingerprint.closure("attnlab.top", src=src) == ["attnlab", "attnlab.helper", "attnlab.top"]


def test_comments_docstrings_and_layout_keep_the_fingerprint(src):
    before = fp(src)
    edit(src / "attnlab/helper.py", 'import yaml  # a comment\n\nTABLE = "table.yaml"\n\n\ndef twice(x):\n'
                                    '    """Double it, reworded."""\n\n    return 2 * x   # layout\n')
    edit(src / "attnlab/table.yaml", "a: 1\ndescription: other words\n")
    assert fp(src) == before


def test_code_yaml_and_unrelated_edits(src):
    before = fp(src)
    edit(src / "attnlab/unused.py", "X = 2\n")
    assert fp(src) == before  # not in the closure
    edit(src / "attnlab/table.yaml", "a: 2\ndescription: words\n")
    after_yaml = fp(src)
    assert after_yaml != before
    edit(src / "attnlab/helper.py", MODULES["attnlab/helper.py"].replace("2 * x", "3 * x"))
    assert fp(src) not in (before, after_yaml)


def test_a_persisted_cache_gives_the_same_fingerprint_without_parsing(src, tmp_path, monkeypatch):
    cold = fp(src)
    store = tmp_path / "cache" / "facts.json"
    cache = fresh_cache(monkeypatch, store)
    assert fp(src) == cold
    cache.save()
    assert json.loads(store.read_text())["entries"]

    fresh_cache(monkeypatch, store)  # a new process with the stored cache: nothing to parse
    monkeypatch.setattr(fingerprint.ast, "parse", lambda *a, **k: pytest.fail("parsed despite the cache"))
    assert fp(src) == cold


def test_the_cache_never_answers_for_edited_bytes(src, tmp_path, monkeypatch):
    store = tmp_path / "facts.json"
    cache = fresh_cache(monkeypatch, store)
    before = fp(src)
    cache.save()
    edit(src / "attnlab/helper.py", MODULES["attnlab/helper.py"].replace("2 * x", "x + x"))
    edit(src / "attnlab/top.py", MODULES["attnlab/top.py"] + "from attnlab import unused\n")
    fresh_cache(monkeypatch, store)
    assert fp(src) != before
    assert "attnlab.unused" in fingerprint.closure("attnlab.top", src=src)  # imports re-read too
    fresh_cache(monkeypatch)  # and the answer equals a cold computation
    cold = fp(src)
    fresh_cache(monkeypatch, store)
    assert fp(src) == cold


@pytest.mark.parametrize("stored", ["{not json", json.dumps({"tag": "0:2.7", "entries": {"x": "y"}}), "[]"])
def test_a_corrupt_or_foreign_cache_is_ignored(src, tmp_path, monkeypatch, stored):
    cold = fp(src)
    store = tmp_path / "facts.json"
    store.write_text(stored)
    cache = fresh_cache(monkeypatch, store)
    assert cache.entries == {}
    assert fp(src) == cold
    cache.save()  # replaced whole by a valid cache
    assert json.loads(store.read_text())["tag"] == cache.tag


def test_a_poisoned_entry_for_the_same_bytes_would_be_used(src, tmp_path, monkeypatch):
    """The cache really is consulted (the test above would pass if it were never read)."""
    store = tmp_path / "facts.json"
    cache = fresh_cache(monkeypatch, store)
    fp(src)
    for key in cache.entries:
        if "|" in key and key.startswith("attnlab.helper:"):
            cache.entries[key] = "0" * 64
    cache.save()
    poisoned = fresh_cache(monkeypatch, store)
    assert poisoned.entries
    assert fingerprint.module_fingerprint("attnlab.helper", src=src) == "0" * 64


def test_an_unwritable_cache_location_is_not_an_error(src, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    cache = fresh_cache(monkeypatch, blocker / "facts.json")  # its parent is a file
    fp(src)
    cache.save()
    assert blocker.read_text() == ""


def test_the_real_tree_parses_into_the_same_digest_as_the_plain_algorithm():
    """The cached path reproduces the documented digest: sha256 of the docstring-free tree dump."""
    path = fingerprint.module_file("attnlab.core.errors")
    tree = module_scan.without_docstrings(ast.parse(path.read_text()))
    assert fingerprint.module_fingerprint("attnlab.core.errors") == hashlib.sha256(ast.dump(tree).encode()).hexdigest()


def test_malformed_entries_are_recomputed(src, tmp_path, monkeypatch):
    store = tmp_path / "facts.json"
    cache = fresh_cache(monkeypatch, store)
    cold = fp(src)
    for key in cache.entries:
        cache.entries[key] = 7 if "|" in key else {"imports": "attnlab.top"}
    cache.save()
    fresh_cache(monkeypatch, store)
    assert fp(src) == cold


def test_a_save_keeps_only_what_the_run_used(src, tmp_path, monkeypatch):
    store = tmp_path / "facts.json"
    cache = fresh_cache(monkeypatch, store)
    fp(src)
    cache.save()
    edit(src / "attnlab/helper.py", MODULES["attnlab/helper.py"].replace("2 * x", "x * 2"))
    cache = fresh_cache(monkeypatch, store)
    fp(src)
    cache.save()
    stored = json.loads(store.read_text())["entries"]
    assert sum(key.startswith("attnlab.helper:") and "|" not in key for key in stored) == 1


# ---- every import: relative ones, in packages, and string imports of a literal name


def test_from_dot_import_a_helper_is_followed(src):
    add(src, {"attnlab/rel.py": "from . import helper\n\n\ndef run():\n    return helper.twice(1)\n"})
    assert "attnlab.helper" in fingerprint.closure("attnlab.rel", src=src)
    before = fp(src, "attnlab.rel")
    edit(src / "attnlab/helper.py", MODULES["attnlab/helper.py"].replace("2 * x", "3 * x"))
    assert fp(src, "attnlab.rel") != before


def test_relative_imports_in_a_package_init_resolve_inside_that_package(src):
    add(src, {"attnlab/pkg/__init__.py": "from .inner import value\nfrom . import sibling\n",
              "attnlab/pkg/inner.py": "value = 1\n", "attnlab/pkg/sibling.py": "Y = 1\n",
              "attnlab/inner.py": "value = 2\n"})  # what the import would mean one package too high
    assert fingerprint.closure("attnlab.pkg", src=src) == [
        "attnlab", "attnlab.pkg", "attnlab.pkg.inner", "attnlab.pkg.sibling"]
    before = fp(src, "attnlab.pkg")
    edit(src / "attnlab/pkg/inner.py", "value = 3\n")
    assert fp(src, "attnlab.pkg") != before


@pytest.mark.parametrize("call", [
    'importlib.import_module("attnlab.helper")',
    'importlib.import_module(".helper", __package__)',
    'importlib.import_module(".helper", package="attnlab")',
    '__import__("attnlab.helper")',
])
def test_a_string_import_of_a_literal_name_is_followed(src, call):
    add(src, {"attnlab/loader.py": f"import importlib\n\n\ndef load():\n    return {call}\n"})
    assert "attnlab.helper" in fingerprint.closure("attnlab.loader", src=src)
    assert dynamic_imports("attnlab.loader", src=src) == []
    before = fp(src, "attnlab.loader")
    edit(src / "attnlab/helper.py", MODULES["attnlab/helper.py"].replace("2 * x", "3 * x"))
    assert fp(src, "attnlab.loader") != before


def test_a_string_import_of_a_computed_name_is_reported(src):
    add(src, {"attnlab/loader.py": "import importlib\n\n\ndef load(name):\n    return importlib.import_module(name)\n"})
    assert dynamic_imports("attnlab.loader", src=src) == [5]


def test_only_the_variant_registry_imports_computed_names():
    """A computed import is invisible to the fingerprint; the registry's is covered by training_fingerprint."""
    src = REPO / "src"
    modules = ["attnlab"] + sorted(m.name for m in pkgutil.walk_packages([str(src / "attnlab")], "attnlab."))
    assert len(modules) > 40
    dynamic = {m: lines for m in modules if (lines := dynamic_imports(m, src=src))}
    assert set(dynamic) == {"attnlab.training.attention"}, dynamic


# ---- every data file the code names, of any extension


def test_a_json_file_the_code_reads_counts_by_its_content(src):
    add(src, {"attnlab/weights.json": '{"a": 1, "b": [1, 2]}\n',
              "attnlab/reader.py": "import json\nfrom pathlib import Path\n\n\n"
                                   "def weights():\n"
                                   "    return json.loads((Path(__file__).parent / 'weights.json').read_text())\n"})
    before = fp(src, "attnlab.reader")
    assert data_files("attnlab.reader", src=src) == {"weights.json": src / "attnlab/weights.json"}
    edit(src / "attnlab/weights.json", '{\n  "b": [1, 2],\n  "a": 1\n}\n')  # layout and key order only
    assert fp(src, "attnlab.reader") == before
    edit(src / "attnlab/weights.json", '{"a": 2, "b": [1, 2]}\n')
    assert fp(src, "attnlab.reader") != before


@pytest.mark.parametrize("name,reader", [
    ("attnlab/words.txt", "(Path(__file__).parent / 'words.txt').read_text()"),
    ("attnlab/data/table.csv", "(Path(__file__).parent / 'data/table.csv').read_text()"),
    ("attnlab/data/table.csv", "(Path(__file__).parent / 'data' / 'table.csv').read_text()"),
    ("attnlab/pkg/words.txt", "resources.files('attnlab.pkg').joinpath('words.txt').read_text()"),
])
def test_any_data_file_the_code_names_counts_by_its_bytes(src, name, reader):
    add(src, {name: "one\n", "attnlab/pkg/__init__.py": "",
              "attnlab/reader.py": f"from importlib import resources\nfrom pathlib import Path\n\n\n"
                                   f"def words():\n    return {reader}\n"})
    before = fp(src, "attnlab.reader")
    edit(src / name, "two\n")
    assert fp(src, "attnlab.reader") != before


def test_a_new_data_file_named_by_the_code_counts_once_it_exists(src):
    add(src, {"attnlab/reader.py": "NAME = 'extra.json'\n"})
    before = fp(src, "attnlab.reader")
    add(src, {"attnlab/extra.json": "[1]\n"})
    assert fp(src, "attnlab.reader") != before


def test_every_data_file_in_the_package_is_named_by_its_code():
    """A data file read through a computed name would be invisible to the fingerprint: there is none."""
    src = REPO / "src"
    modules = ["attnlab"] + sorted(m.name for m in pkgutil.walk_packages([str(src / "attnlab")], "attnlab."))
    named = {file for m in modules for file in data_files(m, src=src).values()}
    on_disk = {p for p in (src / "attnlab").rglob("*") if p.is_file() and "__pycache__" not in p.parts
               and p.suffix not in module_scan.SOURCE_SUFFIXES}
    assert on_disk and on_disk <= named, on_disk - named


# ---- the cache trusts only what this scanner wrote


def test_the_cache_is_keyed_by_the_scanners_own_source(src, tmp_path, monkeypatch):
    scanner = hashlib.sha256(b"".join((REPO / "src/attnlab/core" / name).read_bytes()
                                      for name in ("fingerprint.py", "module_scan.py", "package_data.py",
                                                   "fact_cache.py"))).hexdigest()
    assert fingerprint._new_cache().tag.endswith(scanner)
    store = tmp_path / "facts.json"
    cache = fresh_cache(monkeypatch, store)
    cold = fp(src)
    for key, value in cache.entries.items():  # what an older scanner might have said: no imports at all
        if key.startswith("attnlab.top:") and "|" not in key:
            cache.entries[key] = dict(value, imports=[])
    cache.save()
    monkeypatch.setattr(fingerprint, "_scanner_digest", lambda: "0" * 64)  # the scanner was fixed since
    assert fresh_cache(monkeypatch, store).entries == {}
    assert fp(src) == cold and "attnlab.helper" in fingerprint.closure("attnlab.top", src=src)


def test_an_entry_forged_in_the_stored_cache_is_not_trusted(src, tmp_path, monkeypatch):
    store = tmp_path / "facts.json"
    cache = fresh_cache(monkeypatch, store)
    fp(src)
    cache.save()
    edit(src / "attnlab/helper.py", MODULES["attnlab/helper.py"].replace("2 * x", "3 * x"))
    fresh_cache(monkeypatch)
    edited_fp = fp(src)
    stored = json.loads(store.read_text())
    sha = hashlib.sha256((src / "attnlab/helper.py").read_bytes()).hexdigest()
    facts_key = next(k for k in stored["entries"] if k.startswith("attnlab.helper:") and "|" not in k)
    old_digest_key = next(k for k in stored["entries"] if k.startswith("attnlab.helper:") and "|" in k)
    # a hand-made entry claiming the edited bytes mean what the old ones meant
    stored["entries"][f"attnlab.helper:{sha}"] = stored["entries"][facts_key]
    stored["entries"][f"attnlab.helper:{sha}" + old_digest_key[len(facts_key):]] = stored["entries"][old_digest_key]
    store.write_text(json.dumps(stored))
    assert fresh_cache(monkeypatch, store).entries == {}
    assert fp(src) == edited_fp


def test_a_training_cell_depends_on_its_slice_of_the_schema_alone(tmp_path, monkeypatch):
    """An edit to the schema's contest section (a new key, as a design adds) leaves every training fingerprint
    as it was; a new default in the model section, which a cell reads, changes it."""
    import shutil

    import yaml

    src = tmp_path / "src"
    shutil.copytree(REPO / "src" / "attnlab", src / "attnlab", ignore=shutil.ignore_patterns("__pycache__"))
    fresh_cache(monkeypatch)
    fingerprint.schema_for_training.cache_clear()
    before = fingerprint.training_fingerprint("softmax", src=src)
    path = src / "attnlab" / "core" / "config.schema.yaml"
    schema = yaml.safe_load(path.read_text())
    schema["properties"]["contest"]["properties"]["another_key"] = {"type": "integer", "default": 3}
    edit(path, yaml.safe_dump(schema))
    fresh_cache(monkeypatch)
    fingerprint.schema_for_training.cache_clear()
    assert fingerprint.training_fingerprint("softmax", src=src) == before
    schema["properties"]["model"]["properties"]["dropout"]["default"] = 0.3
    edit(path, yaml.safe_dump(schema))
    fresh_cache(monkeypatch)
    fingerprint.schema_for_training.cache_clear()
    assert fingerprint.training_fingerprint("softmax", src=src) != before
