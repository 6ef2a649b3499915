"""The catalog papers' claims and the telemetry they read: the sink rate, the share of negative weight and the
residual stream's kurtosis and largest |activation|.

The telemetry is checked against a direct computation from the model's own weights and residual stream (a
probe that read another layer, key or axis gives other numbers); each claim is checked on synthetic contest
tables built to hold, to be contradicted, and to be held back by a missing variant or by its protocol.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from flax import nnx
from scipy import stats

from attnlab.core import telemetry_stats
from attnlab.core.config_types import ModelConfig
from attnlab.pipeline import claims
from attnlab.pipeline.claims import diff_paper, length_papers, score_papers, slay_paper
from attnlab.pipeline.claims.common import BEYOND, DIFF_PAPER, SLAY_PAPER
from attnlab.pipeline.report import telemetry as report_telemetry
from attnlab.pipeline.tables import display
from attnlab.pipeline.ground.verdicts import CONTRADICTED, HOLDS, INCONCLUSIVE
from attnlab.training import probe
from attnlab.training.model import GPT
from claim_frames import off_protocol, on_protocol
from test_claims import PUB, contest_frames


def tiny_model(variant: str, seed: int = 0) -> GPT:
    cfg = ModelConfig(vocab_size=11, d_model=16, layers=2, heads=2, block_size=12, d_ff=32, dropout=0.0,
                      variant=variant)
    return GPT(cfg, rngs=nnx.Rngs(seed))


def tokens(seed: int = 0) -> jnp.ndarray:
    return jax.random.randint(jax.random.key(seed), (3, 12), 0, 11)


# ---- the telemetry


def test_kurtosis_is_pearsons_over_every_entry():
    values = np.random.default_rng(0).standard_t(5, size=(4, 6, 8)).astype(np.float32)
    assert float(probe.kurtosis(jnp.asarray(values))) == pytest.approx(stats.kurtosis(values.ravel(), fisher=False),
                                                                       rel=1e-4)


@pytest.mark.parametrize("variant", ["softmax", "cog"])
def test_the_probe_reads_the_first_key_signed_weights_and_the_residual_stream(variant):
    model, x = tiny_model(variant), tokens()
    arrays = probe.probe_batch(model, x, jnp.zeros_like(x), min_keys=2)
    _, outputs, residuals = model.forward(x, dense=True)
    weights = np.stack([np.asarray(o.weights) for o in outputs])  # (L, B, H, T, T)
    np.testing.assert_allclose(arrays["first_key_mean"], weights[..., 0].mean(axis=(1, 3)), rtol=1e-5)
    negative = np.where(weights < 0, -weights, 0).sum(axis=(1, 2, 3, 4))
    np.testing.assert_allclose(arrays["negative_sum"], negative, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(arrays["absolute_sum"], np.abs(weights).sum(axis=(1, 2, 3, 4)), rtol=1e-5)
    for layer, stream in enumerate(residuals):
        stream = np.asarray(stream)
        assert float(arrays["activation_kurtosis"][layer]) == pytest.approx(
            stats.kurtosis(stream.ravel(), fisher=False), rel=1e-3)
        assert float(arrays["activation_max"][layer]) == pytest.approx(np.abs(stream).max())
    if variant == "softmax":
        assert (np.asarray(arrays["negative_sum"]) == 0).all()
    else:
        assert (np.asarray(arrays["negative_sum"]) > 0).all(), "cog's weights take the sign of their scores"
    # the last residual is what the head reads: the forward pass the telemetry takes is the model's
    np.testing.assert_allclose(model(x), model.forward(x)[0], rtol=1e-6)


def test_the_sink_rate_is_the_share_of_heads_above_the_threshold():
    per_query = np.array([[0.5, 0.1, 0.2, 0.31], [0.29, 0.0, 0.9, 0.1]])  # (L, H): three heads above 0.3
    arrays = {  # two held-out batches; the first-key means of the two average to per_query
        "first_key_mean": np.stack([per_query - 0.05, per_query + 0.05]),
        "negative_sum": np.array([[1.0, 0.0], [3.0, 0.0]]), "absolute_sum": np.array([[4.0, 2.0], [4.0, 2.0]]),
        "activation_kurtosis": np.array([[3.0, 5.0], [4.0, 9.0]]), "activation_max": np.array([[1.0, 7.0], [2.0, 3.0]]),
    }
    summary = telemetry_stats.sink_summary(arrays)
    assert summary["sink_rate"] == pytest.approx(3 / 8)
    np.testing.assert_allclose(summary["first_key_weight_per_layer_head"], per_query)
    assert summary["negative_mass_share"] == pytest.approx(4 / 12)
    assert summary["negative_mass_share_per_layer"] == pytest.approx([0.5, 0.0])
    assert summary["activation_kurtosis_per_layer"] == pytest.approx([3.5, 7.0])
    assert summary["activation_kurtosis"] == pytest.approx(7.0) and summary["activation_max"] == 7.0


# ---- the claims


LOSSES = {"softmax": [1.80, 1.82, 1.81, 1.83, 1.815], "softpick": [1.801, 1.818, 1.812, 1.829, 1.816],
          "cog": [1.79, 1.815, 1.80, 1.82, 1.81], "softmax_sink": [1.802, 1.821, 1.809, 1.832, 1.814]}
NOISE = [1.0, 1.004, 0.997, 1.002, 0.999]  # a seed-to-seed spread for losses made as multiples of softmax's


def frames(losses=None, **telemetry):
    """Contest tables of LOSSES with per-seed telemetry columns: name -> variant -> per-seed values."""
    t = contest_frames(losses or LOSSES)
    runs = t["runs"]
    runs["config.model.layers"], runs["config.model.heads"] = 2, 4
    for name, per_variant in telemetry.items():
        for variant, values in per_variant.items():
            for seed, value in enumerate(values):
                runs.loc[(runs.variant == variant) & (runs.seed == seed), f"telemetry.{name}"] = value
    return on_protocol(t)


def check(check, t):
    return check(t, PUB, "catalog")


def test_softpick_without_sinks_at_softmaxs_loss_holds():
    t = frames(sink_rate={"softpick": [0.0] * 5, "softmax": [0.5, 0.375, 0.5, 0.25, 0.5]})
    row = check(score_papers.softpick_no_sinks, t)
    assert row.verdict == HOLDS, row
    assert "sink heads 0 of 40 layer × head pairs over 5 seeds (softmax: 17 of 40)" in row.measured
    assert "sink share 95% CI [0.00, 0.09] (exact binomial)" in row.interval  # 0 of 40: the upper end is 0.088


def test_softpick_with_sinks_in_most_heads_is_contradicted_and_so_is_a_loss_cost():
    sinks = frames(sink_rate={"softpick": [0.5, 0.625, 0.5, 0.75, 0.5], "softmax": [0.5] * 5})
    assert check(score_papers.softpick_no_sinks, sinks).verdict == CONTRADICTED
    costly = dict(LOSSES, softpick=[x * 1.05 * e for x, e in zip(LOSSES["softmax"], NOISE)])
    row = check(score_papers.softpick_no_sinks, frames(costly, sink_rate={"softpick": [0.0] * 5}))
    assert row.verdict == CONTRADICTED and "+5.04%" in row.measured


def test_a_few_seeds_of_few_heads_cannot_show_no_sinks():
    few = {v: losses[:4] for v, losses in LOSSES.items()}
    row = check(score_papers.softpick_no_sinks, frames(few, sink_rate={"softpick": [0.0] * 4}))
    assert row.verdict == INCONCLUSIVE, "0 of 32 heads: the exact interval still reaches past 10% (0.109)"


def test_cog_at_softmaxs_quality_holds_and_reports_its_negative_share():
    row = check(score_papers.cog_at_least_softmax,
                frames(negative_mass_share={"cog": [0.3, 0.32, 0.31, 0.29, 0.305]}))
    assert row.verdict == HOLDS and "negative weight share 30.5%" in row.measured
    worse = dict(LOSSES, cog=[x * 1.03 * e for x, e in zip(LOSSES["softmax"], NOISE)])
    assert check(score_papers.cog_at_least_softmax, frames(worse)).verdict == CONTRADICTED


def test_the_sink_claim_needs_smaller_outliers_on_both_measures():
    low_kurtosis, high_kurtosis = [4.0, 4.2, 3.9, 4.1, 4.0], [9.0, 8.0, 10.0, 9.5, 9.0]
    low_max, high_max = [10.0, 11.0, 9.0, 10.5, 10.0], [30.0, 28.0, 35.0, 31.0, 30.0]
    smaller = frames(activation_kurtosis={"softmax_sink": low_kurtosis, "softmax": high_kurtosis},
                     activation_max={"softmax_sink": low_max, "softmax": high_max})
    assert check(score_papers.sink_smaller_outliers, smaller).verdict == HOLDS
    larger = frames(activation_kurtosis={"softmax_sink": high_kurtosis, "softmax": low_kurtosis},
                    activation_max={"softmax_sink": low_max, "softmax": high_max})
    row = check(score_papers.sink_smaller_outliers, larger)
    assert row.verdict == CONTRADICTED and row.lean.startswith("outliers do not shrink")


def test_a_paper_claim_is_held_to_its_protocol():
    t = frames(sink_rate={"softpick": [0.0] * 5, "softmax": [0.5] * 5})
    t = off_protocol(t, "still improving", "softpick")
    row = check(score_papers.softpick_no_sinks, t)
    assert row.verdict == "inconclusive at catalog" and "would hold" in row.lean


def test_a_build_without_the_variants_or_the_longer_windows_says_why():
    t = on_protocol(contest_frames({"softmax": [1.8, 1.81], "yat": [1.85, 1.86]}))
    papers = (*length_papers.CHECKS, *score_papers.CHECKS, *slay_paper.CHECKS, *diff_paper.CHECKS)
    rows = {c.__name__: check(c, t) for c in papers}
    assert all(r.verdict == "not testable at catalog" for r in rows.values())
    assert "no stickbreaking or no softmax" in rows["stickbreaking_extrapolates"].interval
    assert "no selective or no softmax" in rows["selective_matches_twice_the_heads"].interval
    assert "no softpick or no softmax" in rows["softpick_no_sinks"].interval
    assert "no diff or no softmax" in rows["diff_lower_loss"].interval
    # every paper has its row; the one row of this project's own beside them (SLAY by feature count) is BEYOND
    assert {r.source for r in rows.values()} - {BEYOND} == set(claims.PAPERS)
    assert all(c in claims.CHECKS for c in papers), "every paper's row is in the ledger"


def context_frames(ratios: dict[str, dict[int, float]]) -> dict:
    """The catalog's contest tables with a context_length table: each variant's loss at 1x, 2x and 4x the block,
    softmax's rising with the window, another variant's at `ratios[variant][multiple]` times softmax's."""
    t = frames(dict(LOSSES, **{v: [x * 1.01 for x in LOSSES["softmax"]] for v in ratios}))
    softmax = {1: 1.80, 2: 1.95, 4: 2.30}
    rows = []
    for variant in ("softmax", *ratios):
        for seed, noise in enumerate(NOISE):
            for multiple, loss in softmax.items():
                factor = 1.0 if variant == "softmax" else ratios[variant][multiple] * noise
                value = loss * factor
                rows.append({"variant": variant, "lr": 3e-3, "seed": seed, "multiple": multiple,
                             "context_length": 64 * multiple, "val_loss": value,
                             "vs_trained": value / (softmax[1] * (1.0 if variant == "softmax" else
                                                                  ratios[variant][1] * noise))})
    t["context_length"] = pd.DataFrame(rows)
    return t


