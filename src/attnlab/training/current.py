"""Is a cell's bundle already what training it again would write? Then a pack leaves it as it is.

A pack's job runs again whenever one of its cells is missing or its params change (a seed added, the
variant's code edited). Its cells whose bundles are whole and were trained with this very config slice, cell
and code fingerprint, with this process's CPU pool, are skipped, so adding a seed trains that seed alone. Training
is deterministic for one instruction set and pool, so skipping changes no number; a bundle that is anything else
(one trained with another pool among them) is retrained.
"""

from __future__ import annotations

import json
from pathlib import Path

from attnlab.core.bundle_format import (BUNDLE_FILE, DATA_FILES, SELF_KEY, content_digest, manifest_name_is_inside,
                                        sha256_file)
from attnlab.core.cell_key import CellKey
from attnlab.training.runtime import cpu_pool
from attnlab.training.summary import bundle_config


def current_bundle(folder: Path, cfg: dict, key: CellKey, code_fingerprint: str) -> bool:
    """True when `folder` holds a whole bundle of this cell, trained from `cfg` by this code."""
    summary_file = Path(folder) / BUNDLE_FILE
    if not summary_file.is_file() or summary_file.is_symlink():
        return False
    try:
        summary = json.loads(summary_file.read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(summary, dict) or summary.get(SELF_KEY) != content_digest(summary):
        return False
    provenance, files = summary.get("provenance"), summary.get("files")
    if not isinstance(provenance, dict) or not isinstance(files, dict):
        return False
    # as the trainer writes it: plain JSON (bundle_format.sealed)
    expected_config = json.loads(json.dumps(bundle_config(cfg, key)))
    if summary.get("config") != expected_config or provenance.get("code_fingerprint") != code_fingerprint:
        return False
    device = provenance.get("device")
    if not isinstance(device, dict) or device.get("cpu_pool") != cpu_pool():
        return False
    if any(name not in files for name in DATA_FILES) or not any(str(n).startswith("params/") for n in files):
        return False
    return all(_intact(Path(folder), name, digest) for name, digest in files.items())


def _intact(folder: Path, name: str, digest) -> bool:
    file = folder / name
    if not manifest_name_is_inside(name) or file.is_symlink() or not file.is_file():
        return False
    return sha256_file(file) == digest
