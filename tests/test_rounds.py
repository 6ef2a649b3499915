"""Seeds added under a declared design (attnlab.pipeline.ground.rounds, attnlab.pipeline.tables.rounds): which
seeds each round trains, when the rule asks for another round, that the ledger's intervals are then the
confidence sequence the rule read, and a build that adds rounds through Snakemake's checkpoints."""

from __future__ import annotations

import copy
import json
import math
import shutil

import numpy as np
import pandas as pd
import pytest
import yaml

from attnlab.core.errors import ConfigError
from attnlab.pipeline.ground import confidence_sequence as cs
from attnlab.pipeline.ground import intervals, statistics
from attnlab.pipeline.ground import rounds as planned
from attnlab.pipeline.tables import rounds
from processes import snakemake
from workspace import make_workspace

ALPHA = 1 - intervals.CONFIDENCE


def config(seeds=(0, 1, 2), max_seeds=8, round_size=2, variants=("softmax", "yat", "a3", "softmax_t"),
           sweep_seeds=(0,)) -> dict:
    return {"variants": list(variants), "contest": {"seeds": list(seeds), "lr": {},
                                                   "rounds": {"max_seeds": max_seeds, "round_size": round_size}},
            "sweep": {"seeds": list(sweep_seeds)}, "studies": [{"name": "depth"}, {"name": "own", "seeds": [1]}]}


def test_each_round_trains_the_next_seeds_no_other_study_has_up_to_the_budget():
    assert planned.round_seeds(config()) == [(0, 1, 2), (3, 4), (5, 6), (7,)]
    assert planned.round_seeds(config(sweep_seeds=(0, 5))) == [(0, 1, 2), (6, 7), (8, 9), (10,)]
    studied = config()
    studied["studies"][1]["seeds"] = [1, 9]  # a study of its own at seed 9, past the rounds: nothing moves
    assert planned.round_seeds(studied) == [(0, 1, 2), (3, 4), (5, 6), (7,)]
    studied["studies"][1]["seeds"] = [1, 4]  # at seed 4: no round trains that seed again, the rest stay
    assert planned.round_seeds(studied) == [(0, 1, 2), (3, 5), (6, 7), (8,)]
    fixed = config()
    fixed["contest"]["rounds"] = None
    assert planned.round_seeds(fixed) == [(0, 1, 2)]


def test_a_later_round_adds_contest_cells_alone():
    """The config's own studies that take the contest's seeds keep the first round's."""
    later = planned.with_contest_seeds(config(), [0, 1, 2, 3, 4])
    assert later["contest"]["seeds"] == [0, 1, 2, 3, 4]
    assert [s["seeds"] for s in later["studies"]] == [[0, 1, 2], [1]]


@pytest.mark.parametrize("cfg, named", [
    (config(max_seeds=3), "contest.rounds.max_seeds: 3 leaves no room"),
    (config(variants=("softmax", "softmax_t")), "no comparison the rule reads"),
])
def test_a_rounds_config_the_rule_cannot_use_is_refused_naming_the_fix(cfg, named):
    with pytest.raises(ConfigError, match=named):
        planned.check_rounds(cfg, "cfg.yaml")


def test_a_later_round_trains_only_the_variants_of_the_comparisons_still_open():
    """Round 0 trains every variant; the decision names the variants of the comparisons left open (A³ against
    softmax_t, decided: softmax_t trains no later seed), and the plan leaves the others' later cells out."""
    rng = np.random.default_rng(8)
    cfg = config(seeds=range(6), max_seeds=10, round_size=2, variants=("softmax", "yat", "a3", "softmax_t"))
    cfg["contest"]["rounds"]["reach"] = None
    made = losses(rng, range(6), {"a3": 0.001, "softmax_t": 0.2, "yat": -0.2}, spread=0.01)
    decision = rounds.decide(made, cfg, 0)
    states = {row["label"]: row["state"] for row in decision["comparisons"]}
    assert states["softmax_t − a3"] == "decided" and states["softmax − a3"] == "undecided"
    assert decision["next_variants"] == ["softmax", "a3"] and decision["next_seeds"] == [6, 7]
    assert planned.round_variants(cfg, [decision]) == [("softmax", "yat", "a3", "softmax_t"), ("softmax", "a3")]
    left = planned.left_out(cfg, [decision])
    assert left == {(v, s) for v in ("yat", "softmax_t") for s in (6, 7)}
    assert rounds.table([decision]).next_variants.iloc[0] == "softmax a3"


