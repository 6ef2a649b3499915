"""The ledger quotes its posts and tests what they say.

Every row from a post prints the post's words verbatim (found here in the posts' text), and its reading
apart. The re-derived readings each come with a case that the earlier, looser rule judged otherwise: five
orders of magnitude against 100×, one LR band over each column's own LRs, a death at 0.6 nats, heads
pooled as trials, one "exactly" standing for "stay close".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from attnlab.pipeline import claims
from attnlab.pipeline.claims import words
from attnlab.pipeline.claims.common import A3_POST, KERNEL_POST
from attnlab.pipeline.ground.verdicts import (CONTRADICTED, CONTRADICTED_BY_CONSTRUCTION, HOLDS, HOLDS_BY_CONSTRUCTION,
                                              INCONCLUSIVE)
from claim_frames import on_protocol, sweep_frame as sweep

PUB = claims.published()
SEEDS = Path(__file__).resolve().parents[1].parent / "shared" / "seeds"
POSTS = {KERNEL_POST: "yat-attention-jax-flax-nnx.txt", A3_POST: "a3-adaptive-activation-attention.txt"}


def run(check, **frames):
    return check(on_protocol(frames), PUB, "paper")


def found_in_order(text: str, pieces: list[str]) -> bool:
    at = 0
    for piece in pieces:
        at = text.find(piece, at)
        if at < 0:
            return False
        at += len(piece)
    return True


# ---- the posts' words


def empty_ledger() -> pd.DataFrame:
    return claims.ledger({}, PUB)


def test_every_row_from_a_post_quotes_it_and_keeps_its_reading_apart():
    ledger = empty_ledger()
    from_posts = ledger[ledger.source.isin(POSTS)]
    assert len(from_posts) >= 15
    for row in from_posts.itertuples():
        assert row.quote, row.claim
        assert row.quote.startswith(("“", "the post's table")), row.quote
        assert row.check.startswith("this project's reading"), row.check
        assert "“" not in row.check, "the reading quotes no one"
    # the kernel post says nothing about model scale: its gap-with-scale rows are this project's questions
    scale = ledger[ledger.claim.str.contains("closes with scale")]
    assert len(scale) and set(scale.source) == {claims.BEYOND}


@pytest.mark.skipif(not SEEDS.is_dir(), reason=f"the posts' text is not at {SEEDS}")
def test_every_quote_is_verbatim_in_its_post():
    for name, quoted in words.POSTS.items():
        text = (SEEDS / name).read_text()
        for entry in quoted:
            assert found_in_order(text, entry.pieces()), f"not in {name}: {entry.text!r}"
            if entry.section:
                assert entry.section.replace("’", "'") in text.replace("’", "'"), entry.section
    ledger = empty_ledger()
    for row in ledger[ledger.source.isin(POSTS)].itertuples():
        if row.quote.startswith("“"):
            quoted = row.quote[1:row.quote.index("”")]
            assert found_in_order((SEEDS / POSTS[row.source]).read_text(), quoted.split(" … ")), row.quote


def test_a_paraphrase_is_not_found_in_the_post():
    """The check can fail: the sentence the quality row used to print as the post's is in neither post."""
    if not SEEDS.is_dir():
        pytest.skip(f"the posts' text is not at {SEEDS}")
    texts = [(SEEDS / name).read_text() for name in POSTS.values()]
    assert not any(found_in_order(t, ["softmax beats the kernel on quality by about 1%"]) for t in texts)


# ---- score scale: two readings of "five orders of magnitude"


def score_frame(ratio_by_seed):
    rows = []
    for seed, r in ratio_by_seed.items():
        for variant, top in (("softmax", 30.0 + seed), ("yat", (30.0 + seed) * r)):
            rows.append({"variant": variant, "lr": 3e-3, "seed": seed, "layer": 0, "mean_max_score": top / 2,
                         "max_score": top, "seed_mean_over_layers_of_max_score": top, "q999_score": top / 10})
    return pd.DataFrame(rows)


def test_five_orders_is_read_literally_beside_the_weaker_plural():
    """2,500× (3.4 orders, this build's default): 'orders of magnitude' holds, 'five orders' does not. The single
    100× rule judged the post's 'five orders' held."""
    # six seeds: the fewest whose median has an exact sign-test 95% interval (attnlab.pipeline.ground.sign_test)
    frames = {"score_scale": score_frame({0: 2400.0, 1: 2450.0, 2: 2500.0, 3: 2500.0, 4: 2550.0, 5: 2600.0})}
    assert run(claims.kernel_scores_larger, **frames).verdict == HOLDS
    five = run(claims.kernel_scores_five_orders, **frames)
    assert five.verdict == CONTRADICTED and "3.4 orders" in five.lean
    assert "99.9th percentile" in five.note, "the robust statistic stands beside the maximum"


