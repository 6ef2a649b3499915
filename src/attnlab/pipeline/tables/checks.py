"""Before any table is written: each bundle is whole, is the cell its folder names, is in the grid, and is fresh.

A missing or corrupt bundle stops the collection with its path (the bundle
reader); so does a bundle in another cell's folder, a cell collected twice, or
a cell outside the grid. A stale bundle too: given the grid's expectation (the
config slice and code fingerprint each cell must have been trained with, which
the Snakefile writes), a bundle trained by other code or another config (by
hand, or before Snakemake's records in .snakemake/ were lost) is named with
what differs and how to retrain it. An LR is its exact text (format_lr).
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

from attnlab.core.bundle_format import BundleError, format_lr
from attnlab.core.config import variant_slice
from attnlab.core.config_types import PACK_MODES
from attnlab.pipeline.ground.bundle_reader import read_bundle
from attnlab.pipeline.ground.contest_grid import ContestGrid

RERUN_COMMAND_ENV = "ATTNLAB_SNAKEMAKE_COMMAND"  # the Snakemake command line of this build, for the fix
CELL_KEYS = ("variant", "lr", "seed")  # what bundle.json's config adds to the slice the cell was trained with
SHOWN_STALE = 5  # stale cells described one by one; the rest are counted


def cell_of(bundle: dict) -> tuple[str, str, int]:
    """(variant, LR text, seed): a bundle's cell, its LR as the exact text that names its folder."""
    return bundle["variant"], format_lr(bundle["lr"]), int(bundle["seed"])


def check_cells(bundles: list[dict]) -> None:
    """Each bundle is the cell its folder (<variant>/lr<lr>/seed<seed>) names, and each cell is collected once."""
    seen = {}
    for b in bundles:
        folder = Path(b["path"])
        cell = cell_of(b)
        parts = folder.parts[-3:]
        if len(parts) == 3 and parts[1].startswith("lr") and parts[2].startswith("seed"):
            try:
                named = (parts[0], format_lr(float(parts[1][2:])), int(parts[2][4:]))
            except ValueError:
                named = None
            if named != cell:
                raise BundleError(
                    f"bundle {folder} holds {cell[0]} lr={cell[1]} seed={cell[2]}, not the cell its "
                    "folder names (a bundle copied or written into another cell's folder); delete it and rerun")
        if cell in seen:
            raise BundleError(f"bundles {seen[cell]} and {folder} are the same cell {cell[0]} "
                              f"lr={cell[1]} seed={cell[2]}; keep one")
        seen[cell] = folder


def pack_mode(bundle: dict) -> str:
    """How a bundle's cell was trained (provenance.pack.mode): sequential, or vmap. A bundle with no pack record
    was trained alone, which is the sequential numerics."""
    provenance = bundle.get("provenance")
    pack = provenance.get("pack") if isinstance(provenance, dict) else None
    if pack is None:
        return PACK_MODES[0]
    mode = pack.get("mode") if isinstance(pack, dict) else None
    if mode not in PACK_MODES:
        raise BundleError(f"bundle {bundle['path']}/bundle.json has provenance.pack.mode {mode!r}, not one of "
                          f"{', '.join(PACK_MODES)}; delete the folder and rerun that cell")
    return mode


def cpu_pool(bundle: dict) -> str:
    """The intra-op thread pool a CPU-trained bundle's XLA had (provenance.device.cpu_pool), as text: 'unset'
    for one trained before the pool was fixed (as many threads as its CPUs), '' when it ran on an accelerator."""
    provenance = bundle.get("provenance")
    device = provenance.get("device") if isinstance(provenance, dict) else None
    if not isinstance(device, dict) or device.get("platform", "cpu") != "cpu":
        return ""
    pool = device.get("cpu_pool")
    return "unset" if pool is None else str(pool)


