"""What a killed trainer leaves beside a cell, removed once the cell's bundle is whole.

A trainer killed with SIGKILL runs no `finally`: its lock files stay (`.seed0.lock` beside the bundle and beside
the cell's checkpoint folder), and so do the checkpoints it was resuming from (`<checkpoint root>/.../seed0/`,
with Orbax's `orbax/<step>` inside) and the staging folders it was writing (`.seed0.partial-*`, and
`.seed0.old-*` where it was swapping an earlier bundle out). A later run that trains the cell again clears the
locks and checkpoints it uses, but not another run's staging folders, and a run that finds the cell's bundle
already current never opens the cell at all. So a pack that ended well tidies each of its cells: under both of
the cell's locks (a trainer still at work on it keeps everything), it removes exactly those things, by the names
this package gives them; a file of anyone else's stays, with the folders that hold it. Tidying is best effort:
whatever it cannot remove stays, said in the log, and the pack still ends well.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from attnlab.core.bundle_format import BUNDLE_FILE, DATA_FILES, cell_dir
from attnlab.core.cell_key import CellKey
from attnlab.core.errors import ConfigError
from attnlab.training.files import checkpoint, finished
from attnlab.training.files.disk_full import DiskFullError
from attnlab.training.files.folder_lock import FolderLock, lock_path

STAGING_KINDS = ("partial", "old")  # bundle_writer and finished: .<name>.partial-*, .<name>.old-* (mkdtemp)


def staging_folders(target: Path) -> list[Path]:
    """The staging folders writers of `target` made beside it (folders only, by the prefix mkdtemp was given)."""
    target = Path(target)
    if not target.parent.is_dir():
        return []
    found = [p for kind in STAGING_KINDS for p in target.parent.glob(f".{target.name}.{kind}-*")]
    return sorted(p for p in found if p.is_dir() and not p.is_symlink())


def checkpoint_folder(checkpoint_root: Path, key: CellKey) -> Path:
    return cell_dir(Path(checkpoint_root).resolve(), key.variant, key.lr, key.seed)  # ResumeCheckpoints' folder


def found(out: Path, checkpoint_root: Path | None, key: CellKey, kept: Path | None = None) -> list[Path]:
    """Everything a killed trainer of this cell left: its lock files, checkpoint folder and staging folders."""
    out = Path(out).resolve()
    places = [out] + ([Path(kept)] if kept is not None else [])
    left = [p for place in places for p in staging_folders(place)]
    left += [lock_path(out)] if lock_path(out).is_file() else []
    if checkpoint_root is not None:
        own = checkpoint_folder(checkpoint_root, key)
        left += [p for p in (own, lock_path(own)) if p.exists()]
    return left


def tidy(out: Path, checkpoint_root: Path | None, key: CellKey, kept: Path | None = None, log=print) -> list[Path]:
    """Remove what `found` lists for a cell whose bundle at `out` is current; returns what was removed. A cell
    another trainer holds is left as it is, and so is any file in the checkpoint folder that attnlab did not make."""
    if not found(out, checkpoint_root, key, kept):
        return []
    own = checkpoint_folder(checkpoint_root, key) if checkpoint_root is not None else None
    locks = [lock for lock in (lock_path(out), lock_path(own) if own is not None else None)
             if lock is not None and lock.is_file()]
    removed: list[Path] = []
    try:
        with FolderLock(out, "--out"):
            removed += _remove_staging(out, kept, log)
            if own is not None:
                with FolderLock(own, "--checkpoint-dir"):
                    removed += _remove_checkpoints(own, log)
    except (ConfigError, DiskFullError, OSError) as err:  # in use by a trainer now, not ours to write, a full
        # disk: what is left stays, and the pack, whose cells are all trained, still ends well
        log(f"{key.label()}: left what an earlier run left beside it ({err})")
        return removed
    if kept is not None:
        finished.forget(kept)  # nothing of the bundle's is left there: this removes the folders left empty
    if own is not None:
        checkpoint.prune(own, Path(checkpoint_root).resolve())
    removed += [lock for lock in locks if not lock.exists()]  # taken over from a dead trainer, then released
    if removed:
        log(f"{key.label()}: removed what a killed run left: {', '.join(str(p) for p in removed)}")
    return removed


def _remove_staging(out: Path, kept: Path | None, log) -> list[Path]:
    """Each staging folder's bundle files, then the folders that leaves empty: a file a user put in a bundle
    before it was moved aside (the writer keeps those, and says where) stays, with the folders that hold it."""
    removed = []
    for folder in staging_folders(out) + (staging_folders(kept) if kept is not None else []):
        for file in sorted(p for p in folder.rglob("*") if not p.is_dir() or p.is_symlink()):
            if _made_by_the_writer(file.relative_to(folder)):
                file.unlink()
        finished.remove_empty_folders(folder)
        if folder.exists():
            others = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if not p.is_dir())
            log(f"{folder} holds files attnlab did not make ({', '.join(others[:5])}); they stay")
        else:
            removed.append(folder)
    return removed


def _made_by_the_writer(relative: Path) -> bool:
    """A file a bundle writer puts in its staging folder (bundle_writer, finished): <holder>/bundle/ holds
    bundle.json, the data files, params/ (Orbax's) and the temporary files of atomic writes."""
    parts = relative.parts
    if len(parts) < 2 or parts[0] != "bundle":
        return False
    inside = parts[1:]
    if inside[0] == "params":
        return True
    name = inside[0]
    return len(inside) == 1 and (name in (BUNDLE_FILE, *DATA_FILES) or (name.startswith(".") and name.endswith(".tmp")))


def _remove_checkpoints(own: Path, log) -> list[Path]:
    """The cell's checkpoint folder, when attnlab's marker says it made it: Orbax's folder and the marker go,
    then the folder itself if that left it empty (a file of anyone else's stays, and so does the folder)."""
    marker = own / checkpoint.MARKER
    if not marker.is_file():
        return []
    shutil.rmtree(own / "orbax", ignore_errors=True)
    marker.unlink()
    try:
        own.rmdir()
    except OSError:
        others = sorted(p.name for p in own.iterdir())
        log(f"{own} holds files attnlab did not make ({', '.join(others[:5])}); they stay")
        return [own / "orbax", marker]
    return [own]
