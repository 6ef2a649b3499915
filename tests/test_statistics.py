"""Paired comparisons by seed, their intervals and the ledger's verdicts, on synthetic data (JAX-free)."""

from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from attnlab.core.bundle_format import BundleError, format_lr
from attnlab.core.config import validate_config
from attnlab.core.errors import ConfigError
from attnlab.pipeline import claims, tables
from attnlab.pipeline.ground import contract, statistics, verdicts
from attnlab.pipeline.ground import estimate_text
from attnlab.pipeline.claims.ladder_rows import is_ladder_row
from attnlab.pipeline.ground.grid import grid
from attnlab.pipeline.ground.verdicts import CONTRADICTED, HOLDS, INCONCLUSIVE
from claim_frames import on_protocol

PUB = claims.published()


# ---- the interval


def test_the_interval_covers_the_true_mean_about_95_percent_of_the_time():
    rng = np.random.default_rng(2026)
    true_mean, covered, trials = 0.03, 0, 2000
    for _ in range(trials):
        n = int(rng.integers(2, 8))
        seed_effect = rng.normal(0, 0.5, n)  # shared by both variants of a seed: pairing removes it
        first = dict(enumerate(1.5 + seed_effect + true_mean + rng.normal(0, 0.02, n)))
        second = dict(enumerate(1.5 + seed_effect + rng.normal(0, 0.02, n)))
        estimate = statistics.paired(first, second)
        covered += estimate.low <= true_mean <= estimate.high
    assert 0.93 <= covered / trials <= 0.97, covered / trials


def test_a_ratio_interval_covers_the_true_ratio_about_95_percent_of_the_time():
    rng = np.random.default_rng(7)
    true_ratio, covered, trials = 3.0, 0, 1500
    for _ in range(trials):
        base = np.exp(rng.normal(3, 1, 4))
        first = dict(enumerate(base * true_ratio * np.exp(rng.normal(0, 0.3, 4))))
        estimate = statistics.paired(first, dict(enumerate(base)), ratio=True)
        covered += estimate.low <= true_ratio <= estimate.high
    assert 0.93 <= covered / trials <= 0.97, covered / trials


def test_the_interval_is_scipys_t_interval_of_the_paired_differences():
    first, second = {0: 1.50, 1: 1.52, 2: 1.49}, {0: 1.53, 1: 1.56, 2: 1.51}
    estimate = statistics.paired(first, second)
    low, high = stats.ttest_rel([1.50, 1.52, 1.49], [1.53, 1.56, 1.51]).confidence_interval(0.95)
    assert (estimate.low, estimate.high) == pytest.approx((low, high), abs=1e-12)
    assert estimate.mean == pytest.approx(-0.03) and estimate.wins == 3 and estimate.wins_text == "3/3"


def test_pairing_really_pairs_shuffling_one_variants_seeds_changes_the_interval():
    rng = np.random.default_rng(0)
    seed_effect = rng.normal(0, 0.3, 6)  # large between seeds, shared within a seed
    first = {s: 1.5 + e - 0.02 + rng.normal(0, 0.003) for s, e in enumerate(seed_effect)}
    second = {s: 1.5 + e + rng.normal(0, 0.003) for s, e in enumerate(seed_effect)}
    paired = statistics.paired(first, second)
    shuffled = statistics.paired(dict(zip(np.roll(list(first), 1), first.values())), second)
    assert paired.mean == pytest.approx(shuffled.mean)  # the same values, so the same mean...
    assert paired.high < 0 < shuffled.high  # ...but only the true pairs resolve the difference
    assert (shuffled.high - shuffled.low) > 10 * (paired.high - paired.low)


def test_only_the_seeds_both_variants_have_are_paired():
    estimate = statistics.paired({0: 1.0, 1: 2.0, 5: 9.0}, {0: 0.5, 1: 1.0, 2: 0.0})
    assert estimate.seeds == (0, 1) and estimate.values == pytest.approx((0.5, 1.0)) and estimate.n == 2


def test_more_seeds_narrow_the_interval():
    rng = np.random.default_rng(1)
    widths = []
    for n in (3, 5, 10, 20):
        runs = [statistics.mean_interval(rng.normal(0.0, 1.0, n)) for _ in range(300)]
        widths.append(np.mean([e.high - e.low for e in runs]))
    assert all(a > b for a, b in zip(widths, widths[1:])), widths