def test_longer_windows_decide_the_stickbreaking_ssmax_and_fox_rows():
    """Lower loss than softmax at 2x and 4x the block holds; a higher loss at one longer window contradicts;
    without a context_length table (learned positions) the rows say what they need."""
    t = context_frames({"stickbreaking": {1: 1.01, 2: 0.95, 4: 0.85}, "ssmax": {1: 1.0, 2: 0.97, 4: 1.06},
                        "fox": {1: 0.99, 2: 1.02, 4: 0.9}})
    stick = check(length_papers.stickbreaking_extrapolates, t)
    assert stick.verdict == HOLDS and "4× the block: stickbreaking / softmax" in stick.measured
    assert "without position embeddings" in stick.note
    ssmax = check(length_papers.ssmax_longer_contexts, t)
    assert ssmax.verdict == CONTRADICTED and ssmax.lean.startswith("ssmax is not better at 4× the block")
    fox = check(length_papers.fox_extrapolates, t)  # better at 4x, worse at 2x: not at every longer window
    assert fox.verdict == CONTRADICTED and fox.lean.startswith("fox is not better at 2× the block")
    assert "whose text is not among this project's sources" in fox.quote  # its direction, no words quoted
    better = check(length_papers.fox_extrapolates, context_frames({"fox": {1: 1.0, 2: 0.97, 4: 0.93}}))
    assert better.verdict == HOLDS and "2× the block: fox / softmax" in better.measured
    plain = check(length_papers.ssmax_longer_contexts, frames(dict(LOSSES, ssmax=LOSSES["softmax"])))
    assert plain.verdict == "not testable at catalog" and "model.position: none" in plain.interval


