"""The corpus: fetch or locate it, verify its sha256, encode it, and cut deterministic batches.

Batches depend only on (seed, step), never on the variant, so every variant of
a seed sees the same text in the same order. Validation uses one fixed set of
windows, the same for every cell.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from attnlab.io import atomic_write_bytes

CORPUS_ENV = "ATTNLAB_CORPUS"
VALIDATION_KEY = 20240611  # fixed: the held-out windows never depend on a cell


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
        return "".join(self.vocab[int(i)] for i in ids)


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
    """Place a verified copy of the corpus at dest (a local copy, else a download), atomically."""
    dest = Path(dest)
    expected = data_cfg.get("sha256")
    if dest.is_file():
        data = dest.read_bytes()
        if expected is None or sha256_of(data) == expected:
            verify_bytes(data, expected, str(dest))
            return dest
    source = local_copy(data_cfg)
    if source is not None:
        if not source.is_file():
            raise CorpusError(f"configured corpus {source} does not exist; fix data.path or {CORPUS_ENV}")
        data = source.read_bytes()
        origin = str(source)
    else:
        url = data_cfg["url"]
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                data = response.read()
        except (urllib.error.URLError, OSError) as err:
            raise CorpusError(
                f"could not download the corpus from {url} ({err}). Offline? Point at a local copy with "
                f"data.path in the config or the {CORPUS_ENV} environment variable."
            ) from None
        origin = url
    verify_bytes(data, expected, origin)
    atomic_write_bytes(dest, data)
    return dest


def load_corpus(path: Path, train_fraction: float = 0.9, expected_sha256: str | None = None) -> Corpus:
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"corpus {path} does not exist; run the fetch_corpus rule or `attnlab fetch`")
    data = path.read_bytes()
    verify_bytes(data, expected_sha256, str(path))
    text = data.decode("utf-8")
    vocab = "".join(sorted(set(text)))
    lookup = {ch: i for i, ch in enumerate(vocab)}
    ids = np.fromiter((lookup[ch] for ch in text), dtype=np.int32, count=len(text))
    split = int(len(ids) * train_fraction)
    return Corpus(text=text, vocab=vocab, train=ids[:split], val=ids[split:])


def check_fits(corpus: Corpus, block_size: int, batch_size: int) -> None:
    """Refuse a block or batch the validation split cannot supply."""
    windows = len(corpus.val) - block_size
    if windows < 1:
        raise CorpusError(
            f"model.block_size {block_size} needs at least {block_size + 1} validation characters, "
            f"the split has {len(corpus.val)}; lower block_size or use a larger corpus"
        )
    if windows < batch_size:
        raise CorpusError(
            f"train.batch_size {batch_size} exceeds the {windows} distinct validation windows of "
            f"length {block_size}; lower batch_size or block_size"
        )


def batch_offsets(seed, step, n_tokens: int, block_size: int, batch_size: int) -> jnp.ndarray:
    """Start positions of one training batch: a pure function of (seed, step)."""
    # the trailing 0 keeps this stream apart from parameter initialisation, which folds step-like counters into key(seed)
    key = jax.random.fold_in(jax.random.fold_in(jax.random.key(seed), step), 0)
    return jax.random.randint(key, (batch_size,), 0, n_tokens - block_size)


def slice_batch(tokens: jnp.ndarray, offsets: jnp.ndarray, block_size: int):
    """Inputs and next-character targets for each offset, sliced on the device."""
    take = jax.vmap(lambda o: jax.lax.dynamic_slice(tokens, (o,), (block_size + 1,)))
    windows = take(offsets)
    return windows[:, :-1], windows[:, 1:]


def validation_batches(val: np.ndarray, block_size: int, batch_size: int, n_batches: int):
    """The fixed held-out set: (n_batches, batch, T) inputs and targets, same for every cell."""
    offsets = jax.random.randint(
        jax.random.key(VALIDATION_KEY), (n_batches * batch_size,), 0, len(val) - block_size
    )
    x, y = slice_batch(jnp.asarray(val), offsets, block_size)
    shape = (n_batches, batch_size, block_size)
    return x.reshape(shape), y.reshape(shape)


def main(argv: list[str] | None = None) -> int:
    """`python -m attnlab.data --out PATH`: fetch and verify the corpus.

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
