"""Shared fixtures: the corpus used by tests, and a tiny config."""

from __future__ import annotations

import copy
import hashlib
import os
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SHARED_CORPUS = REPO.parent / "shared" / "data" / "tinyshakespeare.txt"


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
    from workspace import make_workspace, snakemake

    ws = make_workspace(tmp_path_factory.mktemp("smoke"))
    result = snakemake(ws, "--cores", "2", "--configfile", "config/smoke.yaml", corpus=corpus_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return ws