def test_one_seed_has_no_interval_and_says_so():
    estimate = statistics.paired({0: 1.40}, {0: 1.45})
    assert estimate.n == 1 and not estimate.has_interval and math.isnan(estimate.low)
    assert estimate.reason == statistics.ONE_SEED
    assert estimate_text.interval_text(estimate) == statistics.ONE_SEED
    assert estimate_text.describe(estimate) == f"-0.0500 ({statistics.ONE_SEED})"
    assert statistics.paired({0: 1.0}, {1: 1.0}).reason == statistics.NO_SEED


def test_a_ratio_is_the_mean_log_ratio_reported_back_as_a_ratio():
    estimate = statistics.paired({0: 400.0, 1: 100.0}, {0: 100.0, 1: 100.0}, ratio=True)
    assert estimate.mean == pytest.approx(2.0)  # exp(mean(log 4, log 1)), not the mean ratio 2.5
    assert estimate.values == pytest.approx((4.0, 1.0))
    assert estimate.low < 2.0 < estimate.high and estimate.low > 0


def test_seeds_to_resolve_is_the_first_count_whose_interval_clears_the_threshold():
    estimate = statistics.mean_interval([0.010, 0.018, 0.004], seeds=[0, 1, 2])
    assert estimate.low < 0 < estimate.high
    needed = statistics.seeds_to_resolve(estimate, 0.0)
    half = lambda n: stats.t.ppf(0.975, n - 1) * estimate.spread / math.sqrt(n)  # noqa: E731
    assert half(needed) < estimate.mean <= half(needed - 1)
    assert statistics.seeds_to_resolve(statistics.mean_interval([1.0]), 0.0) is None  # no spread to go by
    on_it = statistics.mean_interval([-1.0, 1.0])
    assert statistics.seeds_to_resolve(on_it, 0.0) == math.inf


# ---- the verdicts


@pytest.mark.parametrize("values, word", [
    ([0.30, 0.32, 0.31], HOLDS),  # the interval lies above 0.2
    ([0.05, 0.40, 0.20], INCONCLUSIVE),  # it spans 0.2
    ([0.10, 0.12, 0.11], CONTRADICTED),  # it lies below 0.2
])
def test_a_one_sided_claim_holds_spans_or_is_contradicted(values, word):
    verdict = verdicts.one_sided(statistics.mean_interval(values), 0.2, above=True)
    assert verdict.word == word
    assert (verdict.seeds_to_resolve is not None) == (word == INCONCLUSIVE)
    if word == INCONCLUSIVE:
        assert "seeds would resolve it" in verdict.resolution


@pytest.mark.parametrize("values, word", [
    ([1.010, 1.012, 1.011], HOLDS),
    ([1.000, 1.020, 1.035], INCONCLUSIVE),
    ([1.050, 1.052, 1.051], CONTRADICTED),
])
def test_a_range_claim_holds_spans_or_is_contradicted(values, word):
    assert verdicts.in_range(statistics.mean_interval(values), 1.005, 1.025).word == word


def test_one_seed_is_inconclusive_on_either_side():
    above = verdicts.one_sided(statistics.mean_interval([5.0]), 0.2, above=True)
    below = verdicts.one_sided(statistics.mean_interval([-5.0]), 0.2, above=True)
    assert above.word == below.word == INCONCLUSIVE and above.reason == statistics.ONE_SEED
    assert "falls on" in above.resolution and "falls against" in below.resolution
    assert "two or more seeds would give an interval" in above.resolution


def test_a_claim_of_parts_needs_every_part():
    holds, spans = verdicts.Verdict(HOLDS), verdicts.Verdict(INCONCLUSIVE, "", 7)
    assert verdicts.every(holds, holds).word == HOLDS
    assert verdicts.every(holds, spans).word == INCONCLUSIVE and verdicts.every(holds, spans).seeds_to_resolve == 7
    assert verdicts.every(spans, verdicts.Verdict(CONTRADICTED)).word == CONTRADICTED


# ---- the verdicts of ledger rows, on small synthetic tables


