"""The contest's designs hold their error rate where the build reads them: each simulation runs the build's own
decision function (attnlab.pipeline.tables.rounds.decide) on per-seed values drawn once and kept as seeds accrue,
at the looks the config declares, and the same simulation with a naive rule (a 95% t-interval at every look)
falls short, so each test can fail."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnlab.core.errors import ConfigError
from attnlab.pipeline.ground import design, intervals, statistics, verdicts
from attnlab.pipeline.ground import rounds as planned
from attnlab.pipeline.tables import rounds

ALPHA = 1 - intervals.CONFIDENCE


def config(looks=None, max_seeds=None, round_size=2, variants=("softmax", "a3"), compare=None) -> dict:
    first = looks[0] if looks else 6
    spec = {"looks": list(looks)} if looks else {"max_seeds": max_seeds, "round_size": round_size}
    spec.update(spending="obrien_fleming", alpha=0.05, reach=None, compare=compare)
    return {"variants": list(variants), "contest": {"seeds": list(range(first)), "lr": {}, "rounds": spec},
            "sweep": {"seeds": [0]}, "studies": []}


def run(cfg: dict, first: dict, second: dict, label: str) -> dict:
    """The build's rule over one draw: decide after each look on the values of the seeds trained so far (each
    seed's value drawn once, before the first look), until it asks for no more; the last decision's row."""
    index, trained = 0, list(cfg["contest"]["seeds"])
    while True:
        values = {name: {s: by[s] for s in trained} for name, by in (("first", first), ("second", second))}
        made = {cfg["variants"][0]: values["first"], cfg["variants"][1]: values["second"]}
        decision = rounds.decide(made, cfg, index)
        if not decision["next_seeds"]:
            return next(row for row in decision["comparisons"] if row["label"] == label)
        trained, index = trained + decision["next_seeds"], index + 1


def error_rate(cfg, draws: int, effect: float, spread: float, seed: int, label="softmax − a3") -> tuple[float, int]:
    """The share of draws whose interval at the stop holds none of the comparison's thresholds (with the true
    difference on a threshold: a false positive), and how many stop intervals were unbounded."""
    rng = np.random.default_rng(seed)
    every_seed = range(200)
    wrong = unbounded = 0
    for _ in range(draws):
        diffs = effect + spread * rng.standard_normal(len(every_seed))
        row = run(cfg, {s: 2.0 + d for s, d in zip(every_seed, diffs)}, {s: 2.0 for s in every_seed}, label)
        unbounded += row["low"] is None or row["high"] is None
        wrong += row["state"] == rounds.DECIDED
    return wrong / draws, unbounded


def monte_carlo(draws: int) -> float:
    return 3 * math.sqrt(ALPHA * (1 - ALPHA) / draws)


@pytest.fixture
def naive(monkeypatch):
    """A naive rule: every look read with a 95% t-interval, as if it were the only one."""
    monkeypatch.setattr(design, "_nominal", lambda looks, alpha, spending: (1 - alpha,) * len(looks))


SETTLE_LOOKS = (8, 20)  # the settle build's looks (config/settle.yaml)


@pytest.mark.parametrize("looks, draws", [(SETTLE_LOOKS, 3000), ((5, 10, 15, 20), 1500)])
@pytest.mark.slow
def test_a_group_sequential_design_keeps_its_error_rate_over_its_looks(looks, draws):
    """A/A data (the true difference is 0, the comparison's threshold): the build's rule decides something in
    at most α of the draws, every stop interval bounded, so no unbounded interval counts as covering."""
    rate, unbounded = error_rate(config(looks), draws, effect=0.0, spread=0.02, seed=11)
    assert rate <= ALPHA + monte_carlo(draws), rate
    assert unbounded == 0


@pytest.mark.parametrize("looks, draws", [(SETTLE_LOOKS, 3000), ((5, 10, 15, 20), 1500)])
@pytest.mark.slow
def test_a_naive_t_interval_at_every_look_falls_short(naive, looks, draws):
    rate, _ = error_rate(config(looks), draws, effect=0.0, spread=0.02, seed=11)
    assert rate > ALPHA + monte_carlo(draws), rate


@pytest.mark.slow
def test_the_confidence_sequence_keeps_its_error_rate_where_a_naive_rule_does_not(monkeypatch):
    """An open-ended budget (6 seeds, then 2 a round up to 16): the anytime-valid sequence the build reads keeps
    its error rate; read with a 95% t-interval after every round instead, the same rule does not."""
    draws = 1000
    cfg = config(max_seeds=16, round_size=2)
    rate, _ = error_rate(cfg, draws, effect=0.0, spread=0.02, seed=5)
    assert rate <= ALPHA + monte_carlo(draws), rate
    monkeypatch.setattr(design.Design, "reading",
                        lambda self: intervals.repeated(self.looks, (0.95,) * len(self.looks)))
    naive_rate, _ = error_rate(cfg, draws, effect=0.0, spread=0.02, seed=5)
    assert naive_rate > ALPHA + monte_carlo(draws), naive_rate


def heavy_scores(rng, seeds, skew: bool) -> tuple[dict, dict]:
    """Per-seed largest scores whose ratio yat / softmax has its median exactly at the 100x threshold, the
    log-ratio Cauchy (symmetric, heavy-tailed) or, with `skew`, a median-100x mixture whose upper tail reaches
    far above (one seed in four thousands of times above: the claim's favourable outliers)."""
    median = math.log(planned.ORDERS_OF_MAGNITUDE)
    if skew:
        signs = rng.random(len(seeds)) < 0.5
        logs = np.where(signs, median - rng.exponential(0.3, len(seeds)), median + rng.exponential(2.5, len(seeds)))
    else:
        logs = median + np.clip(0.5 * rng.standard_cauchy(len(seeds)), -300, 300)  # no ratio beyond a float
    softmax = {s: 20.0 for s in seeds}
    return {s: 20.0 * math.exp(x) for s, x in zip(seeds, logs)}, softmax


@pytest.mark.parametrize("skew", [False, True])
@pytest.mark.slow
def test_the_score_scale_is_read_by_its_median_and_keeps_its_error_rate_on_heavy_tails(skew):
    """The score ratio at settle's looks, its median on the threshold: the sign-test reading decides "above
    100x" in at most α of the draws, Cauchy or skewed; a mean log-ratio t-interval on the skewed draws calls
    the median above the threshold far more often (the outliers in the claim's favour move the mean, not the
    median)."""
    draws, seeds = 1500, range(SETTLE_LOOKS[-1])
    cfg = config(SETTLE_LOOKS, variants=("yat", "softmax"), compare=["score_ratio"])
    rng = np.random.default_rng(3)
    wrong = mean_above = 0
    for _ in range(draws):
        yat, softmax = heavy_scores(rng, seeds, skew)
        losses = {"yat": {s: 2.0 for s in seeds}, "softmax": {s: 2.0 for s in seeds}}
        index, trained = 0, list(cfg["contest"]["seeds"])
        while True:
            scores = {"yat": {s: yat[s] for s in trained}, "softmax": {s: softmax[s] for s in trained}}
            decision = rounds.decide({v: {s: by[s] for s in trained} for v, by in losses.items()}, cfg, index,
                                     {planned.LARGEST_SCORE: scores})
            if not decision["next_seeds"]:
                break
            trained, index = trained + decision["next_seeds"], index + 1
        row = next(r for r in decision["comparisons"] if r["name"] == "score_ratio")
        wrong += row["state"] == rounds.DECIDED and row["low"] > planned.ORDERS_OF_MAGNITUDE
        plain = statistics.paired(scores["yat"], scores["softmax"], ratio=True)
        mean_above += plain.low > planned.ORDERS_OF_MAGNITUDE
    assert wrong / draws <= ALPHA / 2 + monte_carlo(draws), wrong / draws  # one side of a two-sided α
    if skew:
        assert mean_above / draws > ALPHA + monte_carlo(draws), mean_above / draws


def test_the_seen_score_ratios_are_decided_by_the_median_where_the_mean_is_dragged():
    """The ratios one build measured (83, 1,459, 365, 442, 450, 382, 72,524, 5,461): seven of eight above 100x."""
    ratios = [83, 1459, 365, 442, 450, 382, 72524, 5461]
    cfg = config((8, 12), variants=("yat", "softmax"), compare=["score_ratio"])
    seeds = range(8)
    scores = {"yat": {s: 20.0 * r for s, r in zip(seeds, ratios)}, "softmax": {s: 20.0 for s in seeds}}
    losses = {"yat": {s: 2.0 for s in seeds}, "softmax": {s: 2.0 for s in seeds}}
    decision = rounds.decide(losses, cfg, 0, {planned.LARGEST_SCORE: scores})
    row = next(r for r in decision["comparisons"] if r["name"] == "score_ratio")
    assert row["mean"] == pytest.approx(float(np.median(ratios)))
    assert row["state"] in (rounds.DECIDED, rounds.UNDECIDED)
    if row["state"] == rounds.UNDECIDED:  # at the first look's nominal level, seven of eight is not yet enough
        assert decision["next_seeds"] == [8, 9, 10, 11]


@pytest.mark.parametrize("spec, named", [
    ({"looks": [6, 6]}, "does not rise"),
    ({"looks": [4, 8]}, "the first look is contest.seeds, 6 seeds, not 4"),
    ({"looks": [6, 12], "max_seeds": 10}, "max_seeds 10 and looks"),
    ({"looks": [6, 12], "alpha": 0.1}, "alpha: 0.1"),
    ({"round_size": 2}, "no design"),
    ({"looks": [6, 12], "compare": ["quality"]}, "'quality' is no comparison"),
    ({"looks": [6, 12], "compare": ["entropy_gap"]}, "entropy_gap compares yat_b with softmax, and variants has no"),
])
def test_a_design_the_build_cannot_read_is_refused_before_any_compute(spec, named):
    cfg = {"variants": ["softmax", "a3"], "contest": {"seeds": list(range(6)), "lr": {}, "rounds": spec},
           "sweep": {"seeds": [0]}, "studies": []}
    with pytest.raises(ConfigError, match=named):
        planned.check_rounds(cfg, "cfg.yaml")


@pytest.mark.parametrize("text, named", [
    ("looks: [6, 12]\n    spending: haybittle", "contest.rounds.spending: 'haybittle' is not one of"),
    ("looks: [6, 12]\n    alpha: 1.5", "contest.rounds.alpha: 1.5 is greater than or equal to the maximum of 1"),
    ("looks: [6, 12]\n    alpha: 0", "contest.rounds.alpha: 0 is less than or equal to the minimum of 0"),
    ("looks: [6]", "contest.rounds.looks: \\[6\\] should be non-empty|is too short"),
])
def test_the_loader_refuses_a_bad_design_naming_the_key(tmp_path, text, named):
    from attnlab.core.config import load_config

    path = tmp_path / "cfg.yaml"
    path.write_text(f"name: bad\ncontest:\n  seeds: [0, 1, 2, 3, 4, 5]\n  rounds:\n    {text}\n")
    with pytest.raises(ConfigError, match=named):
        load_config(path)


def test_each_look_trains_the_seeds_it_adds_and_the_design_names_its_error_rate():
    cfg = config((8, 20))
    assert planned.round_seeds(cfg) == [tuple(range(8)), tuple(range(8, 20))]
    plan = design.design_of(cfg)
    assert plan.kind == design.GROUP_SEQUENTIAL and plan.looks == (8, 20)
    early, last = plan.confidences
    assert early > last > 0.95  # the first look spends little; the last is close to a fixed design's
    assert "α = 0.05" in plan.text() and "O'Brien–Fleming" in plan.text()
    open_ended = design.design_of(config(max_seeds=11, round_size=2))
    assert open_ended.looks == (6, 8, 10, 11) and "anytime-valid" in open_ended.text()
    fixed = {**cfg, "contest": {**cfg["contest"], "rounds": None}}
    assert design.design_of(fixed).text() == "fixed, 8 seeds per variant, 95% t-intervals"


def test_the_planners_pairs_are_the_comparisons_the_rule_reads():
    """The planner checks contest.rounds.compare against PAIRS without computing thresholds; each names the
    variants its comparison in the catalog compares, so a check and a decision never disagree."""
    assert {c.name: (c.first, c.second) for c in planned.catalog()} == planned.PAIRS


def aa_tables(losses: list[float]) -> dict:
    """runs and contest tables of softmax alone over len(losses) seeds (at its protocol)."""
    import pandas as pd

    from attnlab.pipeline import tables
    from claim_frames import on_protocol

    runs = pd.DataFrame([{"variant": "softmax", "lr": 3e-4, "seed": s, "best_val_loss": v, "diverged": False,
                          "n_params": 10, "config.name": "settle"} for s, v in enumerate(losses)])
    spec = {"variants": ["softmax"], "contest_lr": {"softmax": 3e-4}, "contest_seeds": list(range(len(losses))),
            "sweep_lrs": [], "sweep_seed": 0}
    return on_protocol({"runs": runs, "contest": tables.contest_table(runs, spec)})


def test_the_ledgers_a_a_row_finds_no_difference_on_exchangeable_seeds_and_flags_a_drift():
    """softmax's contest seeds in two halves: seeds drawn alike hold (no difference), an odd seed is left out;
    a drift across seeds (the second half 0.05 nats worse) is a false positive the row calls contradicted; the
    row reads through the build's design (inside a repeated reading, its interval is the look's RCI)."""
    from attnlab.pipeline import claims

    rng = np.random.default_rng(0)
    alike = list(1.9 + 0.01 * rng.standard_normal(9))
    row = claims.softmax_against_itself(aa_tables(alike), None, "settle")
    assert row.verdict == verdicts.HOLDS and "seed 8 left out" in row.note and row.seeds == 4
    drift = [v + (0.05 if s >= 4 else 0.0) for s, v in enumerate(alike[:8])]
    assert claims.softmax_against_itself(aa_tables(drift), None, "settle").verdict == verdicts.CONTRADICTED
    with design.Design(design.GROUP_SEQUENTIAL, (8, 20), spending="obrien_fleming").reading():
        wide = claims.softmax_against_itself(aa_tables(drift), None, "settle")
    assert " RCI [" in wide.interval
    assert claims.softmax_against_itself(aa_tables(alike[:3]), None, "settle").verdict.startswith("not testable")


def test_the_power_benchmark_prints_each_comparisons_power_before_the_data(capsys):
    """The settle design decides the quality reading with at least 80% probability at the spread measured so
    far, and every comparison it names is printed beside a fixed design of its last look."""
    from benchmarks import design_power

    assert design_power.main(["config/settle.yaml"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "group sequential, 2 looks at 8, 20" in lines[0]
    power = {line.split()[0]: float(line.split()[1].rstrip("%")) / 100 for line in lines[3:]}
    assert set(power) == {"yat_b_gap", "score_ratio", "a3_gain", "a3_beyond_temperature", "entropy_gap"}
    assert power["yat_b_gap"] >= 0.8 and min(power.values()) >= 0.8
    # at what the next settle build measured, a mean near the reading's upper edge: the same design rarely
    # decides the quality reading, and the printed power says so
    assert design_power.main(["config/settle.yaml", "--planning", "2026-12-06"]) == 0
    lines = capsys.readouterr().out.splitlines()
    later = {line.split()[0]: float(line.split()[1].rstrip("%")) / 100 for line in lines[3:]}
    assert set(later) == set(power) and later["yat_b_gap"] < 0.5 < min(v for k, v in later.items() if k != "yat_b_gap")


def test_the_writeup_names_the_design_and_whether_a_contest_seed_chose_an_lr():
    import pandas as pd

    from attnlab.pipeline.report.contest import design_text

    contest = pd.DataFrame({"variant": ["softmax", "a3"], "lr_choice": ["auto", "auto"], "n_seeds": [3, 3],
                            "seeds": ["0 1 2", "0 1 2"]})
    sweep = pd.DataFrame({"variant": ["softmax"], "lr": [1e-3], "seed": [0]})
    shared = design_text({"contest": contest, "lr_sweep": sweep})
    assert "fixed, 3 seeds per variant, 95% t-intervals" in shared and "Seed 0 chose" in shared
    apart = design_text({"contest": contest.assign(seeds="1 2 3"), "lr_sweep": sweep})
    assert "apart from the sweep seeds" in apart and "Seed 0" not in apart


def test_each_interval_is_read_at_the_level_of_the_look_its_seeds_reached():
    """A comparison decided at the first look (8 seeds) keeps that look's level after the build's last look:
    its interval over 8 seeds is not read at the last look's 95%; the A/A halves read at their variant's look."""
    plan = design.Design(design.GROUP_SEQUENTIAL, (8, 20), spending="obrien_fleming")
    early, last = plan.confidences
    rng = np.random.default_rng(1)
    eight = {s: 0.02 + 0.01 * rng.standard_normal() for s in range(8)}
    twenty = {s: 0.02 + 0.01 * rng.standard_normal() for s in range(20)}
    zero8, zero20 = dict.fromkeys(range(8), 0.0), dict.fromkeys(range(20), 0.0)
    with plan.reading():
        assert intervals.nominal_confidence(8) == early and intervals.nominal_confidence(20) == last
        assert intervals.nominal_confidence(19) == early  # a diverged cell: the look before, wider
        at_eight, at_twenty = statistics.paired(eight, zero8), statistics.paired(twenty, zero20)
        with intervals.halved():
            assert intervals.nominal_confidence(10) == last and intervals.nominal_confidence(4) == early
    plain = statistics.paired(eight, zero8)
    assert at_eight.high - at_eight.low > 2 * (plain.high - plain.low)  # 99.92% on 7 df, not 95%
    lo, hi = stats_t_interval(list(twenty.values()), last)
    assert (at_twenty.low, at_twenty.high) == pytest.approx((lo, hi), rel=1e-12)
    assert at_eight.kind == "RCI" and plain.kind == "CI"


def stats_t_interval(values, confidence):
    from scipy import stats

    x = np.asarray(values)
    return stats.t.interval(confidence, len(x) - 1, loc=x.mean(), scale=x.std(ddof=1) / math.sqrt(len(x)))
