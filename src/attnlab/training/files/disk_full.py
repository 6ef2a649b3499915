"""A disk that fills while the trainer writes ends in one line, with no writer left to remake what is removed.

`is_disk_full` finds ENOSPC/EDQUOT anywhere in an error's chain (an OSError's
errno, or the text TensorStore puts in its own errors); `orbax_writes` wraps an
Orbax save so that its caller can remove the temporary folders and report one
line (`DiskFullError`, exit code 2). Two parts are less plain than they look;
both were weighed against simpler, public means and kept:

- Orbax raises the first failed write while its other writer threads still
  run: it awaits its futures in turn and the first error ends the wait, and
  neither `wait_until_finished()` nor `close()` (which re-raise that error)
  nor any other public call waits for the rest. So the threads that appeared
  during the save (a `threading.enumerate()` snapshot) are joined, within a
  budget. Idle `ThreadPoolExecutor` workers among them are skipped: Orbax's
  metadata-store pool (its `close()` never reaches that pool's shutdown after
  a failed save) and asyncio's default executor live on until their owner
  shuts them down, so joining them holds every full-disk exit for the whole
  budget (60 s, measured). Nothing public tells such a worker from a writer
  (both are plain non-daemon threads, and pool thread names have no documented
  format), so a worker is recognised by what it runs: its `_target` is
  `concurrent.futures.thread._worker`, both private names, read with getattr.
  Should Python drop them, those workers are joined too and the line comes
  after the budget.
- After a full disk the writer loggers drop records of that failure, and
  TensorStore's "Event loop is closed" callbacks and "coroutine ... was never
  awaited" warnings are dropped, for the rest of the process rather than only
  during the save: they arrive later ("exception was never retrieved" when
  tasks are collected, writes finishing after their loop closed, the write
  coroutines a failed save never started, reported whenever the garbage
  collector happens to reach them, often at exit), while the process exits
  with its one line. On a real full disk they are dozens to hundreds of
  traceback lines; nothing else on those loggers is dropped.
"""

from __future__ import annotations

import concurrent.futures.thread
import errno
import logging
import os
import sys
import threading
import time
import warnings
from contextlib import contextmanager

DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
DISK_FULL_TEXTS = ("No space left on device", "Disk quota exceeded")
WRITER_LOGGERS = ("absl", "asyncio")  # where Orbax's threads and their event loops report failed writes
NEVER_AWAITED = r"coroutine .* was never awaited"  # a failed save's write coroutines, collected later
_POOL_WORKER = getattr(concurrent.futures.thread, "_worker", None)  # what an idle executor thread runs


class DiskFullError(RuntimeError):
    """The disk filled while the trainer wrote; one line naming the folder (exit code 2, no traceback)."""


def is_disk_full(err: BaseException) -> bool:
    """ENOSPC or EDQUOT anywhere in the chain: an OSError's errno, or TensorStore's RESOURCE_EXHAUSTED text."""
    for cause in _causes(err):
        if isinstance(cause, OSError) and cause.errno in DISK_FULL_ERRNOS:
            return True
        if any(text in str(cause) for text in DISK_FULL_TEXTS):
            return True
    return False


def disk_full_reason(err: BaseException) -> str:
    for cause in _causes(err):
        for text in DISK_FULL_TEXTS:
            if text in str(cause):
                return text
        if isinstance(cause, OSError) and cause.errno in DISK_FULL_ERRNOS:
            return os.strerror(cause.errno)
    return "no space left"


@contextmanager
def orbax_writes(budget_s: float = 60.0):
    """Around an Orbax save: on failure, wait for its writer threads; a full disk keeps back their tracebacks.

    Orbax raises the first failed write while its other writer threads still
    run; they are joined (up to `budget_s`) before the caller removes the
    temporary folders, so none is made again behind its back. What they log
    at ERROR is shown afterwards, unless the disk was full: then the caller's
    one line is all, and the echoes of that failure that arrive later (tasks
    collected at exit, writes finishing after their event loop closed) stay
    quiet too, since the process is about to exit with that line.
    """
    held, started = [], set(threading.enumerate())

    class Hold(logging.Filter):
        def filter(self, record):
            if record.levelno >= logging.ERROR:
                held.append(record)
                return False
            return True

    held_unraisable, previous_hook = [], sys.unraisablehook

    def hold_closed_loops(unraisable):
        if _closed_loop(unraisable):
            held_unraisable.append(unraisable)
        else:
            previous_hook(unraisable)

    hold = Hold()
    for name in WRITER_LOGGERS:
        logging.getLogger(name).addFilter(hold)
    sys.unraisablehook = hold_closed_loops
    full = False
    try:
        yield
    except BaseException as err:
        full = is_disk_full(err)
        if full:
            sys.unraisablehook = previous_hook
            _quiet_disk_full_echoes()
        _join_new_threads(started, budget_s)
        raise
    finally:
        for name in WRITER_LOGGERS:
            logging.getLogger(name).removeFilter(hold)
        if sys.unraisablehook is hold_closed_loops:
            sys.unraisablehook = previous_hook
        if not full:
            for record in held:
                logging.getLogger(record.name).handle(record)
            for unraisable in held_unraisable:
                previous_hook(unraisable)


def _causes(err: BaseException):
    seen, stack = set(), [err]
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        stack += [current.__cause__, current.__context__, *getattr(current, "exceptions", ())]


class _DiskFullEchoes(logging.Filter):
    def filter(self, record):
        failure = record.exc_info[1] if record.exc_info else None
        return not ((failure is not None and is_disk_full(failure))
                    or any(text in record.getMessage() for text in DISK_FULL_TEXTS))


def _quiet_disk_full_echoes() -> None:
    """For the rest of the process: drop the full disk's log records, never-awaited writes, closed-loop callbacks."""
    for name in WRITER_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DiskFullEchoes) for f in logger.filters):
            logger.addFilter(_DiskFullEchoes())
    warnings.filterwarnings("ignore", NEVER_AWAITED, RuntimeWarning)  # an identical filter replaces, never piles up
    previous = sys.unraisablehook
    if getattr(previous, "quiet_closed_loops", False):
        return

    def hook(unraisable):
        if not _closed_loop(unraisable):
            previous(unraisable)

    hook.quiet_closed_loops = True
    sys.unraisablehook = hook


def _closed_loop(unraisable) -> bool:
    return isinstance(unraisable.exc_value, RuntimeError) and str(unraisable.exc_value) == "Event loop is closed"


def _join_new_threads(started: set, budget_s: float) -> None:
    """Join the threads begun since `started`, except idle pool workers (they outlive the save by design)."""
    deadline = time.monotonic() + budget_s
    for thread in threading.enumerate():
        if thread in started or thread is threading.current_thread():
            continue
        if getattr(thread, "_target", None) is _POOL_WORKER:
            continue
        threading.Thread.join(thread, max(0.0, deadline - time.monotonic()))  # Orbax's join would re-raise
