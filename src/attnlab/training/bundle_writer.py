"""Write a cell's bundle whole or not at all, and never over anything the project did not make.

An existing --out is replaced only while everything in it is the earlier
bundle's own: bundle.json and the files its manifest lists, unchanged, in the
folders that hold them. The swap removes exactly those files, never a folder
whole. One trainer writes a folder at a time (`FolderLock`), and a disk that
fills while a bundle or a checkpoint is written ends in one line
(`DiskFullError`), its temporary folders removed.
"""

from __future__ import annotations

import concurrent.futures.thread
import errno
import fcntl
import io
import json
import logging
import os
import shutil
import socket
import stat
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

import numpy as np
import pandas as pd

from attnlab.core.bundle_format import BUNDLE_FILE, CURVE_COLUMNS, DATA_FILES, manifest_name_is_inside, sha256_file
from attnlab.core.errors import ConfigError
from attnlab.core.io import atomic_write_json

NOTHING_TRAINED = "nothing was trained"
_POOL_WORKER = getattr(concurrent.futures.thread, "_worker", None)  # what an idle executor thread runs
SHOWN = 6  # foreign paths named in a refusal; the rest are counted


def check_out_dir(out: Path, variant: str, lr: float, seed: int, outcome: str = NOTHING_TRAINED) -> Path:
    """Refuse an --out that is neither absent nor only an earlier bundle of this cell; `outcome` ends the message.

    Called before any training and again just before the swap. An earlier
    bundle is replaced file by file, so a folder holding anything it did not
    write (a notebook, notes, plots, a file edited since) is refused, naming
    those paths.
    """
    out = Path(out).resolve()
    if not out.exists():
        if out.parent.exists() and not out.parent.is_dir():
            raise ConfigError(f"--out {out}: its parent {out.parent} is a file; choose another path")
        return out
    if out.is_dir() and not out.is_symlink():
        summary = _earlier_summary(out)
        if summary is not None and (summary.get("variant"), _as_float(summary.get("lr")), summary.get("seed")) \
                == (variant, float(lr), int(seed)):
            foreign = foreign_paths(out, summary)
            if not foreign:
                return out
            shown = ", ".join(foreign[:SHOWN]) + (f" and {len(foreign) - SHOWN} more" if len(foreign) > SHOWN else "")
            raise ConfigError(
                f"--out {out} holds an earlier bundle of this cell and files it did not write: {shown}; the "
                f"bundle is replaced only when nothing else is there, so move those out or pick another --out "
                f"({outcome})")
    raise ConfigError(
        f"--out {out} already exists and is not an earlier bundle of {variant} lr={lr:g} seed={seed}; "
        f"--out must not exist yet or hold only such a bundle, so pick another path ({outcome})"
    )


def owned_files(summary: dict) -> dict[str, str]:
    """The files an earlier bundle wrote besides bundle.json: manifest name -> sha256 (the format's names only)."""
    files = summary.get("files")
    if not isinstance(files, dict):
        return {}
    return {name: digest for name, digest in files.items()
            if isinstance(name, str) and isinstance(digest, str) and manifest_name_is_inside(name)
            and (name in DATA_FILES or PurePosixPath(name).parts[0] == "params")}


def foreign_paths(folder: Path, summary: dict) -> list[str]:
    """Paths in `folder` that are not the bundle's own: unlisted, changed since written, links, other folders.

    A folder not on the way to a listed file is named once, with a slash.
    """
    owned = owned_files(summary)
    holders = {str(parent) for name in owned for parent in PurePosixPath(name).parents if str(parent) != "."}
    foreign = []
    for here, dirs, files in os.walk(folder):
        rel_here = Path(here).relative_to(folder)
        for name in sorted(dirs):
            path, rel = Path(here) / name, (rel_here / name).as_posix()
            if path.is_symlink():
                foreign.append(f"{rel} (a link)")
            elif rel not in holders:
                foreign.append(f"{rel}/")
        dirs[:] = sorted(d for d in dirs if (rel_here / d).as_posix() in holders and not (Path(here) / d).is_symlink())
        for name in sorted(files):
            path, rel = Path(here) / name, (rel_here / name).as_posix()
            mode = path.lstat().st_mode
            if rel == BUNDLE_FILE and stat.S_ISREG(mode):
                continue
            if stat.S_ISLNK(mode):
                foreign.append(f"{rel} (a link)")
            elif rel not in owned or not stat.S_ISREG(mode):
                foreign.append(rel)
            elif sha256_file(path) != owned[rel]:
                foreign.append(f"{rel} (changed since the bundle was written)")
    return foreign


