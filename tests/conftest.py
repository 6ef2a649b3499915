"""Shared fixtures: the corpus used by tests, a tiny config, one smoke build, one XLA cache per run.

`-n N` (pytest-xdist) runs the tests in N worker processes. A build that
session or module fixtures share is made once per run, not once per worker:
every test that uses one goes to the worker that made it (SHARED_BUILDS).
"""

from __future__ import annotations

import copy
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import yaml

from processes import TEST_XLA_FLAGS  # quick compiles, for the test processes and every process they start

POOL_ENV = "PJRT_NPROC"  # attnlab.training.runtime.POOL_ENV, named here so conftest imports no JAX

REPO = Path(__file__).resolve().parents[1]
SHARED_CORPUS = REPO.parent / "shared" / "data" / "tinyshakespeare.txt"
# Where the smoke build's tables and bundle summaries are copied, for .ci/slurm-smoke to compare against.
SMOKE_REFERENCE_ENV = "ATTNLAB_SMOKE_REFERENCE"
CACHE_DIR_ENV = "JAX_COMPILATION_CACHE_DIR"  # JAX's own variable: the run's one compilation cache
COMPILE_CACHE_ENV = {"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
                     "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"}
# A built workspace for the tests that read a finished writeup (test_browser, test_pdf) instead of the smoke build.
BROWSER_WORKSPACE_ENV = "ATTNLAB_BROWSER_WORKSPACE"
# Where a copy of the smoke build is kept after the run (.ci/run hands it to the browser tests' run).
SMOKE_KEEP_ENV = "ATTNLAB_SMOKE_WORKSPACE_KEEP"
# Fixture -> xdist group: the session and module fixtures that train or build. built_writeup asks for
# smoke_workspace at run time, where pytest cannot see the dependency.
SHARED_BUILDS = {"smoke_workspace": "smoke", "built_writeup": "smoke",  # conftest
                 "one_cell": "one_cell",  # test_collection
                 "trained": "trained",  # test_faults
                 "two_bundles": "two_bundles"}  # test_reliability


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """`-n N` alone distributes tests by group (--dist loadgroup); an explicit --dist is kept."""
    if getattr(config.option, "numprocesses", None) and config.option.dist == "no":
        config.option.dist = "loadgroup"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """A worker parses only the command line again: tell it whether tests go out by group."""
    node.workerinput["attnlab_loadgroup"] = node.config.option.dist == "loadgroup"


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config, items):
    """In a loadgroup worker, each test that uses a shared build joins that build's group.

    xdist schedules a group by the `@group` suffix of its tests' ids, which
    its own hook sets through an attribute this pytest no longer reads; the
    suffix is set here where it is missing.
    """
    grouped = getattr(config, "workerinput", {}).get("attnlab_loadgroup", False)
    if grouped:
        for item in items:
            groups = {SHARED_BUILDS[name] for name in item.fixturenames if name in SHARED_BUILDS}
            if len(groups) > 1:
                raise pytest.UsageError(f"{item.nodeid} uses the builds of {sorted(groups)}: give them one group")
            for group in groups:
                item.add_marker(pytest.mark.xdist_group(group))
    result = yield
    if grouped:
        for item in items:
            names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                            for m in item.iter_markers("xdist_group")})
            suffix = "@" + "_".join(names)
            if names and not item.nodeid.endswith(suffix):  # pytest >= 9.2 keeps the id in _id
                from _pytest.nodeid import NodeId

                item._id = NodeId.parse(item.nodeid + suffix)
    return result


def pytest_configure(config):
    """One persistent XLA compilation cache for this pytest run, and quick compiles in the test processes.

    Both are set in the environment before any test module imports JAX. The
    cache: this process and every trainer, CLI and Snakemake job a test starts
    share it, so a model compiled once is loaded, not compiled again, by the
    next process that needs it (a workspace that trains links its
    results/jax-cache to it, and the trainer names the cache by its resolved
    path, so both spellings are one set of keys). A cache given from outside
    (JAX_COMPILATION_CACHE_DIR already set) is used as it is; so is the
    controller's, in xdist workers (they inherit its environment), and only
    the process that made the cache removes it.

    The compiles: every process of the run, the pytest processes and each
    trainer, CLI and Snakemake job they start, compiles quickly (XLA's
    lowest backend optimisation level, its older CPU fusion emitters) and
    with the one-thread flag a trainer sets itself (TEST_XLA_FLAGS), so a
    cell trained in a test process and one in a trainer share cache
    entries. The tests check what the code computes and what the pipeline
    does with it, on models so small that compiling costs far more than
    running: a cold trainer takes about a third of the CPU this way. The
    flags change float rounding (about 1e-6 on a smoke cell's loss), never
    what is computed, and they are part of each cache entry's key. The
    product's own compile is checked where it matters: a cell trained twice
    under the flags a build compiles with (processes.build_xla_flags) gives
    identical numbers. .ci/run sets the same flags for its SLURM build,
    which it compares byte for byte with the tests' smoke build.
    """
    config._attnlab_pool = os.environ.get(POOL_ENV)
    os.environ[POOL_ENV] = "1"  # the pool every one-thread trainer fixes for itself, so in-process cells match
    given = os.environ.get("XLA_FLAGS", "")
    missing = [flag for flag in TEST_XLA_FLAGS if flag not in given.split()]  # CI's, or a worker's inherited
    if missing:
        config._attnlab_xla_flags = os.environ.get("XLA_FLAGS")
        os.environ["XLA_FLAGS"] = " ".join([given, *missing]).strip()
    if os.environ.get(CACHE_DIR_ENV):
        return
    cache = Path(tempfile.mkdtemp(prefix="attnlab-test-xla-cache-"))
    config._attnlab_compile_cache = cache
    os.environ[CACHE_DIR_ENV] = str(cache)
    os.environ.update(COMPILE_CACHE_ENV)