def heads_frames(selective_factor: float, heads: int = 8) -> dict:
    """The catalog's contest tables with selective's losses at `selective_factor` times softmax's, and the study
    `heads`: softmax with `heads` heads (twice the contest's 4 when 8) at the contest seeds, 1% better."""
    t = frames(dict(LOSSES, selective=[x * selective_factor * e for x, e in zip(LOSSES["softmax"], NOISE)]))
    t["runs_heads"] = pd.DataFrame([{"study": "heads", "variant": "softmax", "lr": 3e-3, "seed": seed,
                                     "best_val_loss": loss * 0.99, "diverged": False, **same_config(t),
                                     "config.model.heads": heads} for seed, loss in enumerate(LOSSES["softmax"])])
    return t


def same_config(t) -> dict:
    """The contest cells' config columns, as a study's table carries them where it changes nothing else."""
    first = t["runs"].iloc[0]
    return {c: first[c] for c in t["runs"].columns if c.startswith("config.")}


def test_selective_against_softmax_with_twice_the_heads():
    """Within 1% of the twice-headed softmax holds, 3% worse is contradicted, a study of other heads or none at all
    is not testable and says why."""
    row = check(score_papers.selective_matches_twice_the_heads, heads_frames(0.99))
    assert row.verdict == HOLDS and "selective (4 heads) / softmax (8 heads)" in row.measured
    assert "half as wide" in row.note
    worse = check(score_papers.selective_matches_twice_the_heads, heads_frames(1.02))
    assert worse.verdict == CONTRADICTED and worse.lean.startswith("selective is not within 1%")
    other = check(score_papers.selective_matches_twice_the_heads, heads_frames(0.99, heads=12))
    assert other.verdict == "not testable at catalog" and "12 heads, not twice" in other.interval
    t = heads_frames(0.99)
    t["runs_heads"].loc[1, "diverged"] = True  # left out of the pairing, counted as a precondition
    diverged = check(score_papers.selective_matches_twice_the_heads, t)
    assert diverged.verdict == "inconclusive at catalog" and diverged.seeds == 4
    assert "no cells with twice the heads diverged (1 of 5 diverged)" in diverged.preconditions
    t = heads_frames(0.99)
    del t["runs_heads"]
    assert "a study named `heads`" in check(score_papers.selective_matches_twice_the_heads, t).interval