def write_bundle(out: Path, summary: dict, curve: pd.DataFrame, telemetry: dict, attention: dict,
                 save_params, log=print) -> Path:
    """Write every file into a fresh staging folder beside `out`, then move it into place in one rename."""
    out = Path(out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.partial-"))
    try:
        with orbax_writes():
            curve.to_csv(staging / "curve.csv", index=False, columns=list(CURVE_COLUMNS))
            _save_npz(staging / "telemetry.npz", telemetry)
            _save_npz(staging / "attention.npz", attention)
            save_params(staging / "params")
            files = {name: sha256_file(staging / name) for name in DATA_FILES}
            files |= {str(f.relative_to(staging)): sha256_file(f)
                      for f in sorted((staging / "params").rglob("*")) if f.is_file()}
            atomic_write_json(staging / BUNDLE_FILE, dict(summary, files=files))
        # still only ours to replace? (a user may have added a file while the cell trained)
        check_out_dir(out, summary["variant"], summary["lr"], summary["seed"],
                      outcome=f"the new bundle was not written and {out} is as it was")
        _replace_bundle(staging, out, log)
    except BaseException as err:
        shutil.rmtree(staging, ignore_errors=True)  # made whole by this writer
        if is_disk_full(err):
            raise DiskFullError(f"the disk is full: cannot write the bundle {out} ({disk_full_reason(err)}); "
                                f"free space on that disk and run again (the partial bundle was removed)") from None
        raise
    os.chmod(out, 0o777 & ~_umask())  # mkdtemp makes folders private; a bundle is shared like any output
    return out


def _replace_bundle(staging: Path, final: Path, log) -> None:
    """Swap in the new bundle; an earlier bundle is moved aside, then only its own files are removed."""
    if not os.path.lexists(final):
        os.replace(staging, final)
        return
    trash = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}.old-"))
    aside = trash / "bundle"
    os.replace(final, aside)
    try:
        os.replace(staging, final)
    except BaseException:
        os.replace(aside, final)  # the earlier bundle goes back where it was
        os.rmdir(trash)
        raise
    left = _remove_own_files(aside)
    if left:
        log(f"the earlier bundle at {final} also held {', '.join(left[:SHOWN])}"
            f"{f' and {len(left) - SHOWN} more' if len(left) > SHOWN else ''}, which appeared after it was checked: "
            f"left untouched in {aside}")
        return
    os.rmdir(aside)
    os.rmdir(trash)


def _remove_own_files(folder: Path) -> list[str]:
    """Remove bundle.json and each listed file whose bytes are still the listed ones; what is left, by name."""
    summary = _earlier_summary(folder) or {}
    owned = owned_files(summary)
    emptied = set()
    for name, digest in owned.items():
        path = folder / name
        if _plain_file_inside(folder, path) and sha256_file(path) == digest:
            path.unlink()
            emptied.update(p for p in path.parents if folder in p.parents)
    if (folder / BUNDLE_FILE).is_file() and not (folder / BUNDLE_FILE).is_symlink():
        (folder / BUNDLE_FILE).unlink()
    for directory in sorted(emptied, key=lambda p: len(p.parts), reverse=True):
        try:
            os.rmdir(directory)  # only once empty: anything else in it stays
        except OSError:
            pass
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.is_symlink() or not p.is_dir() or not any(p.iterdir()))


def _plain_file_inside(folder: Path, path: Path) -> bool:
    """A regular file reached through real folders only (a linked folder could lead out of the bundle)."""
    here = folder
    for part in path.relative_to(folder).parts[:-1]:
        here = here / part
        if here.is_symlink() or not here.is_dir():
            return False
    return path.is_file() and not path.is_symlink()


