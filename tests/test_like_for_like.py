"""Like for like: every rule declares how its variants are paired, and the engine holds each comparison to it.

An ablation (yat against yat_b) is a comparison at one shared LR; reading it from each variant's own contest LR
turns a difference in LR into the ablation's effect. The case the rule before judged otherwise: yat at 3e-3 and
yat_b at 1e-2 read +0.068 apart and "would contradict" the post's "barely"; at one LR they are +0.023 (3e-3) and
+0.037 (1e-2), both inside the ±0.05 band."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pandas as pd
import pytest

import attnlab.pipeline.claims as claims_package
from attnlab.pipeline import claims
from attnlab.pipeline.claims import common
from attnlab.pipeline.claims import protocol as pp
from attnlab.pipeline.claims.kernel_post_scores import BARELY_RULE, ENTROPY_COLUMN
from attnlab.pipeline.ground.verdicts import CONTRADICTED, HOLDS, INCONCLUSIVE
from test_claims import contest_frames, run_check


def every_rule() -> dict[str, pp.Rule]:
    """Every rule the claims modules declare, by module and name: the catalog the tests are generated over."""
    found, seen = {}, set()
    for info in pkgutil.iter_modules(claims_package.__path__):
        if info.name == "__main__":
            continue
        module = importlib.import_module(f"attnlab.pipeline.claims.{info.name}")
        for name, value in vars(module).items():
            if isinstance(value, pp.Rule) and id(value) not in seen:  # a rule imported elsewhere counts once
                seen.add(id(value))
                found[f"{info.name}.{name}"] = value
    return found


RULES = every_rule()


def test_the_catalog_of_rules_is_found():
    assert len(RULES) >= 25 and "kernel_post_scores.BARELY_RULE" in RULES


@pytest.mark.parametrize("name", sorted(RULES))
def test_every_rule_declares_its_pairing_and_its_preconditions_agree_with_it(name):
    rule = RULES[name]
    assert rule.pairing in pp.PAIRINGS
    assert f"paired: {rule.pairing}" in rule.text()
    if rule.pairing == pp.OWN_LR:
        assert pp.OWN_BEST_LR in rule.needs
    if rule.pairing == pp.SHARED_LR:
        assert pp.OWN_BEST_LR not in rule.needs


def test_a_rule_without_a_pairing_or_with_one_its_preconditions_contradict_is_refused():
    with pytest.raises(TypeError):
        pp.Rule(BARELY_RULE.words, "q", "t", "s", ())  # no pairing: none by default
    with pytest.raises(ValueError, match="shared LR cannot also need"):
        pp.Rule(BARELY_RULE.words, "q", "t", "s", pp.TRAINED, pairing=pp.SHARED_LR)
    with pytest.raises(ValueError, match="needs OWN_BEST_LR"):
        pp.Rule(BARELY_RULE.words, "q", "t", "s", (pp.PLATEAU,), pairing=pp.OWN_LR)


def with_entropy(frames: dict, cells: dict) -> dict:
    """The frames' runs with cells added: (variant, lr, seed) -> mean normalised row entropy."""
    runs = frames["runs"]
    extra = pd.DataFrame([{"variant": v, "lr": lr, "seed": s, "best_val_loss": 1.5, "diverged": False,
                           "n_params": 10, "config.name": "paper", ENTROPY_COLUMN: value}
                          for (v, lr, s), value in cells.items()])
    merged = runs.merge(extra[["variant", "lr", "seed", ENTROPY_COLUMN]], on=["variant", "lr", "seed"], how="left")
    missing = extra.merge(runs[["variant", "lr", "seed"]], on=["variant", "lr", "seed"], how="left", indicator=True)
    added = missing[missing._merge == "left_only"].drop(columns="_merge")
    return frames | {"runs": pd.concat([merged, added], ignore_index=True)}


LOSSES = {"softmax": [1.49, 1.50, 1.495], "yat": [1.51, 1.52, 1.511], "yat_b": [1.507, 1.517, 1.513]}


