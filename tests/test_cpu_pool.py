"""A cell's numbers do not depend on how many CPUs its training job may use.

XLA's CPU client splits a matrix product's work over its intra-op pool, and
that split sets the order of the sums; yat_b amplifies the rounding over a
curve. The trainer fixes the pool (attnlab.training.runtime), so the same cell
trained with every CPU usable and confined to one gives the same bytes.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess

import pytest
from processes import CODE_FINGERPRINT, build_xla_flags, environment, python_args
from test_pack import same_cell

from attnlab.core.bundle_format import cell_dir
from attnlab.training.cpu_slots import SLOTS_ENV

USABLE = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def train_pack(cfg: dict, corpus, out_root, cpus: set[int] | None) -> subprocess.CompletedProcess:
    """The rules' trainer for one yat_b cell, compiled as a build compiles it, confined to `cpus` if given."""
    confine = ["taskset", "-c", ",".join(map(str, sorted(cpus)))] if cpus is not None else []
    args = confine + python_args(["-m", "attnlab.training.pack", "--cell-config", json.dumps(cfg), "--variant", "yat_b",
                        "--cell", "0.01,0", "--corpus", corpus, "--out-root", out_root,
                        "--code-fingerprint", CODE_FINGERPRINT])
    env = build_xla_flags() | {SLOTS_ENV: "off"}  # no free CPU taken: the job may use every CPU it was given
    return subprocess.run(args, env=environment(env), capture_output=True, text=True, timeout=600)


@pytest.mark.skipif(len(USABLE) < 2 or not shutil.which("taskset"),
                    reason="needs two usable CPUs to compare one against several, and taskset (util-linux)")
@pytest.mark.slow
def test_a_yat_b_cell_trains_to_the_same_bytes_on_every_cpu_and_on_one(tiny_cfg, corpus_path, tmp_path):
    """The default build's model: without the fixed pool this cell's validation loss differed by step 50
    (2.7257 with two CPUs, 2.7266 on one; 1.9239 against 1.9146 after 1,000 steps)."""
    cfg = copy.deepcopy(tiny_cfg)
    cfg["data"]["path"] = str(corpus_path)
    cfg["model"].update(d_model=64, layers=2, heads=4, block_size=64, d_ff=256)
    cfg["train"].update(steps=60, eval_every=30, eval_batches=2, batch_size=32, checkpoint_every=None)
    every = train_pack(cfg, corpus_path, tmp_path / "every", None)
    assert every.returncode == 0, every.stderr[-3000:]
    one = train_pack(cfg, corpus_path, tmp_path / "one", {USABLE[0]})
    assert one.returncode == 0, one.stderr[-3000:]
    a, b = (cell_dir(tmp_path / name, "yat_b", 0.01, 0) for name in ("every", "one"))
    assert same_cell(a, b) == []
    device = [json.loads((f / "bundle.json").read_text())["provenance"]["device"] for f in (a, b)]
    assert [d["host_cpus"] for d in device] == [len(USABLE), 1]
    assert [d["cpu_pool"] for d in device] == [1, 1]


HOLD = ("import os, sys, threading\n"
        "from pathlib import Path\n"
        "from attnlab.training.cpu_slots import confine_to_free_cpus\n"
        "threading.Thread(target=sys.stdin.read, daemon=True).start()  # a thread older than the confinement\n"
        "got = confine_to_free_cpus(1)\n"
        "threads = {sorted(os.sched_getaffinity(int(t.name)))[0] if len(os.sched_getaffinity(int(t.name))) == 1\n"
        "           else -1 for t in Path('/proc/self/task').iterdir()}\n"
        "print(got, len(os.sched_getaffinity(0)), sorted(threads), flush=True)\n"
        "sys.stdin.readline()\n")