def positions_frames(factor: float, study_position: str = "none", contest_position: str | None = None) -> dict:
    """The catalog's contest tables with fox 1% above softmax, every contest cell with learned position embeddings
    (no config.model.position column, as a cell's slice leaves the default out), and the study `positions`: fox
    without them at the contest seeds and fox's contest LR, at `factor` times softmax's loss."""
    t = frames(dict(LOSSES, fox=[x * 1.01 * e for x, e in zip(LOSSES["softmax"], NOISE)]))
    t["runs_positions"] = pd.DataFrame([{"study": "positions", "variant": "fox", "lr": 3e-3, "seed": seed,
                                         "best_val_loss": loss * factor * NOISE[seed], "diverged": False,
                                         **same_config(t), "config.model.position": study_position}
                                        for seed, loss in enumerate(LOSSES["softmax"])])
    if contest_position:
        t["runs"]["config.model.position"] = contest_position
    return t


def test_fox_without_position_embeddings_against_softmax_with_them():
    """Within 1% of softmax with learned position embeddings holds; 3% worse would contradict it, but the study
    trains at fox's LR chosen with them, so the row is inconclusive and says so; a diverged cell without them
    keeps it from holding; a study that keeps them, a build whose contest has none (config/length.yaml's), a
    study at another LR or none at all is not testable and says why."""
    row = check(length_papers.fox_needs_no_positions, positions_frames(0.995))
    assert row.verdict == HOLDS and "fox without position embeddings / softmax with them" in row.measured
    assert "/ fox with them" in row.measured and "whose text is not among this project's sources" in row.quote
    assert "a tuned LR could only lower the loss without them" in row.preconditions
    # a mean under the margin whose interval crosses it: a rule reading the mean alone would call it held
    close = check(length_papers.fox_needs_no_positions, positions_frames(1.008))
    assert close.verdict == INCONCLUSIVE and close.seeds_to_resolve
    assert "+0.8" in close.measured.split(";")[0] and "1.01" in close.check
    worse = check(length_papers.fox_needs_no_positions, positions_frames(1.03))
    assert worse.verdict == "inconclusive at catalog" and "would contradict it" in worse.lean
    assert "not within 1% of softmax with them" in worse.lean and "may be the LR's" in worse.preconditions
    t = positions_frames(0.995)
    t["runs_positions"].loc[0, "diverged"] = True
    diverged = check(length_papers.fox_needs_no_positions, t)
    assert diverged.verdict == "inconclusive at catalog" and diverged.seeds == 4
    assert "1 of 5 diverged" in diverged.preconditions and "would hold" in diverged.lean
    for kept in (positions_frames(0.995, study_position="learned"), positions_frames(0.995, contest_position="none")):
        unread = check(length_papers.fox_needs_no_positions, kept)
        assert unread.verdict == "not testable at catalog" and "a study named `positions`" in unread.interval
    t = positions_frames(0.995)
    t["runs"]["config.model.dropout"] = 0.1  # a key the contest's cells set and the study's leave at its default
    assert "model.dropout unset, not 0.1" in check(length_papers.fox_needs_no_positions, t).interval
    t = positions_frames(0.995)
    t["runs_positions"] = t["runs_positions"].assign(lr=0.01)
    assert "LR 0.01, not fox's contest" in check(length_papers.fox_needs_no_positions, t).interval
    del t["runs_positions"]
    assert "a study named `positions`" in check(length_papers.fox_needs_no_positions, t).interval