def contest_tables(kernel_gaps, lr=3e-3, protocol="paper"):
    """runs and contest tables of softmax and yat_b over len(kernel_gaps) seeds; yat_b = softmax * (1 + gap)."""
    soft = [1.49 + 0.01 * s for s in range(len(kernel_gaps))]
    rows = [{"variant": "softmax", "lr": 3e-4, "seed": s, "best_val_loss": v, "diverged": False, "n_params": 10,
             "config.name": protocol} for s, v in enumerate(soft)]
    rows += [{"variant": "yat_b", "lr": lr, "seed": s, "best_val_loss": v * (1 + g), "diverged": False,
              "n_params": 10, "config.name": protocol} for s, (v, g) in enumerate(zip(soft, kernel_gaps))]
    runs = pd.DataFrame(rows)
    spec = {"variants": ["softmax", "yat_b"], "contest_lr": {"softmax": 3e-4, "yat_b": lr},
            "contest_seeds": list(range(len(kernel_gaps))), "sweep_lrs": [], "sweep_seed": 0}
    return on_protocol({"runs": runs, "contest": tables.contest_table(runs, spec)})


@pytest.mark.parametrize("gaps, word", [
    ([0.012, 0.013, 0.011, 0.012], HOLDS),  # inside the "about 1%" band
    ([0.004, 0.020, 0.012], INCONCLUSIVE),  # across its lower edge
    ([0.060, 0.062, 0.058, 0.061], CONTRADICTED),  # clear of it
])
def test_the_kernel_gap_row_on_an_interval_inside_across_and_outside_its_band(gaps, word):
    claim = claims.kernel_gap(contest_tables(gaps), PUB, "paper")
    assert claim.verdict == word and claim.seeds == len(gaps)
    assert claim.interval.startswith("yat_b: 95% CI [")
    assert (claim.seeds_to_resolve is not None) == (word == INCONCLUSIVE)


def test_a_ledger_row_of_one_seed_is_inconclusive_and_says_it_has_no_interval():
    claim = claims.kernel_gap(contest_tables([0.012]), PUB, "paper")
    assert claim.verdict == INCONCLUSIVE and claim.seeds == 1
    assert statistics.ONE_SEED in claim.interval and "two or more seeds" in claim.resolution


def test_early_and_deep_layers_are_not_testable_with_one_layer():
    table = pd.DataFrame({"layer": [0], "entropy_diff": [0.1], "a3_entropy": [0.7], "softmax_entropy": [0.6]})
    claim = claims.a3_early_layers_softer({"a3_vs_softmax_entropy": table}, PUB, "smoke")
    assert claim.verdict == "not testable at smoke" and "1 layer" in claim.interval


def test_every_verdict_of_a_ledger_is_one_of_the_five_words_and_every_row_keeps_its_protocol():
    t = contest_tables([0.012, 0.013, 0.011], protocol="smoke")
    ledger = claims.ledger(t)
    assert set(ledger.verdict.map(verdicts.verdict_word)) <= set(verdicts.VERDICTS)
    assert (ledger.protocol == "smoke").all() and ledger.source.isin(claims.SOURCES).all()
    assert (ledger.interval.str.len() > 0).all(), "every row states its interval or why it has none"


# ---- the contest table, recomputed by a third party from runs.csv


def synthetic_runs(rng, variants=("softmax", "yat", "yat_b", "a3"), seeds=(0, 1, 2, 3)):
    lrs = {"softmax": 3e-4, "yat": 3e-3, "yat_b": 3e-3, "a3": 1e-2}
    rows = []
    for s in seeds:
        shared = rng.normal(0, 0.02)
        for v in variants:
            rows.append({"variant": v, "lr": lrs[v], "seed": s, "best_val_loss": 1.5 + shared + rng.normal(0, 0.01),
                         "diverged": False, "n_params": 100})
            rows.append({"variant": v, "lr": 1e-3, "seed": s, "best_val_loss": 9.0, "diverged": False,
                         "n_params": 100})  # another LR: must not enter the contest
    spec = {"variants": list(variants), "contest_lr": lrs, "contest_seeds": [0, 1, 2], "auto": ["a3"],
            "sweep_lrs": [1e-3], "sweep_seed": 0}
    return pd.DataFrame(rows), spec