def pytest_unconfigure(config):
    if hasattr(config, "_attnlab_pool"):
        if config._attnlab_pool is None:
            os.environ.pop(POOL_ENV, None)
        else:
            os.environ[POOL_ENV] = config._attnlab_pool
    cache = getattr(config, "_attnlab_compile_cache", None)
    if cache is not None:
        shutil.rmtree(cache, ignore_errors=True)
        os.environ.pop(CACHE_DIR_ENV, None)
    if hasattr(config, "_attnlab_xla_flags"):
        if config._attnlab_xla_flags is None:
            os.environ.pop("XLA_FLAGS", None)
        else:
            os.environ["XLA_FLAGS"] = config._attnlab_xla_flags


@pytest.fixture(scope="session")
def cache() -> Path:
    """The test run's one XLA compilation cache (pytest_configure), to pass as --compile-cache."""
    return Path(os.environ[CACHE_DIR_ENV])


@pytest.fixture(scope="session")
def corpus_path() -> Path:
    """The real corpus when a local copy is known, else a small generated one."""
    env = os.environ.get("ATTNLAB_CORPUS")
    if env and Path(env).is_file():
        return Path(env)
    if SHARED_CORPUS.is_file():
        return SHARED_CORPUS
    pytest.skip("no local corpus: set ATTNLAB_CORPUS")


@pytest.fixture
def small_corpus(tmp_path) -> tuple[Path, str]:
    """A generated text corpus (not Shakespeare) and its sha256."""
    words = ["to", "be", "or", "not", "that", "is", "the", "question", "whether", "tis", "nobler"]
    lines = [" ".join(words[(i * 7 + j) % len(words)] for j in range(9)) for i in range(600)]
    text = "\n".join(lines) + "\n"
    path = tmp_path / "small.txt"
    path.write_text(text)
    return path, hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture(scope="session")
def smoke_config() -> dict:
    return yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())


@pytest.fixture
def tiny_cfg(smoke_config) -> dict:
    """The smoke config validated, as a training cell slice."""
    from attnlab.core.config import cell_slice, validate_config

    cfg = validate_config(copy.deepcopy(smoke_config))
    return cell_slice(cfg)


@pytest.fixture(scope="session")
def smoke_workspace(tmp_path_factory, corpus_path):
    """A copy of the project with the smoke config built end to end, shared by every test that reads a build.

    Tests that edit it (the rerun matrix) restore what they change.
    """
    from processes import snakemake
    from workspace import make_workspace

    ws = make_workspace(tmp_path_factory.mktemp("smoke"), share_compile_cache=True)
    result = snakemake(ws, "--cores", "2", "--configfile", "config/smoke.yaml", corpus=corpus_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    if os.environ.get(SMOKE_REFERENCE_ENV):
        export_smoke_reference(ws, Path(os.environ[SMOKE_REFERENCE_ENV]))
    if os.environ.get(SMOKE_KEEP_ENV):  # as built, for a later run's browser tests (.ci/run)
        shutil.copytree(ws, os.environ[SMOKE_KEEP_ENV], symlinks=True)
    return ws


@pytest.fixture(scope="session")
def built_writeup(request) -> Path:
    """A workspace with a built writeup: $ATTNLAB_BROWSER_WORKSPACE (the default build, say), else the smoke
    build (asked for only then, so a given workspace builds nothing here)."""
    given = os.environ.get(BROWSER_WORKSPACE_ENV)
    if given:
        return Path(given)
    return request.getfixturevalue("smoke_workspace")


def export_smoke_reference(ws: Path, dest: Path) -> None:
    """The build's tables and every bundle.json, as built (before any test edits the workspace)."""
    results = ws / "results"
    shutil.copytree(results / "tables", dest / "tables")
    for summary in (results / "runs").rglob("bundle.json"):
        target = dest / "runs" / summary.relative_to(results / "runs")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(summary, target)