def _earlier_summary(folder: Path) -> dict | None:
    try:
        summary = json.loads((folder / BUNDLE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return summary if isinstance(summary, dict) else None


def _as_float(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _save_npz(path: Path, arrays: dict) -> None:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **{k: np.asarray(v) for k, v in arrays.items()})
    path.write_bytes(buffer.getvalue())


# ---- one trainer per folder


_HELD: set["FolderLock"] = set()


class FolderLock:
    """`.<name>.lock` beside a folder, locked with flock and holding the holder's pid and host.

    A second trainer on the same folder is refused, naming the first's pid.
    The kernel drops the lock when its process dies however it dies, so a
    lock file left by a killed trainer is taken over. Usable as a context
    manager; released (the file removed) on any exit, error included.
    """

    def __init__(self, folder: Path, option: str):
        self.folder = Path(folder)
        self.option = option
        self.path = self.folder.parent / f".{self.folder.name}.lock"
        self._fd: int | None = None
        self._made: list[Path] = []

    def __enter__(self) -> "FolderLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def acquire(self) -> None:
        for _ in range(20):  # another trainer may remove the folder it made while this one arrives
            self._made += _make_parents(self.path.parent, self.option, self.folder)
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
            except FileNotFoundError:
                continue
            except OSError as err:
                self._forget_made()
                raise self._unwritable(err) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise self._in_use(fd) from None
            except OSError:  # a file system without flock: a live pid in the file (on this host) decides
                pid = _holder_pid(fd)
                if pid is not None and pid != os.getpid() and _alive(pid) and _same_host(fd):
                    raise self._in_use(fd) from None
            if not _still_at(fd, self.path):  # removed by its last holder between our open and our lock
                os.close(fd)
                continue
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
            except OSError as err:
                self.path.unlink(missing_ok=True)
                os.close(fd)
                self._forget_made()
                raise self._unwritable(err) from None
            self._fd = fd
            _HELD.add(self)
            return
        raise ConfigError(f"{self.option} {self.folder}: could not take the lock file {self.path}; "
                          f"run again ({NOTHING_TRAINED})")

    def _in_use(self, fd: int) -> ConfigError:
        holder = _read_holder(fd)
        os.close(fd)
        self._forget_made()
        return ConfigError(f"{self.option} {self.folder} is in use by another attnlab trainer ({holder}, lock file "
                           f"{self.path}); wait for it to end or pass another {self.option} ({NOTHING_TRAINED})")

    def _unwritable(self, err: OSError) -> Exception:
        if is_disk_full(err):
            return DiskFullError(f"the disk is full: cannot write the lock file {self.path} ({disk_full_reason(err)}); "
                                 f"free space on that disk and run again ({NOTHING_TRAINED})")
        return ConfigError(f"{self.option} {self.folder}: cannot write the lock file {self.path} ({err.strerror}); "
                           f"pick a path in a folder you can write ({NOTHING_TRAINED})")

    def release(self) -> None:
        """Remove the lock file (only while this process holds it) and the empty folders made for it."""
        fd, self._fd = self._fd, None
        _HELD.discard(self)
        if fd is not None:
            try:
                if _still_at(fd, self.path):
                    self.path.unlink()
            finally:
                os.close(fd)
        self._forget_made()

    def _forget_made(self) -> None:
        for folder in reversed(self._made):
            try:
                os.rmdir(folder)
            except OSError:
                break
        self._made = []


def release_locks() -> None:
    """Release every lock this process holds (for an exit that skips `finally`, like os._exit)."""
    for lock in list(_HELD):
        try:
            lock.release()
        except OSError:
            pass


def _make_parents(folder: Path, option: str, owner: Path) -> list[Path]:
    """Make `folder` and its missing parents; the ones made, outermost first."""
    missing = []
    here = folder
    while not here.exists() and here != here.parent:
        missing.append(here)
        here = here.parent
    made = []
    for path in reversed(missing):
        try:
            path.mkdir()
            made.append(path)
        except FileExistsError:
            if not path.is_dir():
                raise ConfigError(f"{option} {owner}: {path} is a file; choose another path ({NOTHING_TRAINED})") \
                    from None
        except OSError as err:
            for done in reversed(made):
                try:
                    os.rmdir(done)
                except OSError:
                    break
            raise ConfigError(f"{option} {owner}: cannot make {path} ({err.strerror}); choose another path "
                              f"({NOTHING_TRAINED})") from None
    return made


def _read_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 256, 0).decode(errors="replace").split()
    except OSError:
        text = []
    if not text:
        return "pid unknown"
    host = f" on {text[1]}" if len(text) > 1 and text[1] != socket.gethostname() else ""
    return f"pid {text[0]}{host}"


def _holder_pid(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 256, 0).split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _same_host(fd: int) -> bool:
    try:
        fields = os.pread(fd, 256, 0).decode(errors="replace").split()
    except OSError:
        return True
    return len(fields) < 2 or fields[1] == socket.gethostname()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _still_at(fd: int, path: Path) -> bool:
    try:
        here, held = os.stat(path), os.fstat(fd)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (held.st_dev, held.st_ino)


# ---- a full disk is one line


DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
DISK_FULL_TEXTS = ("No space left on device", "Disk quota exceeded")


class DiskFullError(RuntimeError):
    """The disk filled while the trainer wrote; one line naming the folder (exit code 2, no traceback)."""


def _causes(err: BaseException):
    seen, stack = set(), [err]
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        stack += [current.__cause__, current.__context__, *getattr(current, "exceptions", ())]


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


WRITER_LOGGERS = ("absl", "asyncio")  # where Orbax's threads and their event loops report failed writes


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


class _DiskFullEchoes(logging.Filter):
    def filter(self, record):
        failure = record.exc_info[1] if record.exc_info else None
        return not ((failure is not None and is_disk_full(failure))
                    or any(text in record.getMessage() for text in DISK_FULL_TEXTS))


def _quiet_disk_full_echoes() -> None:
    """For the rest of the process: drop log records of the full disk, and TensorStore's closed-loop callbacks."""
    for name in WRITER_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DiskFullEchoes) for f in logger.filters):
            logger.addFilter(_DiskFullEchoes())
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
