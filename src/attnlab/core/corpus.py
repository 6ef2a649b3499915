"""The corpus: fetch or locate it, verify its sha256, encode it, split it (JAX-free).

Which windows a cell trains and is evaluated on is attnlab.training.batches' job.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import stat
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attnlab.core.io import atomic_write_bytes

CORPUS_ENV = "ATTNLAB_CORPUS"
MAX_CORPUS_BYTES = 1 << 30  # a corpus without a checksum is refused past 1 GiB: it is read whole


BOS_GLYPH = "\u21e4"  # '⇤' (in DejaVu Sans, which the figures use): how a window's beginning-of-sequence token reads


class CorpusError(RuntimeError):
    """The corpus is missing, unreadable or not the expected file; the message says how to fix it."""


@dataclass(frozen=True)
class Corpus:
    text: str
    vocab: str  # sorted set of characters; token id = index
    train: np.ndarray  # int32 token ids, first train_fraction of the corpus
    val: np.ndarray  # int32 token ids, the rest

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def decode(self, ids) -> str:
        """The characters of these ids; the beginning-of-sequence token (one past the vocabulary) as BOS_GLYPH."""
        return "".join(BOS_GLYPH if int(i) == len(self.vocab) else self.vocab[int(i)] for i in ids)


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def verify_bytes(data: bytes, expected: str | None, origin: str) -> None:
    if expected is not None:
        actual = sha256_of(data)
        if actual != expected:
            raise CorpusError(
                f"checksum mismatch for {origin}: expected sha256 {expected}, got {actual}. "
                "Point data.path (or ATTNLAB_CORPUS) at the right file, or set data.sha256 to the file you mean."
            )
    if not data:
        raise CorpusError(f"corpus {origin} is empty; point data.path at the real corpus")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise CorpusError(f"corpus {origin} is not UTF-8 text; point data.path at a plain-text corpus") from None


def local_copy(data_cfg: dict) -> Path | None:
    """A configured local corpus: data.path first, then $ATTNLAB_CORPUS."""
    configured = data_cfg.get("path") or os.environ.get(CORPUS_ENV)
    return Path(configured) if configured else None


def fetch_corpus(data_cfg: dict, dest: Path) -> Path:
    """Place a verified copy of the corpus at dest (a local copy, else a download), atomically.

    dest is only ever created: an existing file with the expected checksum is
    reused, and one with another checksum is refused, never replaced.
    """
    dest = Path(dest)
    expected = data_cfg.get("sha256")
    if dest.exists() or dest.is_symlink():
        _require_regular_file(dest, "--corpus / the corpus destination")
        actual = sha256_of_file(dest)
        if expected is not None and actual != expected:
            raise CorpusError(
                f"{dest} already exists with sha256 {actual}, not the expected {expected}; it is left untouched. "
                "Point --corpus at a new path (it will be created) or at the real corpus"
            )
        verify_bytes(dest.read_bytes(), expected, str(dest))
        return dest
    source = local_copy(data_cfg)
    if source is not None:
        data = read_verified(source, expected, f"configured corpus (data.path or {CORPUS_ENV})")
        origin = str(source)
    else:
        url = data_cfg["url"]
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                data = response.read(MAX_CORPUS_BYTES + 1)
        except (urllib.error.URLError, OSError) as err:
            raise CorpusError(
                f"could not download the corpus from {url} ({err}). Offline? Point at a local copy with "
                f"data.path in the config or the {CORPUS_ENV} environment variable."
            ) from None
        origin = url
    verify_bytes(data, expected, origin)
    atomic_write_bytes(dest, data)
    return dest


def read_verified(path: Path, expected: str | None, what: str = "corpus") -> bytes:
    """The bytes of a regular file whose sha256 matches, hashed in chunks before it is read whole."""
    path = Path(path)
    _require_regular_file(path, what)
    if expected is None:
        if path.stat().st_size > MAX_CORPUS_BYTES:
            raise CorpusError(f"{what} {path} is larger than {MAX_CORPUS_BYTES // 2**20} MiB with no sha256 to "
                              "check it against; set data.sha256 or use a smaller corpus")
    else:
        actual = sha256_of_file(path)
        if actual != expected:
            raise CorpusError(
                f"checksum mismatch for {path}: expected sha256 {expected}, got {actual}. "
                "Point data.path (or ATTNLAB_CORPUS) at the right file, or set data.sha256 to the file you mean."
            )
    data = path.read_bytes()
    verify_bytes(data, expected, str(path))
    return data


def sha256_of_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _require_regular_file(path: Path, what: str) -> None:
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise CorpusError(f"{what} {path} does not exist; fix the path") from None
    except OSError as err:
        raise CorpusError(f"{what} {path} cannot be read ({err}); fix the path") from None
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file (a FIFO, device or socket)"
        raise CorpusError(f"{what} {path} is {kind}; point it at the corpus text file")


def load_corpus(path: Path, train_fraction: float = 0.9, expected_sha256: str | None = None) -> Corpus:
    data = read_verified(Path(path), expected_sha256, "corpus")
    text = data.decode("utf-8")
    vocab = "".join(sorted(set(text)))
    ids = encode_ids(text, vocab)
    split = int(len(ids) * train_fraction)
    return Corpus(text=text, vocab=vocab, train=ids[:split], val=ids[split:])


def encode_ids(text: str, vocab: str) -> np.ndarray:
    """Each character's index in the sorted vocabulary, found by code point in one vectorised search.

    Sorting strings sorts characters by code point, so the code points of
    `vocab` are ascending and searchsorted finds each character's index (a
    Python loop over a million characters costs every trainer a fifth of a
    second at start-up).
    """
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    vocab_codes = np.frombuffer(vocab.encode("utf-32-le"), dtype=np.uint32)
    return np.searchsorted(vocab_codes, codes).astype(np.int32)


def check_fits(corpus: Corpus, block_size: int, batch_size: int, window_offset: int | None = None,
               longest_multiple: int = 1) -> None:
    """Refuse a corpus, block, batch or window the splits cannot supply, naming the key (longest_multiple: the
    largest train.eval_context_multiples, whose windows the validation split must hold too)."""
    if corpus.vocab_size < 2:
        raise CorpusError(f"the corpus has {corpus.vocab_size} distinct character(s); next-character prediction "
                          "needs at least 2. Point data.path at a real text corpus")
    for name, split in (("training", corpus.train), ("validation", corpus.val)):
        if len(split) < block_size + 2:
            raise CorpusError(
                f"model.block_size {block_size} needs at least {block_size + 2} {name} characters, the split has "
                f"{len(split)}; lower block_size, change data.train_fraction or use a larger corpus"
            )
    longest = longest_multiple * block_size
    if longest_multiple > 1 and len(corpus.val) < longest + 2:
        raise CorpusError(
            f"train.eval_context_multiples {longest_multiple} x block_size {block_size} needs windows of {longest} "
            f"validation characters, the split has {len(corpus.val)}; drop that multiple or lower block_size"
        )
    if window_offset is not None and window_offset + block_size > len(corpus.val):
        raise CorpusError(
            f"telemetry.window_offset {window_offset} + block_size {block_size} runs past the validation split "
            f"({len(corpus.val)} characters); use at most {len(corpus.val) - block_size}, or null for the seed's window"
        )


def main(argv: list[str] | None = None) -> int:
    """`python -m attnlab.core.corpus --out PATH`: fetch and verify the corpus.

    The data config comes from --data-config or the ATTNLAB_DATA_CONFIG
    environment variable (JSON of the config's `data` section). The workflow
    uses the variable so that moving a local copy is not a params change that
    would refetch the corpus and retrain every cell.
    """
    import json

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--data-config", default=os.environ.get("ATTNLAB_DATA_CONFIG"),
                        help="JSON of the config's data section")
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    if not args.data_config:
        print("error: give --data-config or set ATTNLAB_DATA_CONFIG", file=sys.stderr)
        return 2
    try:
        path = fetch_corpus(json.loads(args.data_config), args.out)
    except CorpusError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"corpus ready at {path} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
