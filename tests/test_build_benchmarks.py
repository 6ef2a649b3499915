"""The build benchmarks: build_time.py reads a build's logs into its breakdown; cores.py measures side by side."""

import os

import pytest

from benchmarks.build_time import read_log, report, timeline

HEADER = """Assuming unrestricted shared filesystem usage.

SNAKEMAKE
=========
  Date: 2026-12-03 23:00:50
  Workflow ID: 0

Building DAG of jobs...
Provided cores: 2
"""


def event(clock: str, line: str) -> str:
    return f"[Thu Dec  3 {clock} 2026]\n{line}\n\n"


@pytest.fixture
def workspace(tmp_path):
    log = (HEADER
           + event("23:01:00", "Job 1: Training the pack softmax sweep")
           + event("23:01:00", "localjob 2: Choosing nothing")
           + event("23:01:10", "Finished jobid: 2 (Rule: select_lr)")
           + event("23:01:40", "Finished jobid: 1 (Rule: train_pack_softmax_runs_0)")
           + event("23:01:40", "Job 3: Drawing a figure")
           + event("23:01:50", "Finished jobid: 3 (Rule: figure_loss_curves)"))
    (tmp_path / ".snakemake" / "log").mkdir(parents=True)
    (tmp_path / ".snakemake" / "log" / "2026-12-03T230050.snakemake.log").write_text(log)
    train = tmp_path / "results" / "logs" / "train" / "runs" / "softmax"
    train.mkdir(parents=True)
    (train / "pack.log").write_text(
        "softmax step 100/200\n"
        "done softmax lr=0.003 seed=0: best val 2.0; start_up 1.5s, compile 2.0s, training 30.0s\n"
        "done softmax lr=0.01 seed=0: best val 2.1; start_up 0.0s, compile 0.5s, training 4.0s\n")
    return tmp_path


def test_each_job_gets_its_start_end_and_rule(workspace):
    began, cores, jobs = read_log(next((workspace / ".snakemake" / "log").glob("*.log")))
    assert cores == 2
    assert {k: (j.rule, j.end - j.start) for k, j in jobs.items()} == {
        "1": ("train_pack_softmax_runs_0", 40.0), "2": ("select_lr", 10.0), "3": ("figure_loss_curves", 10.0)}
    assert min(j.start for j in jobs.values()) - began == 10.0


def test_the_report_sums_kinds_idle_and_phases(workspace):
    text = report(workspace, None, slices=6)
    rows = [line.split() for line in text.splitlines()]
    assert "span: 60 s on 2 cores (120 core-s); before the first job: 10 s" in text
    assert ["training", "1", "40", "33.3%"] in rows and ["figures", "1", "10", "8.3%"] in rows
    assert ["idle", "60", "50.0%"] in rows  # 120 core-s less the 60 the three jobs were busy
    assert ["training", "34"] in rows and ["compile", "2"] in rows and ["start_up", "2"] in rows
    assert rows[rows.index(["start_up", "2"]) + 1][:3] == ["outside", "cells", "2"]  # 40 - 38
    assert rows[-1] == ["0.0", "2.0", "1.0", "1.0", "1.0", "1.0"]


def test_a_training_log_older_than_the_run_is_not_counted(workspace):
    old = next((workspace / "results" / "logs" / "train").glob("**/*.log"))
    os.utime(old, (1_000_000, 1_000_000))
    assert "by phase" not in report(workspace, None, slices=6)


def test_timeline_counts_partial_overlaps():
    from benchmarks.build_time import Job
    assert timeline([Job("a", 0.0, 5.0), Job("b", 2.5, 10.0)], 0.0, 10.0, 2) == [1.5, 1.0]


def test_a_workspace_without_a_log_is_refused_naming_the_fix(tmp_path):
    with pytest.raises(SystemExit, match="run the build there first"):
        report(tmp_path, None, slices=4)