def _one_numerics(bundles: list[dict], value_of, what: str, why: str, fix) -> None:
    """Refuse bundles that differ in an execution setting which changes the numbers but names no folder."""
    by_value: dict[str, list[str]] = {}
    for b in bundles:
        by_value.setdefault(value_of(b), []).append(str(b["path"]))
    if len(by_value) > 1:
        (fewer, _), (more, _) = sorted(by_value.items(), key=lambda item: (len(item[1]), item[0]))[:2]
        counts = ", ".join(f"{len(f)} {value or 'on an accelerator'}" for value, f in sorted(by_value.items()))
        groups = "; ".join(f"{value or 'on an accelerator'}: {_folders_text(folders)}"
                           for value, folders in sorted(by_value.items(), key=lambda item: (len(item[1]), item[0])))
        raise BundleError(f"the bundles compared here were trained with more than one {what} ({counts}); {why}, "
                          f"so the comparison would mix two numerics. The cells of each: {groups}. "
                          f"{fix(fewer, more)}")


def _folders_text(folders: list[str]) -> str:
    return ", ".join(folders[:SHOWN_STALE]) + (f" and {len(folders) - SHOWN_STALE} more"
                                               if len(folders) > SHOWN_STALE else "")


def check_one_pack_mode(bundles: list[dict]) -> None:
    """Every bundle compared together was trained in one pack mode.

    A vmapped cell is close to the cell trained alone, not identical (a batched matmul sums in another order,
    and the Yat kernels amplify rounding over a curve, to more than their seed spread on a CPU). The mode is
    an execution setting, not part of a cell's folder, so a workspace trained partly in each would compare
    two numerics without saying so; it is refused instead.
    """
    _one_numerics(bundles, pack_mode, "pack mode",
                  "a vmapped cell's numbers are close to the cell trained alone, not the same",
                  lambda fewer, more: (f"Delete those folders and build again with execution.pack_mode: {more} (or "
                                       f"delete the others and use {fewer})"))


def check_one_cpu_pool(bundles: list[dict]) -> None:
    """Every CPU-trained bundle compared together had one XLA thread pool (attnlab.training.runtime).

    The pool decides how a matrix product's sums are split, and the Yat kernels amplify that rounding over a
    curve past their seed spread; a training job fixes it to its declared threads, so bundles differ here only
    when some were trained before the pool was fixed, with another `threads`, or on an accelerator.
    """
    _one_numerics(bundles, cpu_pool, "CPU thread pool (or device)",
                  "the pool sets the order of a matrix product's sums, which yat and yat_b amplify",
                  lambda fewer, more: ("A training job's pool is its rule's threads: build again with every "
                                       "training rule at one thread count (a job whose threads changed trains its "
                                       "cells again), or delete the folders of the pool you do not want"))


def check_in_grid(bundles: list[dict], grid: ContestGrid | dict) -> None:
    """Only the grid's cells (attnlab.pipeline.ground.grid's `cells`: the sweep and the contest) are collected."""
    cells = {(v, format_lr(lr), int(s)) for v, lr, s in ContestGrid.of(grid).cells}
    for b in bundles:
        if cell_of(b) not in cells:
            raise BundleError(f"bundle {b['path']} is {b['variant']} lr={format_lr(b['lr'])} seed={b['seed']}, "
                              "which is not a cell of this config's grid; remove it from the inputs")


def check_expected(bundles: list[dict], expected: dict) -> None:
    """Each bundle was trained with the config slice and the code fingerprint the grid expects for its cell.

    `expected` is {"code": {variant: fingerprint}, "slices": {folder: config slice}, "rule": name}: the
    slice of the cells under each folder (results/runs, or one composability folder), the code of each
    variant (attnlab.core.fingerprint.training_fingerprint) and the rule that trains them (for the fix;
    train_cell when absent; null when packs train them, whose fix forces the stale folders themselves). A stale
    bundle stops the collection.
    """
    code, slices = expected.get("code", {}), {_place(root): s for root, s in expected.get("slices", {}).items()}
    stale = []
    for b in bundles:
        folder = Path(b["path"])
        above = folder.absolute().parents
        root = _place(above[2]) if len(above) > 2 else None  # <root>/<variant>/lr<lr>/seed<seed>
        if root not in slices:
            raise BundleError(f"bundle {folder} is not in a folder this grid trains into "
                              f"({', '.join(sorted(expected.get('slices', {})))}); remove it from the inputs")
        if b["variant"] not in code:
            raise BundleError(f"bundle {folder} is of variant {b['variant']!r}, which this grid does not train; "
                              "remove it from the inputs")
        differences = []
        recorded = b.get("provenance", {}).get("code_fingerprint") if isinstance(b.get("provenance"), dict) else None
        if recorded != code[b["variant"]]:
            differences.append(f"code fingerprint {recorded} in the bundle, {code[b['variant']]} expected")
        config = b["config"] if isinstance(b["config"], dict) else {}
        differences += _slice_differences({k: v for k, v in config.items() if k not in CELL_KEYS},
                                          _jsonable(variant_slice(slices[root], b["variant"])))
        if differences:
            stale.append((folder, b, differences))
    if stale:
        raise BundleError(_stale_message(stale, expected.get("rule", "train_cell")))