def recompute_contest_columns(runs: pd.DataFrame, contest: pd.DataFrame) -> pd.DataFrame:
    """What a reader would do with runs.csv and scipy: each variant at its contest LR against softmax at its own,
    over the contest seeds both have, paired t-interval at 95%."""
    def cells(variant):
        row = contest[contest.variant == variant].iloc[0]
        seeds = [int(s) for s in str(row.seeds).split()]
        own = runs[(runs.variant == variant) & (runs.lr.map(format_lr) == format_lr(row.lr)) & runs.seed.isin(seeds)]
        return own.set_index("seed").best_val_loss

    soft = cells("softmax")
    rows = []
    for variant in contest.variant:
        both = pd.concat([cells(variant), soft], axis=1, join="inner").sort_index()
        a, b = both.iloc[:, 0].to_numpy(), both.iloc[:, 1].to_numpy()
        if variant == "softmax":
            low = high = float("nan")  # the baseline against itself: zero spread, no interval
        else:
            low, high = stats.ttest_rel(a, b).confidence_interval(0.95)
        rows.append({"variant": variant, "delta_vs_softmax": float(np.mean(a - b)), "delta_ci_low": low,
                     "delta_ci_high": high, "wins": f"{int((a < b).sum())}/{len(a)}"})
    return pd.DataFrame(rows)


def test_a_third_party_recomputes_the_contest_columns_from_runs_csv(tmp_path):
    runs, spec = synthetic_runs(np.random.default_rng(3))
    runs.to_csv(tmp_path / "runs.csv", index=False)
    tables.write_table(tables.contest_table(runs, spec), tmp_path / "contest")
    contest = pd.read_csv(tmp_path / "contest.csv")
    mine = contest[["variant", "delta_vs_softmax", "delta_ci_low", "delta_ci_high", "wins"]]
    theirs = recompute_contest_columns(pd.read_csv(tmp_path / "runs.csv"), contest)
    pd.testing.assert_frame_equal(mine.reset_index(drop=True), theirs, atol=1e-4, check_dtype=False)
    assert list(contest.lr_choice) == ["given", "given", "given", "auto"]
    assert (contest.n_paired == 3).all()


def test_the_contest_pairs_only_the_seeds_softmax_also_has():
    runs, spec = synthetic_runs(np.random.default_rng(4))
    runs = runs[~((runs.variant == "softmax") & (runs.seed == 2))]
    contest = tables.contest_table(runs, spec).set_index("variant")
    assert contest.loc["yat", "n_seeds"] == 3 and contest.loc["yat", "n_paired"] == 2
    assert contest.loc["yat", "wins"].endswith("/2")


NEAR = 0.0010000001  # format_lr's own example: a different float from 1e-3, so a different LR and folder


def test_an_lr_is_its_exact_text_in_the_contest_and_the_sweep(tmp_path):
    rows = [{"variant": v, "lr": lr, "seed": s, "best_val_loss": loss + 0.01 * s, "final_val_loss": 9.0,
             "best_val_loss_select": loss + 0.01 * s, "diverged": False, "diverged_step": None, "n_params": 1,
             "config.name": "t"}
            for v, by_lr in {"softmax": {1e-3: 1.5, NEAR: 3.0}, "yat": {1e-3: 2.0, NEAR: 1.6}}.items()
            for lr, loss in by_lr.items() for s in (0, 1, 2)]
    runs = pd.DataFrame(rows)
    spec = {"variants": ["softmax", "yat"], "contest_lr": {"softmax": 1e-3, "yat": NEAR}, "contest_seeds": [0, 1, 2],
            "sweep_lrs": [1e-3], "sweep_seed": 0, "sweep_seeds": [0, 1, 2]}
    contest = tables.contest_table(runs, spec).set_index("variant")
    assert contest.loc["softmax", "lr"] == "0.001" and contest.loc["yat", "lr"] == "0.0010000001"
    assert contest.loc["softmax", "n_seeds"] == 3 and contest.loc["softmax", "best_val_mean"] == pytest.approx(1.51)
    assert contest.loc["yat", "best_val_mean"] == pytest.approx(1.61), "yat's contest mixed in its 1e-3 cells"
    sweep = tables.sweep_table(runs, spec)
    assert len(sweep) == 6 and set(sweep.lr.map(format_lr)) == {"0.001"}, "the sweep took in the other LR"
    assert tables.best_sweep_lr(runs[runs.variant == "yat"])["candidates"] == {"0.001": pytest.approx(2.01),
                                                                                "0.0010000001": pytest.approx(1.61)}
    # through the CSVs the ledger reads, each LR keeps its cells
    for name in contract.COLLECTED:
        pd.DataFrame(columns=contract.columns(name)).to_csv(tmp_path / f"{name}.csv", index=False)
    runs.to_csv(tmp_path / "runs.csv", index=False)
    tables.write_table(contest.reset_index(), tmp_path / "contest")
    read = claims.load_tables(tmp_path)
    assert claims.contest_losses(read, "yat") == pytest.approx({0: 1.6, 1: 1.61, 2: 1.62})
    assert claims.contest_losses(read, "softmax") == pytest.approx({0: 1.5, 1: 1.51, 2: 1.52})


