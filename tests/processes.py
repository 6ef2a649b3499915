"""The one way tests start a process: this interpreter, unbuffered, with the run's shared XLA cache.

Every process a test starts goes through `python_args` (and so inherits
conftest's JAX_COMPILATION_CACHE_DIR from the environment): `run` waits for
it, `start` hands back the Popen for tests that kill it on one of its events.
The rest names what the tests run: the CLI, the rules' trainer, Snakemake.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

CODE_FINGERPRINT = "test-code"
# Quick compiles: XLA's lowest backend optimisation level, and its CPU loop emitters for fusions instead of
# the newer fusion emitters (a cold smoke trainer: 17.8 CPU-s with the first alone, 11.7 with both).
QUICK_COMPILE_FLAGS = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false")
# Every process of a test run compiles with these (conftest.pytest_configure). The last is the one a
# one-thread trainer adds itself (attnlab.training.runtime.SINGLE_THREAD_FLAG): with it, the pytest processes'
# own cells have the trainers' cache keys and load what they compiled.
TEST_XLA_FLAGS = (*QUICK_COMPILE_FLAGS, "--xla_cpu_multi_thread_eigen=false")


def python_args(args) -> list[str]:
    return [sys.executable, *map(str, args)]


def environment(env: dict | None = None) -> dict:
    """This environment, unbuffered, with this interpreter's folder first on PATH: a rule's `python` is ours."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    full = dict(os.environ, PYTHONUNBUFFERED="1", PATH=path)
    full.update({k: str(v) for k, v in (env or {}).items()})
    for name in [k for k, v in full.items() if v == "<unset>"]:
        del full[name]
    return full


def build_xla_flags() -> dict:
    """env for a process that compiles as a build does: XLA_FLAGS without the test run's quick-compile flags."""
    kept = [flag for flag in os.environ.get("XLA_FLAGS", "").split() if flag not in QUICK_COMPILE_FLAGS]
    return {"XLA_FLAGS": " ".join(kept) if kept else "<unset>"}


def run(args, cwd: Path | None = None, env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    """`python ARGS`, waited for, its output captured as text. env values "<unset>" remove a variable."""
    return subprocess.run(python_args(args), cwd=cwd, env=environment(env), capture_output=True, text=True,
                          timeout=timeout)


def start(args, cwd: Path | None = None, env: dict | None = None, log: Path | None = None) -> subprocess.Popen:
    """`python ARGS` in the background; its stdout and stderr go to `log` (or nowhere)."""
    stream = open(log, "w") if log is not None else subprocess.DEVNULL
    try:
        return subprocess.Popen(python_args(args), cwd=cwd, env=environment(env), stdout=stream,
                                stderr=subprocess.STDOUT)
    finally:
        if log is not None:
            stream.close()


def attnlab(*args, cwd: Path | None = None, env: dict | None = None, timeout: int = 600):
    return run(["-m", "attnlab.cli", *args], cwd, env, timeout)


def trainer_args(cfg: dict, out: Path, corpus: Path, variant="softmax", lr="0.003", seed=0, checkpoints=None,
                 code=CODE_FINGERPRINT, *extra) -> list:
    """The rules' trainer (`python -m attnlab.training.pack`) for a pack of one cell slice, its bundle at `out`."""
    args = ["-m", "attnlab.training.pack", "--cell-config", json.dumps(cfg), "--variant", variant,
            "--cell", f"{lr},{seed}", "--corpus", corpus, "--out", out, "--code-fingerprint", code]
    if checkpoints is not None:
        args += ["--checkpoint-dir", checkpoints]
    return args + list(extra)


def snakemake(workspace: Path, *args: str, corpus: Path | None = None, timeout: int = 1800):
    env = {"PYTHONPATH": workspace / "src"}
    if corpus is not None:
        env["ATTNLAB_CORPUS"] = corpus
    return run(["-m", "snakemake", *args], workspace, env, timeout)


def refused(result: subprocess.CompletedProcess, *named: str) -> None:
    """Exit code 2, no traceback, and every `named` text in stderr: a clear refusal."""
    assert result.returncode == 2, f"rc {result.returncode}\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    for text in named:
        assert text in result.stderr, f"{text!r} not in: {result.stderr[-2000:]}"


def wait_for(predicate, process: subprocess.Popen | None = None, timeout: float = 300.0,
             interval: float = 0.005) -> bool:
    """Poll `predicate` until it holds; False on timeout or once `process` has exited without it holding."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        if process is not None and process.poll() is not None:
            return bool(predicate())
        time.sleep(interval)
    return False
