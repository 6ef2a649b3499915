"""The seed script's random streams: training batches, held-out batches, telemetry batches, the map window."""

import numpy as np
import pytest

from attnlab.core.corpus import BOS_GLYPH, load_corpus
from attnlab.training.batches import held_out_batches, map_window, slice_batch, stream_offsets, train_offsets
from attnlab.training.schedule import snapshot_steps

SHA = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"


def seed_rng_offsets(n: int, n_tokens: int, block: int, batch: int) -> np.ndarray:
    """The seed's formula, written out independently of attnlab."""
    return np.random.default_rng(n).integers(0, n_tokens - block - 1, batch)


@pytest.mark.parametrize("seed,step", [(0, 0), (0, 1), (2, 11_999), (1, 500)])
def test_training_offsets_are_the_seed_scripts(seed, step):
    table = train_offsets(seed, step, 3, 1_003_854, 128, 64)
    for i in range(3):
        np.testing.assert_array_equal(table[i], seed_rng_offsets(seed * 10_000_000 + step + i, 1_003_854, 128, 64))


def test_training_offsets_pin_known_values():
    # default_rng(0).integers(0, 1_003_854 - 129, 4): fixed by numpy's PCG64 stream, whatever attnlab does
    np.testing.assert_array_equal(train_offsets(0, 0, 1, 1_003_854, 128, 4)[0],
                                  np.random.default_rng(0).integers(0, 1_003_725, 4))
    assert train_offsets(0, 0, 1, 1_003_854, 128, 4, pad_to=5).shape == (5, 4)
    assert (train_offsets(0, 0, 1, 1_003_854, 128, 4, pad_to=5)[1:] == 0).all()


def test_held_out_batches_use_streams_77000_and_88000(corpus_path):
    corpus = load_corpus(corpus_path, 0.9, SHA)
    x, y = held_out_batches(corpus.val, 77_000, 16, 4, 3)
    for i in range(3):
        for row, start in enumerate(seed_rng_offsets(77_000 + i, len(corpus.val), 16, 4)):
            np.testing.assert_array_equal(np.asarray(x[i, row]), corpus.val[start: start + 16])
            np.testing.assert_array_equal(np.asarray(y[i, row]), corpus.val[start + 1: start + 17])
    tx, _ = held_out_batches(corpus.val, 88_000, 16, 4, 1)
    assert not np.array_equal(np.asarray(tx[0]), np.asarray(x[0]))


def test_map_window_is_the_first_row_of_stream_424242(corpus_path):
    corpus = load_corpus(corpus_path, 0.9, SHA)
    start = int(seed_rng_offsets(424_242, len(corpus.val), 128, 64)[0])
    assert start == 54_499  # at the paper's block size on tinyshakespeare
    np.testing.assert_array_equal(map_window(corpus.val, 128), corpus.val[start: start + 128])
    np.testing.assert_array_equal(map_window(corpus.val, 128, offset=7), corpus.val[7: 135])


def test_device_slicing_takes_the_window_at_each_offset():
    tokens = np.arange(1000, dtype=np.int32)
    offsets = stream_offsets(5, 1000, 10, 6)
    x, y = slice_batch(tokens, offsets.astype(np.int32), 10)
    for row, start in enumerate(offsets):
        np.testing.assert_array_equal(np.asarray(x[row]), np.arange(start, start + 10))
        np.testing.assert_array_equal(np.asarray(y[row]), np.arange(start + 1, start + 11))


@pytest.mark.parametrize("steps,expected", [(12_000, [0, 1201, 6001, 12_000]), (60, [0, 7, 31, 60]),
                                            (1000, [0, 101, 501, 1000])])
def test_snapshots_follow_the_seed_schedule(steps, expected):
    assert snapshot_steps(steps, [0.0, 0.1, 0.5, 1.0]) == expected


def test_the_whole_split_is_every_character_once_in_weighted_windows():
    from attnlab.training.batches import whole_split_batches

    split = np.arange(1000) % 65
    x, y, weight = whole_split_batches(split, block_size=16, batch_size=7)
    windows = int(weight.sum())
    assert windows == (1000 - 16) // 16 + 1 == 62 and x.shape == (9, 7, 16) and weight.shape == (9, 7)
    flat_x, flat_y = np.asarray(x).reshape(-1, 16)[:windows], np.asarray(y).reshape(-1, 16)[:windows]
    np.testing.assert_array_equal(flat_x.reshape(-1), split[: windows * 16])  # each character once, in order
    np.testing.assert_array_equal(flat_y.reshape(-1), split[1: windows * 16 + 1])
    assert not np.asarray(weight).reshape(-1)[windows:].any()  # the padding counts for nothing


def test_a_beginning_of_sequence_token_opens_every_window_from_the_same_offsets(corpus_path):
    """data.bos: the same streams, each window the token then its first T - 1 characters, predicting its first T;
    the whole split still predicts every character once; the map window starts with the token."""
    from attnlab.training.batches import whole_split_batches

    tokens = np.arange(1000, dtype=np.int32)
    offsets = stream_offsets(5, 1000, 10, 6).astype(np.int32)
    x, y = slice_batch(tokens, offsets, 10, bos=1000)
    for row, start in enumerate(offsets):
        assert int(x[row, 0]) == 1000
        np.testing.assert_array_equal(np.asarray(x[row, 1:]), np.arange(start, start + 9))
        np.testing.assert_array_equal(np.asarray(y[row]), np.arange(start, start + 10))
    corpus = load_corpus(corpus_path, 0.9, SHA)
    bos = corpus.vocab_size
    hx, hy = held_out_batches(corpus.val, 77_000, 16, 4, 2, bos)
    plain_x, _ = held_out_batches(corpus.val, 77_000, 16, 4, 2)
    assert (np.asarray(hx[..., 0]) == bos).all() and (np.asarray(hy) < bos).all()
    np.testing.assert_array_equal(np.asarray(hx[..., 1:]), np.asarray(plain_x[..., :-1]))
    split = np.arange(1000) % 65
    wx, wy, weight = whole_split_batches(split, block_size=16, batch_size=7, bos=65)
    windows = int(weight.sum())
    np.testing.assert_array_equal(np.asarray(wy).reshape(-1, 16)[:windows].reshape(-1), split[: windows * 16])
    assert (np.asarray(wx)[..., 0] == 65).all()
    window = map_window(corpus.val, 128, bos=bos)
    assert window[0] == bos and len(window) == 128
    np.testing.assert_array_equal(window[1:], map_window(corpus.val, 128)[:-1])
    assert corpus.decode(window)[0] == BOS_GLYPH and corpus.decode(window)[1:] == corpus.decode(window[1:])