@pytest.mark.skipif(len(USABLE) < 2, reason="needs two usable CPUs to hand out")
def test_jobs_take_free_cpus_one_each_and_a_cpu_is_free_again_when_its_job_ends(tmp_path):
    """Each job holds its own CPU, every thread of it kept there; with none free a job stays where it was
    started; the kernel frees a job's CPU when it exits, so the next job takes it."""
    env = environment({SLOTS_ENV: tmp_path / "slots"})
    jobs, said = [], []
    for _ in range(len(USABLE) + 1):
        jobs.append(subprocess.Popen(python_args(["-c", HOLD]), env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True))
        said.append(jobs[-1].stdout.readline().strip().split(maxsplit=1))
    try:
        held = [json.loads(got) for got, _ in said[:-1]]
        assert sorted(cpu for cpus in held for cpu in cpus) == USABLE, "one CPU each, every CPU once"
        for (_, rest), cpus in zip(said, held):
            assert rest == f"1 {cpus}", "the job, and each of its threads (the older one too), on its CPU alone"
        assert said[-1][0] == "[]" and said[-1][1].startswith(f"{len(USABLE)} "), "none free: left as it was"
        jobs[0].communicate("\n", timeout=60)
        again = subprocess.Popen(python_args(["-c", HOLD]), env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True)
        jobs.append(again)
        assert json.loads(again.stdout.readline().split(maxsplit=1)[0]) == held[0], "the ended job's CPU"
    finally:
        for job in jobs:
            job.kill()
            job.wait()


# ---- one spelling of the switch (attnlab.core.switches)


@pytest.mark.parametrize("given, read", [("off", "off"), ("OFF", "off"), (" Off ", "off"), ("0", "off"),
                                         ("false", "off"), ("No", "off"), ("on", ""), ("1", ""), ("TRUE", ""),
                                         ("", ""), ("./slots", "./slots"), ("/tmp/x/slots", "/tmp/x/slots")])
def test_the_cpu_slots_switch_reads_off_and_on_in_any_spelling_and_a_folder_as_a_path(given, read):
    from attnlab.core.switches import CPU_SLOTS_ENV, folder_switch, settle_folder_switch

    assert CPU_SLOTS_ENV == SLOTS_ENV
    assert folder_switch(SLOTS_ENV, {SLOTS_ENV: given}) == read
    environ = {SLOTS_ENV: given}
    settle_folder_switch(SLOTS_ENV, environ)
    assert environ == ({SLOTS_ENV: read} if read else {})


@pytest.mark.parametrize("given", ["of", "disable", "slots"])
def test_a_cpu_slots_value_that_is_neither_switch_nor_folder_is_refused_naming_the_spellings(given):
    from attnlab.core.errors import ConfigError
    from attnlab.core.switches import folder_switch

    with pytest.raises(ConfigError, match=rf"ATTNLAB_CPU_SLOTS='{given}' is neither a switch nor a folder: write off "
                                          r"\(or 0, false, no; any case\)"):
        folder_switch(SLOTS_ENV, {SLOTS_ENV: given})


@pytest.mark.parametrize("given", ["OFF", "0", "false"])
def test_off_in_another_spelling_trains_unconfined_and_makes_no_folder(corpus_path, tmp_path, given):
    """`attnlab train` with the switch spelt otherwise: before one spelling rule, OFF was taken as a folder path and
    made in the workspace, and the job held a CPU lock there."""
    import yaml
    from conftest import REPO
    from processes import attnlab

    config = tmp_path / "tiny.yaml"
    cfg = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    cfg["train"].update(steps=4, eval_every=2, checkpoint_every=None)
    config.write_text(yaml.safe_dump(cfg))
    result = attnlab("train", "--config", config, "--variant", "softmax", "--lr", "3e-3", "--seed", "0", "--out",
                     tmp_path / "cell", "--corpus", corpus_path, cwd=tmp_path, env={SLOTS_ENV: given}, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "held for this job" not in result.stdout and not (tmp_path / given).exists()
    refused = attnlab("train", "--config", config, "--variant", "softmax", "--lr", "3e-3", "--seed", "0", "--out",
                      tmp_path / "other", "--corpus", corpus_path, cwd=tmp_path, env={SLOTS_ENV: "of"}, timeout=300)
    assert refused.returncode == 2 and "neither a switch nor a folder" in refused.stderr
    assert "Traceback" not in refused.stderr and not (tmp_path / "of").exists() and not (tmp_path / "other").exists()
