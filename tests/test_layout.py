"""The two sides of src/attnlab and their one-way edge, and a README and docs/ that only point at what exists.

The pipeline never loads JAX, core (the ground both sides stand on) never
mentions it, training never reads the pipeline and the pipeline never reads
training. Every repository path and attnlab module the README or a page of
docs/ names exists, every relative link resolves, the README stays a short
how-to and links every page of docs/.
"""

from __future__ import annotations

import ast
import json
import re

import pytest
import yaml

from attnlab.core import fingerprint
from attnlab.core.cell import SEED_LIMIT
from conftest import REPO
from processes import run

SRC = REPO / "src"
JAX_FAMILY = ("jax", "jaxlib", "flax", "optax", "orbax")


def modules_under(package: str) -> list[str]:
    """Every module and package in the folder of `package`, nested ones included (a __main__ is a script)."""
    root = SRC.joinpath(*package.split("."))
    names = []
    for path in root.rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        if "__pycache__" in parts or parts[-1] == "__main__":
            continue
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(names)


def test_modules_under_finds_nested_modules():
    """The checks below see every module, not only the top level of each side."""
    training = modules_under("attnlab.training")
    assert {"attnlab.training", "attnlab.training.train", "attnlab.training.attention",
            "attnlab.training.attention.base"} <= set(training)
    assert any(m.startswith("attnlab.pipeline.figures.") for m in modules_under("attnlab.pipeline"))


def test_every_pipeline_and_core_module_imports_without_jax_or_flax():
    mods = modules_under("attnlab.pipeline") + modules_under("attnlab.core") + ["attnlab", "attnlab.cli"]
    code = ("import importlib, json, sys\n"
            f"for m in {mods!r}: importlib.import_module(m)\n"
            f"print(json.dumps(sorted(k for k in sys.modules if k.split('.')[0] in {JAX_FAMILY!r})))")
    result = run(["-c", code], cwd=REPO, env={"PYTHONPATH": SRC})
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [], "a pipeline-side import loaded JAX/Flax"
    assert len(mods) > 40


def test_the_trainer_imports_no_table_or_plotting_library():
    """Every cell is a fresh process: pandas alone would add about a second to each start."""
    code = ("import json, sys\nimport attnlab.training.pack\n"
            "print(json.dumps(sorted({k.split('.')[0] for k in sys.modules} & {'pandas', 'matplotlib', 'scipy'})))")
    result = run(["-c", code], cwd=REPO, env={"PYTHONPATH": SRC})
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


WORKFLOW_IMPORT = re.compile(r"^from (attnlab[\w.]*) import (\w+)", re.MULTILINE)


def test_the_workflow_parses_without_the_numeric_libraries():
    """Snakemake parses the Snakefile in every invocation (each dry run, each cluster job): the modules the
    workflow imports stay free of scipy, pandas and matplotlib (scipy.stats alone cost 2.7 s a parse)."""
    texts = [(REPO / "Snakefile").read_text()] + [p.read_text() for p in (REPO / "workflow" / "rules").glob("*.smk")]
    imports = sorted({match for text in texts for match in WORKFLOW_IMPORT.findall(text)})
    assert ("attnlab.pipeline.plan.rules", "Plan") in imports and len(imports) >= 5
    code = ("import importlib, json, sys\n"
            f"for package, name in {imports!r}:\n"
            "    module = importlib.import_module(package)\n"
            "    getattr(module, name, None) or importlib.import_module(package + '.' + name)\n"
            "print(json.dumps(sorted({k.split('.')[0] for k in sys.modules} & "
            "{'scipy', 'pandas', 'matplotlib', *" + repr(JAX_FAMILY) + "})))")
    result = run(["-c", code], cwd=REPO, env={"PYTHONPATH": SRC})
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


def jax_imports(module: str, src=SRC) -> list[int]:
    """Lines of `module` that import JAX or a library built on it, inside functions too."""
    tree = ast.parse(fingerprint.module_file(module, src).read_text())
    lines = []
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
        if any(name.split(".")[0] in JAX_FAMILY for name in names):
            lines.append(node.lineno)
    return lines


def test_jax_imports_finds_an_import_inside_a_function(tmp_path):
    (tmp_path / "attnlab").mkdir()
    (tmp_path / "attnlab" / "late.py").write_text("import os\n\n\ndef device():\n    import jax\n\n"
                                                 "    from flax import nnx\n    return jax, nnx, os\n")
    assert jax_imports("attnlab.late", tmp_path) == [5, 7]


def test_no_core_or_pipeline_module_imports_jax_even_inside_a_function():
    """An import at call time loads JAX too, just later: core and the pipeline hold none."""
    found = {m: lines for m in modules_under("attnlab.core") + modules_under("attnlab.pipeline")
             if (lines := jax_imports(m))}
    assert found == {}, f"JAX imported by the JAX-free side (module: lines): {found}"