def losses(rng, seeds, gains: dict[str, float], spread=0.01) -> dict[str, dict[int, float]]:
    """Synthetic contest losses: each variant's per-seed loss, softmax's minus its gain, with seed noise."""
    base = {s: 1.9 + spread * rng.standard_normal() for s in seeds}
    return {v: {s: base[s] - gains.get(v, 0.0) + spread * rng.standard_normal() for s in seeds}
            for v in ("softmax", "yat", "a3", "softmax_t")}


def test_a_clear_effect_is_decided_and_asks_for_no_more_seeds():
    rng = np.random.default_rng(1)
    cfg = config(seeds=range(8), max_seeds=20)
    made = losses(rng, range(8), {"a3": 0.2, "softmax_t": 0.0, "yat": -0.2})  # yat 10% worse: far above the band
    decision = rounds.decide(made, cfg, 0)
    states = {row["label"]: row["state"] for row in decision["comparisons"]}
    assert states == {"yat / softmax": "decided", "softmax − a3": "decided", "softmax_t − a3": "decided"}
    assert decision["next_seeds"] == [] and decision["outcome"] == "decided"


def test_an_undecided_comparison_asks_for_the_next_round_until_the_budget_is_spent():
    rng = np.random.default_rng(2)
    cfg = config(seeds=(0, 1, 2), max_seeds=7, round_size=2)
    cfg["contest"]["rounds"]["reach"] = None  # every round while undecided, however far the budget is
    made = losses(rng, range(7), {"a3": 0.0005, "softmax_t": 0.0005, "yat": -0.015}, spread=0.03)
    first = rounds.decide({v: {s: x for s, x in by.items() if s < 3} for v, by in made.items()}, cfg, 0)
    assert first["outcome"] == "another round" and first["next_seeds"] == [3, 4]
    assert first["seeds"] == [0, 1, 2]
    last = rounds.decide(made, cfg, 2)
    assert last["seeds"] == list(range(7)) and last["next_seeds"] == [] and last["outcome"] == "budget spent"
    gain = next(row for row in last["comparisons"] if row["label"] == "softmax − a3")
    assert gain["state"] == "undecided" and gain["n"] == 7
    assert gain["seeds_needed"] is None or gain["seeds_needed"] > 7  # what the budget could not reach


def test_a_comparison_out_of_the_budgets_reach_asks_for_no_round():
    """A gap sitting near a band edge with a wide spread would need far more than twice the budget: it stays
    undecided, out of reach, with the seeds it would need, and trains nothing; with reach null it asks for the
    rounds as before; a reachable comparison beside it still asks for them."""
    rng = np.random.default_rng(6)
    seeds = range(6)
    made = losses(rng, seeds, {"yat": -1.9 * 0.0052, "a3": 0.0, "softmax_t": 0.0}, spread=0.02)
    cfg = config(seeds=seeds, max_seeds=8, variants=("softmax", "yat"))
    decision = rounds.decide(made, cfg, 0)
    (row,) = decision["comparisons"]
    assert row["state"] == "out of reach" and (row["seeds_needed"] is None or row["seeds_needed"] > 16)
    assert decision["next_seeds"] == [] and decision["outcome"] == "out of reach"
    from attnlab.pipeline.report.contest import rounds_text
    text = rounds_text(rounds.table([decision]))
    assert "out of the budget's reach" in text and "yat / softmax [" in text and "out of reach" in text
    cfg["contest"]["rounds"]["reach"] = None
    again = rounds.decide(made, cfg, 0)
    assert again["comparisons"][0]["state"] == "undecided" and again["next_seeds"] == [6, 7]
    # beside it, a gain of about twice its interval's reach at six seeds: within reach, so the round is trained
    made = losses(rng, seeds, {"yat": -1.9 * 0.0052, "a3": 0.012, "softmax_t": 0.012}, spread=0.006)
    made["yat"] = {s: made["softmax"][s] * 1.0052 + 0.04 * rng.standard_normal() for s in seeds}
    both = rounds.decide(made, config(seeds=seeds, max_seeds=8, variants=("softmax", "yat", "a3")), 0)
    states = {r["label"]: r["state"] for r in both["comparisons"]}
    assert states["yat / softmax"] == "out of reach"
    if states["softmax − a3"] == "undecided":
        assert both["next_seeds"] == [6, 7] and both["outcome"] == "another round"
    else:
        assert states["softmax − a3"] == "decided" and both["outcome"] == "out of reach"