def test_the_ablation_holds_or_is_contradicted_at_one_shared_lr():
    frames = contest_frames(LOSSES)  # every variant at 3e-3
    near = with_entropy(frames, {("yat", 3e-3, s): 0.74 + 0.002 * s for s in range(3)}
                        | {("yat_b", 3e-3, s): 0.73 + 0.001 * s for s in range(3)})
    held = run_check(claims.ablation_barely_moves_entropy, **near)
    assert held.verdict == HOLDS and held.measured.startswith("at 0.003:")
    far = with_entropy(frames, {("yat", 3e-3, s): 0.55 + 0.002 * s for s in range(3)}
                       | {("yat_b", 3e-3, s): 0.73 + 0.001 * s for s in range(3)})
    moved = run_check(claims.ablation_barely_moves_entropy, **far)
    assert moved.verdict == CONTRADICTED and "more than barely" in moved.lean


def test_the_ablation_is_never_read_across_the_variants_own_contest_lrs():
    """yat's contest at 3e-3, yat_b's at 1e-2 (0.068 apart across LRs, tight); the sweep seed 0 has both at both
    LRs: +0.023 and +0.037. The row reads one LR (one seed: inconclusive), not the cross-LR +0.068."""
    frames = contest_frames(LOSSES, lrs={"yat_b": 1e-2})
    cells = ({("yat", 3e-3, s): 0.800 + 0.001 * s for s in range(3)}
             | {("yat_b", 1e-2, s): 0.730 + 0.001 * s for s in range(3)}
             | {("yat", 1e-2, 0): 0.767, ("yat_b", 3e-3, 0): 0.777})
    claim = run_check(claims.ablation_barely_moves_entropy, **with_entropy(frames, cells))
    assert claim.verdict == INCONCLUSIVE and claim.seeds == 1
    assert "+0.023" in claim.measured or "+0.037" in claim.measured
    assert "+0.068" not in claim.measured + claim.interval and "contradict" not in claim.lean
    assert "other shared LRs" in claim.note


def test_a_shared_lr_comparison_read_from_contest_cells_at_different_lrs_is_refused():
    """The engine's guard: a rule at one shared LR whose cells ran at different contest LRs is not testable here,
    with no p-value and no lean, and the row names what would test it."""
    frames = contest_frames(LOSSES, lrs={"yat_b": 1e-2})
    claim = common.Claim(common.KERNEL_POST, "an ablation", BARELY_RULE.text(), "+0.068 [+0.054, +0.081]", "–", "")
    claim.verdict, claim.p_value, claim.lean = CONTRADICTED, 0.001, "would contradict it"
    found = pp.conditions(frames, BARELY_RULE, ["yat", "yat_b"])
    refused = common.at_protocol(claim, "paper", found, "moves it")
    assert refused.verdict == "not testable at paper" and refused.lean == "" and refused.measured == "–"
    assert "yat at 0.003, yat_b at 0.01" in refused.interval
    assert "at one LR over two or more seeds" in refused.resolution
    assert "no evidence for this claim: +0.068" in refused.note
    assert pd.isna(refused.p_value)
    same = pp.conditions(contest_frames(LOSSES), BARELY_RULE, ["yat", "yat_b"])
    assert [c.met for c in same if c.name == pp.SAME_LR] == [True]


@pytest.mark.parametrize("name", pp.PRECONDITIONS)
def test_every_precondition_names_what_would_meet_it_and_the_configs_it_names_exist(name):
    from conftest import REPO

    remedy = pp.REMEDIES[name]
    for config in re.findall(r"config/[a-z_]+\.yaml", remedy):
        assert (REPO / config).is_file(), config


def test_a_row_held_back_names_what_would_decide_it_for_each_failed_precondition():
    claim = common.Claim(common.KERNEL_POST, "c", "check", "+1%", "–", "")
    common.decide(claim, HOLDS)
    failed = [pp.Condition(pp.PLATEAU, False, "3 of 6 still improving"), pp.Condition(pp.INSIDE_GRID, False, "edge")]
    held = common.at_protocol(claim, "default", failed)
    assert held.off_protocol and held.lean_side == HOLDS
    assert pp.REMEDIES[pp.PLATEAU] in held.resolution and pp.REMEDIES[pp.INSIDE_GRID] in held.resolution