@pytest.mark.parametrize("side,forbidden", [
    ("attnlab.training", ("attnlab.pipeline",)),
    ("attnlab.pipeline", ("attnlab.training",)),
    ("attnlab.core", ("attnlab.pipeline", "attnlab.training")),
])
def test_imports_run_one_way(side, forbidden):
    modules = modules_under(side)
    assert len(modules) > 5
    wrong = {m: sorted(i for i in fingerprint.imported_modules(m) if i.startswith(forbidden)) for m in modules}
    assert {m: i for m, i in wrong.items() if i} == {}


def test_the_folder_tree_shows_the_sides():
    root = SRC / "attnlab"
    assert {p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("__")} == {
        "core", "training", "pipeline"}


# ---- the README and docs/ point only at what exists

REPO_PATH = re.compile(
    r"(?:^|(?<=[\s`(\[=\"']))((?:config|workflow|src|notebooks|tests|docs|\.ci)/[^\s`)\]\"',;:]*)", re.M)
MODULE_NAME = re.compile(r"\battnlab(?:\.[A-Za-z_]\w*)+")
README = REPO / "README.md"
README_MAX_LINES = 150
DOCS = sorted((REPO / "docs").glob("*.md"))
DOCUMENTS = [README, *DOCS]


def doc_id(path) -> str:
    return path.relative_to(REPO).as_posix()


def repo_paths(text: str) -> list[str]:
    """The repository paths a text names (in code, links or prose), a trailing full stop and an #anchor dropped."""
    return sorted({path.rstrip(".").split("#")[0] for path in REPO_PATH.findall(text)})


def path_exists(path: str) -> bool:
    """`path` exists in the checkout; a <placeholder> part matches any name."""
    if "<" in path:
        return any(REPO.glob(re.sub(r"<[^>]*>", "*", path)))
    return (REPO / path).exists()


def names_exist(dotted: str) -> bool:
    """`dotted` is an attnlab module, or a name defined at the top of one (or the entry point group through which
    installed packages add variants, a dotted name that is no module)."""
    from attnlab.core.variants import ENTRY_POINT_GROUP

    if dotted == ENTRY_POINT_GROUP:
        return True
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module, rest = ".".join(parts[:cut]), parts[cut:]
        if fingerprint.module_file(module, SRC).exists():
            return not rest or (len(rest) == 1 and rest[0] in top_level_names(module))
    return False


