"""Read a bundle only if it is whole: every reader goes through here, and every file's hash is checked.

A bundle holds only its own files: a symbolic link anywhere inside it (bundle.json,
a data file, params/ or a file under it) is refused, so no reader follows one out
of the bundle. The bundle folder itself may be reached through links (results/ on
another disk).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd

from attnlab.core.bundle_format import (BUNDLE_FILE, DATA_FILES, REQUIRED_KEYS, SELF_KEY, BundleError,
                                        content_digest, manifest_name_is_inside, sha256_file)

# Every scalar field a reader relies on: its JSON type and range, a JSON Schema each bundle.json is validated
# against. A re-sealed bundle with "seed": "0" or "n_params": -5 is refused naming the file and the field, instead
# of reaching a table as a wrong number or as a crash that names no file.
_COUNT = {"type": "integer", "minimum": 0}
_SECONDS = {"type": "number", "minimum": 0}
_LOSS = {"type": "number"}  # NaN for a cell that diverged before its first evaluation
_STEP = {"type": ["integer", "null"], "minimum": 0}
BUNDLE_SCHEMA = {
    "type": "object",
    "properties": {
        "variant": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"},
        "lr": {"type": "number", "exclusiveMinimum": 0},
        "seed": {"type": "integer", "minimum": 0, "maximum": 2**32 - 1},
        "config": {"type": "object"},
        "provenance": {"type": "object"},
        "n_params": {"type": "integer", "minimum": 1},
        "best_val_loss": _LOSS, "final_val_loss": _LOSS, "best_val_bpc": _LOSS,
        "best_val_loss_whole_split": _LOSS, "best_val_loss_select": _LOSS, "best_val_loss_heldout": _LOSS,
        "diverged": {"type": "boolean"},
        "diverged_step": _STEP, "best_step": _STEP, "best_step_select": _STEP, "plateau_step": _STEP,
        "steps_done": _COUNT,
        "wall_time_s": _SECONDS, "compile_s": _SECONDS,
        "steps_per_s": {"type": "number"}, "tokens_per_s": {"type": "number"},
        "resumed_from": {"type": "array", "items": _COUNT},
        "telemetry": {"type": "object"},
        "files": {"type": "object", "additionalProperties": {"type": "string", "pattern": "^[0-9a-f]{64}$"}},
    },
}
_VALIDATOR = jsonschema.Draft202012Validator(BUNDLE_SCHEMA)


def read_bundle(path: Path) -> dict:
    """The bundle.json of a complete bundle, after checking every file it lists."""
    folder, summary = _read_manifest(path)
    _refuse_links(folder)
    for name in summary["files"]:
        _check_file(folder, summary, name)
    summary["path"] = str(folder)
    return summary


def check_collected(folder: Path, digest: str) -> None:
    """The bundle at `folder` is the one collection read (its bundle.json's content checksum is `digest`, from
    runs.csv): a reader downstream of the tables reads no bundle that collection did not check. Each data file it
    then reads is checked against this bundle.json (read_arrays, read_curve)."""
    folder, summary = _read_manifest(folder)
    if summary[SELF_KEY] != digest:
        raise BundleError(f"bundle {folder} is not the one the tables were collected from (its content checksum "
                          "differs from runs.csv's): collect again with `snakemake --forcerun collect_tables`")


def read_curve(folder: Path) -> pd.DataFrame:
    """curve.csv, after checking its hash against bundle.json."""
    return pd.read_csv(verified_file(folder, "curve.csv"))


def read_arrays(folder: Path, name: str) -> dict[str, np.ndarray]:
    """telemetry.npz or attention.npz as plain arrays, hash-checked, never unpickled."""
    with np.load(verified_file(folder, name), allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


def verified_file(folder: Path, name: str) -> Path:
    """The path of one listed bundle file whose sha256 matches bundle.json."""
    folder, summary = _read_manifest(folder)
    if name not in summary["files"]:
        raise BundleError(f"bundle {folder} does not list {name}; delete the folder and rerun that cell")
    return _check_file(folder, summary, name)


def _read_manifest(path: Path) -> tuple[Path, dict]:
    path = Path(path)
    folder = path.parent if path.name == BUNDLE_FILE else path
    summary_file = folder / BUNDLE_FILE
    if summary_file.is_symlink():
        raise _link_error(folder, BUNDLE_FILE)
    if not summary_file.is_file():
        raise BundleError(f"missing bundle file {summary_file}; rerun that cell (snakemake will)")
    try:
        summary = json.loads(summary_file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise BundleError(f"corrupt bundle file {summary_file}: {err}; delete the folder and rerun") from None
    if not isinstance(summary, dict):
        raise BundleError(f"corrupt bundle file {summary_file}: not a JSON object; delete the folder and rerun")
    missing = [key for key in REQUIRED_KEYS if key not in summary]
    if missing:
        raise BundleError(f"bundle file {summary_file} lacks {', '.join(missing)}; delete the folder and rerun")
    if summary[SELF_KEY] != content_digest(summary):
        raise BundleError(f"bundle file {summary_file} was changed after training: its content no longer matches "
                          f"the checksum the trainer recorded ({SELF_KEY}); delete {folder} and rerun that cell")
    wrong = next(iter(sorted(_VALIDATOR.iter_errors(summary), key=lambda e: list(e.absolute_path))), None)
    if wrong is not None:
        field = ".".join(str(p) for p in wrong.absolute_path) or "(top level)"
        shown = repr(wrong.instance) if len(repr(wrong.instance)) <= 60 else f"{repr(wrong.instance)[:60]}…"
        raise BundleError(f"bundle file {summary_file}: field {field} is {shown}, which is wrong ({wrong.message}"
                          f"{'' if len(wrong.message) < 120 else '…'}); delete the folder and rerun that cell")
    short = _cut_short(summary)
    if short:
        raise BundleError(f"bundle file {summary_file}: {short}; delete the folder and rerun that cell")
    files = summary["files"]
    outside = [name for name in files if not manifest_name_is_inside(name)]
    if outside:
        raise BundleError(f"bundle file {summary_file} lists paths outside its folder ({', '.join(outside)}); "
                          "a bundle may only name its own files: delete the folder and rerun")
    unlisted = [name for name in DATA_FILES if name not in files]
    if unlisted or not any(name.startswith("params/") for name in files):
        raise BundleError(f"bundle file {summary_file} does not list {', '.join(unlisted) or 'params/'}; "
                          "delete the folder and rerun")
    return folder, summary


def _cut_short(summary: dict) -> str:
    """Why a bundle's steps do not add up to a finished cell ('' when they do): a cell that did not diverge ran to
    its ceiling (train.steps) or stopped where its plateau rule fired, never past the ceiling."""
    done, steps = summary.get("steps_done"), ((summary.get("config") or {}).get("train") or {}).get("steps")
    if summary.get("diverged") or not isinstance(done, int) or not isinstance(steps, int):
        return ""
    stopped = summary.get("plateau_step")
    if done > steps:
        return f"steps_done {done:,} is past train.steps {steps:,}"
    if stopped is None and done != steps:
        return (f"steps_done {done:,} of train.steps {steps:,}, with no plateau stop and no divergence: a cell cut "
                "short")
    if stopped is not None and done != stopped:
        return f"steps_done {done:,} is not the plateau stop at step {stopped:,}"
    return ""


def _refuse_links(folder: Path) -> None:
    """No symbolic link anywhere inside the bundle (listed or not)."""
    for root, dirs, files in os.walk(folder):  # os.walk does not descend into linked folders
        for name in sorted(dirs + files):
            if os.path.islink(os.path.join(root, name)):
                raise _link_error(folder, Path(root, name).relative_to(folder).as_posix())


def _link_error(folder: Path, name: str) -> BundleError:
    return BundleError(f"bundle {folder} holds a symbolic link ({name}); a bundle's files must be its own, "
                       f"not links out of it: delete {folder} and rerun that cell")


def _check_file(folder: Path, summary: dict, name: str) -> Path:
    file = folder / name
    parts = Path(name).parts
    for depth in range(1, len(parts) + 1):  # the file and every folder between it and the bundle
        if folder.joinpath(*parts[:depth]).is_symlink():
            raise _link_error(folder, "/".join(parts[:depth]))
    if not file.is_file():
        raise BundleError(f"missing bundle file {file}; delete {folder} and rerun")
    if sha256_file(file) != summary["files"][name]:
        raise BundleError(f"corrupt bundle file {file} (sha256 differs from bundle.json); delete {folder} and rerun")
    return file
