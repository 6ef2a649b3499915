"""Corpus fetching, verification and deterministic batches."""

import hashlib

import pytest

from attnlab.core.corpus import CORPUS_ENV, CorpusError, check_fits, fetch_corpus, load_corpus


def test_local_copy_is_verified_and_copied(small_corpus, tmp_path):
    path, digest = small_corpus
    dest = fetch_corpus({"path": str(path), "sha256": digest, "url": "https://invalid.example/x"}, tmp_path / "c.txt")
    assert dest.read_bytes() == path.read_bytes()


def test_environment_variable_points_at_a_local_copy(small_corpus, tmp_path, monkeypatch):
    path, digest = small_corpus
    monkeypatch.setenv(CORPUS_ENV, str(path))
    dest = fetch_corpus({"path": None, "sha256": digest, "url": "https://invalid.example/x"}, tmp_path / "c.txt")
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == digest


def test_checksum_mismatch_names_both_hashes_and_the_path(small_corpus, tmp_path):
    path, _ = small_corpus
    wrong = "0" * 64
    with pytest.raises(CorpusError) as err:
        fetch_corpus({"path": str(path), "sha256": wrong, "url": "https://x"}, tmp_path / "c.txt")
    message = str(err.value)
    assert wrong in message and hashlib.sha256(path.read_bytes()).hexdigest() in message and str(path) in message
    assert not (tmp_path / "c.txt").exists(), "an unverified corpus must not be written"


def test_offline_without_local_copy_says_how_to_point_at_one(tmp_path, monkeypatch):
    monkeypatch.delenv(CORPUS_ENV, raising=False)
    with pytest.raises(CorpusError, match=CORPUS_ENV):
        fetch_corpus({"path": None, "sha256": "0" * 64, "url": "https://127.0.0.1:9/none.txt"}, tmp_path / "c.txt")


@pytest.mark.parametrize("content,problem", [(b"", "empty"), (b"\xff\xfe\x00\x81" * 10, "not UTF-8")])
def test_empty_or_binary_corpus_is_refused(tmp_path, content, problem):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(content)
    with pytest.raises(CorpusError, match=problem):
        fetch_corpus({"path": str(bad), "sha256": hashlib.sha256(content).hexdigest(), "url": "https://x"},
                     tmp_path / "c.txt")


def test_missing_local_copy_is_named(tmp_path):
    with pytest.raises(CorpusError, match="does not exist"):
        fetch_corpus({"path": str(tmp_path / "nope.txt"), "sha256": None, "url": "https://x"}, tmp_path / "c.txt")


def test_real_corpus_vocabulary_and_split(corpus_path):
    corpus = load_corpus(corpus_path, 0.9, "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed")
    assert corpus.vocab_size == 65
    assert len(corpus.train) + len(corpus.val) == 1_115_394
    assert len(corpus.train) == int(1_115_394 * 0.9)
    assert corpus.decode(corpus.train[:10]) == corpus.text[:10]
    assert corpus.decode(corpus.val[:10]) == corpus.text[len(corpus.train): len(corpus.train) + 10]


def test_block_larger_than_validation_split_is_refused(small_corpus):
    corpus = load_corpus(small_corpus[0])
    with pytest.raises(CorpusError, match="block_size"):
        check_fits(corpus, len(corpus.val) + 5, 4)
    with pytest.raises(CorpusError, match="window_offset"):
        check_fits(corpus, 16, 4, window_offset=len(corpus.val) - 8)


def test_one_symbol_corpus_is_refused(tmp_path):
    one = tmp_path / "a.txt"
    one.write_text("a" * 5000)
    with pytest.raises(CorpusError, match="at least 2"):
        check_fits(load_corpus(one), 16, 4)
