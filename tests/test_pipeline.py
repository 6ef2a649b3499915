"""The smoke DAG end to end through snakemake, and the paper grid's plan."""

from __future__ import annotations

import ast
import json
import re
import shlex
import shutil
from pathlib import Path

import pandas as pd
import pytest

import yaml

from attnlab.pipeline.ground import build_manifest
from conftest import REPO
from processes import run, snakemake
from workspace import WRITEUP_RULES, edited, make_workspace, plan, planned_cells, training_outputs


@pytest.fixture
def built(smoke_workspace):
    """The smoke config fully built once per session (conftest.smoke_workspace)."""
    return smoke_workspace


@pytest.mark.slow
def test_smoke_dag_produces_the_tables(built):
    tables = built / "results" / "tables"
    for name in ("contest", "lr_sweep", "params"):
        for ext in ("csv", "md", "tex"):
            assert (tables / f"{name}.{ext}").stat().st_size > 0
    # the optional tables the writeup may show are the ones this config makes: its micro-ladder's, and the step
    # timing of softmax and A3 that the compute-overhead row reads
    assert build_manifest.optional_tables(tables) == {"ladder", "ladder_seeds", "ladder_claims", "study_ladder",
                                                      "step_times"}
    times = pd.read_csv(tables / "step_times.csv")
    assert set(times.variant) == {"softmax", "a3"} and (times.seconds_per_step > 0).all()
    contest = pd.read_csv(tables / "contest.csv")
    assert list(contest.variant) == ["softmax", "yat", "yat_b", "a3"]
    assert (contest.n_seeds == 2).all()
    assert (contest.best_val_mean < 3.6).all(), "smoke runs should beat the initial loss"
    runs = pd.read_csv(tables / "runs.csv")
    assert not runs.duplicated(["variant", "lr", "seed"]).any()
    # the a3 contest LR is the sweep's best on the select half of the validation windows, chosen by the checkpoint
    sweep = runs[(runs.variant == "a3") & (runs.seed == 0)]
    best_lr = sweep.loc[sweep.best_val_loss_select.idxmin(), "lr"]
    assert float(contest.set_index("variant").loc["a3", "lr"]) == pytest.approx(best_lr)


@pytest.mark.slow
def test_smoke_dag_draws_every_figure_and_executes_the_writeup(built):
    figures = built / "results" / "figures"
    for name in ("loss_curves.png", "lr_sweep.png", "depth_grid.png", "training_maps.png",
                 "reading.gif", "score_orbit.gif", "scalars.png", "a3_gates.png", "entropy.png", "score_scale.png",
                 "mass_auroc.png"):
        assert (figures / name).stat().st_size > 1000, name
    html = (built / "results" / "writeup" / "writeup.html").read_text()
    assert "Claims ledger" in html and "data:image/gif" in html
    assert "Traceback" not in html and "Error" not in html.split("Claims ledger")[-1][:200]
    for name in ("score_scale", "mass_auroc", "entropy", "scalars", "a3_gates", "a3_init"):
        assert (built / "results" / "tables" / f"{name}.csv").is_file()


def edit_comments_and_docstrings(src: Path) -> dict[Path, str]:
    """Add a comment to every file under src/ and reword each Python module's docstring; return the originals."""
    originals = {}
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".py", ".yaml") or "__pycache__" in path.parts:
            continue
        text = path.read_text()
        originals[path] = text
        edited_text = text + "\n# a comment added by the rerun-matrix test\n"
        if path.suffix == ".py":
            tree = ast.parse(text)
            if ast.get_docstring(tree) is not None:
                first = tree.body[0].value
                line = text.splitlines(keepends=True)
                offset = sum(len(x) for x in line[: first.lineno - 1]) + first.col_offset
                quote = text[offset: offset + 3]
                assert quote in ('"""', "'''"), path
                edited_text = text[: offset + 3] + "Reworded. " + text[offset + 3:] + "\n# comment\n"
            else:
                edited_text = text + "\n# a comment added by the rerun-matrix test\n"
        path.write_text(edited_text)
    return originals


def restore(originals: dict[Path, str]) -> None:
    for path, text in originals.items():
        path.write_text(text)


@pytest.mark.slow
def test_comments_and_docstrings_anywhere_in_src_rerun_nothing(built, corpus_path):
    originals = edit_comments_and_docstrings(built / "src")
    try:
        assert len(originals) > 30
        assert plan(built, corpus=corpus_path) == {}
    finally:
        restore(originals)


