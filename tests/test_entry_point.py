"""A user's own score function from outside the package: a distribution installed with pip that names it in the
`attnlab.variants` entry point group trains like a built-in variant, and its cells' identity covers that
distribution's code and version, so editing it reruns its cells alone."""

from __future__ import annotations

import base64
import hashlib
import json
import zipfile
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import REPO
from processes import run
from workspace import make_workspace

SCORE_MODULE = '''"""Softmax over logits at a fixed temperature: w = softmax(SCALE * q.k / sqrt(d_h))."""

import math

from flax import nnx

from attnlab.training.attention.base import BlockScorer, causal_mask, pairwise_dots
from attnlab.training.attention.normalisers import SOFTMAX

SCALE = {scale}


class TemperedScore(nnx.Module):
    normaliser = SOFTMAX

    def __init__(self, *, d_head, **_):
        self.d_head = d_head

    def _logits(self, q, k):
        return SCALE * pairwise_dots(q, k) / math.sqrt(self.d_head)

    def __call__(self, q, k, layer):
        return self.normaliser.dense(self._logits(q, k), causal_mask(q.shape[1]))

    def blockwise(self, q, k, layer):
        return BlockScorer(self.normaliser, lambda k_block: self._logits(q, k_block))
'''
ENTRY_POINTS = """[attnlab.variants]
tempered = tempered_attention.score:TemperedScore
softmax = tempered_attention.score:TemperedScore
Not-A-Name = tempered_attention.score:TemperedScore
"""


def wheel(folder: Path, version: str = "0.1", scale: float = 0.5, helper: float | None = None,
          dist: str = "tempered_attention", entry_points: str = ENTRY_POINTS, extra: dict | None = None) -> Path:
    """A pure-Python wheel of the distribution tempered-attention, as a build backend would make it; with
    `helper`, its scale lives in a top-level module of its own, tempered_helper.py, beside the package. `dist`
    names another distribution with the same package, `extra` adds files to it."""
    info = f"{dist}-{version}.dist-info"
    score = SCORE_MODULE.format(scale=scale)
    if helper is not None:
        score = score.replace(f"SCALE = {scale}", "from tempered_helper import SCALE")
    files = {f"{dist}/__init__.py": "", f"{dist}/score.py": score, **(extra or {}),
             **({"tempered_helper.py": f"SCALE = {helper}\n"} if helper is not None else {}),
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist.replace('_', '-')}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: attnlab-tests\nRoot-Is-Purelib: true\n"
                              "Tag: py3-none-any\n",
             f"{info}/entry_points.txt": entry_points}
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join(record + [f"{info}/RECORD,,"]) + "\n"
    path = folder / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def install(tmp_path: Path, site: Path, **made) -> None:
    """pip installs the wheel into `site`, a folder of its own (the temporary environment), offline."""
    built = tmp_path / "wheels"
    built.mkdir(exist_ok=True)
    result = run(["-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--upgrade", "--target", site,
                  wheel(built, **made)])
    assert result.returncode == 0, result.stderr[-2000:]


def fingerprints(site: Path, *variants: str) -> dict:
    code = ("import json; from attnlab.core import fingerprint, installed_code, variants; "
            f"print(json.dumps({{'fp': {{v: fingerprint.training_fingerprint(v) for v in {list(variants)!r}}}, "
            "'external': variants.EXTERNAL, 'ignored': variants.IGNORED, "
            "'imports': installed_code.external_package('tempered')['imports'] if variants.EXTERNAL else []}))")
    result = run(["-c", code], env={"PYTHONPATH": site})
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)


def test_an_installed_variant_joins_the_registry_and_its_identity_follows_its_package(tmp_path):
    site = tmp_path / "site"
    install(tmp_path, site)
    first = fingerprints(site, "tempered", "softmax", "yat_b")
    assert first["external"] == {"tempered": ["tempered-attention", "0.1"]}
    assert "is taken by" in first["ignored"]["softmax"] and "a variant's name" in first["ignored"]["Not-A-Name"]
    install(tmp_path, site, scale=0.25)  # the same version, other code
    edited = fingerprints(site, "tempered", "softmax", "yat_b")
    assert edited["fp"]["tempered"] != first["fp"]["tempered"]
    assert {v: edited["fp"][v] for v in ("softmax", "yat_b")} == {v: first["fp"][v] for v in ("softmax", "yat_b")}
    install(tmp_path, site, version="0.2", scale=0.25)  # the same code, another version
    assert fingerprints(site, "tempered")["fp"]["tempered"] != edited["fp"]["tempered"]
    assert "attnlab.training.attention.base" in first["imports"]