def test_the_rule_reads_the_score_scale_and_the_entropy_gap_where_the_bundles_have_them():
    """The kernel's largest score against softmax's (its median, decided once the sign-test interval clears
    100x) and yat_b's entropy against softmax's (against 0) are read beside the losses; a spread score ratio near
    100x asks for a round, a clear one does not; without telemetry values neither comparison is read."""
    rng = np.random.default_rng(7)
    seeds = range(8)  # the median's exact interval at 1 − α/3 (three planned rounds) bounds from 7 seeds
    cfg = config(seeds=seeds, max_seeds=12, variants=("softmax", "yat", "yat_b"))
    cfg["contest"]["rounds"]["reach"] = None
    made = losses(rng, seeds, {"yat": -1.9 * 0.015, "a3": 0.0, "softmax_t": 0.0}, spread=0.001)
    made["yat_b"] = dict(made["yat"])

    def telemetry(score_ratio: float, spread: float) -> dict:
        scores = {"softmax": {s: 20.0 for s in seeds},
                  "yat": {s: 20.0 * score_ratio * math.exp(spread * rng.standard_normal()) for s in seeds}}
        entropy = {"softmax": {s: 0.5 for s in seeds}, "yat_b": {s: 0.7 + 0.01 * rng.standard_normal() for s in seeds}}
        return {planned.LARGEST_SCORE: scores, planned.ENTROPY: entropy}

    clear = rounds.decide(made, cfg, 0, telemetry(1000.0, 0.1))
    rows = {r["label"]: r for r in clear["comparisons"]}
    assert rows["yat / softmax largest score"]["state"] == "decided"
    assert rows["yat / softmax largest score"]["quantity"] == planned.LARGEST_SCORE
    assert rows["yat_b − softmax entropy"]["state"] == "decided"
    close = rounds.decide(made, cfg, 0, telemetry(150.0, 1.0))
    close_rows = {r["label"]: r for r in close["comparisons"]}
    assert close_rows["yat / softmax largest score"]["state"] == "undecided" and close["next_seeds"] == [8, 9]
    assert close_rows["yat / softmax largest score"]["median"]  # read by the median, not the mean
    plain = rounds.decide(made, cfg, 0)
    assert {r["quantity"] for r in plain["comparisons"]} == {planned.LOSS}
    from attnlab.pipeline.report.contest import rounds_text
    assert "yat / softmax largest score (median) [" in rounds_text(rounds.table([close])) and "×, " in rounds_text(
        rounds.table([close]))


