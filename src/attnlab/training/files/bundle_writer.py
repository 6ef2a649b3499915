"""Write a cell's bundle whole or not at all, and never over anything the project did not make.

An existing --out is replaced only while everything in it is the earlier
bundle's own: bundle.json and the files its manifest lists, unchanged, in the
folders that hold them. The swap removes exactly those files, never a folder
whole. A disk that fills during the write ends in one line (`DiskFullError`),
the staging folder removed; the lock that keeps a second trainer off --out is
`folder_lock`.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path, PurePosixPath

import numpy as np

from attnlab.core.bundle_format import (BUNDLE_FILE, CURVE_COLUMNS, DATA_FILES, manifest_name_is_inside, sealed,
                                        sha256_file)
from attnlab.core.cell_key import CellKey
from attnlab.core.errors import ConfigError
from attnlab.core.io import atomic_write_json, jsonable
from attnlab.training.files.disk_full import DiskFullError, disk_full_reason, is_disk_full, orbax_writes

NOTHING_TRAINED = "nothing was trained"
SHOWN = 6  # foreign paths named in a refusal; the rest are counted


def check_out_dir(out: Path, key: CellKey, outcome: str = NOTHING_TRAINED) -> Path:
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
                == (key.variant, key.lr_value, key.seed):
            foreign = foreign_paths(out, summary)
            if not foreign:
                return out
            shown = ", ".join(foreign[:SHOWN]) + (f" and {len(foreign) - SHOWN} more" if len(foreign) > SHOWN else "")
            raise ConfigError(
                f"--out {out} holds an earlier bundle of this cell and files it did not write: {shown}; the "
                f"bundle is replaced only when nothing else is there, so move those out or pick another --out "
                f"({outcome})")
    raise ConfigError(
        f"--out {out} already exists and is not an earlier bundle of {key.label()}; "
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


# Snakemake writes this empty file into every directory output it has made; in a bundle it is the workflow's own,
# never a user's, so an earlier bundle that holds it is still replaced (a pack's rerun, attnlab.training.pack).
SNAKEMAKE_MARKER = ".snakemake_timestamp"


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
            if rel in (BUNDLE_FILE, SNAKEMAKE_MARKER) and stat.S_ISREG(mode):
                continue
            if stat.S_ISLNK(mode):
                foreign.append(f"{rel} (a link)")
            elif rel not in owned or not stat.S_ISREG(mode):
                foreign.append(rel)
            elif sha256_file(path) != owned[rel]:
                foreign.append(f"{rel} (changed since the bundle was written)")
    return foreign


def write_bundle(out: Path, summary: dict, curve: list, telemetry: dict, attention: dict,
                 save_params, log=print) -> Path:
    """Write every file into a fresh staging folder beside `out`, then move it into place in one rename."""
    out = Path(out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.partial-"))
    try:
        with orbax_writes():
            write_curve(staging / "curve.csv", curve)
            _save_npz(staging / "telemetry.npz", telemetry)
            _save_npz(staging / "attention.npz", attention)
            save_params(staging / "params")
            files = {name: sha256_file(staging / name) for name in DATA_FILES}
            files |= {str(f.relative_to(staging)): sha256_file(f)
                      for f in sorted((staging / "params").rglob("*")) if f.is_file()}
            atomic_write_json(staging / BUNDLE_FILE, sealed(dict(summary, files=files), default=jsonable))
        # still only ours to replace? (a user may have added a file while the cell trained)
        check_out_dir(out, CellKey.of(summary["variant"], summary["lr"], summary["seed"]),
                      outcome=f"the new bundle was not written and {out} is as it was")
        replace_bundle(staging, out, log)
    except BaseException as err:
        remove_settled(staging)  # made whole by this writer
        if is_disk_full(err):
            raise DiskFullError(f"the disk is full: cannot write the bundle {out} ({disk_full_reason(err)}); "
                                f"free space on that disk and run again (the partial bundle was removed)") from None
        raise
    os.chmod(out, 0o777 & ~_umask())  # mkdtemp makes folders private; a bundle is shared like any output
    return out


def replace_bundle(staging: Path, final: Path, log) -> None:
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
    for name in (BUNDLE_FILE, SNAKEMAKE_MARKER):
        if (folder / name).is_file() and not (folder / name).is_symlink():
            (folder / name).unlink()
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


def remove_settled(folder: Path, settle_s: float = 0.3, budget_s: float = 10.0) -> None:
    """Remove a staging folder this writer made, again if it comes back: after a failed save, a writer thread
    of Orbax's that predates the save (its pools live for the process) may still create a file in it for a
    moment. Gone once it has stayed absent for settle_s, or when budget_s runs out."""
    deadline = time.monotonic() + budget_s
    while True:
        shutil.rmtree(folder, ignore_errors=True)
        time.sleep(settle_s)
        if not folder.exists() or time.monotonic() > deadline:
            return


def write_curve(path: Path, rows) -> None:
    """curve.csv: one row per evaluation (CURVE_COLUMNS, in that order), a missing or NaN value left empty
    and every float written in its shortest exact form, as pandas' to_csv writes it (the csv module keeps
    pandas out of the trainer's imports, about a second of every cell's start)."""
    def text(value) -> str:
        if value is None or (isinstance(value, (float, np.floating)) and math.isnan(value)):
            return ""
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            return str(int(value))
        return repr(float(value))

    with open(path, "w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(CURVE_COLUMNS)
        writer.writerows([text(value) for value in row] for row in rows)


def _save_npz(path: Path, arrays: dict) -> None:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **{k: np.asarray(v) for k, v in arrays.items()})
    path.write_bytes(buffer.getvalue())