# ---- the sinks table and the writeup's paragraph


SINKS = pd.DataFrame([{"variant": v, "lr": 3e-3, "seed": s, "sink_rate": rate, "first_key_weight_max": 0.2 + rate,
                       "negative_mass_share": 0.3 if v == "cog" else 0.0, "activation_kurtosis": kurtosis + s,
                       "activation_max": 10.0 * kurtosis}
                      for v, rate, kurtosis in (("softmax", 0.375, 6.0), ("cog", 0.0, 4.0), ("softpick", 0.0, 3.0))
                      for s in (0, 1)])


def test_the_sinks_table_reads_per_variant_and_the_paragraph_names_each_papers_verdict():
    shown = display.shown("sinks", SINKS).set_index("variant")
    assert shown.loc["softmax", "sink rate (heads > 0.3 on the first key)"] == "37.5%"
    assert shown.loc["cog", "negative weight share"] == "30.0%"
    assert shown.loc["softpick", "activation kurtosis"] == "3.50 ± 0.50"
    t = frames(sink_rate={"softpick": [0.0] * 5, "softmax": [0.5] * 5})
    ledger = claims.ledger(t)
    text = report_telemetry.sinks_results(SINKS, ledger)
    assert text.startswith("Heads with a sink: softmax 37.5%.")
    assert "Negative weight: cog 30.0% of the weights' magnitude." in text
    assert "Activation kurtosis, largest first: softmax 6.50, cog 4.50, softpick 3.50." in text
    assert "Softpick has no attention sinks, at no loss cost: holds" in text
    assert "Cog attention's signed weights train at least as well as softmax: holds" in text
    assert "9 of the papers' 11 claims are not testable at this build" in text  # no telemetry, slay, fox, diff
    assert report_telemetry.sinks_results(SINKS.iloc[0:0], ledger).startswith("This build's bundles record no")


