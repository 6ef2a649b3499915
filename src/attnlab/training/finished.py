"""A packed cell's finished bundle, kept beside the checkpoints until its whole pack has ended.

When a pack's job fails (a later cell runs out of memory, the job is killed), Snakemake removes every output
of the job that was not there before it started, finished bundles included. So each cell a pack finishes is
also kept, as hard links to the same files (a copy on another disk), under <checkpoint root>/.finished; the
pack's next run puts a kept bundle that is still current back in place instead of training the cell again,
and a pack that ends well removes its cells' kept bundles.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

from attnlab.core.bundle_format import BUNDLE_FILE, cell_dir
from attnlab.core.cell_key import CellKey

FINISHED = ".finished"  # no variant's name: a dot is not allowed in one


def kept_path(checkpoint_root: Path, key: CellKey) -> Path:
    return cell_dir(Path(checkpoint_root).resolve() / FINISHED, key.variant, key.lr, key.seed)


def keep(bundle: Path, kept: Path) -> None:
    """Keep the bundle's own files (bundle.json and what it lists) at `kept`, replacing an earlier kept one."""
    forget(kept)
    _place_copy(Path(bundle), Path(kept))


def restore(kept: Path, bundle: Path) -> None:
    """Put a kept bundle back at `bundle`, which must not exist."""
    _place_copy(Path(kept), Path(bundle))


def forget(kept: Path) -> None:
    """Remove a kept bundle and the folders above it that it leaves empty (up to .finished itself)."""
    kept = Path(kept)
    if kept.is_dir() and not kept.is_symlink():
        shutil.rmtree(kept)
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


def _place_copy(source: Path, target: Path) -> None:
    """Link (else copy) the source bundle's own files into a staging folder beside `target`, then rename it in."""
    names = [BUNDLE_FILE, *json.loads((source / BUNDLE_FILE).read_text())["files"]]
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.partial-"))
    try:
        for name in names:
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source / name, staging / name)
            except OSError:
                shutil.copy2(source / name, staging / name)
        os.chmod(staging, stat.S_IMODE(source.stat().st_mode))  # mkdtemp's folder is private; keep the source's
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
