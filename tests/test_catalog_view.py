"""The catalog view: every catalogued score function against softmax as one family (attnlab.pipeline.tables.catalog).

The table is the collect step's own function on a runs frame shaped like the
build's; the family's decision is `family_findings`, which the table calls, held
to its error rate by simulation, where reading each interval alone fails.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from attnlab.core import variants
from attnlab.pipeline.ground import contract, statistics, verdicts
from attnlab.pipeline.ground.contest_grid import ContestGrid
from attnlab.pipeline.ground.published import published
from attnlab.pipeline.tables import catalog
from attnlab.pipeline.tables.display import shown

import score_catalog

SEEDS = (0, 1, 2, 3, 4)
LR = 3e-3


def grid(names) -> ContestGrid:
    return ContestGrid(variants=tuple(names), contest_lr={v: LR for v in names}, contest_seeds=SEEDS)


def runs(losses: dict[str, list[float]]) -> pd.DataFrame:
    """One contest cell per variant and seed at LR, with the given best validation losses."""
    return pd.DataFrame([{"variant": v, "lr": LR, "seed": s, "best_val_loss": loss, "diverged": False}
                         for v, values in losses.items() for s, loss in zip(SEEDS, values)])


BASE = [2.00, 2.02, 1.99, 2.04, 2.03]


def test_every_catalogued_variant_is_a_variant_with_its_source_cited():
    entries = published()["catalog"]
    assert set(entries) <= set(variants.VARIANTS)
    assert set(entries) == {ref.variant for ref in score_catalog.CATALOG}  # every published function, none else
    for name, entry in entries.items():
        assert ("source" in entry) != ("cite" in entry), name
        if "source" in entry:
            assert entry["source"] in published()["sources"], name
    assert catalog.catalogued()["fox"] == "Lin, Nikishin, He and Courville 2025"


def test_the_table_pairs_each_catalogued_variant_with_softmax_and_opens_with_the_a_a_reference():
    losses = {"softmax": BASE, "cog": [x - 0.05 + 0.001 * k for k, x in enumerate(BASE)],
              "softpick": [x + 0.002 * (-1) ** k for k, x in enumerate(BASE)], "yat": [x + 0.3 for x in BASE]}
    table = catalog.catalog_table(runs(losses), grid(losses))
    assert list(table.columns) == contract.columns("catalog")
    assert list(table.variant) == [catalog.AA, "cog", "softpick"]  # yat is the posts', not the catalog's
    rows = table.set_index("variant")
    cog = statistics.paired(dict(zip(SEEDS, losses["cog"])), dict(zip(SEEDS, BASE)))
    assert rows.loc["cog", "delta_vs_softmax"] == pytest.approx(cog.mean)
    assert (rows.loc["cog", "delta_ci_low"], rows.loc["cog", "delta_ci_high"]) == pytest.approx((cog.low, cog.high))
    assert rows.loc["cog", "finding"] == catalog.LOWER and rows.loc["softpick", "finding"] == catalog.UNRESOLVED
    # m = 2: each family-wise interval at 97.5%, wider than the 95% one and around the same mean
    assert rows.loc["cog", "family_confidence"] == pytest.approx(0.975)
    assert rows.loc["cog", "family_ci_low"] < rows.loc["cog", "delta_ci_low"] < cog.mean
    assert rows.loc["cog", "family_ci_high"] > rows.loc["cog", "delta_ci_high"] > cog.mean
    # the A/A reference: seeds 0, 1 against 2, 3 (4 left out), not in Holm's family
    aa = rows.loc[catalog.AA]
    assert aa.n_paired == 2 and aa.delta_vs_softmax == pytest.approx(((2.00 - 1.99) + (2.02 - 2.04)) / 2)
    assert math.isnan(aa.p_holm) and aa.finding == catalog.AA_HOLDS
    assert rows.loc["cog", "p_holm"] == pytest.approx(min(1, 2 * min(rows.p_value.drop(catalog.AA))))
    for variant in ("cog", "softpick"):  # scipy's paired t-test, and its t-interval at 1 - 0.05/2 on 4 df
        differences = np.subtract(losses[variant], BASE)
        assert rows.loc[variant, "p_value"] == pytest.approx(stats.ttest_rel(losses[variant], BASE).pvalue)
        family = stats.t.interval(0.975, 4, loc=differences.mean(), scale=stats.sem(differences))
        assert (rows.loc[variant, "family_ci_low"], rows.loc[variant, "family_ci_high"]) == pytest.approx(family)


def test_a_build_without_catalogued_variants_has_an_empty_catalog_table():
    losses = {"softmax": BASE, "yat": BASE}
    table = catalog.catalog_table(runs(losses), grid(losses))
    assert table.empty and list(table.columns) == contract.columns("catalog")


def test_the_collect_step_writes_the_catalog_table_and_its_display_reads_it():
    assert "catalog" in contract.written_by("collect")
    losses = {"softmax": BASE, "cog": [x - 0.05 + 0.003 * (k % 2) for k, x in enumerate(BASE)],
              "fox": [x + 0.01 * (k % 2) for k, x in enumerate(BASE)]}
    text = shown("catalog", catalog.catalog_table(runs(losses), grid(losses)))
    assert list(text["function"]) == [catalog.AA, "cog", "fox"]
    assert text.loc[1, "published by"] == "Lv et al. 2024"
    assert "family-wise interval (each at 97.5%)" in text.columns
    assert text.loc[1, "finding"] == catalog.LOWER


def step_down(p: dict, alpha: float = 0.05) -> set:
    """Holm's procedure as its paper states it, for the test: reject in order of p while p_(k) <= alpha/(m-k+1)."""
    ordered = sorted((x, k) for k, x in p.items() if math.isfinite(x))
    rejected = set()
    for rank, (x, key) in enumerate(ordered):
        if x > alpha / (len(ordered) - rank):
            break
        rejected.add(key)
    return rejected