def top_level_names(module: str) -> set[str]:
    tree = ast.parse(fingerprint.module_file(module, SRC).read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def test_the_path_and_name_checks_tell_real_from_stale():
    text = ("Configs are checked against `workflow/schemas/run.schema.yaml` and [smoke](config/smoke.yaml);\n"
            "see src/attnlab/training/attention/<name>.py and `tests/test_layout.py`.")
    assert repo_paths(text) == ["config/smoke.yaml", "src/attnlab/training/attention/<name>.py",
                                "tests/test_layout.py", "workflow/schemas/run.schema.yaml"]
    assert [p for p in repo_paths(text) if not path_exists(p)] == ["workflow/schemas/run.schema.yaml"]
    assert names_exist("attnlab.core.config.load_config") and names_exist("attnlab.training")
    assert not names_exist("attnlab.core.config.grid")
    assert not names_exist("attnlab.core.provenance")


def test_every_path_the_readme_names_exists():
    paths = repo_paths(README.read_text())
    assert len(paths) > 10
    assert [p for p in paths if not path_exists(p)] == []


def test_every_attnlab_module_the_readme_names_exists():
    names = sorted(set(MODULE_NAME.findall(README.read_text())))
    assert names
    assert [n for n in names if not names_exist(n)] == []


def test_there_are_docs_to_check():
    assert len(DOCS) >= 5, "docs/ holds the README's reference pages"


@pytest.mark.parametrize("doc", DOCS, ids=doc_id)
def test_every_path_a_doc_names_exists(doc):
    assert [p for p in repo_paths(doc.read_text()) if not path_exists(p)] == []


@pytest.mark.parametrize("doc", DOCS, ids=doc_id)
def test_every_attnlab_module_a_doc_names_exists(doc):
    names = sorted(set(MODULE_NAME.findall(doc.read_text())))
    assert [n for n in names if not names_exist(n)] == []


def test_the_docs_name_paths_and_modules():
    """The checks above have something to check: the pages name files and modules, not only prose."""
    text = "\n".join(doc.read_text() for doc in DOCS)
    assert len(repo_paths(text)) > 20 and len(set(MODULE_NAME.findall(text))) > 10


# ---- links resolve, the README stays a how-to

MARKDOWN_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def heading_anchors(text: str) -> set[str]:
    """The anchors GitHub gives a Markdown file's headings (lower case, punctuation dropped, spaces to -)."""
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", FENCE.sub("", text), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def broken_links(doc) -> list[str]:
    """The relative links of a Markdown file (outside code blocks) whose file, or #anchor in a Markdown file,
    does not exist."""
    broken = []
    for target in MARKDOWN_LINK.findall(FENCE.sub("", doc.read_text())):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        name, _, anchor = target.partition("#")
        path = (doc.parent / name).resolve() if name else doc
        if not path.exists():
            broken.append(target)
        elif anchor and path.suffix == ".md" and anchor not in heading_anchors(path.read_text()):
            broken.append(target)
    return broken


def linked_files(doc) -> set:
    return {(doc.parent / target.partition("#")[0]).resolve()
            for target in MARKDOWN_LINK.findall(FENCE.sub("", doc.read_text())) if not target.startswith("#")}


def test_the_link_check_tells_real_from_broken(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# Title\n\n## Adding a study\n\n"
                                        "[a](docs/a.md) [b](docs/b.md#no-such-part) [c](docs/gone.md) "
                                        "[d](#adding-a-study) [e](#nowhere) [f](https://example.org/x)\n"
                                        "```\n[g](docs/in-code.md)\n```\n")
    (tmp_path / "docs" / "a.md").write_text("# A\n\n[up](../README.md#adding-a-study) [cl](../CHANGELOG.md)\n")
    (tmp_path / "docs" / "b.md").write_text("# B: the `part`, on one GPU\n")
    assert broken_links(tmp_path / "README.md") == ["docs/b.md#no-such-part", "docs/gone.md", "#nowhere"]
    assert broken_links(tmp_path / "docs" / "a.md") == ["../CHANGELOG.md"]
    assert heading_anchors((tmp_path / "docs" / "b.md").read_text()) == {"b-the-part-on-one-gpu"}
    assert tmp_path.joinpath("docs", "a.md").resolve() in linked_files(tmp_path / "README.md")


@pytest.mark.parametrize("doc", DOCUMENTS, ids=doc_id)
def test_every_relative_link_resolves(doc):
    assert broken_links(doc) == []


def test_the_readme_is_a_short_how_to():
    lines = len(README.read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move reference text to docs/"


def test_the_readme_links_the_docs_index_and_the_index_every_page_of_docs():
    index = REPO / "docs" / "index.md"
    assert index.resolve() in linked_files(README)
    linked = linked_files(index)
    assert [doc_id(d) for d in DOCS if d != index and d.resolve() not in linked] == []


COMMIT_HASH = re.compile(r"(?<![\w/.-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w/.-])")


def test_commit_hashes_appear_only_in_the_changelog():
    """The README and docs/ describe the project as it is; which commit measured what is the CHANGELOG's."""
    assert COMMIT_HASH.findall("measured at `4b06e08` (median 4.33 s); sha256 7d3f1a0e9c") == ["4b06e08", "7d3f1a0e9c"]
    assert COMMIT_HASH.findall("a3_heads at 1e-3, deadbeef, 1234567, results/ab12cd3/x") == []
    found = {doc_id(d): COMMIT_HASH.findall(d.read_text()) for d in DOCUMENTS}
    assert {name: hashes for name, hashes in found.items() if hashes} == {}


# ---- one seed range


def seed_bounds(node, key: str = "") -> list[tuple[str, int, int]]:
    """(key, minimum, maximum) of every integer seed key in a schema node, list items included."""
    if not isinstance(node, dict):
        return []
    found = []
    if key.split(".")[-1] in ("seed", "seeds"):  # a seed's value (max_seeds, a count of them, is no seed)
        value = node.get("items", node)
        found.append((key, value.get("minimum"), value.get("maximum")))
    for name, sub in node.get("properties", {}).items():
        found += seed_bounds(sub, f"{key}.{name}".lstrip("."))
    return found


def test_the_schema_bounds_seeds_by_the_cell_check():
    """The config schema and the command line's check_cell accept the same seeds (0 <= seed < SEED_LIMIT)."""
    schema = yaml.safe_load((SRC / "attnlab" / "core" / "config.schema.yaml").read_text())
    bounds = seed_bounds(schema)
    assert {key for key, *_ in bounds} >= {"contest.seeds", "sweep.seed", "sweep.seeds"}
    assert [b for b in bounds if b[1:] != (0, SEED_LIMIT - 1)] == []


def imported_by(module: str, modules: set[str]) -> set[str]:
    """What one module's imports reach, inside functions too: `from pkg import sub` reaches the module pkg.sub,
    `from pkg import name` the package pkg (its __init__), `import a.b` the module a.b."""
    path = fingerprint.module_file(module)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    reached = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            reached |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else node.module
            for alias in node.names:
                reached.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    return {m for m in reached if m in modules and m != module}


def import_cycles() -> list[list[str]]:
    """Every cycle among attnlab's own modules, imports inside functions included (strongly connected
    components of more than one module)."""
    modules = modules_under("attnlab")
    graph = {m: sorted(imported_by(m, set(modules))) for m in modules}
    index, low, stack, on_stack, cycles, counter = {}, {}, [], set(), [], [0]

    def visit(node):  # Tarjan's algorithm
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in modules:
        if module not in index:
            visit(module)
    return cycles


def test_the_import_graph_has_no_cycle_function_level_imports_included():
    assert import_cycles() == []


# ---- one direction of flow: config -> plan -> tables -> claims -> figures -> report

# Each pipeline module's stage, by the longest matching prefix; a module imports only modules of its own stage
# or an earlier one. The ground is what every stage reads (the table contract, statistics, the posts' numbers).
FLOW = (
    ("attnlab.core", 0),
    ("attnlab.pipeline", 1),
    ("attnlab.pipeline.ground", 1),  # what every stage reads: paths, bundles, the contract, statistics, formatting
    ("attnlab.pipeline.plan", 2),
    ("attnlab.pipeline.tables", 3),
    ("attnlab.pipeline.composability", 3),
    ("attnlab.pipeline.claims", 4),
    ("attnlab.pipeline.figures", 5),
    ("attnlab.pipeline.report", 6),
)


def stage(module: str) -> int | None:
    matches = [(len(prefix), rank) for prefix, rank in FLOW if module == prefix or module.startswith(prefix + ".")]
    return max(matches)[1] if matches else None


def edges_against_the_flow() -> list[str]:
    modules = modules_under("attnlab.pipeline") + modules_under("attnlab.core")
    known = set(modules_under("attnlab"))
    found = []
    for module in modules:
        for target in sorted(imported_by(module, known)):
            if stage(target) is None or stage(target) > stage(module):
                found.append(f"{module} -> {target}")
    return found


def test_stage_places_modules_by_their_longest_prefix():
    assert stage("attnlab.pipeline.ground.contract") == 1 and stage("attnlab.pipeline.plan.rules") == 2
    assert stage("attnlab.pipeline.report.page") == 6 and stage("attnlab.training.train") is None


def test_no_import_runs_against_the_flow_function_level_imports_included():
    """The planning reads no table code, the tables no claim, the claims no figure, the figures no report; core
    reads nothing of the pipeline (and neither side reads training: tested above)."""
    assert edges_against_the_flow() == []


def test_the_planner_only_plans_no_stage_imports_it():
    """What the stages share with the planner is the ground (attnlab.pipeline.ground); the planner itself is read
    by the rule files alone."""
    known = set(modules_under("attnlab"))
    planner = [m for m in modules_under("attnlab") if not m.startswith("attnlab.pipeline.plan")
               and any(t.startswith("attnlab.pipeline.plan") for t in imported_by(m, known))]
    assert planner == []


def test_no_rule_file_defines_a_function_or_a_lambda():
    """The rule files are declarative: every input, output and param function lives in attnlab.pipeline.plan."""
    found = []
    for path in [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code_part = line.split("#", 1)[0]
            if re.match(r"\s*def\s", code_part) or re.search(r"\blambda\b", code_part):
                found.append(f"{path.name}:{number}: {line.strip()}")
    assert found == []


def test_the_flow_check_sees_an_edge_against_the_flow(tmp_path, monkeypatch):
    """edges_against_the_flow reports a table module that imports a claims module."""
    real = imported_by

    def with_bad_edge(module, modules):
        reached = real(module, modules)
        return reached | {"attnlab.pipeline.claims.common"} if module == "attnlab.pipeline.tables.contest" else reached

    monkeypatch.setitem(globals(), "imported_by", with_bad_edge)
    assert edges_against_the_flow() == ["attnlab.pipeline.tables.contest -> attnlab.pipeline.claims.common"]


COUNT_WORDS = {"nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
               "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "twenty-one": 21}


def test_no_page_counts_the_registered_variants_by_hand():
    """The registry grows by one file a variant: a count of it written in the README, the docs or a config
    ("eleven more arms", "all 18 variants") would go stale with the next one. The posts' own four, a config's
    short list, and the like stay (under nine)."""
    pattern = re.compile(r"\b(\d+|" + "|".join(COUNT_WORDS) + r")\s+(?:more\s+|further\s+|registered\s+)?"
                         r"(?:arms|variants|score functions)\b", re.IGNORECASE)
    pages = [README, *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "config").glob("*.yaml"))]
    found = []
    for page in pages:
        for match in pattern.finditer(page.read_text()):
            word = match.group(1).lower()
            if (int(word) if word.isdigit() else COUNT_WORDS[word]) >= 9:
                found.append(f"{page.name}: {match.group(0)!r}")
    assert not found, found
