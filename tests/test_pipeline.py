"""The smoke DAG end to end through snakemake, and the paper grid's plan."""

from __future__ import annotations

import pandas as pd
import pytest

from workspace import make_workspace, planned_jobs, snakemake


@pytest.fixture(scope="module")
def built(tmp_path_factory, corpus_path):
    """A workspace with the smoke config fully built (shared by the tests of this module)."""
    ws = make_workspace(tmp_path_factory.mktemp("smoke"))
    result = snakemake(ws, "--cores", "2", "--configfile", "config/smoke.yaml", corpus=corpus_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return ws


@pytest.mark.slow
def test_smoke_dag_produces_the_tables(built):
    tables = built / "results" / "tables"
    for name in ("contest", "lr_sweep", "params"):
        for ext in ("csv", "md", "tex"):
            assert (tables / f"{name}.{ext}").stat().st_size > 0
    contest = pd.read_csv(tables / "contest.csv")
    assert list(contest.variant) == ["softmax", "yat", "yat_b", "a3"]
    assert (contest.n_seeds == 2).all()
    assert (contest.best_val_mean < 3.6).all(), "smoke runs should beat the initial loss"
    runs = pd.read_csv(tables / "runs.csv")
    assert not runs.duplicated(["variant", "lr", "seed"]).any()
    # the a3 contest LR is the sweep's best, chosen by the checkpoint
    sweep = runs[(runs.variant == "a3") & (runs.seed == 0)]
    best_lr = sweep.loc[sweep.best_val_loss.idxmin(), "lr"]
    assert float(contest.set_index("variant").loc["a3", "lr"]) == pytest.approx(best_lr)


@pytest.mark.slow
def test_a_built_workspace_plans_nothing(built, corpus_path):
    result = snakemake(built, "-n", "--configfile", "config/smoke.yaml", corpus=corpus_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert planned_jobs(result.stdout + result.stderr) == {}, result.stdout[-2000:]


def test_paper_config_plans_the_published_grid(tmp_path, corpus_path):
    ws = make_workspace(tmp_path)
    result = snakemake(ws, "-n", "--configfile", "config/paper.yaml", corpus=corpus_path)
    assert result.returncode == 0, result.stderr[-2000:]
    jobs = planned_jobs(result.stdout + result.stderr)
    # 4 variants x 4 sweep LRs at seed 0, plus seeds 1, 2 of the three fixed-LR variants;
    # a3's other seeds appear once its sweep has picked its LR.
    assert jobs["train_cell"] == 16 + 3 * 2
    assert jobs["select_lr"] == 1