@pytest.mark.slow
def test_the_smoke_builds_contest_columns_recompute_from_its_runs_csv(smoke_workspace):
    built = smoke_workspace / "results" / "tables"
    contest = pd.read_csv(built / "contest.csv")
    theirs = recompute_contest_columns(pd.read_csv(built / "runs.csv"), contest)
    mine = contest[["variant", "delta_vs_softmax", "delta_ci_low", "delta_ci_high", "wins"]]
    pd.testing.assert_frame_equal(mine.reset_index(drop=True), theirs, atol=1e-4, check_dtype=False)
    ledger = pd.read_csv(built / "ledger.csv")
    # every post's check, in order, then the smoke micro-ladder's rows (each names the ladder as its protocol)
    checks, ladder = ledger.iloc[:len(claims.CHECKS)], ledger.iloc[len(claims.CHECKS):]
    assert not any(is_ladder_row(row) for row in checks.itertuples())
    assert len(ladder) > 0 and all(is_ladder_row(row) for row in ladder.itertuples())
    assert set(ledger.verdict.map(verdicts.verdict_word)) <= set(verdicts.VERDICTS)
    assert (smoke_workspace / "results" / "figures" / "paired_differences.png").stat().st_size > 1000
    assert (built / "best_lr.csv").is_file()


# ---- the sweep at several seeds


CFG = {"name": "t", "variants": ["softmax", "a3"],
       "contest": {"seeds": [0, 1, 2], "lr": {"softmax": 3.0e-3, "a3": "auto"}},
       "sweep": {"seed": 0, "lrs": [1.0e-3, 3.0e-3]}}


def test_a_config_without_sweep_seeds_keeps_its_one_sweep_seed_and_its_cells():
    cfg = validate_config(copy.deepcopy(CFG))
    assert cfg["sweep"]["seeds"] == [0]
    spec = grid(cfg, {"a3": 1e-3})
    old_cells = {(v, lr, 0) for v in CFG["variants"] for lr in (1e-3, 3e-3)}
    old_cells |= {(v, lr, s) for v, lr in (("softmax", 3e-3), ("a3", 1e-3)) for s in (0, 1, 2)}
    assert list(spec.cells) == sorted(old_cells)


def test_sweep_seeds_train_the_sweep_at_each_seed():
    cfg = validate_config(copy.deepcopy(CFG) | {"sweep": {"seeds": [0, 5], "lrs": [1.0e-3, 3.0e-3]}})
    assert cfg["sweep"]["seed"] == 0
    sweep_cells = {c for c in grid(cfg).cells if c[0] == "a3"}
    assert sweep_cells == {("a3", lr, s) for lr in (1e-3, 3e-3) for s in (0, 5)}
    with pytest.raises(ConfigError, match=r"sweep\.seed: 3 is not one of sweep\.seeds"):
        validate_config(copy.deepcopy(CFG) | {"sweep": {"seed": 3, "seeds": [0, 5], "lrs": [1.0e-3]}})