def test_its_identity_covers_every_file_the_distribution_installed(tmp_path):
    """A module the distribution installs outside its package (a top-level helper the score imports) is in its
    identity: editing it retrains its cells (the distribution's RECORD lists it), and nothing else moves."""
    site = tmp_path / "site"
    install(tmp_path, site, helper=0.5)
    first = fingerprints(site, "tempered", "softmax")
    install(tmp_path, site, helper=0.75)  # the same version and package, another helper
    edited = fingerprints(site, "tempered", "softmax")
    assert edited["fp"]["tempered"] != first["fp"]["tempered"]
    assert edited["fp"]["softmax"] == first["fp"]["softmax"]


def test_an_installed_variant_retrains_with_the_attnlab_code_it_builds_on(tmp_path):
    """Its module imports attnlab's score helpers: a real edit there changes its identity, as it does softmax's."""
    import shutil

    site = tmp_path / "site"
    install(tmp_path, site)
    src = tmp_path / "src"
    shutil.copytree(REPO / "src" / "attnlab", src / "attnlab", ignore=shutil.ignore_patterns("__pycache__"))
    code = ("import json, sys; from pathlib import Path; from attnlab.core import fingerprint; "
            "print(json.dumps({v: fingerprint.training_fingerprint(v, src=Path(sys.argv[1])) "
            "for v in ('tempered', 'softmax', 'yat')}))")
    before = json.loads(run(["-c", code, src], env={"PYTHONPATH": site}).stdout)
    base = src / "attnlab" / "training" / "attention" / "base.py"
    base.write_text(base.read_text() + "\nEDITED = 1\n")
    after = json.loads(run(["-c", code, src], env={"PYTHONPATH": site}).stdout)
    assert after["tempered"] != before["tempered"] and after["softmax"] != before["softmax"]


def test_without_an_installed_variant_nothing_changes(tmp_path):
    site = tmp_path / "site"
    install(tmp_path, site)
    with_it = fingerprints(site, "softmax")
    without = fingerprints(tmp_path / "empty", "softmax")
    assert without["external"] == {} and without["fp"]["softmax"] == with_it["fp"]["softmax"]


@pytest.mark.slow
def test_an_installed_variant_trains_through_the_workflow_and_an_edit_reruns_its_cells_alone(tmp_path, corpus_path):
    site = tmp_path / "site"
    install(tmp_path, site)
    (tmp_path / "ws").mkdir()
    ws = make_workspace(tmp_path / "ws", share_compile_cache=True)
    cfg = yaml.safe_load((ws / "config" / "smoke.yaml").read_text())
    cfg.update(name="own", variants=["softmax", "tempered"])
    cfg["contest"] = {"seeds": [0], "lr": {"softmax": 3.0e-3, "tempered": 3.0e-3}}
    cfg["sweep"]["lrs"] = [3.0e-3]
    cfg.pop("studies")
    (ws / "config" / "own.yaml").write_text(yaml.safe_dump(cfg))
    env = {"PYTHONPATH": f"{ws / 'src'}:{site}", "ATTNLAB_CORPUS": corpus_path}
    target = ("results/tables/contest.csv", "--cores", "2", "--configfile", "config/own.yaml")
    built = run(["-m", "snakemake", *target], ws, env)
    assert built.returncode == 0, built.stderr[-3000:]
    contest = pd.read_csv(ws / "results" / "tables" / "contest.csv").set_index("variant")
    assert set(contest.index) == {"softmax", "tempered"}
    assert contest.loc["tempered", "n_params"] == contest.loc["softmax", "n_params"]  # no parameters of its own
    assert contest.loc["tempered", "best_val_mean"] != contest.loc["softmax", "best_val_mean"]  # its own scores
    assert_drawn_with_its_own_marker_and_colour(ws, env)
    assert_joins_the_shared_score_tests(env)
    install(tmp_path, site, scale=0.25)
    planned = run(["-m", "snakemake", *target, "-n"], ws, env)
    assert planned.returncode == 0, planned.stderr[-3000:]
    jobs = planned.stdout + planned.stderr
    assert "train_pack_tempered_runs_0" in jobs and "train_pack_softmax_runs_0" not in jobs


