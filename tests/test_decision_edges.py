"""A design's seed rule reads every edge of a two-edged reading, at the design's own level.

The case the rule before judged otherwise: a comparison read by its median against two thresholds counted the
seeds its first edge needs; with that edge already cleared it needed 'none' and the comparison was called out of
the budget's reach while the second edge was still open."""

from __future__ import annotations

from attnlab.pipeline.ground import design
from attnlab.pipeline.ground.rounds import LARGEST_SCORE, Comparison
from attnlab.pipeline.tables import rounds

SEEN = (200.0, 365.0, 382.0, 442.0, 450.0, 1459.0, 5461.0, 72524.0, 300.0)  # nine seeds, all above 100×


def test_a_median_with_two_edges_counts_the_seeds_of_the_edge_still_open():
    comparison = Comparison("yat / softmax largest score", "yat", "softmax", True, (100.0, 1000.0), "two edges",
                            LARGEST_SCORE, name="score_ratio", median=True)
    first = dict(enumerate(SEEN))
    second = dict.fromkeys(first, 1.0)
    with design.Design(design.FIXED, (9,)).reading():
        row = rounds._read(comparison, first, second, limit=40)
    assert row["state"] == rounds.UNDECIDED  # 1000× is inside the interval: open, not out of reach
    assert row["seeds_needed"] is not None and row["seeds_needed"] > 9
    assert row["low"] > 100.0 >= 0 and row["low"] <= 1000.0 <= row["high"]


# ---- every reading at the design's own level


def test_the_median_and_its_seeds_needed_are_read_at_the_designs_level_not_at_95_percent():
    """At the first look of an O'Brien–Fleming design (8 of 20 seeds, nominal 99.92%), the score scale's median
    is read at that level: its interval is wider than the 95% one, and the seeds its verdict needs more."""
    import pandas as pd

    from attnlab.pipeline import claims
    from attnlab.pipeline.ground import sign_test
    from test_claims import run_check, score_frame

    values = {s: v for s, v in enumerate((150.0, 180.0, 210.0, 240.0, 90.0, 300.0, 330.0, 360.0))}
    plan = design.Design(design.GROUP_SEQUENTIAL, (8, 20), spending="obrien_fleming")
    first_look = plan.confidences[0]
    assert first_look > 0.999
    with plan.reading():
        designed = sign_test.paired_median(values, dict.fromkeys(values, 1.0), confidence=first_look)
        designed_verdict = sign_test.verdict(designed, 100.0)
    fixed = sign_test.paired_median(values, dict.fromkeys(values, 1.0))
    fixed_verdict = sign_test.verdict(fixed, 100.0)
    assert fixed.has_interval and not designed.has_interval  # 8 seeds bound a median at 95%, not at 99.92%
    assert designed_verdict.seeds_to_resolve > fixed_verdict.seeds_to_resolve
    frame = score_frame({"yat": {s: [v, v] for s, v in values.items()},
                         "softmax": {s: [1.0, 1.0] for s in values}})
    with plan.reading():
        row = run_check(claims.kernel_scores_larger, score_scale=frame)
    assert "99.92%" in row.interval or "it needs" in row.interval, row.interval
    assert isinstance(row.interval, str) and not pd.isna(row.seeds_to_resolve)


def test_the_a_a_row_counts_pairs_of_seeds_at_the_look_its_variant_reached():
    """20 softmax seeds of a (8, 20) design give 10 A/A pairs: the halved looks (4, 10) put them at the last
    look's 95.03%; unhalved, 10 would read at the first look's 99.92%, an interval about twice as wide."""
    from attnlab.pipeline import claims
    from attnlab.pipeline.ground import estimate_text, intervals, statistics
    from test_claims import contest_frames, run_check

    losses = [1.50 + 0.003 * ((7 * s) % 11) for s in range(20)]
    frames = contest_frames({"softmax": losses})
    plan = design.Design(design.GROUP_SEQUENTIAL, (8, 20), spending="obrien_fleming")
    with plan.reading():
        row = run_check(claims.softmax_against_itself, **frames)
    first, second = statistics.halves(dict(enumerate(losses)))
    with intervals.repeated((4, 10), plan.confidences):
        halved = statistics.paired(first, second)
    with intervals.repeated(plan.looks, plan.confidences):
        unhalved = statistics.paired(first, second)
    assert estimate_text.interval_text(halved) in row.interval
    assert estimate_text.interval_text(unhalved) not in row.interval
    assert unhalved.high - unhalved.low > 1.5 * (halved.high - halved.low)
