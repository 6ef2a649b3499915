"""What the planner's parts share: the names of the built-in studies it plans, how a value becomes one shell
word, the files of contract tables, the bundle folders of cells and a training job's declared memory."""

from __future__ import annotations

import shlex

from attnlab.core import studies as studies_mod
from attnlab.core.config import to_json
from attnlab.pipeline.ground import contract, paths

TRAIN_RULE = "train_cell"
LADDER = studies_mod.LADDER
TWICE_THE_HEADS = studies_mod.TWICE_THE_HEADS
WITHOUT_POSITIONS = "positions"  # forgetting attention without position embeddings, in a build with them
SLAY_FEATURES = contract.SLAY_FEATURES  # SLAY at fewer and at more random features than its default
# the studies whose cells' table (runs_<name>) a row reads
LEDGER_STUDIES = (TWICE_THE_HEADS, WITHOUT_POSITIONS, *SLAY_FEATURES)
COMPOSABILITY = "composability"


def quoted(value) -> str:
    """A JSON value as one shell word."""
    return shlex.quote(to_json(value))


def tables(*names: str) -> list[str]:
    """Every file of these contract tables, under results/tables."""
    return [str(paths.TABLES / file) for name in names for file in contract.files(name)]


def folder_mem_mb(sliced: dict, wildcards=None, attempt: int = 1) -> int:
    """Memory of one training process for the cells of one config slice, from its attention's size (Snakemake
    passes a resource function its `wildcards` and `attempt` by name)."""
    m, t = sliced["model"], sliced["train"]
    attention_bytes = 4 * t["batch_size"] * m["heads"] * m["block_size"] ** 2 * m["layers"]
    return int(1000 + 24 * attention_bytes / 2**20) * attempt


def bundles(keys) -> list[str]:
    """The bundle folders of these cells, each once, in order (a shared cell lives in its owner's folder)."""
    return list(dict.fromkeys(str(paths.cell_bundle(key)) for key in keys))