BEHAVIOUR_EDIT = "\n\ndef _added_by_the_rerun_matrix_test():\n    return 1\n"


@pytest.mark.slow
@pytest.mark.parametrize("module,expected_rule", [
    ("pipeline/ground/bundle_reader.py", "collect_tables"),
    ("pipeline/tables/contest.py", "collect_tables"),
    ("pipeline/figures/lr_sweep.py", "figure_lr_sweep"),
    ("pipeline/claims/kernel_post.py", "writeup"),
    ("core/config.py", None),
])
def test_a_pipeline_side_edit_retrains_nothing(built, corpus_path, module, expected_rule):
    with edited(built / "src" / "attnlab" / module, BEHAVIOUR_EDIT):
        planned = plan(built, corpus=corpus_path)
    assert not training_outputs(planned), planned.keys()
    if expected_rule:
        assert expected_rule in planned
    if module.endswith("lr_sweep.py"):
        assert set(planned) == {"figure_lr_sweep"} | WRITEUP_RULES, planned.keys()


@pytest.mark.slow
def test_rewording_a_config_error_message_retrains_nothing(built, corpus_path):
    path = built / "src" / "attnlab" / "core" / "config.py"
    text = path.read_text()
    assert "pick one of config/*.yaml" in text
    path.write_text(text.replace("pick one of config/*.yaml", "choose a file from config/"))
    try:
        planned = plan(built, corpus=corpus_path)
    finally:
        path.write_text(text)
    assert not training_outputs(planned), planned.keys()


@pytest.mark.slow
def test_a_model_edit_retrains_every_cell(built, corpus_path):
    every = {(p.parts[-3], p.parts[-2][2:], p.parts[-1][4:])
             for p in (built / "results" / "runs").glob("*/lr*/seed*")}
    with edited(built / "src" / "attnlab" / "training" / "model.py", BEHAVIOUR_EDIT):
        planned = plan(built, corpus=corpus_path)
    cells = planned_cells(planned)
    # --summary plans what it can see before the checkpoints rerun: every cell but a3's 'auto' contest seed
    # and the LR its sweep added past its grid (sweep.extend), which the rerun extend_sweep and select_lr
    # checkpoints then add (their inputs change with the code too).
    grid = {"0.003", "0.01"}
    auto_only = {cell for cell in every if cell[0] == "a3" and (cell[2] != "0" or cell[1] not in grid)}
    # 8 sweep cells of the grid, 4 of them the contest's seed 0; a3's added LR; 4 seed 1
    assert len(every) == 13 and len(auto_only) == 2
    assert cells == every - auto_only
    assert "extend_sweep" in planned


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["a3", "softmax"])
def test_a_variant_edit_retrains_only_that_variants_cells(built, corpus_path, variant):
    with edited(built / "src" / "attnlab" / "training" / "attention" / f"{variant}.py", BEHAVIOUR_EDIT):
        planned = plan(built, corpus=corpus_path)
    cells = planned_cells(planned)
    assert cells and {v for v, _, _ in cells} == {variant}, cells
    assert "figure_score_orbit" not in planned, "the analytic figure reads no run"