def test_inside_sequential_the_ledgers_interval_is_the_confidence_sequence():
    """statistics.paired, which every claim reads, gives exactly Lai's sequence written out (whose coverage under
    the build's rule test_designs measures) and says so in its text; outside, the t-interval."""
    from attnlab.pipeline.ground.estimate_text import interval_text

    rng = np.random.default_rng(3)
    first, second = ({s: 1.9 + 0.02 * rng.standard_normal() for s in range(9)} for _ in range(2))
    precision = cs.tuned_precision(30)
    with intervals.sequential(precision):
        estimate = statistics.paired(first, second)
        needed = statistics.seeds_to_resolve(estimate, 0.0)
    diffs = np.array([first[s] - second[s] for s in range(9)])
    half = float(cs.half_width_factor(9, precision)) * float(diffs.std())  # the ddof-0 spread, as the mixture has
    expected = (diffs.mean() - half, diffs.mean() + half)
    assert (estimate.low, estimate.high) == pytest.approx(expected, rel=1e-12)
    assert estimate.sequential and " CS [" in interval_text(estimate)
    plain = statistics.paired(first, second)
    assert not plain.sequential and plain.high - plain.low < estimate.high - estimate.low
    assert " CI [" in interval_text(plain)
    assert needed is None or needed > statistics.seeds_to_resolve(plain, 0.0)


@pytest.mark.slow
def test_a_build_adds_seeds_in_rounds_until_decided_and_reports_them(tmp_path, corpus_path):
    """A smoke-sized build of softmax, A3 and softmax_t whose first round of two seeds cannot bound anything:
    Snakemake's seed_round checkpoints add one seed at a time until A³'s gain over softmax (the one comparison
    the design decides) is decided or the budget of four is spent, training softmax and A3 alone after the first
    round; the contest, the rounds table and the ledger then read every seed trained, with the sequence's
    interval."""
    ws = make_workspace(tmp_path, share_compile_cache=True)
    cfg = yaml.safe_load((ws / "config" / "smoke.yaml").read_text())
    cfg.update(name="rounds", variants=["softmax", "a3", "softmax_t"])
    cfg["contest"] = {"seeds": [0, 1], "lr": {"softmax": 3.0e-3, "a3": 3.0e-3, "softmax_t": 3.0e-3},
                      "rounds": {"max_seeds": 4, "round_size": 1, "reach": None,  # every round while undecided
                                 "compare": ["a3_gain"]}}
    cfg["sweep"]["lrs"] = [3.0e-3]
    cfg.pop("studies")
    (ws / "config" / "rounds.yaml").write_text(yaml.safe_dump(cfg))
    targets = ("results/tables/ledger.csv", "results/tables/seed_rounds.csv")  # no figures or writeup
    built = snakemake(ws, *targets, "--cores", "2", "--configfile", "config/rounds.yaml", corpus=corpus_path)
    assert built.returncode == 0, built.stderr[-3000:]
    table = pd.read_csv(ws / "results" / "tables" / "seed_rounds.csv")
    assert sorted(set(table["round"])) == list(range(table["round"].max() + 1)) and table["round"].max() >= 1
    assert set(table.comparison) == {"softmax − a3", "softmax_t − a3"}  # two seeds bound nothing
    trained = sorted(int(p.name[4:]) for p in (ws / "results" / "runs" / "a3" / "lr0.003").iterdir())
    last = table[table.comparison == "softmax − a3"].iloc[-1]
    assert trained == [int(s) for s in last.seeds.split()] == list(range(int(last.n_seeds)))
    temperature = sorted(int(p.name[4:]) for p in (ws / "results" / "runs" / "softmax_t" / "lr0.003").iterdir())
    assert temperature == [0, 1]  # its comparisons ask for no round: it trains the first round's seeds alone
    assert last.outcome in ("decided", "budget spent")
    assert (last.outcome == "budget spent") == (int(last.n_seeds) == 4 and last.state == "undecided")
    contest = pd.read_csv(ws / "results" / "tables" / "contest.csv").set_index("variant")
    assert int(contest.loc["a3", "n_seeds"]) == int(last.n_seeds)
    if last.state == "decided":  # the contest's interval is the one the rule read
        assert -contest.loc["a3", "delta_ci_high"] == pytest.approx(last.low, rel=1e-9)
    ledger = pd.read_csv(ws / "results" / "tables" / "ledger.csv")
    noted = ledger[ledger.note.fillna("").str.contains("contest seeds added under the design declared")]
    assert len(noted) and noted.note.str.contains("anytime-valid confidence sequence").all()
    again = snakemake(ws, *targets, "--cores", "2", "--configfile", "config/rounds.yaml", "-n", corpus=corpus_path)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
    assert last.outcome == "budget spent"  # at these numbers: what the raised budget below continues
    added = int(last["round"]) + 1
    a_raised_budget_trains_the_round_it_asks_for(ws, cfg, targets, added, corpus_path)
    shutil.rmtree(ws / "results" / "runs" / "a3" / "lr0.003" / f"seed{int(last.n_seeds)}")  # the added round's
    planned = snakemake(ws, "--cores", "2", "--configfile", "config/raised.yaml", "-n", corpus=corpus_path)
    assert planned.returncode == 0 and f"train_pack_a3_runs_0_round{added}" in planned.stdout
    assert "train_pack_softmax_t_runs_0_round" not in planned.stdout  # a cell no round trained is not missing
    a_lowered_budget_reads_only_its_seeds(ws, targets, int(last.n_seeds), corpus_path)


