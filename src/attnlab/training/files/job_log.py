"""A training job's log, written by the job itself and held for as long as the job runs.

The workflow's training rules pass `--log FILE`. The trainer takes an exclusive flock on the file before it
changes a byte of it, so a second run of the same job (a second build started with `--nolock`, a user's
command) is refused with the first run's log left whole, instead of a shell's `| tee` truncating it on open
while the first run still writes. Once held, the file is emptied and the process's stdout and stderr, as file
descriptors (so what JAX and XLA print is kept too), go both to where they went before and to the log.
"""

from __future__ import annotations

import atexit
import fcntl
import os
import subprocess
import sys
from pathlib import Path

from attnlab.core.errors import ConfigError
from attnlab.training.files.bundle_writer import NOTHING_TRAINED


def hold(log: Path) -> int:
    """Open and lock `log` (made if absent, its folder too), or refuse when another process holds it; returns
    the descriptor, which must stay open while the job runs."""
    log = Path(log)
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o666)
    except OSError as err:
        raise ConfigError(f"--log {log}: cannot write it ({err.strerror}); pick a path in a folder you can write "
                          f"({NOTHING_TRAINED})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise ConfigError(f"--log {log} is being written by another run of this job (a second build of the same "
                          f"workspace, started with --nolock?); wait for it to end and build again. Its log was "
                          f"left as it is ({NOTHING_TRAINED})") from None
    except OSError as err:  # a file system without flock (some network mounts): the cells' own locks still hold
        print(f"note: --log {log} cannot be locked here ({err.strerror}); writing it unlocked", file=sys.stderr)
    return fd


def tee_into(log: Path) -> None:
    """Hold `log`, empty it, and copy this process's stdout and stderr into it from now on."""
    fd = hold(log)
    os.ftruncate(fd, 0)
    sys.stdout.flush()
    sys.stderr.flush()
    # `tee -a` appends through its own descriptor; it ends when every copy of the pipe's write end is closed,
    # that is when this process exits however it exits, having written all it was given.
    shown = os.dup(1)
    tee = subprocess.Popen(["tee", "-a", str(log)], stdin=subprocess.PIPE, stdout=shown, close_fds=True)
    os.close(shown)
    os.dup2(tee.stdin.fileno(), 1)
    os.dup2(tee.stdin.fileno(), 2)
    tee.stdin.close()
    atexit.register(_finish, tee, fd)


def _finish(tee: subprocess.Popen, fd: int) -> None:
    """At a normal exit: hand tee its end of input and wait until it has written everything, then let go."""
    sys.stdout.flush()
    sys.stderr.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    try:
        tee.wait(timeout=30)
    except subprocess.TimeoutExpired:
        tee.kill()
    os.close(fd)