def test_the_best_sweep_lr_is_the_lowest_mean_over_the_sweep_seeds_without_a_divergence():
    best = [1.50, 1.60, 1.56, 1.52, 1.40, 1.41]
    cells = pd.DataFrame({"lr": [1e-3, 1e-3, 3e-3, 3e-3, 1e-2, 1e-2], "seed": [0, 1] * 3, "best_val_loss": best,
                          "best_val_loss_select": [b + 0.01 for b in best],
                          "diverged": [False, False, False, False, False, True]})
    choice = tables.best_sweep_lr(cells)
    assert choice["lr"] == 3e-3 and choice["best_val_loss_select"] == pytest.approx(1.55)  # 1e-2 diverged on a seed
    assert choice["best_val_loss"] == pytest.approx(1.54)
    assert tables.best_sweep_lr(cells.assign(diverged=True)) is None


def sweep_where_the_halves_disagree() -> tuple[pd.DataFrame, dict]:
    """softmax and yat over two sweep LRs and three seeds. yat's loss over all windows prefers 1e-3 (mean 1.56
    against 1.59), its select half 3e-3 (1.58 against 1.60), where its report half reads 1.61: a table that
    chose or reported on another column gives another LR or another number."""
    halves = {("softmax", 1e-3): (1.60, 1.61, 1.62), ("softmax", 3e-3): (1.50, 1.51, 1.52),
              ("yat", 1e-3): (1.55, 1.59, 1.56), ("yat", 3e-3): (1.58, 1.57, 1.60)}  # best, select, held-out
    rows = [{"variant": v, "lr": lr, "seed": s, "best_val_loss": best + 0.01 * s,
             "best_val_loss_select": select + 0.01 * s, "best_val_loss_heldout": heldout + 0.01 * s,
             "final_val_loss": 2.0, "diverged": False, "diverged_step": None, "n_params": 1}
            for (v, lr), (best, select, heldout) in halves.items() for s in (0, 1, 2)]
    spec = {"variants": ["softmax", "yat"], "contest_lr": {"softmax": 3e-3, "yat": 3e-3}, "contest_seeds": [0, 1, 2],
            "sweep_lrs": [1e-3, 3e-3], "sweep_seed": 0, "sweep_seeds": [0, 1, 2]}
    return pd.DataFrame(rows), spec


def test_an_lr_is_chosen_on_the_select_half_and_the_contest_reports_the_held_out_half():
    runs, spec = sweep_where_the_halves_disagree()
    yat = runs[runs.variant == "yat"]
    assert yat.groupby("lr").best_val_loss.mean().idxmin() == 1e-3, "the posts' measure prefers the other LR"
    choice = tables.best_sweep_lr(yat)
    assert choice["lr"] == 3e-3 and choice["best_val_loss_select"] == pytest.approx(1.58)
    assert choice["candidates"] == {"0.001": pytest.approx(1.60), "0.003": pytest.approx(1.58)}
    contest = tables.contest_table(runs, spec).set_index("variant")
    best = tables.best_lr_table(runs, spec, contest.reset_index()).set_index("variant")
    assert best.loc["yat", "best_lr"] == 3e-3
    assert best.loc["yat", "best_val_mean"] == pytest.approx(1.59), "best_lr reports the posts' measure there"
    assert contest.loc["yat", "best_val_mean"] == pytest.approx(1.59)
    assert contest.loc["yat", "heldout_val_mean"] == pytest.approx(1.61)
    assert contest.loc["yat", "heldout_val_std"] == pytest.approx(np.std([1.60, 1.61, 1.62]))
    shown = tables.contest_display(contest.reset_index())
    assert "best val. loss, posts' measure (nats/char)" in shown and "held-out half (nats/char)" in shown


def test_sweep_cells_without_a_select_half_stop_the_choice_naming_them():
    runs, spec = sweep_where_the_halves_disagree()
    old = runs.drop(columns=["best_val_loss_select", "best_val_loss_heldout"])
    with pytest.raises(BundleError, match=r"no best_val_loss_select for the sweep cells yat lr 0\.001 seed 0, "):
        tables.best_sweep_lr(old[old.variant == "yat"])
    assert tables.contest_table(old, spec).heldout_val_mean.isna().all()
    assert "held-out half (nats/char)" not in tables.contest_display(tables.contest_table(old, spec))