@pytest.mark.slow
def test_raising_a_group_sequential_budget_on_a_built_workspace_reruns_the_decisions_and_trains_the_new_look(
        tmp_path, corpus_path):
    """Looks [2, 3] built, then [2, 4]: with an 'auto' LR upstream of the decisions, the planner used to read
    round 0's decision before its checkpoint ran again and stop with a traceback saying it was made under
    "another design or seeds", listing identical seeds. The stale decision is now made again, as the docs say,
    and the new look trains."""
    ws = make_workspace(tmp_path, share_compile_cache=True)
    cfg = yaml.safe_load((ws / "config" / "smoke.yaml").read_text())
    cfg.update(name="looks", variants=["softmax", "a3"])
    cfg["contest"] = {"seeds": [0, 1], "lr": {"softmax": 3.0e-3, "a3": "auto"}, "rounds": {"looks": [2, 3]}}
    cfg["sweep"].update(lrs=[3.0e-3, 1.0e-2], extend=0)
    cfg.pop("studies")
    for looks in ([2, 3], [2, 4]):
        cfg["contest"]["rounds"]["looks"] = looks
        (ws / "config" / "looks.yaml").write_text(yaml.safe_dump(cfg))
        built = snakemake(ws, "tables", "--cores", "2", "--configfile", "config/looks.yaml", corpus=corpus_path)
        said = built.stdout + built.stderr
        assert built.returncode == 0 and "Traceback" not in said, said[-3000:]
        decision = json.loads((ws / "results" / "rounds" / "round0.json").read_text())
        assert decision["design"]["looks"] == looks
    seeds = {int(p.name[4:]) for p in (ws / "results" / "runs" / "softmax" / "lr0.003").iterdir()}
    assert seeds == {0, 1, 2, 3} or json.loads((ws / "results" / "rounds" / "round0.json").read_text())[
        "next_seeds"] == [], "the new look's seeds trained, unless round 0 already decided every comparison"


def a_raised_budget_trains_the_round_it_asks_for(ws, cfg, targets, next_round: int, corpus_path) -> None:
    """One more seed of budget: the seed_round decisions run again, the last asks for one more round, and the
    same build trains it and remakes the tables from it, ending well with nothing left to build."""
    cfg = copy.deepcopy(cfg)
    cfg["contest"]["rounds"]["max_seeds"] += 1
    budget = cfg["contest"]["rounds"]["max_seeds"]  # its last seed is the next integer: seed budget - 1
    (ws / "config" / "raised.yaml").write_text(yaml.safe_dump(cfg))
    raised = snakemake(ws, *targets, "--cores", "2", "--configfile", "config/raised.yaml", corpus=corpus_path)
    said = raised.stdout + raised.stderr
    assert raised.returncode == 0 and "run the build again" not in said, said[-3000:]
    assert (ws / "results" / "rounds" / f"round{next_round}.json").is_file()
    table = pd.read_csv(ws / "results" / "tables" / "seed_rounds.csv")
    assert int(table[table.comparison == "softmax − a3"].n_seeds.max()) == budget
    assert (ws / "results" / "runs" / "a3" / "lr0.003" / f"seed{budget - 1}").is_dir()
    again = snakemake(ws, *targets, "--cores", "2", "--configfile", "config/raised.yaml", "-n", corpus=corpus_path)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


