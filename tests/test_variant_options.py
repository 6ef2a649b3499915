"""A variant's own settings (model.variant_options): declared in its module, checked before any compute, given to
its score module, and part of its cells' identity alone."""

from __future__ import annotations

import copy

import pytest
import yaml

from attnlab.core.config import cell_slice, validate_config, variant_slice
from attnlab.core.config_types import model_config
from attnlab.core.errors import ConfigError
from attnlab.core.variants import declared
from attnlab.pipeline.ground.grid import Grid
from conftest import REPO
from processes import snakemake
from workspace import make_workspace


def catalog(**options) -> dict:
    raw = yaml.safe_load((REPO / "config" / "catalog.yaml").read_text())
    if options:
        raw["model"]["variant_options"] = options
    return raw


def refusal(raw: dict) -> str:
    with pytest.raises(ConfigError) as err:
        validate_config(raw)
    return str(err.value)


@pytest.mark.parametrize("options,named", [
    ({"slay": {"features": 0}}, "model.variant_options.slay.features: 0 is less than the minimum of 1 (allowed: an "
                                "integer from 1 to 1024)"),
    ({"slay": {"nodes": 17}}, "model.variant_options.slay.nodes: 17 is greater than the maximum of 16"),
    ({"slay": {"features": 2.5}}, "model.variant_options.slay.features: 2.5 is not of type 'integer'"),
    ({"slay": {"feature": 4}}, "slay's settings are nodes, anchors, features, seed"),
    ({"softmax": {"scale": 2}}, "model.variant_options.softmax: softmax declares no settings; remove the entry"),
    ({"slayy": {"features": 4}}, "model.variant_options.slayy: 'slayy' is no variant"),
])
def test_a_setting_the_variant_does_not_declare_or_allow_is_refused_naming_the_key(options, named):
    assert named in refusal(catalog(**options))


def test_a_study_setting_an_invalid_value_is_refused_naming_the_study():
    raw = catalog()
    raw["studies"].append({"name": "slay_huge", "model": {"variant_options": {"slay": {"anchors": 0}}},
                           "variants": ["slay"]})
    said = refusal(raw)
    assert "studies.slay_huge" in said and "model.variant_options.slay.anchors: 0" in said


def test_differential_attention_needs_heads_it_can_pair():
    raw = catalog()
    raw["model"].update(heads=1)
    assert "model.heads: diff needs a multiple of 2 heads, not 1" in refusal(raw)
    assert declared("diff").heads_multiple == 2 and declared("softmax").heads_multiple == 1


def test_a_cell_is_identified_by_its_own_variants_settings_away_from_their_defaults():
    plain = cell_slice(validate_config(catalog()))
    at_default = cell_slice(validate_config(catalog(slay={"features": 8, "nodes": 2})))
    assert at_default == plain and "variant_options" not in plain["model"], "a default changes no cell"
    set_away = cell_slice(validate_config(catalog(slay={"features": 32, "nodes": 2})))
    assert variant_slice(set_away, "slay")["model"]["variant_options"] == {"slay": {"features": 32}}
    for variant in ("softmax", "spherical_yat", "diff"):
        assert variant_slice(set_away, variant) == variant_slice(plain, variant), variant


def test_a_study_of_one_variants_settings_shares_every_other_variants_cells_with_the_contest():
    raw = catalog()
    raw["studies"] = [{"name": "slay_wide", "model": {"variant_options": {"slay": {"features": 32}}},
                       "variants": ["slay", "softmax"]}]
    cfg = validate_config(raw)
    built = Grid(cfg, {v: 3e-3 for v in cfg["variants"]})
    owners = {key.variant: built.owner(key).study for key in built.cells("slay_wide")}
    assert owners == {"slay": "slay_wide", "softmax": "contest"}
    assert "runs" in built.slices("slay_wide"), "the study reads softmax's cells where the contest trained them"


def test_the_score_module_is_built_with_the_settings_the_cell_is_identified_by():
    from flax import nnx

    from attnlab.training.model import GPT

    cfg = validate_config(catalog(slay={"features": 3, "anchors": 5, "nodes": 1}))
    mcfg = model_config(variant_slice(cell_slice(cfg), "slay"), "slay", 65)
    assert dict(mcfg.variant_options) == {"anchors": 5, "features": 3, "nodes": 1}
    score = GPT(mcfg, rngs=nnx.Rngs(0)).score
    layers, heads, d_head = cfg["model"]["layers"], cfg["model"]["heads"], cfg["model"]["d_model"] // 4
    assert score.anchors[...].shape == (layers, 5, d_head)
    assert score.omega[...].shape == (layers, 1, heads, d_head, 3) and len(score.nodes) == 1
    assert model_config(cell_slice(validate_config(catalog())), "slay", 65).variant_options == ()


@pytest.mark.slow
def test_the_dry_run_refuses_an_invalid_slay_setting_in_one_line(tmp_path, corpus_path):
    (tmp_path / "ws").mkdir()
    ws = make_workspace(tmp_path / "ws")
    raw = yaml.safe_load((ws / "config" / "smoke.yaml").read_text())
    bad = copy.deepcopy(raw)
    bad["model"]["variant_options"] = {"slay": {"features": 0}}
    (ws / "bad.yaml").write_text(yaml.safe_dump(bad))
    result = snakemake(ws, "-n", "--cores", "1", "--configfile", "bad.yaml", corpus=corpus_path, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    lines = [line for line in output.splitlines() if "variant_options" in line]
    assert lines == [f"{ws / 'bad.yaml'}: model.variant_options.slay.features: 0 is less than the minimum of 1 "
                     "(allowed: an integer from 1 to 1024)"], output[-3000:]
    assert "Traceback" not in output and not (ws / "results" / "runs").exists()