def test_a_heads_study_that_changes_more_than_the_heads_is_not_read_as_one():
    """A study `heads` at another width, length and LR than the contest: the row is not testable and names each
    difference; the same study at the contest's width, length and softmax's LR is read, and its note gives the
    parameter counts it compares."""
    t = heads_frames(0.99)
    t["runs"] = t["runs"].assign(**{"config.model.d_model": 32, "config.train.steps": 40, "n_params": 1000})
    lr = t["runs_heads"].lr.iloc[0]
    t["runs_heads"] = t["runs_heads"].assign(**{"config.model.d_model": 64, "config.train.steps": 80,
                                                "n_params": 3000, "lr": 0.01})
    row = check(score_papers.selective_matches_twice_the_heads, t)
    assert row.verdict == "not testable at catalog"
    assert "model.d_model 64, not 32" in row.interval and "train.steps 80, not 40" in row.interval
    assert "LR 0.01, not softmax's contest" in row.interval
    same = dict(t, runs_heads=t["runs_heads"].assign(**{"config.model.d_model": 32, "config.train.steps": 40,
                                                        "n_params": 1000, "lr": lr}))
    read = check(score_papers.selective_matches_twice_the_heads, same)
    assert read.verdict == HOLDS and "the same parameter count" in read.note


def test_a_heads_study_of_several_head_counts_is_not_read_as_one():
    t = heads_frames(0.99)
    t["runs_heads"] = pd.concat([t["runs_heads"], t["runs_heads"].assign(**{"config.model.heads": 16})])
    row = check(score_papers.selective_matches_twice_the_heads, t)
    assert row.verdict == "not testable at catalog" and "2 head counts" in row.interval


@pytest.mark.slow
def test_a_build_with_the_heads_and_positions_studies_hands_their_cells_to_their_rows(tmp_path, corpus_path):
    """Through Snakemake: a smoke-sized build of softmax, selective and fox with the studies `heads` (softmax at
    twice the heads) and `positions` (fox without position embeddings) writes runs_heads and runs_positions, each
    with whether its cells were still improving, and the ledger's selective row and forgetting attention's row on
    position embeddings compare with those cells."""
    import yaml

    from processes import snakemake
    from workspace import make_workspace

    ws = make_workspace(tmp_path, share_compile_cache=True)
    cfg = yaml.safe_load((ws / "config" / "smoke.yaml").read_text())
    heads = cfg["model"]["heads"]
    cfg.update(name="heads", variants=["softmax", "selective", "fox"],
               studies=[{"name": "heads", "model": {"heads": 2 * heads}, "variants": ["softmax"]},
                        {"name": "positions", "model": {"position": "none"}, "variants": ["fox"]}])
    cfg["contest"] = {"seeds": [0, 1], "lr": {"softmax": 3.0e-3, "selective": 3.0e-3, "fox": 3.0e-3}}
    cfg["sweep"]["lrs"] = [3.0e-3]
    (ws / "config" / "heads.yaml").write_text(yaml.safe_dump(cfg))
    built = snakemake(ws, "results/tables/ledger.csv", "--cores", "2", "--configfile", "config/heads.yaml",
                      corpus=corpus_path)
    assert built.returncode == 0, built.stderr[-3000:]
    study = pd.read_csv(ws / "results" / "tables" / "runs_heads.csv")
    assert set(study.variant) == {"softmax"} and set(study["config.model.heads"]) == {2 * heads}
    ledger = pd.read_csv(ws / "results" / "tables" / "ledger.csv")
    row = ledger[ledger.claim.str.startswith("selective attention matches")].iloc[0]
    assert f"selective ({heads} heads) / softmax ({2 * heads} heads)" in row.measured
    assert not row.verdict.startswith("not testable")
    positions = pd.read_csv(ws / "results" / "tables" / "runs_positions.csv")
    assert set(positions.variant) == {"fox"} and set(positions["config.model.position"]) == {"none"}
    assert positions.improving.notna().all() and positions.late_gain.notna().all()
    row = ledger[ledger.claim.str.startswith("forgetting attention needs no position embeddings")].iloc[0]
    assert "fox without position embeddings / softmax with them" in row.measured
    assert not row.verdict.startswith("not testable")


