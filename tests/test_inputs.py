"""Inputs stay inert and bounded: what a config file, a command line or an install can do.

A config file is read by attnlab's loader alone when named with `--config file=PATH`; YAML
nested too deep or keyed by a list is refused with its line; a config whose cell could not fit
in memory or finish is refused before any compute, naming the key and the estimate; counts on
the command line are checked; the wheel carries the package's data files.
"""

from __future__ import annotations

import copy
import re
import shutil
import time
import zipfile
from pathlib import Path

import pytest
import yaml

from attnlab.core import estimate as estimate_module
from attnlab.core.config import MAX_CONFIG_BYTES, ConfigError, load_config, validate_config
from attnlab.core.estimate import estimate
from attnlab.core.strict_yaml import MAX_DEPTH, parse_yaml
from attnlab.pipeline.plan import config_file
from attnlab.pipeline.plan.config_file import CONFIG_KEY, snakemake_config_file
from conftest import REPO
from processes import attnlab, refused, run, snakemake
from workspace import make_workspace

DRY_RUN_BENCH = REPO / "benchmarks" / "dry_run.py"

SMOKE = REPO / "config" / "smoke.yaml"
GB = 10**9


def smoke_with(**sections) -> dict:
    cfg = yaml.safe_load(SMOKE.read_text())
    for section, values in sections.items():
        cfg[section].update(values)
    return cfg


def write(path: Path, cfg_or_text) -> Path:
    path.write_text(cfg_or_text if isinstance(cfg_or_text, str) else yaml.safe_dump(cfg_or_text, sort_keys=False))
    return path


@pytest.fixture
def memory(monkeypatch):
    """Pretend this machine has `n` bytes of memory."""
    def set_memory(n):
        monkeypatch.setattr(estimate_module, "machine_memory", lambda: n)
    return set_memory


# ---- YAML the loader refuses, with its line


def deep_block(levels: int) -> str:
    """A block mapping nested `levels` deep under `train:`."""
    lines = [f"{'  ' * i}k{i}:" for i in range(1, levels)]
    return "train:\n" + "\n".join(lines) + f"\n{'  ' * levels}1\n"


def refused_by_loader_and_cli(path, pattern: str, *named: str) -> None:
    """load_config raises a ConfigError matching `pattern`; `attnlab params` refuses the file naming `named`."""
    with pytest.raises(ConfigError, match=pattern):
        load_config(path)
    refused(attnlab("params", "--config", path, cwd=path.parent, timeout=60), path.name, *named)


@pytest.mark.parametrize("text,line", [
    ("name: x\nvariants: " + "[" * 3000 + "]" * 3000 + "\n", 2),  # flow style
    ("name: x\nvariants:\n" + "- " * 3000 + "softmax\n", 3),  # block style, one line
    (deep_block(MAX_DEPTH + 5), MAX_DEPTH),  # one level per line: the first line past the limit
], ids=["flow", "block", "lines"])
def test_yaml_nested_thousands_deep_is_refused_naming_its_line(tmp_path, text, line):
    refused_by_loader_and_cli(write(tmp_path / "deep.yaml", text),
                              rf"deep.yaml: values nested more than {MAX_DEPTH} deep at line {line};",
                              f"nested more than {MAX_DEPTH} deep at line {line}", "flatten it")


def test_nesting_within_the_limit_reaches_the_schema(tmp_path):
    cfg = smoke_with()
    cfg["figures"]["colors"] = {"softmax": "#000000"}  # the deepest a real config goes: 3 levels
    assert load_config(write(tmp_path / "ok.yaml", cfg))["figures"]["colors"]["softmax"] == "#000000"
    text = "name: x\nvariants: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n"
    with pytest.raises(ConfigError, match="variants") as err:  # parsed, then refused by the schema
        load_config(write(tmp_path / "nested.yaml", text))
    assert "nested more than" not in str(err.value)


@pytest.mark.parametrize("key,kind,line", [
    ("? [softmax, yat]\n: 3.0e-3\n", "a list", 1),
    ("{softmax: 1}: 3.0e-3\n", "a mapping", 1),
], ids=["list", "mapping"])
def test_a_list_or_mapping_used_as_a_key_is_refused_naming_its_line(tmp_path, key, kind, line):
    text = key + SMOKE.read_text()
    refused_by_loader_and_cli(write(tmp_path / "keys.yaml", text), rf"keys.yaml: {kind} used as a key at line {line};",
                              f"{kind} used as a key at line {line}", "keys are plain names")