def test_best_lr_table_pairs_over_the_sweep_seeds_and_says_when_it_has_no_interval():
    jitter = {"softmax": (0.0, 0.002, -0.001), "yat": (0.001, -0.002, 0.001)}  # seeds apart, not identical
    rows = [{"variant": v, "lr": lr, "seed": s, "best_val_loss": loss + 0.01 * s + jitter[v][s], "final_val_loss": 2.0,
             "best_val_loss_select": loss + 0.01 * s + jitter[v][s], "diverged": False, "diverged_step": None,
             "n_params": 1}
            for v, by_lr in {"softmax": {1e-3: 1.60, 3e-3: 1.50}, "yat": {1e-3: 1.55, 3e-3: 1.58}}.items()
            for lr, loss in by_lr.items() for s in (0, 1, 2)]
    runs = pd.DataFrame(rows)
    spec = {"variants": ["softmax", "yat"], "contest_lr": {"softmax": 3e-3, "yat": 3e-3}, "contest_seeds": [0, 1, 2],
            "sweep_lrs": [1e-3, 3e-3], "sweep_seed": 0, "sweep_seeds": [0, 1, 2]}
    best = tables.best_lr_table(runs, spec, tables.contest_table(runs, spec)).set_index("variant")
    assert best.loc["yat", "best_lr"] == 1e-3 and best.loc["yat", "n_sweep_seeds"] == 3
    assert best.loc["yat", "delta_vs_softmax"] == pytest.approx(0.05, abs=1e-3)
    assert best.loc["yat", "contest_delta_vs_softmax"] == pytest.approx(0.08, abs=1e-3)
    assert best.loc["yat", "interval_note"] == ""
    one = spec | {"sweep_seeds": [0]}
    single = tables.best_lr_table(runs, one, tables.contest_table(runs, spec)).set_index("variant")
    assert single.loc["yat", "interval_note"] == statistics.ONE_SEED and math.isnan(single.loc["yat", "delta_ci_low"])
    shown = tables.best_lr_display(single.reset_index())
    assert statistics.ONE_SEED in shown.iloc[1, 3]


# ---- counts, noise scales, degenerate evidence and trends


def test_identical_differences_are_degenerate_evidence_not_a_zero_width_interval():
    estimate = statistics.paired({0: 1.54, 1: 1.55}, {0: 1.50, 1: 1.51})
    assert not estimate.has_interval and estimate.reason == statistics.ZERO_SPREAD
    verdict = verdicts.one_sided(estimate, 0.0, above=True)
    assert verdict.word == INCONCLUSIVE and "one seed" not in verdict.resolution
    same = statistics.mean_interval([0.2, 0.2, 0.2])  # a float std of equal numbers is not always exactly 0
    assert not same.has_interval and same.reason == statistics.ZERO_SPREAD


def test_a_count_of_events_gets_the_exact_binomial_interval():
    low, high = statistics.count_interval(3, 3)
    ci = stats.binomtest(3, 3).proportion_ci(method="exact")
    assert (low, high) == pytest.approx((ci.low, ci.high)) and low == pytest.approx(0.025 ** (1 / 3))
    assert verdicts.count_verdict(6, 6).word == HOLDS and verdicts.count_verdict(0, 6).word == CONTRADICTED
    three = verdicts.count_verdict(3, 3)
    assert three.word == INCONCLUSIVE and three.seeds_to_resolve == 6


def test_one_seed_against_a_noise_scale_has_the_t_interval_of_that_spread():
    noise = statistics.mean_interval([0.010, 0.012, 0.014])
    one = statistics.against_noise(0.18, noise, "yat's contest seeds")
    half = stats.t.ppf(0.975, 2) * 0.002
    assert one.has_interval and (one.low, one.high) == pytest.approx((0.18 - half, 0.18 + half))
    assert "σ = 0.002" in one.noise and verdicts.one_sided(one, 0.015, above=False).word == CONTRADICTED
    assert not statistics.against_noise(0.18, statistics.mean_interval([0.01]), "one seed").has_interval