# ---- SLAY: its quality beside softmax's and the exact kernel's


def slay_frames(slay_losses):
    """Five seeds: softmax at 2.00, yat (the exact kernel) at 1.98, and SLAY at the losses given."""
    return contest_frames({"softmax": [2.00, 2.01, 1.99, 2.00, 2.02], "yat": [1.98, 1.99, 1.97, 1.98, 2.00],
                           "slay": slay_losses})


def test_slay_at_softmaxs_loss_holds_both_readings_and_a_costly_slay_contradicts_them():
    near = on_protocol(slay_frames([2.001, 2.009, 1.992, 2.002, 2.018]))
    row, exact = check(slay_paper.slay_near_softmax, near), check(slay_paper.slay_close_to_the_exact_kernel, near)
    assert (row.verdict, exact.verdict) == (HOLDS, HOLDS)
    assert "slay / softmax" in row.measured and "slay / yat" in exact.measured
    assert "4.6760 vs 4.6417" in row.published and "+2.21%" in exact.published
    costly = on_protocol(slay_frames([2.10, 2.11, 2.09, 2.10, 2.12]))  # +5% over softmax, +6% over yat
    assert check(slay_paper.slay_near_softmax, costly).verdict == CONTRADICTED
    assert check(slay_paper.slay_close_to_the_exact_kernel, costly).verdict == CONTRADICTED
    # about the paper's gap over yat, seed to seed within a point: the interval spans the threshold
    yat = [1.98, 1.99, 1.97, 1.98, 2.00]
    between = on_protocol(slay_frames([y * r for y, r in zip(yat, [1.010, 1.035, 1.015, 1.030, 1.022])]))
    open_row = check(slay_paper.slay_close_to_the_exact_kernel, between)
    assert open_row.verdict.startswith(INCONCLUSIVE) and "seeds" in open_row.resolution


def test_slay_rows_print_the_papers_numbers_not_words_and_need_their_cells():
    t = on_protocol(contest_frames({"softmax": [2.0, 2.01], "yat": [1.98, 1.99]}))
    rows = [check(c, t) for c in (slay_paper.slay_near_softmax, slay_paper.slay_close_to_the_exact_kernel)]
    assert all(r.verdict == "not testable at catalog" for r in rows)
    assert all(r.source == SLAY_PAPER and "not among this project's sources" in r.quote for r in rows)
    assert "no slay" in rows[0].interval and "no slay or no yat" in rows[1].interval


# ---- SLAY by feature count: what the approximation costs against its exact kernel


def feature_frames(small: float, large: float, default: float = 1.02, noise=NOISE) -> dict:
    """Five seeds: softmax, spherical_yat (the exact kernel) at 1.98, slay at the contest (M = 8, its default) at
    `default` times the kernel's, and the studies slay_small (M = 2) and slay_large (M = 32) at `small` and `large`
    times it, at slay's contest LR, changing nothing else."""
    exact = [1.98, 1.99, 1.97, 1.98, 2.00]
    t = frames({"softmax": LOSSES["softmax"], "spherical_yat": exact,
                "slay": [x * default * e for x, e in zip(exact, noise)]})
    for name, m, factor in (("slay_small", 2, small), ("slay_large", 32, large)):
        t[f"runs_{name}"] = pd.DataFrame([{"study": name, "variant": "slay", "lr": 3e-3, "seed": seed,
                                           "best_val_loss": x * factor * noise[seed], "diverged": False,
                                           **same_config(t), slay_paper.FEATURES_COLUMN: m}
                                          for seed, x in enumerate(exact)])
    return t