def test_a_file_far_larger_than_any_config_is_refused_unread(tmp_path):
    path = tmp_path / "huge.yaml"
    path.write_text(SMOKE.read_text() + "# padding\n" * (MAX_CONFIG_BYTES // 10 + 1))
    with pytest.raises(ConfigError, match=r"huge.yaml is larger than 1 MiB; a config is a few KB"):
        load_config(path)


# ---- upper bounds from a memory and time estimate


def test_every_shipped_config_loads_and_the_paper_config_fits_a_24_gb_machine(memory):
    memory(24 * GB)
    for path in sorted((REPO / "config").glob("*.yaml")):
        load_config(path)
    paper = load_config(REPO / "config" / "paper.yaml")
    assert estimate(paper)["memory"] < 8 * GB  # measured peak on CPU: 2.94 GB


def test_three_billion_steps_are_refused_naming_the_key_the_estimate_and_the_memory(memory):
    memory(24 * GB)
    with pytest.raises(ConfigError) as err:
        validate_config(smoke_with(train={"steps": 3_000_000_000}), source="steps.yaml")
    message = str(err.value)
    assert message.startswith("steps.yaml: train.steps: 3,000,000,000 is too large: the step plan and loss curve "
                              "would take 108.0 GB")
    assert "this machine has 24.0 GB of memory" in message and "raise train.eval_every" in message
    assert "32-bit step counter" in message  # the trainer's counter could not count that far either


def test_a_hundred_million_eval_batches_are_refused_naming_the_key_the_estimate_and_the_memory(memory):
    memory(24 * GB)
    with pytest.raises(ConfigError) as err:
        validate_config(smoke_with(train={"eval_batches": 100_000_000}), source="eval.yaml")
    message = str(err.value)
    assert message.startswith("eval.yaml: train.eval_batches: 100,000,000 is too large: the validation batches and "
                              "the telemetry batches")
    assert "1.2 TB" in message and "this machine has 24.0 GB of memory" in message
    assert "lower train.eval_batches" in message


def test_a_longer_evaluation_window_than_memory_holds_is_refused_naming_the_key(memory):
    """A model without position embeddings read at 3,400 times its 32-character block: one dense evaluation
    window of 108,800 characters needs a 108,800² attention matrix per head (about 47 GB each in float32),
    refused before any training; the same windows read blockwise, or a shorter multiple, fit."""
    memory(24 * GB)
    cfg = smoke_with(model={"position": "none", "block_size": 32, "heads": 2},
                     train={"eval_context_multiples": [2, 3400]})
    with pytest.raises(ConfigError) as err:
        validate_config(copy.deepcopy(cfg), source="long.yaml")
    message = str(err.value)
    assert re.match(r"long.yaml: train.eval_context_multiples: 3,400 is too large: the evaluation at the longest "
                    r"window would take [0-9.]+ GB", message)
    assert "blockwise" in message
    blockwise = copy.deepcopy(cfg)
    blockwise["model"]["attention_impl"] = "blockwise"
    validate_config(blockwise)
    cfg["train"]["eval_context_multiples"] = [2, 4]
    validate_config(cfg)


def test_the_memory_bound_is_this_machines(memory):
    cfg = smoke_with(train={"eval_batches": 100_000})  # about 1.2 GB of held-out batches and statistics
    memory(100 * GB)
    validate_config(copy.deepcopy(cfg))
    memory(int(1.5 * GB))
    with pytest.raises(ConfigError, match=r"train.eval_batches: 100,000 is too large: .* this machine has 1.5 GB"):
        validate_config(copy.deepcopy(cfg))


def test_a_cell_that_no_machine_could_finish_is_refused_on_time(memory):
    memory(10**15)  # memory is no limit here: the time estimate alone refuses
    paper = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    paper["train"].update(steps=1_000_000_000, batch_size=640)
    with pytest.raises(ConfigError, match=r"train.steps: 1,000,000,000 is too large: training would take at least "
                                          r"[0-9.]+ days even on a fast machine, past the limit of 7.0 days"):
        validate_config(paper)


def test_steps_past_the_trainers_counter_are_refused_even_with_memory_to_spare(memory):
    memory(10**15)
    cfg = smoke_with(train={"steps": 3_000_000_000, "eval_every": 1_000_000})
    with pytest.raises(ConfigError, match=r"train.steps: 3,000,000,000 is more than the trainer's 32-bit step "
                                          r"counter holds \(2,147,483,647\); lower it$"):
        validate_config(cfg)


@pytest.mark.parametrize("train,named", [
    ({"steps": 3_000_000_000}, ["train.steps: 3,000,000,000", "32-bit step counter"]),
    ({"eval_batches": 100_000_000}, ["train.eval_batches: 100,000,000 is too large", "TB", "this machine has"]),
], ids=["steps", "eval_batches"])
def test_the_cli_refuses_runaway_counts_before_any_compute(tmp_path, train, named):
    path = write(tmp_path / "big.yaml", smoke_with(train=train))
    started = time.monotonic()
    result = attnlab("train", "--config", path, "--variant", "softmax", "--lr", "3e-3", "--seed", "0",
                     "--out", tmp_path / "out", "--corpus", tmp_path / "corpus.txt", cwd=tmp_path, timeout=120)
    refused(result, "big.yaml", *named)
    assert time.monotonic() - started < 30
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.yaml"]  # no bundle, no corpus, no cache


# ---- the config file a Snakemake run builds


def test_snakemake_config_file_names_the_file_from_either_form():
    from snakemake.cli import parse_config

    default = Path("config/default.yaml")
    assert snakemake_config_file([], {}, default, parse_config) == default
    assert snakemake_config_file(["/abs/paper.yaml"], {}, default, parse_config) == Path("/abs/paper.yaml")
    given = parse_config([f"{CONFIG_KEY}=my configs/paper v2.yaml"])
    assert snakemake_config_file([], given, default, parse_config) == Path("my configs/paper v2.yaml")


@pytest.mark.parametrize("configfiles,arguments,named", [
    (["a.yaml"], ["file=b.yaml"], "give the config file once"),
    (["a.yaml", "b.yaml"], [], "give one config file, not 2 --configfile"),
    ([], ["file=a.yaml", "steps=5"], "--config steps=...: --config takes only file=PATH"),
    ([], ["train={steps: 5}"], "KEY=VALUE overrides are not supported"),
    ([], ["file="], "--config file= names no file"),
    ([], ["file=007"], "read the value as the int 7, not as a path"),
    ([], ["file=True"], "read the value as the bool True"),
    ([], ["file=[a.yaml, b.yaml]"], "read the value as the list"),
    ([], ["file=a: b.yaml"], "read the value as the dict"),
    ([], ['file=x" '], "would read this path back as 'x' in its jobs"),
], ids=["both", "two-configfiles", "other-key", "override", "empty", "int", "bool", "list", "dict", "quote"])
def test_snakemake_config_arguments_that_could_mislead_are_refused(configfiles, arguments, named):
    from snakemake.cli import parse_config

    with pytest.raises(ConfigError) as err:
        snakemake_config_file(configfiles, parse_config(arguments), Path("config/default.yaml"), parse_config)
    assert named in str(err.value)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    return make_workspace(tmp_path_factory.mktemp("inputs"))


def alias_bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def snakemake_refused(result, *named: str) -> None:
    """Snakemake stopped with the Snakefile's one-line error (it prints errors on stdout), no traceback."""
    output = result.stdout + result.stderr
    assert result.returncode != 0 and "Traceback" not in output, output[-3000:]
    for text in named:
        assert text in output, output[-3000:]


@pytest.mark.slow
def test_config_file_form_never_lets_snakemake_parse_the_file(workspace, corpus_path):
    """A YTE template and an alias bomb reach attnlab's loader only, and are refused there at once."""
    smoke = SMOKE.read_text().replace("name: smoke", "name: \"?__import__('os').system('touch pwned') and 'x' or 'x'\"")
    write(workspace / "yte.yaml", "__use_yte__: true\n" + smoke)
    write(workspace / "bomb.yaml", SMOKE.read_text() + alias_bomb())
    result = snakemake(workspace, "-n", "--config", f"{CONFIG_KEY}=yte.yaml", corpus=corpus_path, timeout=120)
    snakemake_refused(result, "yte.yaml", "'__use_yte__' was unexpected")
    assert not (workspace / "pwned").exists()
    started = time.monotonic()
    result = snakemake(workspace, "-n", "--config", f"{CONFIG_KEY}=bomb.yaml", corpus=corpus_path, timeout=120)
    snakemake_refused(result, "bomb.yaml", "aliases expand")
    assert time.monotonic() - started < 60  # Snakemake's own parser took over 120 s on the same file


@pytest.mark.slow
def test_config_file_form_plans_the_same_build_as_configfile(workspace, corpus_path):
    by_path = snakemake(workspace, "-n", "--config", f"{CONFIG_KEY}=config/smoke.yaml", corpus=corpus_path)
    by_file = snakemake(workspace, "-n", "--configfile", "config/smoke.yaml", corpus=corpus_path)
    assert by_path.returncode == 0, by_path.stdout[-3000:] + by_path.stderr[-3000:]
    assert by_file.returncode == 0, by_file.stdout[-3000:] + by_file.stderr[-3000:]
    jobs = lambda result: sorted(line for line in result.stdout.splitlines() if line.startswith("rule "))  # noqa: E731
    assert jobs(by_path) == jobs(by_file) and jobs(by_path)
    both = snakemake(workspace, "-n", "--configfile", "config/smoke.yaml", "--config",
                     f"{CONFIG_KEY}=config/smoke.yaml", corpus=corpus_path)
    snakemake_refused(both, "give the config file once")
    other = snakemake(workspace, "-n", "--config", f"{CONFIG_KEY}=config/smoke.yaml", "train=x", corpus=corpus_path)
    snakemake_refused(other, "--config train=...", "KEY=VALUE overrides are not supported")
    twice = snakemake(workspace, "-n", "--config", f"{CONFIG_KEY}=config/smoke.yaml",
                      f"{CONFIG_KEY}=config/default.yaml", corpus=corpus_path)
    snakemake_refused(twice, f"--config {CONFIG_KEY}= is given 2 times", "give the config file once")


def test_the_config_values_of_a_command_line_are_read_as_given():
    assert config_file.config_values_given(["snakemake", "-n", "--config", "file=a.yaml", "file=b.yaml",
                                               "--cores", "2"]) == ["file=a.yaml", "file=b.yaml"]
    assert config_file.config_values_given(["--config=file=a.yaml", "-n"]) == ["file=a.yaml"]
    with pytest.raises(ConfigError, match="given 2 times"):
        config_file.snakemake_config_file([], {"file": "b.yaml"}, Path("d.yaml"),
                                            argv=["--config", "file=a.yaml", "file=b.yaml"])


# ---- the command line's counts


@pytest.mark.parametrize("runs,named", [("0", "must be at least 1"), ("-2", "must be at least 1"),
                                        ("x", "is not a whole number")])
def test_dry_run_bench_needs_at_least_one_run(tmp_path, runs, named):
    result = run([DRY_RUN_BENCH, "--workdir", tmp_path, "--runs", runs], cwd=tmp_path, timeout=60)
    refused(result, "argument --runs", named)


# ---- the wheel carries its data


@pytest.mark.slow
def test_the_wheel_carries_its_data_and_runs_from_outside_the_source_tree(tmp_path):
    source = tmp_path / "source"  # built from a copy: a build writes build/ and *.egg-info beside the sources
    shutil.copytree(REPO / "src" / "attnlab", source / "src" / "attnlab",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    dist = tmp_path / "dist"
    pip = ["-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", dist, source]
    built = run(pip, cwd=tmp_path, timeout=600)
    if built.returncode != 0:  # no index for the build's own setuptools: build with this environment's
        built = run(pip + ["--no-build-isolation"], cwd=tmp_path, timeout=600)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
    wheel, = dist.glob("attnlab-*.whl")
    data = {p.relative_to(source / "src").as_posix() for p in (source / "src" / "attnlab").rglob("*")
            if p.suffix in (".yaml", ".yml", ".json")}
    assert "attnlab/core/config.schema.yaml" in data
    assert data <= set(zipfile.ZipFile(wheel).namelist())

    target = tmp_path / "installed"
    installed = run(["-m", "pip", "install", "--no-deps", "--quiet", "--target", target, wheel], cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr[-3000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy2(REPO / "config" / "paper.yaml", elsewhere / "paper.yaml")
    env = {"PYTHONPATH": target}
    where = run(["-c", "import attnlab; print(attnlab.__file__)"], cwd=elsewhere, env=env)
    assert Path(where.stdout.strip()).is_relative_to(target), where.stdout + where.stderr
    result = run(["-m", "attnlab.cli", "params", "--config", "paper.yaml"], cwd=elsewhere, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    listed = {line.split()[0]: int(line.split()[1].replace(",", "")) for line in result.stdout.splitlines() if line}
    assert listed == {"softmax": 2_719_169, "yat": 2_719_169, "yat_b": 2_719_217, "a3": 2_720_610,
                      "yat_exp": 2_719_169, "yat_b_exp": 2_719_217, "softmax_t": 2_719_193, "a3_heads": 2_727_257}


# ---- no command lets Snakemake parse a config file itself


YTE_PAYLOAD = """__use_yte__: true
?if __import__("pathlib").Path("PWNED").touch() is None:
  name: pwned
"""


def test_no_code_path_hands_snakemake_a_configfile():
    """Snakemake evaluates a YTE template in a --configfile before anything can refuse it; every command the
    project starts passes `--config file=F` instead, which attnlab's strict loader reads."""
    offenders = []
    for path in (REPO / "src").rglob("*.py"):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if '"--configfile"' in line and "add_argument" not in line:
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_bench_dry_run_never_lets_snakemake_evaluate_a_yte_config(tmp_path):
    (tmp_path / "ws").mkdir()
    ws = make_workspace(tmp_path / "ws")
    (ws / "evil.yaml").write_text(YTE_PAYLOAD)
    result = run([DRY_RUN_BENCH, "--workdir", ws, "--configfile", ws / "evil.yaml", "--runs", "1"], cwd=ws,
                 timeout=120)
    assert result.returncode != 0 and not (ws / "PWNED").exists() and not (tmp_path / "PWNED").exists()
    missing = run([DRY_RUN_BENCH, "--workdir", tmp_path / "nowhere"], cwd=tmp_path, timeout=60)
    refused(missing, "--workdir", "no such folder")


def test_a_long_axis_without_aliases_is_refused_for_its_length_not_for_aliases():
    long_axis = "a: [" + ", ".join(str(i) for i in range(10_001)) + "]"
    with pytest.raises(ConfigError, match="holds more than 10,000 values") as err:
        parse_yaml(long_axis, "long.yaml")
    assert "alias" not in str(err.value)


@pytest.mark.slow
def test_building_another_folder_with_directory_is_refused_before_anything_runs(workspace, corpus_path, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    result = snakemake(workspace, "-n", "--directory", str(other), corpus=corpus_path)
    snakemake_refused(result, f"--directory {other}: build a workspace from inside it")
    assert not (other / "results").exists()
    itself = snakemake(workspace, "-n", "--directory", str(workspace), corpus=corpus_path)
    assert itself.returncode == 0, itself.stdout[-2000:] + itself.stderr[-2000:]


def test_a_config_name_is_bounded_and_refused_in_one_short_line(smoke_config):
    """A name that would reach every training command line is bounded, and the refusal shows its start and its
    length, not the whole text."""
    cfg = copy.deepcopy(smoke_config)
    cfg["name"] = "n" * 140_000
    with pytest.raises(ConfigError) as refused:
        validate_config(cfg)
    assert "name:" in str(refused.value) and "140,000 characters" in str(refused.value)
    assert len(str(refused.value)) < 300


def test_a_study_name_too_long_is_not_repeated_whole(smoke_config):
    cfg = copy.deepcopy(smoke_config)
    cfg["studies"] = [{"name": "s" * 5000, "model": {"dropout": [0.0, 0.1]}}]
    with pytest.raises(ConfigError) as refused:
        validate_config(cfg)
    assert "5,000 characters" in str(refused.value) and len(str(refused.value)) < 600


def test_a_whole_number_given_as_text_is_told_to_drop_the_quotes(smoke_config):
    cfg = copy.deepcopy(smoke_config)
    cfg["execution"] = {"jobs_per_gpu": "4"}
    with pytest.raises(ConfigError, match=r"execution.jobs_per_gpu: '4' is text, not a number; write it without "
                                          r"quotes \(e.g. 4\)"):
        validate_config(cfg)


def test_a_workspace_whose_state_folder_cannot_be_made_is_refused_in_one_line(tmp_path, corpus_path):
    """Where .snakemake/ cannot be written (here a file stands in its place, as a read-only checkout would
    refuse it to a user who is not root), even a dry run stops with one line naming the fix, not a traceback."""
    ws = make_workspace(tmp_path)
    (ws / ".snakemake").write_text("not a folder\n")
    result = snakemake(ws, "-n", corpus=corpus_path, timeout=120)
    snakemake_refused(result, "a dry run too, keeps its state under .snakemake/", "make the workspace writable")
    assert (ws / ".snakemake").read_text() == "not a folder\n"