@pytest.mark.slow
def test_raising_memory_plans_nothing_and_other_threads_retrain_that_pack_alone(built, corpus_path):
    """Memory is the machine's; a training job's threads are its cells' XLA pool, which their numbers depend on,
    so another thread count for one pack reruns that pack (its trainer retrains its cells at the new pool) and
    nothing else trains."""
    pack = "train_pack_softmax_runs_0"  # the smoke build trains in packs, one rule each
    assert (built / "results" / "logs" / "train" / "runs" / "softmax" / f"{pack}.log").is_file()
    result = snakemake(built, "--summary", "--configfile", "config/smoke.yaml", "--set-resources",
                       f"{pack}:mem_mb=9000", corpus=corpus_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "update pending" not in result.stdout
    planned = plan(built, corpus=corpus_path, extra=("--set-threads", f"{pack}=2"))
    assert {rule for rule in planned if rule.startswith("train_")} == {pack}, planned.keys()


@pytest.mark.slow
def test_editing_a_figure_setting_trains_nothing(built, corpus_path):
    cfg = yaml.safe_load((built / "config" / "smoke.yaml").read_text())
    cfg.setdefault("figures", {})["dpi"] = 81
    (built / "config" / "restyled.yaml").write_text(yaml.safe_dump(cfg))
    planned = plan(built, "config/restyled.yaml", corpus=corpus_path)
    assert not training_outputs(planned) and "collect_tables" not in planned, planned.keys()
    assert "figure_loss_curves" in planned and "writeup" in planned


@pytest.mark.slow
def test_choosing_the_printed_paper_reprints_only_the_writeup(built, corpus_path):
    if "writeup_pdf" not in WRITEUP_RULES:
        pytest.skip("no browser to print with: the build does not print the writeup here")
    cfg = yaml.safe_load((built / "config" / "smoke.yaml").read_text())
    assert "writeup" not in cfg, "the smoke build prints on the schema's default paper"
    cfg["writeup"] = {"paper": "letter"}
    (built / "config" / "letter.yaml").write_text(yaml.safe_dump(cfg))
    planned = plan(built, "config/letter.yaml", corpus=corpus_path)
    assert set(planned) == {"writeup_pdf"}, planned.keys()  # the page is the same: only its printing reruns
    assert planned["writeup_pdf"] == {"results/writeup/writeup.pdf"}


@pytest.mark.slow
def test_moving_the_corpus_trains_nothing(built, corpus_path, tmp_path):
    cfg = yaml.safe_load((built / "config" / "smoke.yaml").read_text())
    moved = tmp_path / "elsewhere.txt"
    moved.write_bytes(corpus_path.read_bytes())
    cfg["data"]["path"] = str(moved)
    (built / "config" / "moved.yaml").write_text(yaml.safe_dump(cfg))
    assert plan(built, "config/moved.yaml", corpus=corpus_path) == {}


@pytest.mark.slow
def test_a_built_workspace_plans_nothing(built, corpus_path):
    assert plan(built, corpus=corpus_path) == {}
    result = snakemake(built, "-n", "--configfile", "config/smoke.yaml", corpus=corpus_path)
    assert result.returncode == 0 and "Nothing to be done" in result.stdout + result.stderr


@pytest.mark.slow
def test_the_dry_run_bench_times_a_built_workspace(built, corpus_path):
    """benchmarks/dry_run.py prints medians beside Snakemake's floor; the dry run keeps its parse cache."""
    result = dry_run_bench(built, corpus_path, "--workdir", ".", "--configfile", "config/smoke.yaml", "--runs", "1")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert [line.split(":")[0][:14] for line in lines[:3]] == ["no-op `snakema"] * 2 + ["`snakemake --v"]
    assert "project over floor" in lines[3]
    facts = yaml.safe_load((built / ".snakemake" / "attnlab" / "code-facts.json").read_text())
    assert any(key.startswith("attnlab.training.model:") for key in facts["entries"])


@pytest.mark.slow
def test_the_dry_run_bench_refuses_an_unbuilt_workspace(tmp_path, corpus_path):
    ws = make_workspace(tmp_path)
    result = dry_run_bench(ws, corpus_path, "--configfile", "config/smoke.yaml", "--runs", "1")
    assert result.returncode != 0
    assert "not a built workspace" in result.stderr and "snakemake --cores all" in result.stderr


def dry_run_bench(ws: Path, corpus_path: Path, *args: str):
    return run([REPO / "benchmarks" / "dry_run.py", *args], cwd=ws,
               env={"ATTNLAB_CORPUS": corpus_path, "PYTHONPATH": ws / "src"})


@pytest.mark.slow
def test_paper_config_plans_the_published_grid(tmp_path, corpus_path):
    ws = make_workspace(tmp_path)
    planned = plan(ws, "config/paper.yaml", corpus=corpus_path)
    # 8 variants x 4 sweep LRs at seed 0, plus seeds 1, 2 of the five fixed-LR variants;
    # the other seeds of a3, softmax_t and a3_heads appear once their sweeps have picked their LRs.
    # Each 'auto' variant's contest is asked for on its own, so the plan shows every one's select_lr at once.
    assert len(training_outputs(planned)) == 32 + 5 * 2
    assert planned["select_lr"] == {f"results/selected_lr/{v}.json" for v in ("a3", "softmax_t", "a3_heads")}


# ---- the workflow written once, and the cells of a built workspace planned as they were built


def test_one_rule_trains_every_cell_and_no_rule_file_spells_a_results_path():
    files = [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]
    texts = {path.name: path.read_text() for path in files}
    # one trainer: the pack rules and, with execution.pack_size 1, train_cell (a pack of one), both in train.smk
    # (the step timing runs training-side code too, but trains no cell: it times steps, in timing.smk)
    timing = "python -m attnlab.training.step_timing"
    trainers = {name: text.count("python -m attnlab.training.") - text.count(timing) for name, text in texts.items()}
    assert {name: count for name, count in trainers.items() if count} == {"train.smk": 2}
    assert {name for name, text in texts.items() if timing in text} == {"timing.smk"}
    assert "attnlab.training.pack " in texts["train.smk"]
    assert [name for name, text in texts.items() if "rule train_cell:" in text] == ["train.smk"]
    literal = re.compile(r"""["']results/""")
    assert [name for name, text in texts.items() if literal.search(text)] == []
    assert "localrules:" not in texts["Snakefile"]


PACK_COMMAND = re.compile(r"--cell-config (\S+) --variant (\w+) ((?:--cell \S+ )+)--corpus \S+ --out-root (\S+) "
                          r".*--checkpoint-dir (\S+) ")


def planned_train_commands(ws: Path, configfile: str, corpus: Path) -> dict[str, str]:
    """Each cell's bundle folder -> the train command a dry run prints, its code fingerprint and log masked."""
    result = snakemake(ws, "-n", "-p", "--configfile", configfile, corpus=corpus)
    assert result.returncode == 0, result.stderr[-3000:]
    commands = {}
    for line in (result.stdout + result.stderr).splitlines():
        if "python -m attnlab.training.pack" in line:
            command = line.split("Shell command: ", 1)[-1].strip()
            command = re.sub(r"--code-fingerprint [0-9a-f]+ ", "--code-fingerprint {code} ", command)
            _, variant, listed, root, _ = PACK_COMMAND.search(command).groups()
            (cell,) = [word for word in listed.split() if word != "--cell"]  # one cell per job
            lr, seed = cell.split(",")
            commands[f"{root}/{variant}/lr{lr}/seed{seed}"] = re.sub(r"--log \S+$", "--log {log}", command)
    return commands


def one_cell_per_job(ws: Path, name: str) -> str:
    """The config `name` with execution.pack_size 1 (train_cell), under the workspace's config/."""
    cfg = yaml.safe_load((ws / "config" / f"{name}.yaml").read_text())
    cfg.setdefault("execution", {})["pack_size"] = 1
    (ws / "config" / f"{name}-cells.yaml").write_text(yaml.safe_dump(cfg))
    return f"config/{name}-cells.yaml"


@pytest.mark.parametrize("name", ["smoke", "default"])
@pytest.mark.slow
def test_the_contest_and_sweep_cells_are_planned_as_recorded(tmp_path, corpus_path, name):
    """Each cell's command (its config slice, folder, LR text, checkpoint root and the command itself) is the
    one recorded in tests/expected/train_commands.json, as built workspaces planned them: a change that moves
    any of these retrains every built cell, so it must be deliberate (and the record updated with it)."""
    recorded = json.loads((REPO / "tests" / "expected" / "train_commands.json").read_text())[name]
    cell = shlex.quote(json.dumps(recorded["cell_config"], sort_keys=True, separators=(",", ":")))
    expected = {out: recorded["command"].format(variant=variant, lr=lr, seed=seed, out=out, cell=cell,
                                                code="{code}", log="{log}")
                for out, variant, lr, seed in recorded["cells"]}
    ws = make_workspace(tmp_path)
    planned = planned_train_commands(ws, one_cell_per_job(ws, name), corpus_path)
    assert {out: command for out, command in planned.items() if out.startswith("results/runs/")} == expected


@pytest.mark.parametrize("name", ["smoke", "default"])
@pytest.mark.slow
def test_packs_train_the_recorded_cells_with_the_recorded_slices_and_folders(tmp_path, corpus_path, name):
    """In packs (the default) every recorded cell is trained with the same config slice, into the same folder,
    with the same checkpoint root, as one cell per job: packing them retrains nothing built either way."""
    recorded = json.loads((REPO / "tests" / "expected" / "train_commands.json").read_text())[name]
    result = snakemake(make_workspace(tmp_path), "-n", "-p", "--configfile", f"config/{name}.yaml", corpus=corpus_path)
    assert result.returncode == 0, result.stderr[-3000:]
    cells = {}
    for line in (result.stdout + result.stderr).splitlines():
        if "python -m attnlab.training.pack" in line:
            config, variant, listed, root, checkpoints = PACK_COMMAND.search(line).groups()
            assert json.loads(shlex.split(config)[0]) == recorded["cell_config"]
            assert checkpoints == "results/checkpoints"
            for lr, seed in (word.split(",") for word in listed.split() if word != "--cell"):
                cells[f"{root}/{variant}/lr{lr}/seed{seed}"] = (variant, lr, int(seed))
    assert cells == {out: (variant, lr, seed) for out, variant, lr, seed in recorded["cells"]}


# What every cell of the smoke build feeds: the contest's tables and the ladder study's. A test of what trains
# builds these alone; the figures and the writeup after them are rebuilt by the tests that read them.
CELL_TABLES = ("collect_tables", "results/tables/study_ladder.csv")


@pytest.mark.slow
def test_a_new_contest_seed_trains_that_seed_alone_in_its_pack(smoke_workspace, corpus_path, tmp_path):
    """The pack that gains the seed runs again; its trainer leaves every current bundle byte for byte as it was."""
    ws = Path(shutil.copytree(smoke_workspace, tmp_path / "ws", symlinks=True))
    cfg = yaml.safe_load((ws / "config" / "smoke.yaml").read_text())
    cfg["contest"]["seeds"] = [0, 1, 2]
    (ws / "config" / "seeds.yaml").write_text(yaml.safe_dump(cfg))
    results = ws / "results"
    before = {p: p.read_bytes() for p in results.glob("**/seed*/bundle.json")}
    assert len(before) == 21  # 20 cells of the grid and the one LR A3's sweep added past its grid's edge
    result = snakemake(ws, *CELL_TABLES, "--cores", "2", "--configfile", "config/seeds.yaml", corpus=corpus_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    after = {p: p.read_bytes() for p in results.glob("**/seed*/bundle.json")}
    assert {p: after[p] for p in before} == before
    assert {p.parent.name for p in set(after) - set(before)} == {"seed2"} and len(after) == 29
    logs = "".join(p.read_text() for p in (results / "logs" / "train").glob("**/train_pack_*.log"))
    # every cell of the packs that gained a seed, so all but a3's two sweep cells (their pack gains none)
    assert logs.count("is current (this config, cell and code); left as it is") == 20 - 2


@pytest.mark.slow
def test_a_variant_edit_retrains_its_packs_in_place(smoke_workspace, corpus_path, tmp_path):
    """The packs rerun over their bundles (Snakemake keeps `update` outputs, with its marker file in each): the
    edited variant's cells are trained again, by the new code, and no other bundle changes."""
    ws = Path(shutil.copytree(smoke_workspace, tmp_path / "ws", symlinks=True))
    results = ws / "results"
    before = {p: p.read_bytes() for p in results.glob("**/seed*/bundle.json")}
    assert all((p.parent / ".snakemake_timestamp").is_file() for p in before)
    with edited(ws / "src" / "attnlab" / "training" / "attention" / "a3.py", BEHAVIOUR_EDIT):
        result = snakemake(ws, *CELL_TABLES, "--cores", "2", "--configfile", "config/smoke.yaml", corpus=corpus_path)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    after = {p: p.read_bytes() for p in results.glob("**/seed*/bundle.json")}
    changed = {p.parts[-4] for p in before if after[p] != before[p]}
    assert changed == {"a3"}, changed
    fingerprints = {json.loads(after[p])["provenance"]["code_fingerprint"] for p in after if p.parts[-4] == "a3"}
    assert len(fingerprints) == 1 and fingerprints != {
        json.loads(before[p])["provenance"]["code_fingerprint"] for p in before if p.parts[-4] == "a3"}


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["softmax", "a3"])  # a contest LR given, and one chosen by its sweep
def test_a_deleted_contest_bundle_is_trained_again_and_the_tables_reread(smoke_workspace, corpus_path, tmp_path,
                                                                          variant):
    """Removing a contest cell's folder plans its pack (whose trainer keeps the current cells as they are) and
    the collection after it, whether its LR is fixed or chosen by a checkpoint; no other variant trains."""
    ws = Path(shutil.copytree(smoke_workspace, tmp_path / "ws", symlinks=True))
    (gone,) = [p for p in (ws / "results" / "runs" / variant).glob("lr*/seed1")]
    shutil.rmtree(gone)
    planned = plan(ws, corpus=corpus_path)
    assert str(gone.relative_to(ws)) in training_outputs(planned)
    assert {v for v, _, _ in planned_cells(planned)} == {variant}  # only its own pack
    assert "collect_tables" in planned
