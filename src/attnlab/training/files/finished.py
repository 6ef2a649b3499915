"""A packed cell's finished bundle, kept beside the checkpoints until its whole pack has ended.

When a pack's job fails (a later cell runs out of memory, the job is killed), Snakemake removes every output
of the job that was not there before it started, finished bundles included, and puts back the earlier
version of those that were. So each cell a pack finishes is also kept, as hard links to the same files (a
copy on another disk), under <checkpoint root>/.finished, before its checkpoints go; the pack's next run puts
a kept bundle that is still current in place of a missing or stale one instead of training the cell again,
and a pack that ends well removes its cells' kept bundles.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

from attnlab.core.bundle_format import BUNDLE_FILE, cell_dir, manifest_name_is_inside
from attnlab.core.cell_key import CellKey
from attnlab.core.errors import ConfigError
from attnlab.training.files.bundle_writer import check_out_dir, replace_bundle

FINISHED = ".finished"  # no variant's name: a dot is not allowed in one
ATTEMPTS = 5  # a sibling pack may remove an empty shared folder between our mkdir and mkdtemp


def kept_path(checkpoint_root: Path, key: CellKey) -> Path:
    return cell_dir(Path(checkpoint_root).resolve() / FINISHED, key.variant, key.lr, key.seed)


def keep(bundle: Path, kept: Path) -> None:
    """Keep the bundle's own files (bundle.json and what it lists) at `kept`, replacing an earlier kept one."""
    forget(kept)
    if Path(kept).exists():
        others = sorted(str(p.relative_to(kept)) for p in Path(kept).rglob("*") if not p.is_dir())
        raise ConfigError(f"{kept} holds files attnlab did not make ({', '.join(others[:5]) or 'folders'}), where it "
                          "keeps this cell's finished bundle; move them out of it and run the build again")
    staging = _staged_copy(Path(bundle), Path(kept))
    try:
        os.replace(staging, kept)
    finally:
        _remove_staging_parent(staging)


def restore(kept: Path, bundle: Path, key: CellKey, log=print) -> None:
    """Put a kept bundle at `bundle`: absent, or an earlier bundle of this cell, which it replaces."""
    bundle = check_out_dir(Path(bundle), key, outcome="nothing was put back")
    staging = _staged_copy(Path(kept), bundle)
    try:
        replace_bundle(staging, bundle, log)
    finally:
        _remove_staging_parent(staging)


def forget(kept: Path) -> None:
    """Remove a kept bundle's own files (bundle.json and what it lists) and the folders they leave empty, up to
    .finished itself. Anything else in the folder was not made here and stays, with the folders that hold it."""
    kept = Path(kept)
    if kept.is_dir() and not kept.is_symlink():
        for name in _own_files(kept):
            path = kept / name
            if path.is_file() or path.is_symlink():
                path.unlink()
        remove_empty_folders(kept)
    top = next((p for p in kept.parents if p.name == FINISHED), None)
    if top is None:
        return
    for parent in kept.parents:
        try:
            parent.rmdir()  # only an empty one
        except OSError:
            return
        if parent == top:
            return


def remove_empty_folders(top: Path) -> None:
    """Remove `top` and every folder under it that is empty once the ones below it are gone (never one that holds
    anything)."""
    for folder, _, _ in sorted(os.walk(top), key=lambda entry: -len(Path(entry[0]).parts)):
        try:
            Path(folder).rmdir()  # only an empty one
        except OSError:
            pass


def _own_files(kept: Path) -> list[str]:
    """The files a kept bundle's manifest names, its keys (none when it has no readable one: then nothing there
    is ours)."""
    try:
        listed = json.loads((kept / BUNDLE_FILE).read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    if not isinstance(listed, dict):
        return []
    return [BUNDLE_FILE, *(name for name in listed if isinstance(name, str) and manifest_name_is_inside(name))]


def _staged_copy(source: Path, target: Path) -> Path:
    """The source bundle's own files, linked (else copied) into a new staging folder beside `target`."""
    names = [BUNDLE_FILE, *json.loads((source / BUNDLE_FILE).read_text())["files"]]
    for attempt in range(ATTEMPTS):
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            holder = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.partial-"))
            break
        except FileNotFoundError:
            if attempt == ATTEMPTS - 1:
                raise
    staging = holder / "bundle"
    try:
        for name in names:
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source / name, staging / name)
            except OSError:
                shutil.copy2(source / name, staging / name)
        # the source folder's mode, but always writable by its owner, so it can be removed again
        os.chmod(staging, stat.S_IMODE(source.stat().st_mode) | stat.S_IRWXU)
    except BaseException:
        shutil.rmtree(holder, ignore_errors=True)
        raise
    return staging


def _remove_staging_parent(staging: Path) -> None:
    """The staging folder's holder, once the bundle has moved out of it (or what is left of a failed move)."""
    shutil.rmtree(staging.parent, ignore_errors=True)