def a_lowered_budget_reads_only_its_seeds(ws, targets, budget: int, corpus_path) -> None:
    """Back to the first budget after a raised one trained a seed more: the decisions run again and end where
    this budget is spent, nothing trains, and the rounds table and the contest read this budget's seeds alone
    (softmax's cell of the later seed stays on disk, unread; A3's was removed above)."""
    assert (ws / "results" / "runs" / "softmax" / "lr0.003" / f"seed{budget}").is_dir()
    lowered = snakemake(ws, *targets, "--cores", "2", "--configfile", "config/rounds.yaml", corpus=corpus_path)
    said = lowered.stdout + lowered.stderr
    assert lowered.returncode == 0 and "train_pack" not in said, said[-3000:]
    table = pd.read_csv(ws / "results" / "tables" / "seed_rounds.csv")
    last = table[table.comparison == "softmax − a3"].iloc[-1]
    assert int(last.n_seeds) == budget and last.outcome == "budget spent"
    contest = pd.read_csv(ws / "results" / "tables" / "contest.csv").set_index("variant")
    assert int(contest.loc["softmax", "n_seeds"]) == budget  # its later seed's cell is on disk, not read
    assert contest.loc["a3", "seeds"] == " ".join(map(str, range(budget)))
    again = snakemake(ws, *targets, "--cores", "2", "--configfile", "config/rounds.yaml", "-n", corpus=corpus_path)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


def test_the_writeup_says_how_many_seeds_the_rule_added_and_with_which_interval():
    from attnlab.pipeline.report.contest import rounds_text

    rng = np.random.default_rng(5)
    cfg = config(seeds=(0, 1, 2), max_seeds=5, round_size=2, variants=("softmax", "yat"))
    made = losses(rng, range(5), {"yat": -0.01}, spread=0.02)
    decisions = [rounds.decide({v: {s: x for s, x in by.items() if s < 3} for v, by in made.items()}, cfg, 0),
                 rounds.decide(made, cfg, 1)]
    table = rounds.table(decisions)
    assert list(table["round"]) == [0, 1] and list(table.comparison) == ["yat / softmax"] * 2
    text = rounds_text(table)
    assert "up to 5 seeds per variant in 2 rounds" in text and "of a budget of 5" in text
    assert cs.METHOD in text and "yat / softmax [" in text


def test_a_decision_is_sealed_and_a_hand_edit_stops_the_plan(tmp_path):
    """The seed_round command writes its decision with its content's checksum; the planner reads it back whole,
    and refuses one whose next seeds were edited by hand (a round that would silently not be trained)."""
    rng = np.random.default_rng(9)
    cfg = config(seeds=(0, 1, 2), max_seeds=7, round_size=2, variants=("softmax", "a3"))
    cfg["contest"]["rounds"]["reach"] = None
    made = losses(rng, range(3), {"a3": 0.0005}, spread=0.03)
    out = tmp_path / "round0.json"
    from attnlab.core.bundle_format import sealed

    out.write_text(json.dumps(sealed(rounds.decide(made, cfg, 0))))
    assert planned.read_decision(out)["next_seeds"] == [3, 4]
    edited = json.loads(out.read_text())
    edited["next_seeds"] = []
    out.write_text(json.dumps(edited))
    with pytest.raises(ConfigError, match=r"round0\.json: changed after the seed_round rule wrote it.*remove it"):
        planned.read_decision(out)