def check_bundles(bundle_dirs: list[Path], expected: dict) -> list[dict]:
    """Read and check bundles that may span several grids of folders (the composability runs, one grid
    per kv<k>-<impl>): each is whole, is the cell its folder names, appears once in its grid and is
    what `expected` says. Returns the bundles."""
    bundles = [read_bundle(Path(d)) for d in bundle_dirs]
    by_root: dict[Path, list[dict]] = {}
    for b in bundles:
        by_root.setdefault(_place(Path(b["path"]).absolute().parent.parent.parent), []).append(b)
    for same_grid in by_root.values():
        check_cells(same_grid)
    check_one_pack_mode(bundles)
    check_one_cpu_pool(bundles)
    check_expected(bundles, expected)
    return bundles


def read_expected(path: Path) -> dict:
    """The expectation file the Snakefile writes (see check_expected)."""
    try:
        expected = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise BundleError(f"cannot read the grid's expectation {path} ({err}); run snakemake again, "
                          "which writes it") from None
    if not (isinstance(expected, dict) and isinstance(expected.get("code"), dict)
            and isinstance(expected.get("slices"), dict)):
        raise BundleError(f"{path} is not a grid expectation (a JSON object with 'code' and 'slices'); "
                          "run snakemake again, which writes it")
    return expected


def _place(path) -> Path:
    """A folder as one spelling, whatever the path it was named by (relative, through links)."""
    return Path(path).resolve()


def _jsonable(obj):
    """The value as the trainer received it: through JSON (tuples become lists, keys strings)."""
    return json.loads(json.dumps(obj))


def _slice_differences(found: dict, wanted: dict, prefix: str = "") -> list[str]:
    """'train.steps 40 in the bundle, 20 expected' for every key whose value differs (dotted names)."""
    differences = []
    for key in sorted(set(found) | set(wanted), key=str):
        name = f"{prefix}{key}"
        have, want = found.get(key, _ABSENT), wanted.get(key, _ABSENT)
        if isinstance(have, dict) and isinstance(want, dict):
            differences += _slice_differences(have, want, f"{name}.")
        elif have != want or isinstance(have, bool) != isinstance(want, bool):
            differences.append(f"{name} {_shown(have)} in the bundle, {_shown(want)} expected")
    return differences


class _Absent:
    def __repr__(self):
        return "absent"


_ABSENT = _Absent()


def _shown(value) -> str:
    return "absent" if value is _ABSENT else json.dumps(value)


def _stale_message(stale: list, rule: str | None) -> str:
    described = []
    for folder, b, differences in stale[:SHOWN_STALE]:
        shown = differences[:3] + ([f"{len(differences) - 3} more keys differ"] if len(differences) > 3 else [])
        described.append(f"{folder} ({b['variant']} lr={format_lr(b['lr'])} seed={b['seed']}): {', '.join(shown)}")
    more = f"; and {len(stale) - SHOWN_STALE} more" if len(stale) > SHOWN_STALE else ""
    folders = " ".join(shlex.quote(str(folder)) for folder, _, _ in stale)
    command = os.environ.get(RERUN_COMMAND_ENV)
    forced = rule or folders  # a pack's rule would retrain its other cells too: force the stale folders alone
    retrain_all = (f"`{command} --forcerun {forced}`" if command
                   else f"your snakemake command with `--forcerun {forced}` added")
    return (f"{len(stale)} bundle(s) were not trained with the code and config this grid expects: "
            f"{'; '.join(described)}{more}. They are stale (trained by other code or another config, by hand, or "
            f"before Snakemake's records in .snakemake/ were lost). Delete them and run snakemake again, which "
            f"retrains exactly those cells (rm -rf {folders}), or retrain them with {retrain_all} (a training job "
            f"leaves every current bundle as it is)")
