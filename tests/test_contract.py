"""The table contract is the one place table names, columns, the baseline, the thresholds and A³'s gate live.

Two halves: a scan of every pipeline and core module for a second definition
of what the contract owns (a baseline, a table-name list, a threshold, σ(3)),
and a collection over synthetic bundles of every variant whose tables must be
exactly the contract's: the files the collect step writes, and their columns.
"""

from __future__ import annotations

import ast
import re
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from attnlab.core.bundle_format import BUNDLE_FILE, cell_dir, sealed, sha256_file
from attnlab.core.config import load_config
from attnlab.pipeline import claims
from attnlab.pipeline.ground import contract
from attnlab.pipeline.ground.grid import grid
from attnlab.pipeline.tables import collect
from conftest import REPO

SRC = REPO / "src" / "attnlab"
# What the contract owns, by the names it or an earlier copy gave it.
OWNED = {"BASELINE", "A3_GATE_INIT", "GATE_INIT", "A3_INIT_INVERSE_TEMPERATURE", "SHARP_BELOW", "DIFFUSE_ABOVE",
         "SHARE_SHARP", "SHARE_DIFFUSE", "SEED_MEAN_OVER_LAYERS", "SEED_MEAN", "TEMPERATURE_ARMS", "PAIRED_COLUMNS",
         "COMPOSABILITY_CHECKS", "TABLE_NAMES", "TABLE_FILES", "COLLECTED", "LEDGER_COLUMNS"}
# Where a fact the contract re-exports is defined, because the trainer uses it too (training never reads the
# pipeline): b_g = 3 and its sigmoid in core.constants, the entropy thresholds in core.telemetry_stats.
# Facts the trainer needs too live in core, and the contract re-exports them.
DEFINED_IN_CORE = {"core/constants.py": {"A3_INIT_INVERSE_TEMPERATURE", "sigma(3)"},
                   "core/telemetry_stats.py": {"SHARP_BELOW", "DIFFUSE_ABOVE"},
                   "core/variants.py": {"BASELINE", "the baseline variant"}}
MIN_NAME_LIST = 5  # a literal list of this many table names is a second table list (a figure's inputs are fewer)
VARIANTS = ("softmax", "yat", "yat_b", "a3", "yat_exp", "yat_b_exp", "softmax_t", "a3_heads", "softpick")
KERNELS = ("yat", "yat_b", "yat_exp", "yat_b_exp")
GATED = ("a3", "a3_heads")


# ---- one definition