def test_a_trend_with_a_seed_effect_is_the_regression_on_every_rung_and_seed():
    rng = np.random.default_rng(0)
    points = {seed: [(x, 0.3 * seed - 0.05 * x + rng.normal(0, 0.01)) for x in (4.5, 5.0, 5.5, 5.9)]
              for seed in (0, 1, 2)}
    estimate = statistics.slope_with_seed_effect(points)
    # the same fit by least squares on a design with one column per seed: slope, its standard error, df 12-3-1
    x = np.array([p[0] for s in points for p in points[s]])
    y = np.array([p[1] for s in points for p in points[s]])
    design = np.column_stack([x] + [np.repeat(np.eye(3)[i], 4) for i in range(3)])
    coef, residual, *_ = np.linalg.lstsq(design, y, rcond=None)
    df = len(y) - design.shape[1]
    se = math.sqrt(residual[0] / df * np.linalg.inv(design.T @ design)[0, 0])
    assert estimate.mean == pytest.approx(coef[0])
    assert (estimate.low, estimate.high) == pytest.approx(stats.t.interval(0.95, df, loc=coef[0], scale=se))
    assert estimate.high < 0


def test_each_variant_may_sweep_its_own_lrs_and_a_best_lr_at_the_grid_edge_is_flagged():
    cfg = validate_config(copy.deepcopy(CFG) | {"sweep": {"seed": 0, "lrs": {"softmax": [1.0e-3, 3.0e-3],
                                                                              "a3": [3.0e-3, 1.0e-2, 3.0e-2]}}})
    spec = grid(cfg)
    assert {c for c in spec.cells if c[0] == "a3"} == {("a3", lr, 0) for lr in (3e-3, 1e-2, 3e-2)}
    assert spec.sweep_lrs_by_variant == {"softmax": (1e-3, 3e-3), "a3": (3e-3, 1e-2, 3e-2)}
    assert tables.grid_edge(spec, "a3", 3e-2) == "highest" and tables.grid_edge(spec, "a3", 1e-2) == ""
    assert tables.grid_edge(spec, "softmax", 1e-3) == "lowest"
    with pytest.raises(ConfigError, match=r"sweep\.lrs: no learning rates for 'a3'"):
        validate_config(copy.deepcopy(CFG) | {"sweep": {"seed": 0, "lrs": {"softmax": [1.0e-3]}}})
    with pytest.raises(ConfigError, match=r"sweep\.lrs\.a3\.0: 0\.0 is less than or equal to the minimum"):
        validate_config(copy.deepcopy(CFG) | {"sweep": {"seed": 0, "lrs": {"softmax": [1.0e-3], "a3": [0.0]}}})


def test_holm_steps_down_where_each_claim_alone_would_pass():
    """Three p-values each under 0.05: a per-claim rule settles all three; Holm's step-down holds the smallest
    to 0.05 / 3 and settles none. With a small enough first p it goes on down the list."""
    from attnlab.pipeline.ground.verdicts import holm

    assert holm({"a": 0.03, "b": 0.04, "c": 0.045}) == set()
    assert holm({"a": 0.001, "b": 0.02, "c": 0.045}) == {"a", "b", "c"}
    assert holm({"a": 0.001, "b": 0.04, "c": 0.045}) == {"a"}
    assert holm({"a": float("nan"), "b": 0.01}) == {"b"}, "a row without a test is outside the family"


@pytest.mark.parametrize("shift", [0.0, 0.004, 0.01, 0.03])
def test_a_verdicts_p_value_agrees_with_its_interval(shift):
    """A two-sided p at most 5% exactly when the 95% interval clears the threshold, either way: the verdict is
    settled exactly when Holm's step-down, alone in its family, would reject."""
    from attnlab.pipeline.ground.statistics import mean_interval
    from attnlab.pipeline.ground.verdicts import in_range, one_sided

    for center in (1.0 + shift, 1.0 - shift):
        estimate = mean_interval([center, center + 0.01, center - 0.005])
        for verdict in (one_sided(estimate, 1.0, above=True), one_sided(estimate, 1.0, above=False),
                        in_range(estimate, 0.995, 1.05), in_range(estimate, 0.9, 0.999)):
            assert (verdict.word in ("holds", "contradicted")) == (verdict.p <= 0.05)
            assert 0 <= verdict.p <= 1