@pytest.mark.slow
def test_the_cores_benchmark_prints_each_way_to_start_the_jobs(capsys):
    """Fresh processes at the smoke model, as a build starts them: one row per configuration, combined = each x
    jobs, and a job confined to one CPU keeps at most about one thread busy (the rates are the machine's: not
    asserted, timings are noisy)."""
    from benchmarks import cores

    assert cores.main(["--processes", "2", "--config", "smoke", "--steps", "5", "--repeats", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("smoke softmax, 5 steps a run")
    rows = {line[:22].strip(): list(map(float, line[22:].split())) for line in lines[2:]}
    assert list(rows) == ["alone", "alone, 1 CPU", "2 at once", "2 at once, own CPU"]
    for name, (each, combined, busy) in rows.items():
        jobs = 2 if name.startswith("2") else 1
        assert each > 0 and combined == pytest.approx(jobs * each, abs=0.11) and busy > 0
    assert rows["alone, 1 CPU"][2] < 1.2


def test_the_cores_benchmark_confines_each_job_to_its_own_cpu():
    from benchmarks.cores import configurations

    assert configurations(2, [4, 7]) == {"alone": [None], "alone, 1 CPU": [4], "2 at once": [None] * 2,
                                         "2 at once, own CPU": [4, 7]}
    more = configurations(3, [4, 7])
    assert more["3 at once, pinned over 2 CPUs"] == [4, 7, 4], "more jobs than CPUs: not called their own CPU"
    assert "3 at once, own CPU" not in more


@pytest.mark.slow
def test_the_step_profile_splits_a_traced_step_into_op_kinds():
    """Run as a user runs it (its own process: it sets XLA_FLAGS before JAX starts): the op kinds it lists add up
    to no more than the traced time, and matrix products are among them."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "step_profile.py"
    out = subprocess.run([sys.executable, str(script), "--config", "smoke", "--steps", "3", "--top", "50"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    traced = float(out[0].split(" ms in ")[0].rsplit(", ", 1)[1])
    table = [line.split() for line in out[2:] if len(line.split()) == 4 and line.split()[-1].endswith("%")]
    assert sum(float(row[1]) for row in table) == pytest.approx(traced, rel=0.01)
    assert any(row[0] in ("ynn_fusion", "dot") for row in table)
    assert out[-1].startswith("matmul FLOPs per step")


def test_a_later_log_that_ran_nothing_is_passed_over_for_the_build(workspace):
    """A dry run or a build with nothing to do after the build leaves its own log, empty or without a job."""
    logs = workspace / ".snakemake" / "log"
    (logs / "2026-12-03T231500.snakemake.log").write_text("")
    (logs / "2026-12-03T231600.snakemake.log").write_text(HEADER + "Nothing to be done (all requested files are "
                                                          "present and up to date).\n")
    assert "span: 60 s on 2 cores" in report(workspace, None, slices=6)


def test_the_summary_spread_benchmark_reads_each_cells_curve_and_pairs_by_seed(tmp_path, capsys):
    """Three seeds of softmax and yat_b whose curves share a noisy best evaluation (one low dip per curve)
    but sit apart evenly at the end: the best's paired spread is wide, the last-K mean's narrow."""
    import numpy as np
    import pandas as pd

    from benchmarks import summary_spread

    tables = tmp_path / "results" / "tables"
    tables.mkdir(parents=True)
    pd.DataFrame({"variant": ["softmax", "yat_b"], "lr": [1e-2, 3e-3], "seeds": ["0 1 2", "0 1 2"]}).to_csv(
        tables / "contest.csv", index=False)
    dips = {("softmax", 0): 0.05, ("softmax", 1): 0.0, ("softmax", 2): 0.02,
            ("yat_b", 0): 0.0, ("yat_b", 1): 0.04, ("yat_b", 2): 0.01}
    for (variant, seed), dip in dips.items():
        level = 1.9 if variant == "softmax" else 1.92
        losses = np.full(8, level)
        losses[3] -= dip  # the best evaluation: a dip that is noise, not the cell's level
        folder = tmp_path / "results" / "runs" / variant / ("lr0.01" if variant == "softmax" else "lr0.003")
        (folder / f"seed{seed}").mkdir(parents=True)
        pd.DataFrame({"step": range(8), "val_loss": losses}).to_csv(folder / f"seed{seed}" / "curve.csv",
                                                                    index=False)
    assert summary_spread.main([str(tmp_path), "--last", "4"]) == 0
    line = capsys.readouterr().out.splitlines()[-1].split()
    assert line[0] == "yat_b" and line[1] == "3"
    row = summary_spread.spreads(summary_spread.cells(tmp_path, 4)).iloc[0]
    assert row.last_k_mean_sd < 1e-12 < row.best_sd  # the plateau's level is the same gap on every seed
    assert row.last_k_mean_mean == pytest.approx(np.log(1.92 / 1.9))