def test_the_score_ratio_is_read_by_its_median_not_its_mean_log_ratio():
    """The seen per-seed ratios (83× … 72,524×): 7 of 8 above 100×. At 8 seeds the exact interval is
    [x_(1), x_(8)] = [83×, 72,524×] (99.2%: [x_(2), x_(7)] would cover only 93.0%), so 'at least 100×' is
    open and 9 seeds would settle it; the mean log-ratio's t-interval [179×, 5,987×] held, resting on a
    normal model of log-ratios whose seventh seed (72,524×) lowered its lower edge. A ninth seed above 100×
    (8 of 9) settles it: [x_(2), x_(8)] = [200×, 5,461×] (96.1%)."""
    seen = [83.0, 1459.0, 365.0, 442.0, 450.0, 382.0, 72524.0, 5461.0]
    eight = run(claims.kernel_scores_larger, score_scale=score_frame(dict(enumerate(seen))))
    assert eight.verdict == INCONCLUSIVE and eight.seeds == 8 and eight.seeds_to_resolve == 9
    assert eight.measured.startswith("median 446× [83×, 72,524×] (exact sign-test 99.2% interval), 7/8 seeds above "
                                     "100× (2.6 orders)")
    assert "its t-interval alone: holds at 100×" in eight.note
    nine = run(claims.kernel_scores_larger, score_scale=score_frame(dict(enumerate(seen + [200.0]))))
    assert nine.verdict == HOLDS and nine.interval == "median [200×, 5,461×] (exact sign-test 96.1% interval)"
    assert nine.measured.startswith("median 442× [200×, 5,461×] (exact sign-test 96.1% interval), 8/9 seeds above")
    assert "1 of them on the other side of 100× would reopen it" in nine.resolution
    five = run(claims.kernel_scores_five_orders, score_scale=score_frame(dict(enumerate(seen))))
    assert five.verdict == CONTRADICTED and "0/8 seeds above 100,000×" in five.measured


# ---- LR sensitivity


def test_the_two_columns_are_compared_over_the_lrs_both_hold():
    """Over its own LRs yat's band (1e-3–1e-2) is narrower than softmax's (3e-4–3e-3); over the two LRs both
    hold it is wider. A note that set each column over its own LRs said 'narrower'."""
    seeds = (0, 1, 2)
    table = pd.concat([sweep("yat", {1e-3: 1.50, 3e-3: 1.52, 1e-2: 1.51}, seeds=seeds),
                       sweep("softmax", {3e-4: 1.40, 1e-3: 1.515, 3e-3: 1.516}, seeds=seeds)])
    claim = run(claims.kernel_lr_band, lr_sweep=table)
    assert "over the LRs both sweeps hold (0.001, 0.003)" in claim.note
    assert "the kernel's band is wider there" in claim.note


def test_a_cell_0_6_nats_above_its_best_is_not_a_death():
    """The post's dead cell sat 1.10 nats above its best; a 1e-2 cell at +0.6 trained, if worse. The earlier 0.5
    nat bar counted it dead."""
    six = tuple(range(6))
    table = sweep("softmax", {3e-4: 1.48, 1e-3: 1.51, 1e-2: 2.08}, seeds=six)
    claim = run(claims.softmax_dies_at_high_lr, lr_sweep=table)
    assert "died at 0.01 on 0 of 6 seeds" in claim.measured and claim.verdict == CONTRADICTED
    one = run(claims.softmax_dies_at_high_lr, lr_sweep=sweep("softmax", {3e-4: 1.48, 1e-3: 1.51, 1e-2: 2.6}))
    assert "one sweep seed: it shows whether softmax died" in one.note


# ---- "exactly" and "stay close"


def test_exactly_and_stay_close_are_two_rows():
    init = pd.DataFrame({"seed": [0, 1], "max_diff_vs_softmax": [0.033, 0.030],
                         "max_diff_vs_tempered_softmax": [1e-4, 1e-4], "max_row_sum_error": [1e-4, 1e-4]})
    assert run(claims.a3_starts_at_softmax, a3_init=init).verdict == CONTRADICTED_BY_CONSTRUCTION
    close = run(claims.a3_starts_close, a3_init=init)
    assert close.verdict == HOLDS_BY_CONSTRUCTION and close.quote.startswith("“The identity of σ(3) ≈ 0.95")
    far = run(claims.a3_starts_close, a3_init=init.assign(max_diff_vs_softmax=[0.2, 0.1]))
    assert far.verdict == CONTRADICTED_BY_CONSTRUCTION


