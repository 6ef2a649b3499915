"""The rebuild boundary's fingerprints, and the parse cache that keeps a no-op dry run fast.

The rerun matrix itself is tested through Snakemake in test_pipeline.py; these tests pin the
pieces on a tiny package written to tmp_path, where each edit is cheap and exact.
"""

from __future__ import annotations

import ast
import json
import os

import pytest

from attnlab.core import fingerprint

MODULES = {
    "attnlab/__init__.py": "",
    "attnlab/top.py": '"""Top."""\nfrom attnlab import helper\n\n\ndef run():\n    return helper.twice(2)\n',
    "attnlab/helper.py": 'import yaml\n\nTABLE = "table.yaml"\n\n\ndef twice(x):\n    """Double."""\n    return 2 * x\n',
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
    cache = fingerprint._FactCache()
    if path is not None:
        cache.load(path)
    monkeypatch.setattr(fingerprint, "_CACHE", cache)
    return cache


def edit(path, text):
    """Rewrite a file and move its mtime on, so no stat-keyed memo can mistake it for the old one."""
    stat = path.stat()
    path.write_text(text)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def fp(src):
    return fingerprint.fingerprint("attnlab.top", src=src)


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
    tree = fingerprint._without_docstrings(ast.parse(path.read_text()))
    import hashlib

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