def test_slay_by_feature_count_reads_each_count_against_the_exact_kernel_and_the_most_against_the_fewest():
    """More features costing less holds, costing more is contradicted, a gain inside the seeds' spread stays
    open where a rule reading the means alone would call it held; the row names each count's cost."""
    row = check(slay_paper.slay_cost_by_features, feature_frames(1.05, 1.005))
    assert row.verdict == HOLDS and row.source == BEYOND, row
    assert [part.split(":")[0] for part in row.measured.split("; ")] == ["M = 2", "M = 8", "M = 32"]
    assert "slay / spherical_yat +5.0" in row.measured and "M = 32 / M = 2" in row.interval
    assert check(slay_paper.slay_cost_by_features, feature_frames(1.005, 1.05)).verdict == CONTRADICTED
    # M = 32 lower by 0.2% on the mean, with a seed spread of about 1%: the naive reading of the means would hold
    spread = [1.0, 1.012, 0.99, 1.009, 0.992]
    t = feature_frames(1.01, 1.01, noise=NOISE)
    t["runs_slay_large"]["best_val_loss"] = [x * 1.008 * e for x, e in zip([1.98, 1.99, 1.97, 1.98, 2.00], spread)]
    close = check(slay_paper.slay_cost_by_features, t)
    large = t["runs_slay_large"].best_val_loss.mean()
    assert large < t["runs_slay_small"].best_val_loss.mean() and close.verdict == INCONCLUSIVE, close


def test_slay_by_feature_count_needs_its_studies_alike_but_for_the_count_and_counts_their_cells():
    t = feature_frames(1.05, 1.005)
    t["runs_slay_large"].loc[0, "diverged"] = True
    diverged = check(slay_paper.slay_cost_by_features, t)
    assert diverged.verdict == "inconclusive at catalog" and "1 of 5 diverged" in diverged.preconditions
    t = feature_frames(1.05, 1.005)
    del t["runs_slay_small"]
    assert "studies named slay_small and slay_large" in check(slay_paper.slay_cost_by_features, t).interval
    t = feature_frames(1.05, 1.005)
    t["runs_slay_small"] = t["runs_slay_small"].assign(lr=0.01)
    assert "LR 0.01, not slay's contest" in check(slay_paper.slay_cost_by_features, t).interval
    t = feature_frames(1.05, 1.005)
    t["runs_slay_small"][slay_paper.FEATURES_COLUMN] = 8  # the default: the contest's own cells
    assert "apart from the default 8" in check(slay_paper.slay_cost_by_features, t).interval
    t = feature_frames(1.05, 1.005)
    t["runs_slay_large"]["config.model.dropout"] = 0.2
    assert "model.dropout 0.2" in check(slay_paper.slay_cost_by_features, t).interval


# ---- differential attention


def test_differential_attention_lower_than_softmax_holds_higher_is_contradicted_and_it_keeps_to_its_protocol():
    lower = frames(dict(LOSSES, diff=[x * 0.98 * e for x, e in zip(LOSSES["softmax"], NOISE)]))
    row = check(diff_paper.diff_lower_loss, lower)
    assert row.verdict == HOLDS and row.source == DIFF_PAPER and "loss diff / softmax -1.96%" in row.measured
    assert "whose text is not among this project's sources" in row.quote and "below 1.00" in row.check
    higher = frames(dict(LOSSES, diff=[x * 1.02 * e for x, e in zip(LOSSES["softmax"], NOISE)]))
    worse = check(diff_paper.diff_lower_loss, higher)
    assert worse.verdict == CONTRADICTED and worse.lean.startswith("differential attention trains to a higher")
    # a mean below softmax's inside the seeds' spread: open, where the mean alone would call it held
    spread = [1.0, 1.012, 0.99, 1.009, 0.992]
    close = frames(dict(LOSSES, diff=[x * 0.998 * e for x, e in zip(LOSSES["softmax"], spread)]))
    assert check(diff_paper.diff_lower_loss, close).verdict == INCONCLUSIVE
    off = off_protocol(lower, "still improving", "diff")
    assert check(diff_paper.diff_lower_loss, off).verdict == "inconclusive at catalog"