def test_holms_adjusted_p_rejects_exactly_what_the_step_down_rejects():
    rng = np.random.default_rng(0)
    for _ in range(200):
        p = {k: float(x) for k, x in enumerate(rng.uniform(0, 0.4, size=rng.integers(1, 9)))}
        p[len(p)] = math.nan  # a comparison without a p-value: not counted in m, its adjusted p NaN
        adjusted = verdicts.holm_adjusted(p)
        assert {k for k, a in adjusted.items() if a <= 0.05} == verdicts.holm(p) == step_down(p)
        assert math.isnan(adjusted[len(p) - 1])
        finite = {k: a for k, a in adjusted.items() if math.isfinite(a)}
        assert all(p[k] <= a <= 1 for k, a in finite.items())
        ranked = sorted(finite, key=lambda k: p[k])
        assert all(finite[a] <= finite[b] for a, b in zip(ranked, ranked[1:]))  # monotone in p
    assert verdicts.holm_adjusted({"a": 0.01, "b": 0.04, "c": 0.5}) == pytest.approx({"a": 0.03, "b": 0.08, "c": 0.5})
    assert verdicts.holm_adjusted({"a": 0.6, "b": 0.7}) == {"a": 1.0, "b": 1.0}  # capped at 1


def null_family_rates(functions: int = 10, seeds: int = 5, trials: int = 2000) -> tuple[float, float, float]:
    """Over simulated catalogs of `functions` variants all equal to softmax (every variant's and softmax's seeds
    drawn afresh each time, one spread, so the comparisons share softmax's noise as a build's do), the share of
    catalogs with any function called different: by reading each 95% interval alone, by the build's family
    finding (Holm), and by the family-wise intervals excluding 0."""
    rng = np.random.default_rng(1)
    alone = holm = bonferroni = 0
    for _ in range(trials):
        base = dict(enumerate(rng.normal(2.0, 0.01, seeds)))
        estimates = {v: statistics.paired(dict(enumerate(rng.normal(2.0, 0.01, seeds))), base)
                     for v in range(functions)}
        found = catalog.family_findings(estimates)
        alone += any(not e.low <= 0 <= e.high for e in estimates.values())
        holm += (found.finding != catalog.UNRESOLVED).any()
        bonferroni += ((found.family_ci_low > 0) | (found.family_ci_high < 0)).any()
    return alone / trials, holm / trials, bonferroni / trials


@pytest.mark.slow
def test_the_family_finding_holds_the_family_wise_error_where_each_interval_alone_does_not():
    alone, holm, bonferroni = null_family_rates()
    assert alone > 0.25  # ten 95% intervals read one by one: about a third of null catalogs "find" a difference
    assert holm <= 0.07 and bonferroni <= 0.07  # the build's reading: at most 5% (plus simulation error)


def test_the_family_finding_still_finds_a_real_difference():
    rng = np.random.default_rng(2)
    base = dict(enumerate(rng.normal(2.0, 0.02, 5)))
    estimates = {v: statistics.paired({s: x + rng.normal(0, 0.002) + (0.05 if v == 0 else 0.0)
                                       for s, x in base.items()}, base) for v in range(8)}
    found = catalog.family_findings(estimates).set_index("key")
    assert found.loc[0, "finding"] == catalog.HIGHER
    assert (found.drop(0).finding == catalog.UNRESOLVED).all()


def test_diverged_cells_a_missing_softmax_and_a_degenerate_spread_are_said_not_drawn_as_unresolved():
    losses = {"softmax": BASE, "cog": [x - 0.05 for x in BASE], "fox": [x + 0.01 * (k % 2) for k, x in enumerate(BASE)],
              "softpick": BASE}
    frame = runs(losses)
    frame.loc[frame.variant == "softpick", "diverged"] = True
    rows = catalog.catalog_table(frame, grid(losses)).set_index("variant")
    assert rows.loc["softpick", "n_diverged"] == 5 and rows.loc["softpick", "finding"] == statistics.NO_SEED
    assert rows.loc["cog", "finding"] == statistics.ZERO_SPREAD  # a constant shift: degenerate, not "unresolved"
    assert rows.loc["fox", "family_confidence"] == pytest.approx(0.95)  # m = 1: the one function with an interval
    text = shown("catalog", rows.reset_index())
    assert statistics.ZERO_SPREAD in text.iloc[1, 5]
    without = {v: x for v, x in losses.items() if v != "softmax"}
    alone = catalog.catalog_table(runs(without), grid(without))
    assert list(alone.variant) == [catalog.AA, "cog", "fox", "softpick"]
    assert (alone.finding[1:] == statistics.NO_SEED).all()
    assert "no function has a t-interval" in catalog.family_level(alone)


def test_the_forest_draws_a_catalog_with_no_finite_difference():
    from attnlab.pipeline.figures import catalog_forest
    from attnlab.pipeline.figures.style import default_style

    losses = {"cog": BASE, "fox": BASE}
    table = catalog.catalog_table(runs(losses), grid(["softmax", *losses]))
    fig = catalog_forest.draw({"catalog": table, "contest": pd.DataFrame({"variant": ["softmax", *losses]})},
                              default_style())
    assert fig.axes[0].get_xlim() == (-0.05, 0.05)
