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
import subprocess

import pytest
from processes import CODE_FINGERPRINT, build_xla_flags, environment, python_args
from test_pack import same_cell

from attnlab.core.bundle_format import cell_dir

USABLE = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def train_pack(cfg: dict, corpus, out_root, cpus: set[int] | None) -> subprocess.CompletedProcess:
    """The rules' trainer for one yat_b cell, compiled as a build compiles it, confined to `cpus` if given."""
    args = python_args(["-m", "attnlab.training.pack", "--cell-config", json.dumps(cfg), "--variant", "yat_b",
                        "--cell", "0.01,0", "--corpus", corpus, "--out-root", out_root,
                        "--code-fingerprint", CODE_FINGERPRINT])
    confine = (lambda: os.sched_setaffinity(0, cpus)) if cpus is not None else None
    return subprocess.run(args, env=environment(build_xla_flags()), preexec_fn=confine, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.skipif(len(USABLE) < 2, reason="needs two usable CPUs to compare one against several")
def test_a_yat_b_cell_trains_to_the_same_bytes_on_every_cpu_and_on_one(tiny_cfg, corpus_path, tmp_path):
    """The default build's model: without the fixed pool this cell's validation loss differed by step 50
    (2.7257 with two CPUs, 2.7266 on one, 1.9275 against 1.9632 after 1,000 steps)."""
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
