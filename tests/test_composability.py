"""The composability table and verdict, on synthetic runs (JAX-free)."""

import sys

import numpy as np
import pandas as pd
import pytest

from attnlab.pipeline.composability import composability, composability_table, composability_verdict

VARIANTS = ("softmax", "yat", "a3")


def synthetic_runs(seeds=(0, 1), drift=1e-4, overrides=None) -> pd.DataFrame:
    """Every variant x kv_heads {4, 2, 1} x dense/blockwise; a loss that worsens as keys are shared."""
    base = {"softmax": 1.60, "yat": 1.62, "a3": 1.58}
    rows = []
    for variant in VARIANTS:
        for kv in (4, 2, 1):
            for seed in seeds:
                for impl in ("dense", "blockwise"):
                    loss = base[variant] + 0.01 * (4 // kv - 1) + 0.002 * seed + (drift if impl == "blockwise" else 0)
                    rows.append({"variant": variant, "kv_heads": kv, "attention_impl": impl, "seed": seed,
                                 "best_val_loss": loss, "first_val_loss": 4.2})
    runs = pd.DataFrame(rows)
    for (variant, kv, impl, column), value in (overrides or {}).items():
        runs.loc[(runs.variant == variant) & (runs.kv_heads == kv) & (runs.attention_impl == impl), column] = value
    return runs


def test_table_has_one_row_per_variant_and_kv_heads_with_costs():
    table, verdict = composability(synthetic_runs())
    assert list(zip(table.variant, table.kv_heads)) == [(v, kv) for v in VARIANTS for kv in (4, 2, 1)]
    row = table[(table.variant == "a3") & (table.kv_heads == 1)].iloc[0]
    assert row.seeds == 2 and row.agree and row.loss_fell
    np.testing.assert_allclose(row.dense_loss, 1.58 + 0.03 + 0.001)
    np.testing.assert_allclose(row.abs_diff, 1e-4, rtol=1e-6)
    np.testing.assert_allclose(row.cost_vs_softmax, (1.611) / (1.631) - 1)  # against softmax at kv_heads 1
    np.testing.assert_allclose(row.vs_full_kv, 1.611 / 1.581 - 1)
    np.testing.assert_allclose(row.loss_drop, 4.2 - 1.611)
    assert (table[table.variant == "softmax"].cost_vs_softmax == 0).all()
    assert verdict.startswith("holds: a3 at kv_heads 4, 2, 1") and "other variants: all compose" in verdict


def test_blockwise_disagreement_fails_the_verdict():
    runs = synthetic_runs(overrides={("a3", 2, "blockwise", "best_val_loss"): 1.9})
    table, verdict = composability(runs)
    assert not table[(table.variant == "a3") & (table.kv_heads == 2)].agree.iloc[0]
    assert verdict.startswith("contradicted: a3") and "kv_heads 2" in verdict
    # another variant's failure does not fail A3's row, but is named
    runs = synthetic_runs(overrides={("yat", 1, "blockwise", "best_val_loss"): 1.9})
    verdict = composability(runs)[1]
    assert verdict.startswith("holds") and "fails for yat" in verdict


def test_a_run_that_does_not_learn_fails_the_verdict():
    runs = synthetic_runs(overrides={("a3", 1, "dense", "first_val_loss"): 1.0})
    table, verdict = composability(runs)
    assert not table[(table.variant == "a3") & (table.kv_heads == 1)].loss_fell.iloc[0]
    assert verdict.startswith("contradicted") and "did not fall" in verdict


def test_missing_runs_are_not_tested():
    runs = synthetic_runs()
    assert composability(runs[runs.variant != "a3"])[1].startswith("not testable: no composability runs of a3")
    only_full = runs[runs.kv_heads == 4]
    assert composability(only_full)[1].startswith("not testable")
    no_blockwise = runs[~((runs.variant == "a3") & (runs.attention_impl == "blockwise") & (runs.kv_heads == 1))]
    table, verdict = composability(no_blockwise)
    assert np.isnan(table[(table.variant == "a3") & (table.kv_heads == 1)].abs_diff.iloc[0])
    assert verdict.startswith("not testable") and "[1]" in verdict


def test_null_kv_heads_read_as_heads_and_bad_frames_refused():
    runs = synthetic_runs()
    runs["kv_heads"] = runs.kv_heads.astype(object).where(runs.kv_heads != 4, None)
    with pytest.raises(ValueError, match="heads="):
        composability_table(runs)
    table = composability_table(runs, heads=4)
    assert sorted(set(table.kv_heads)) == [1, 2, 4]
    with pytest.raises(ValueError, match="first_val_loss"):
        composability_table(runs.drop(columns="first_val_loss"), heads=4)
    with pytest.raises(ValueError, match="flash"):
        composability_table(runs.assign(attention_impl="flash"), heads=4)


def test_tolerance_is_a_parameter():
    table = composability_table(synthetic_runs(drift=0.02))
    assert not table.agree.any()
    assert composability_verdict(table).startswith("contradicted")
    assert composability(synthetic_runs(drift=0.02), drift=0.05)[1].startswith("holds")


def test_a_different_function_at_step_0_fails_even_when_training_ends_alike():
    runs = synthetic_runs(overrides={("a3", 4, "blockwise", "first_val_loss"): 4.25})
    table, verdict = composability(runs)
    row = table[(table.variant == "a3") & (table.kv_heads == 4)].iloc[0]
    np.testing.assert_allclose(row.step0_diff, 0.05, rtol=1e-6)
    assert not row.agree and verdict.startswith("contradicted: a3") and "at step 0" in verdict


def test_module_never_imports_jax():
    assert "jax" not in sys.modules or "attnlab.pipeline.composability" in sys.modules
    import attnlab.pipeline.composability as module

    assert "import jax" not in open(module.__file__).read()
