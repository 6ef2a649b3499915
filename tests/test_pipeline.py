"""The smoke DAG end to end through snakemake, and the paper grid's plan."""

from __future__ import annotations

import pandas as pd
import pytest

import yaml

from workspace import edited, make_workspace, planned_jobs, planned_training, snakemake


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
def test_smoke_dag_draws_every_figure_and_executes_the_writeup(built):
    figures = built / "results" / "figures"
    for name in ("loss_curves.png", "loss_curves.gif", "lr_sweep.png", "depth_grid.png", "training_maps.png",
                 "reading.gif", "score_orbit.gif", "scalars.png", "a3_gates.png", "entropy.png"):
        assert (figures / name).stat().st_size > 1000, name
    html = (built / "results" / "writeup" / "writeup.html").read_text()
    assert "Claims ledger" in html and "data:image/gif" in html
    assert "Traceback" not in html and "Error" not in html.split("Claims ledger")[-1][:200]
    for name in ("score_scale", "mass_auroc", "entropy", "scalars", "a3_gates", "a3_init"):
        assert (built / "results" / "tables" / f"{name}.csv").is_file()


def dry_run(ws, corpus, configfile="config/smoke.yaml"):
    result = snakemake(ws, "-n", "--configfile", configfile, corpus=corpus)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout + result.stderr


@pytest.mark.slow
def test_editing_one_figure_module_replans_only_that_figure_and_the_writeup(built, corpus_path):
    with edited(built / "src" / "attnlab" / "figures" / "lr_sweep.py"):
        jobs = planned_jobs(dry_run(built, corpus_path))
    assert set(jobs) == {"figure_lr_sweep", "writeup", "all"}, jobs


@pytest.mark.slow
def test_editing_a3_retrains_only_a3_cells(built, corpus_path):
    with edited(built / "src" / "attnlab" / "attention" / "a3.py"):
        output = dry_run(built, corpus_path)
    cells = planned_training(output)
    assert cells and {variant for variant, _, _ in cells} == {"a3"}, cells
    assert "figure_score_orbit" not in planned_jobs(output), "the analytic figure reads no run"


@pytest.mark.slow
def test_editing_a_figure_setting_trains_nothing(built, corpus_path):
    cfg = yaml.safe_load((built / "config" / "smoke.yaml").read_text())
    cfg["figures"]["colors"] = {"softmax": "#000000", "yat": "#d62728", "yat_b": "#ff7f0e", "a3": "#2ca02c"}
    (built / "config" / "recoloured.yaml").write_text(yaml.safe_dump(cfg))
    jobs = planned_jobs(dry_run(built, corpus_path, "config/recoloured.yaml"))
    assert "train_cell" not in jobs and "collect_tables" not in jobs, jobs
    assert "figure_loss_curves" in jobs and "writeup" in jobs


@pytest.mark.slow
def test_moving_the_corpus_or_raising_memory_trains_nothing(built, corpus_path, tmp_path):
    cfg = yaml.safe_load((built / "config" / "smoke.yaml").read_text())
    moved = tmp_path / "elsewhere.txt"
    moved.write_bytes(corpus_path.read_bytes())
    cfg["data"]["path"] = str(moved)
    cfg["train"]["mem_mb"] = 5000
    (built / "config" / "moved.yaml").write_text(yaml.safe_dump(cfg))
    jobs = planned_jobs(dry_run(built, corpus_path, "config/moved.yaml"))
    assert jobs == {}, jobs


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