# The figures that draw every variant of the contest, each from the tables the build wrote.
EVERY_VARIANT_FIGURES = ("loss_curves", "lr_sweep", "paired_differences", "entropy", "score_scale")
DRAWN = """
import importlib, json, sys
from matplotlib.colors import to_hex
from matplotlib.lines import Line2D
from attnlab.core.variants import VARIANTS
from attnlab.pipeline.figures.main import Tables
from attnlab.pipeline.figures.style import parse_style, variant_color, variant_marker
from attnlab.pipeline.ground.figure_catalog import BY_NAME

style = parse_style(None)
drawn = {}
for name in sys.argv[1:]:
    module = importlib.import_module(BY_NAME[name].module)
    fig = module.draw(module.load(Tables(BY_NAME[name].table_paths()), style), style)
    lines = [a for a in fig.findobj(Line2D)]
    drawn[name] = sorted({(to_hex(a.get_color()).upper(), str(a.get_marker())) for a in lines})
own = {v: [variant_color(style, v).upper(), str(variant_marker(v))] for v in VARIANTS}
print(json.dumps({"drawn": drawn, "own": own}))
"""


def assert_drawn_with_its_own_marker_and_colour(ws: Path, env: dict) -> None:
    """Every figure that draws every variant draws the installed one with a colour and a marker of its own (from
    its place in the registry: no file of the project names it), neither of them any registered variant's."""
    result = run(["-c", DRAWN, *EVERY_VARIANT_FIGURES], ws, env)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout.strip().splitlines()[-1])
    colour, marker = found["own"]["tempered"]
    others = {v: pair for v, pair in found["own"].items() if v != "tempered"}
    assert colour not in {c for c, _ in others.values()} and marker not in {m for _, m in others.values()}
    for name, pairs in found["drawn"].items():
        assert [colour, marker] in pairs, f"{name} does not draw tempered in its own colour and marker"
        if name != "paired_differences":  # which draws each variant's difference from softmax, not softmax
            assert others["softmax"] in pairs, f"{name} draws softmax too, in its own colour and marker"


def assert_joins_the_shared_score_tests(env: dict) -> None:
    """The suites every score function runs (causal distributions, blockwise equal to dense, no future leaking,
    no T x T array on the blockwise path) pick the installed variant up from the registry."""
    result = run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow", "-k", "tempered",
                  "tests/test_attention.py", "tests/test_blockwise.py", "tests/test_model.py"], REPO, env)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert " passed" in result.stdout and int(result.stdout.split(" passed")[0].split()[-1]) >= 4, result.stdout


def refusal(site: Path, *names: str) -> str:
    """What the config loader says of a config that trains these variants beside softmax ('' when it accepts it)."""
    code = ("import sys, yaml; from attnlab.core.config import validate_config; from attnlab.core.errors import "
            "ConfigError; cfg = yaml.safe_load(open(sys.argv[1])); names = sys.argv[2:]; "
            "cfg.update(variants=['softmax', *names]); "
            "cfg['contest'] = {'seeds': [0], 'lr': {v: 3e-3 for v in cfg['variants']}}; cfg['sweep']['extend'] = 0\n"
            "try:\n validate_config(cfg, 'own.yaml')\nexcept ConfigError as err:\n print(err)")
    result = run(["-c", code, REPO / "config" / "smoke.yaml", *names], env={"PYTHONPATH": site})
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip()


BROKEN = """[attnlab.variants]
gone = broken_attention.missing:Score
nameless = broken_attention.score:NoSuchScore
narrow = broken_attention.narrow:NarrowScore
wide = broken_attention.narrow:WideScore
"""
NARROW = """class NarrowScore:
    def __init__(self, d_head):
        self.d_head = d_head


class WideScore:
    def __init__(self, *, d_head, **_):
        self.d_head = d_head
"""


def test_a_broken_installed_variant_is_refused_before_any_compute(tmp_path):
    """A missing module, a missing class or a constructor that cannot take the score's keywords is named when the
    config is read, from the source alone (nothing imported), instead of failing inside its training job."""
    site = tmp_path / "site"
    install(tmp_path, site, dist="broken_attention", entry_points=BROKEN,
            extra={"broken_attention/narrow.py": NARROW})
    assert "no module broken_attention.missing is installed" in refusal(site, "gone")
    assert "broken_attention.score has no class NoSuchScore" in refusal(site, "nameless")
    said = refusal(site, "narrow")
    assert "NarrowScore.__init__ does not take layers, heads, rngs" in said and "add **_" in said
    assert refusal(site, "wide") == ""


def test_a_name_two_distributions_register_is_left_out_and_said(tmp_path):
    """Which of two distributions Python finds first is an accident of sys.path: the name is neither one's, and
    both the registry and a config that names it say so."""
    site = tmp_path / "site"
    install(tmp_path, site)
    install(tmp_path, site, dist="other_tempered", entry_points="[attnlab.variants]\n"
                                                                "tempered = other_tempered.score:TemperedScore\n")
    found = fingerprints(site)
    assert "tempered" not in found["external"]
    assert "registered by other-tempered and tempered-attention" in found["ignored"]["tempered"]
    assert "registered by other-tempered and tempered-attention" in refusal(site, "tempered")
