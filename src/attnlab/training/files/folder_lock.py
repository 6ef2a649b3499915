"""One trainer writes a folder at a time, so a second one is refused instead of dying in the first one's writes.

The lock is a `.<name>.lock` file beside the folder (--out, or a cell's
checkpoint folder), locked with flock and holding the holder's pid and host.
"""

from __future__ import annotations

import fcntl
import os
import socket
from pathlib import Path

from attnlab.core.errors import ConfigError
from attnlab.training.files.bundle_writer import NOTHING_TRAINED
from attnlab.training.files.disk_full import DiskFullError, disk_full_reason, is_disk_full

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
        self.path = lock_path(self.folder)
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

    def _forget_made(self) -> None:
        for folder in reversed(self._made):
            try:
                os.rmdir(folder)
            except OSError:
                break
        self._made = []


def lock_path(folder: Path) -> Path:
    """The lock file of a folder: `.<name>.lock` beside it."""
    return Path(folder).parent / f".{Path(folder).name}.lock"


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