def second_definitions(source: str) -> list[tuple[str, int]]:
    """(what, line) for every fact of the contract this module's source defines again."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n.id for t in targets for n in ([t] if isinstance(t, ast.Name) else getattr(t, "elts", []))
                     if isinstance(n, ast.Name)]
            found += [(name, node.lineno) for name in names if name in OWNED]
            if names and isinstance(node.value, ast.Constant) and node.value.value == contract.BASELINE:
                found.append(("the baseline variant", node.lineno))
        elif isinstance(node, ast.Call) and _sigmoid_of_3(node):
            found.append(("sigma(3)", node.lineno))
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            listed = [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in contract.TABLES]
            if len(listed) >= MIN_NAME_LIST:
                found.append(("a list of table names", node.lineno))
        elif isinstance(node, ast.Dict):
            files = [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)
                     and v.value.endswith(".csv") and v.value[:-4] in contract.TABLES]
            if len(files) >= 2:
                found.append(("table file names", node.lineno))
    return found


def _sigmoid_of_3(call: ast.Call) -> bool:
    """exp(-3) (as in 1 / (1 + exp(-3))), or sigmoid(3) / expit(3)."""
    name = getattr(call.func, "attr", getattr(call.func, "id", None))
    if len(call.args) != 1:
        return False
    try:
        value = ast.literal_eval(call.args[0])
    except ValueError:
        return False
    return (name == "exp" and value == -3) or (name in ("sigmoid", "expit") and value == 3)


@pytest.mark.parametrize("source,what", [
    ('BASELINE = "softmax"\n', "BASELINE"),
    ('REFERENCE_VARIANT = "softmax"\n', "the baseline variant"),
    ("import numpy as np\nGATE = float(1.0 / (1.0 + np.exp(-3.0)))\n", "sigma(3)"),
    ("import math\ndef f(t):\n    return t * (1 / (1 + math.exp(-3)))\n", "sigma(3)"),
    ("from scipy.special import expit\nG = expit(3)\n", "sigma(3)"),
    ('NAMES = ("runs", "contest", "lr_sweep", "params", "score_scale")\n', "a list of table names"),
    ('FILES = {"runs": "runs.csv", "contest": "contest.csv"}\n', "table file names"),
    ("SHARP_BELOW = 0.3\n", "SHARP_BELOW"),
    ('TABLE_NAMES = ["runs"]\n', "TABLE_NAMES"),
])
def test_the_scan_finds_a_second_definition(source, what):
    assert what in [w for w, _ in second_definitions(source)]


def test_the_scan_leaves_uses_of_the_contract_alone():
    source = ("from attnlab.pipeline.ground.contract import BASELINE, A3_GATE_INIT\n"
              "from attnlab.pipeline.ground.contract import SEED_MEAN_OVER_LAYERS as SEED_MEAN\n"
              'shown = {}\nshown[f"vs {BASELINE}"] = A3_GATE_INIT * 2\n'
              'FIGURE_TABLES = ("runs", "contest", "best_lr")\nx = np.exp(-3.5)\nVARIANT = "a3"\n')
    assert second_definitions(source) == []


def test_no_pipeline_or_core_module_defines_what_the_contract_owns():
    problems = []
    for path in sorted((SRC / "pipeline").rglob("*.py")) + sorted((SRC / "core").rglob("*.py")):
        where = path.relative_to(SRC).as_posix()
        if where == "pipeline/ground/contract.py":
            continue
        allowed = DEFINED_IN_CORE.get(where, set())
        problems += [f"{where}:{line} defines {what}" for what, line in second_definitions(path.read_text())
                     if what not in allowed]
    assert not problems, "read these from attnlab.pipeline.ground.contract instead: " + "; ".join(problems)


def test_the_contract_re_exports_the_trainers_constants_unchanged():
    from attnlab.core import constants, telemetry_stats

    assert contract.A3_GATE_INIT == constants.A3_INIT_INVERSE_TEMPERATURE == pytest.approx(1 / (1 + np.exp(-3)))
    assert (contract.SHARE_SHARP, contract.SHARE_DIFFUSE) == (f"share_below_{telemetry_stats.SHARP_BELOW:g}",
                                                              f"share_above_{telemetry_stats.DIFFUSE_ABOVE:g}")


# Table names that are also the name of a study or a folder (results/runs, the contest, the ladder, ...): code
# that names the study is not naming the table.
ALSO_STUDIES = {"runs", "contest", "study", "ladder", "composability"}


def table_names_spelled_in(text: str) -> list[str]:
    """Contract table names written as a quoted string (alone or as a file name) in a piece of code; a rule's log
    file (paths.log("<rule>")) is named by its rule, not by a table."""
    text = re.sub(r"""log\(["'][a-z0-9_]+["']""", "", text)
    found = re.findall(r"""["']([a-z0-9_]+)(?:\.(?:csv|md|tex|json))?["']""", text)
    return sorted({name for name in found if name in contract.TABLES and name not in ALSO_STUDIES})


def test_the_rule_files_and_the_planning_name_no_table_but_through_the_contract():
    """Which tables a rule writes is the contract's (contract.COLLECTED, contract.written_by): the rule files and
    the planning never spell a table's name."""
    ground = REPO / "src" / "attnlab" / "pipeline" / "ground"
    planning = [ground / f"{name}.py" for name in ("paths", "grid", "contest_grid", "rounds", "sweep_extension",
                                                    "bundle_reader", "build_manifest", "printer", "figure_catalog")]
    places = [REPO / "Snakefile", *(REPO / "workflow" / "rules").glob("*.smk"),
              *(REPO / "src" / "attnlab" / "pipeline" / "plan").glob("*.py"), *planning]
    assert {str(p.relative_to(REPO)): table_names_spelled_in(p.read_text()) for p in places
            if table_names_spelled_in(p.read_text()) and p.name != "figure_catalog.py"} == {}
    assert table_names_spelled_in('x = paths.TABLES / "ladder_seeds.csv"') == ["ladder_seeds"]
    assert contract.files("runs") == ["runs.csv"]
    assert contract.files("contest") == ["contest.csv", "contest.md", "contest.tex"]


# ---- every table the collect step writes is the contract's


def synthetic_bundle(root: Path, variant: str, lr: float, seed: int) -> Path:
    """A whole bundle (every listed file hashed) with everything any table reads from a cell of `variant`."""
    layers, heads, T, rng = 2, 2, 4, np.random.default_rng(seed * 100 + VARIANTS.index(variant))
    folder = cell_dir(root, variant, lr, seed)
    (folder / "params").mkdir(parents=True)
    (folder / "params" / "weights.bin").write_bytes(b"\x01" * 16)
    pd.DataFrame({"step": [0, 10], "train_loss": [np.nan, 2.5], "val_loss": [4.2, 2.6], "elapsed_s": [0.0, 0.1],
                  "val_loss_select": [4.21, 2.61], "val_loss_report": [4.19, 2.59]}).to_csv(folder / "curve.csv",
                                                                                           index=False)
    np.savez(folder / "telemetry.npz", max_score=np.ones((1, layers)), mass=rng.random((1, 8)),
             correct=rng.random((1, 8)) > 0.5)
    causal = np.tril(rng.random((1, layers, heads, T, T)) + 0.1)
    np.savez(folder / "attention.npz", steps=np.array([0]),
             weights=(causal / causal.sum(-1, keepdims=True)).astype(np.float16))
    grid_of = lambda base: [[base + 0.1 * (layer + head) for head in range(heads)] for layer in range(layers)]  # noqa: E731
    telemetry = {"max_score_per_layer": [5.0, 7.0], "mean_max_score_per_layer": [4.0, 6.0],
                 "entropy": {"mean": 0.6, "share_sharp": 0.1, "share_diffuse": 0.3,
                             "mean_per_layer_head": grid_of(0.5), "mean_per_layer": [0.55, 0.65]},
                 "first_key_weight_per_layer_head": grid_of(0.1), "sink_rate": 0.25, "negative_mass_share": 0.0,
                 "activation_kurtosis": 4.0, "activation_max": 12.0}
    summary = {"variant": variant, "lr": lr, "seed": seed, "n_params": 100 + len(variant),
               "config": {"name": "contract", "variant": variant, "lr": lr, "seed": seed},
               "provenance": {"code_fingerprint": "c0de"}, "best_val_loss": 2.6 - 0.01 * seed + 0.001 * len(variant),
               "best_val_loss_select": 2.61 - 0.01 * seed + 0.001 * len(variant),
               "best_val_loss_heldout": 2.59 - 0.01 * seed + 0.001 * len(variant), "best_step_select": 10,
               "final_val_loss": 2.65, "best_val_bpc": 3.75, "diverged": False, "diverged_step": None,
               "wall_time_s": 0.2, "steps_per_s": 100.0, "telemetry": telemetry,
               "val_loss_at_context": {"1": 2.6, "2": 2.7 + 0.01 * seed, "4": 2.9}}
    summary["config"]["model"] = {"block_size": T}
    if variant in KERNELS:
        telemetry["mass_auroc"] = 0.5
        summary["normswap"] = {"native_loss": 2.6, "swapped_loss": 2.7, "native_normaliser": "l1",
                               "swapped_to": variant + "_twin", "swapped_normaliser": "softmax"}
    if variant in GATED:
        telemetry.update(a3_gate_mean=grid_of(0.9), a3_gate_std=grid_of(0.1), a3_bias_mean=grid_of(0.0),
                         a3_bias_std=grid_of(0.2))
    if variant in ("yat_b", "softmax_t"):
        summary["learned"] = {"b": grid_of(0.7)}
    summary["files"] = {name: sha256_file(folder / name) for name in ("curve.csv", "telemetry.npz",
                                                                      "attention.npz", "params/weights.bin")}
    (folder / BUNDLE_FILE).write_text(json.dumps(sealed(summary)))
    return folder


@pytest.fixture(scope="module")
def collected(tmp_path_factory) -> Path:
    """Every collected table of a grid of the posts' eight variants and one catalogued (softpick), two sweep LRs
    and two contest seeds."""
    cfg = load_config(REPO / "config" / "smoke.yaml")
    cfg.update(variants=list(VARIANTS), sweep={"lrs": [3e-3, 1e-2], "seed": 0},
               contest={"lr": {v: 3e-3 for v in VARIANTS}, "seeds": [0, 1]})
    spec = grid(cfg)
    root = tmp_path_factory.mktemp("contract")
    bundles = [synthetic_bundle(root / "runs", v, lr, s) for v, lr, s in spec.cells]
    collect(bundles, json.loads(json.dumps(spec.to_json())), root / "tables")
    return root / "tables"


def test_the_collect_step_writes_exactly_the_contracts_files(collected):
    written = sorted(p.name for p in collected.iterdir())
    assert written == sorted(f for name in contract.COLLECTED for f in contract.files(name))


@pytest.mark.parametrize("name", contract.COLLECTED)
def test_every_collected_table_has_the_contracts_columns_and_rows(collected, name):
    table = pd.read_csv(collected / f"{name}.csv")
    assert len(table), f"the synthetic grid should give {name} rows, or this test checks nothing"
    if contract.TABLES[name].open:
        assert set(contract.columns(name)) <= set(table.columns)
    else:
        assert list(table.columns) == contract.columns(name)


def test_the_ledger_has_the_contracts_columns(collected):
    ledger = claims.ledger(claims.load_tables(collected))
    from attnlab.pipeline.claims.ladder_rows import TRENDS

    assert list(ledger.columns) == contract.columns("ledger") and len(ledger) == len(claims.CHECKS) + len(TRENDS)
    assert (ledger.protocol == "contract").all()


def test_a_table_that_leaves_its_contract_stops_the_collection():
    from attnlab.pipeline.tables.collect import conforms

    with pytest.raises(ValueError, match="table contest has the columns .* the table contract"):
        conforms("contest", pd.DataFrame(columns=contract.columns("contest")[:-1]))
    conforms("runs", pd.DataFrame([{c: 1 for c in contract.columns("runs") + ["telemetry.max_score"]}]))