# ---- learned scalars: the seed is the unit


def scalars(eps_by_seed, b_by_seed=None):
    """eps_by_seed: seed -> {(layer, head): ε}; b spread 0.2–3.0 unless given."""
    rows = []
    for seed, eps in eps_by_seed.items():
        for i, ((layer, head), value) in enumerate(sorted(eps.items())):
            b = (b_by_seed or {}).get(seed, (0.2 + 2.8 * i / max(len(eps) - 1, 1)) * (1 + 0.02 * seed))
            rows += [{"variant": "yat_b", "seed": seed, "layer": layer, "head": head, "scalar": "eps", "value": value},
                     {"variant": "yat_b", "seed": seed, "layer": layer, "head": head, "scalar": "b",
                      "value": b if np.isscalar(b) else b[i]}]
    return pd.DataFrame(rows)


def heads(n_below, grown=6.4, layers=4, per_layer=8, jitter=0.0):
    cells = [(layer, head) for layer in range(layers) for head in range(per_layer)]
    out = {}
    for i, cell in enumerate(cells):
        out[cell] = 0.1 + jitter if i < n_below else 0.7 + jitter
    out[cells[-1]] = grown
    return out


def test_heads_are_not_pooled_as_independent_trials():
    """Two seeds where ε falls in 31 of 32 heads and one where it falls in 2: pooled, 64 of 96 heads is a clear
    majority (the exact interval clears one half); by seed, the share is anyone's guess."""
    table = scalars({0: heads(31, jitter=0.001), 1: heads(31, jitter=0.002), 2: heads(2)})
    claim = run(claims.learned_scalars_specialise, scalars=table)
    assert claim.verdict != HOLDS and "share of heads: 95% CI" in claim.interval


def test_the_grown_eps_is_tested():
    """ε falls in most heads on every seed, but no deep head grows it: the post's two grown heads are not
    found. Counting heads below init alone judged the row held."""
    table = scalars({s: heads(23 + s, grown=0.69 + 0.01 * s, jitter=0.001 * s) for s in (0, 1, 2)})
    claim = run(claims.learned_scalars_specialise, scalars=table)
    assert claim.verdict == CONTRADICTED and "no deep ε grows" in claim.lean
    grown = scalars({s: heads(23 + s, grown=6.4 + s, jitter=0.001 * s) for s in (0, 1, 2)})
    assert run(claims.learned_scalars_specialise, scalars=grown).verdict == HOLDS


def headings(text: str) -> list[tuple[int, str]]:
    """A post's section headings with their offsets: a short line standing alone between blank lines, without a
    sentence's closing punctuation (the kernel post marks its headings with a trailing '#')."""
    lines, found, offset = text.split("\n"), [], 0
    for i, line in enumerate(lines):
        title = line.strip().rstrip("#")
        alone = (i == 0 or not lines[i - 1].strip()) and (i + 1 == len(lines) or not lines[i + 1].strip())
        if i and title and alone and len(title.split()) <= 9 and not title.endswith((".", ":", "?", "!", ")")):
            found.append((offset, title))
        offset += len(line) + 1
    return found


def section_of(text: str, quoted: str) -> str:
    at = text.find(quoted)
    return max([h for h in headings(text) if h[0] <= at], default=(0, ""))[1]


@pytest.mark.skipif(not SEEDS.is_dir(), reason=f"the posts' text is not at {SEEDS}")
def test_every_quote_names_the_section_it_stands_in():
    """Not only a heading of the post: the one the quoted words fall under."""
    for name, quoted in words.POSTS.items():
        text = (SEEDS / name).read_text().replace("’", "'")
        assert len(headings(text)) >= 4, name
        for entry in quoted:
            if entry.section:
                first = entry.pieces()[0].replace("’", "'")
                assert section_of(text, first) == entry.section.replace("’", "'"), (entry.section, first[:60])
        # a quotation named under another section of its post is caught
        entry = next(e for e in quoted if e.section)
        other = next(h for _, h in headings(text) if h != entry.section.replace("’", "'"))
        assert section_of(text, entry.pieces()[0].replace("’", "'")) != other
