"""Issue 11's arms: yat_exp, yat_b_exp, softmax_t, a3_heads, and the normaliser crossover.

- each new variant's weights are distributions over the causal window;
- yat_exp is a softmax over kappa computed here independently (numpy, -inf mask);
- softmax_t and a3_heads start where A3 starts (same q, k), to float tolerance;
- the crossover of a model with itself reproduces its native loss exactly, and the
  crossover of yat (yat_b) is its twin yat_exp (yat_b_exp) with the same weights;
- parameter counts at config/paper.yaml, and `attnlab params` lists every arm.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from flax import nnx

from attnlab.core.config import validate_config
from attnlab.core.config_types import ModelConfig
from attnlab.core.constants import A3_INIT_INVERSE_TEMPERATURE
from attnlab.core.variants import NORMALISER_TWINS, NORMALISERS, VARIANTS
from attnlab.pipeline.ground.statistics import ONE_SEED
from attnlab.training.attention import score_class
from attnlab.training.attention.normalisers import CROSSOVER, Renormalised, window_softmax
from attnlab.training.model import GPT
from attnlab.training.steps import evaluate, evaluate_normalised
from conftest import REPO
from processes import attnlab

ARMS = ("yat_exp", "yat_b_exp", "softmax_t", "a3_heads")
LAYERS, HEADS, DHEAD = 2, 3, 8


def make_score(variant, seed=0):
    return score_class(variant)(layers=LAYERS, heads=HEADS, d_head=DHEAD, block_size=16, rngs=nnx.Rngs(seed))


def moved(score, seed=1):
    """The score module with every learned array moved off its init (as after training)."""
    rng = np.random.default_rng(seed)
    for _, param in nnx.iter_graph(score):
        if isinstance(param, nnx.Param):
            value = param[...]
            param[...] = value + jnp.asarray(rng.normal(0.0, 0.5, value.shape), jnp.float32)
    return score


def qk(scale=1.0, length=9, seed=0):
    kq, kk = jax.random.split(jax.random.key(seed))
    shape = (2, length, HEADS, DHEAD)
    return scale * jax.random.normal(kq, shape), scale * jax.random.normal(kk, shape)


def np_kappa(q, k, b=0.0, eps=1.0):
    """kappa = (q.k + b)^2 / (||q - k||^2 + eps) per (B, H, T, S), in float64; b, eps per head (H,)."""
    q, k = np.asarray(q, np.float64), np.asarray(k, np.float64)
    dots = np.einsum("bthd,bshd->bhts", q, k)
    dist = ((q[:, :, None] - k[:, None, :]) ** 2).sum(-1).transpose(0, 3, 1, 2)  # (B, H, T, S)
    b, eps = np.broadcast_to(b, (q.shape[2],)), np.broadcast_to(eps, (q.shape[2],))
    return (dots + b[None, :, None, None]) ** 2 / (dist + eps[None, :, None, None])


# ---- valid distributions over the causal window


@pytest.mark.parametrize("variant", ARMS)
@pytest.mark.parametrize("scale", [0.1, 1.0, 30.0])
def test_weights_of_trained_arms_are_distributions_over_the_causal_window(variant, scale):
    """At init every variant is covered by test_attention; here the arms' parameters are moved off it."""
    score = moved(make_score(variant))
    q, k = qk(scale)
    w = np.asarray(score(q, k, layer=1).weights, np.float64)
    assert np.all(np.isfinite(w)) and np.all(w >= 0)
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-5)
    future = ~np.tril(np.ones(w.shape[-2:], dtype=bool))
    assert np.all(w[..., future] == 0.0), "weight on a future key"


@pytest.mark.parametrize("variant", ["yat_exp", "yat_b_exp"])
def test_softmax_kernels_report_kappa_as_score_and_no_mass(variant):
    q, k = qk(0.7)
    out = make_score(variant)(q, k, layer=0)
    assert out.mass is None and out.gate is None
    mask = np.tril(np.ones((9, 9), dtype=bool))
    b = eps = np.log(2.0) if variant == "yat_b_exp" else None
    kappa = np_kappa(q, k) if b is None else np_kappa(q, k, b, eps)
    np.testing.assert_allclose(np.asarray(out.scores)[..., mask], kappa[..., mask], rtol=1e-4)
    assert np.all(np.isneginf(np.asarray(out.scores)[..., ~mask]))


def test_window_softmax_gives_zero_rows_without_nan_where_no_key_is_visible():
    scores = jnp.asarray(np.random.default_rng(0).normal(size=(2, 4, 4)) * 50, jnp.float32)
    mask = jnp.asarray(np.tril(np.ones((4, 4), bool)) & np.array([False, True, True, True])[:, None])  # row 0 empty
    w = window_softmax(scores, mask)
    assert np.all(np.asarray(w[:, 0]) == 0.0)
    np.testing.assert_allclose(np.asarray(w[:, 1:]).sum(-1), 1.0, rtol=1e-6)
    grad = jax.grad(lambda s: (window_softmax(s, mask) * jnp.arange(4.0)).sum())(scores)
    assert np.all(np.isfinite(np.asarray(grad)))
    assert np.all(np.asarray(window_softmax(scores, jnp.zeros((4, 4), bool))) == 0.0)


# ---- yat_exp is softmax(kappa), computed independently


@pytest.mark.parametrize("scale", [0.3, 1.0, 3.0])
def test_yat_exp_is_a_softmax_over_kappa(scale):
    q, k = qk(scale)
    mask = np.tril(np.ones((9, 9), dtype=bool))
    kappa = np_kappa(q, k)  # b = 0, eps = 1, as yat
    expected = jax.nn.softmax(jnp.where(mask, jnp.asarray(kappa, jnp.float32), -jnp.inf), axis=-1)
    actual = make_score("yat_exp")(q, k, layer=0).weights
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=1e-5, atol=1e-6)
    assert np.max(np.abs(np.asarray(actual) - np.asarray(make_score("yat")(q, k, layer=0).weights))) > 1e-3


def test_yat_b_exp_is_a_softmax_over_yat_b_kappa_with_its_learned_scalars():
    score = moved(make_score("yat_b_exp"))
    q, k = qk(0.8)
    layer = 1
    b, eps = (np.asarray(v[layer], np.float64) for v in (score.scalars()["b"], score.scalars()["eps"]))
    mask = np.tril(np.ones((9, 9), dtype=bool))
    expected = jax.nn.softmax(jnp.where(mask, jnp.asarray(np_kappa(q, k, b, eps), jnp.float32), -jnp.inf), -1)
    np.testing.assert_allclose(np.asarray(score(q, k, layer).weights), np.asarray(expected), rtol=1e-5, atol=1e-6)


# ---- A3's controls start where A3 starts


@pytest.mark.parametrize("variant", ["softmax_t", "a3_heads"])
@pytest.mark.parametrize("layer", [0, 1])
def test_a3_controls_at_init_equal_a3_at_init(variant, layer):
    q, k = qk(2.0)
    a3 = np.asarray(make_score("a3")(q, k, layer).weights)
    other = np.asarray(make_score(variant, seed=5)(q, k, layer).weights)  # another seed: the embedding must not matter
    np.testing.assert_allclose(other, a3, rtol=1e-5, atol=1e-6)
    plain = np.asarray(make_score("softmax")(q, k, layer).weights)
    assert np.max(np.abs(other - plain)) > 1e-3, "they start at temperature 1/sigmoid(3), not at plain softmax"


def test_softmax_t_starts_at_inverse_temperature_sigmoid_3():
    beta = np.asarray(make_score("softmax_t").scalars()["inverse_temperature"])
    assert beta.shape == (LAYERS, HEADS)
    np.testing.assert_allclose(beta, A3_INIT_INVERSE_TEMPERATURE, rtol=1e-6)


def test_a3_heads_gates_differ_per_head_once_trained():
    score = moved(make_score("a3_heads"))
    q, k = qk(1.0)
    gate = np.asarray(score(q, k, layer=1).gate)  # (B, H, T)
    assert gate.shape == (2, HEADS, 9)
    assert np.ptp(gate.mean(axis=(0, 2))) > 1e-3
    # per-head parameters: layer 0's gate does not move when only layer 1's w_g, b_g, u change
    before = np.asarray(score(q, k, layer=0).weights)
    for name in ("w_g", "b_g", "u"):
        getattr(score, name)[...] = getattr(score, name)[...].at[1].add(1.0)
    np.testing.assert_array_equal(np.asarray(score(q, k, layer=0).weights), before)


# ---- the normaliser crossover


def small_model(variant, seed=0):
    cfg = ModelConfig(vocab_size=20, d_model=24, layers=2, heads=3, block_size=12, d_ff=48, dropout=0.1,
                      variant=variant)
    model = GPT(cfg, rngs=nnx.Rngs(params=seed))
    if variant in ("yat_b", "yat_b_exp"):
        moved(model.score, seed=3)
    return model


def held_out(seed=0):
    kx, ky = jax.random.split(jax.random.key(seed))
    return jax.random.randint(kx, (3, 4, 12), 0, 20), jax.random.randint(ky, (3, 4, 12), 0, 20)


def test_the_registry_names_each_kernel_variants_normaliser_and_twin():
    for variant, twin in NORMALISER_TWINS.items():
        assert NORMALISER_TWINS[twin] == variant and {NORMALISERS[variant], NORMALISERS[twin]} == {"kernel",
                                                                                                    "softmax"}
        q, k = qk(1.0)
        score = make_score(variant)
        assert (score(q, k, 0).mass is not None) == (NORMALISERS[variant] == "kernel")
        assert score.normaliser is score.blockwise(q, k, 0).normaliser is CROSSOVER[NORMALISERS[variant]]
    assert set(NORMALISER_TWINS) == {"yat", "yat_b", "yat_exp", "yat_b_exp"} <= set(VARIANTS)


@pytest.mark.parametrize("variant", [v if v in ("yat", "yat_b") else pytest.param(v, marks=pytest.mark.slow)
                                     for v in sorted(NORMALISER_TWINS)])
def test_crossing_a_model_with_itself_reproduces_its_native_loss_exactly(variant):
    model = small_model(variant)
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    x, y = held_out()
    native = float(evaluate(graphdef, rest, params, x, y).full)
    itself = float(evaluate_normalised(graphdef, rest, params, x, y, normaliser=NORMALISERS[variant]))
    assert itself == native


@pytest.mark.parametrize("variant", sorted(NORMALISER_TWINS))
def test_the_crossover_is_the_twin_variant_with_the_same_weights(variant):
    """Swapping the normaliser equals building the twin's GPT and loading the trained parameters into it."""
    model = small_model(variant)
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    twin_name = NORMALISER_TWINS[variant]
    twin = GPT(ModelConfig(**{**model.cfg.__dict__, "variant": twin_name}), rngs=nnx.Rngs(params=9))
    nnx.update(twin, params)  # identical parameter structures: every trained value lands in the twin
    twin_graphdef, twin_params, twin_rest = nnx.split(twin, nnx.Param, ...)
    for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(twin_params), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    x, y = held_out(1)
    swapped = float(evaluate_normalised(graphdef, rest, params, x, y, normaliser=NORMALISERS[twin_name]))
    as_twin = float(evaluate(twin_graphdef, twin_rest, twin_params, x, y).full)
    np.testing.assert_allclose(swapped, as_twin, rtol=1e-6)
    assert abs(swapped - float(evaluate(graphdef, rest, params, x, y).full)) > 1e-5, "the normaliser matters"


@pytest.mark.slow
def test_renormalised_blockwise_path_equals_its_dense_path():
    from attnlab.training.attention.blockwise import blockwise_attention

    q, k = qk(1.0, length=11)
    v = jax.random.normal(jax.random.key(4), q.shape)
    for variant in NORMALISER_TWINS:
        for normaliser in ("kernel", "softmax"):
            score = Renormalised(moved(make_score(variant)), normaliser)
            dense = jnp.einsum("bhts,bshd->bthd", score(q, k, 1).weights, v)
            blocks = blockwise_attention(q, k, v, score.blockwise(q, k, 1), 4)
            np.testing.assert_allclose(np.asarray(blocks), np.asarray(dense), rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_normswap_bundle_field_is_written_for_kernel_cells_only(tiny_cfg, small_corpus, tmp_path):
    from attnlab.core.cell_key import CellKey
    from pack_of_one import train_alone

    corpus, sha = small_corpus
    cfg = {**tiny_cfg, "data": {**tiny_cfg["data"], "sha256": sha}, "train": {**tiny_cfg["train"], "steps": 20},
           "model": {**tiny_cfg["model"], "layers": 1}}  # the fields a bundle carries do not depend on depth
    silent = lambda *_: None  # noqa: E731
    swap = train_alone(cfg, CellKey.of("yat_exp", 3e-3, 0), corpus, tmp_path / "yat_exp" / "lr0.003" / "seed0",
                       log=silent)
    assert swap["normswap"]["swapped_to"] == "yat" and swap["normswap"]["native_normaliser"] == "softmax"
    assert swap["normswap"]["native_loss"] == swap["final_val_loss"]  # the final weights, evaluate()'s loss
    assert np.isfinite(swap["normswap"]["swapped_loss"])
    plain = train_alone(cfg, CellKey.of("softmax_t", 3e-3, 0), corpus, tmp_path / "softmax_t" / "lr0.003" / "seed0",
                     log=silent)
    assert "normswap" not in plain and set(plain["learned"]) == {"inverse_temperature"}


# ---- parameter counts


PAPER_COUNTS = {"softmax": 2_719_169, "yat": 2_719_169, "yat_b": 2_719_217, "a3": 2_720_610,
                "yat_exp": 2_719_169, "yat_b_exp": 2_719_217, "softmax_t": 2_719_193, "a3_heads": 2_727_257}


@pytest.mark.slow
def test_params_command_lists_every_arm_at_the_paper_config():
    result = attnlab("params", "--config", "config/paper.yaml", cwd=REPO, timeout=300)
    assert result.returncode == 0, result.stderr
    listed = {line.split()[0]: int(line.split()[1].replace(",", "")) for line in result.stdout.splitlines() if line}
    assert listed == PAPER_COUNTS


def test_arms_config_carries_every_arm_and_a_two_lr_sweep():
    cfg = validate_config(yaml.safe_load((REPO / "config" / "arms.yaml").read_text()))
    assert set(VARIANTS) <= set(cfg["variants"])
    assert len(cfg["sweep"]["lrs"]) >= 2


# ---- the tables and ledger rows (synthetic runs; no JAX)


def _runs(rows):
    import pandas as pd

    return pd.DataFrame([{"variant": v, "lr": lr, "seed": s, "best_val_loss": loss, "diverged": False,
                          "n_params": 1, "config.name": "paper", **extra} for v, lr, s, loss, extra in rows])


GRID = {"variants": ["softmax", "yat", "a3", "yat_exp", "softmax_t", "a3_heads"], "sweep_seeds": [0],
        "sweep_lrs": [1e-3, 3e-3], "contest_seeds": [0, 1],
        "contest_lr": {"softmax": 3e-4, "yat": 3e-3, "a3": 1e-3, "yat_exp": 3e-3, "softmax_t": 1e-3,
                       "a3_heads": 1e-3}}


def _swap(native, to, normaliser, native_loss, swapped_loss):
    return {"normswap.native_normaliser": native, "normswap.native_loss": native_loss, "normswap.swapped_to": to,
            "normswap.swapped_normaliser": normaliser, "normswap.swapped_loss": swapped_loss}


def test_normswap_table_reads_both_losses_from_the_bundles():
    from attnlab.pipeline.tables import normswap_display, normswap_table

    runs = _runs([("yat", 3e-3, 0, 1.5, _swap("kernel", "yat_exp", "softmax", 1.52, 1.9)),
                  ("yat", 1e-3, 0, 1.6, _swap("kernel", "yat_exp", "softmax", 1.61, 2.0)),  # a sweep cell
                  ("yat_exp", 3e-3, 1, 1.45, _swap("softmax", "yat", "kernel", 1.46, 1.7)),
                  ("softmax", 3e-4, 0, 1.4, {})])
    table = normswap_table(runs, GRID)
    assert list(table.variant) == ["yat", "yat", "yat_exp"]  # grid order, then LR; softmax has no crossover
    np.testing.assert_allclose(table.difference, [0.39, 0.38, 0.24])
    assert list(table.in_contest) == [False, True, True]
    shown = normswap_display(table)
    assert list(shown.variant) == ["yat", "yat_exp"]  # the contest cells, one row per variant
    assert list(shown["swapped − native [95% interval]"]) == [f"+0.3800 ({ONE_SEED})", f"+0.2400 ({ONE_SEED})"]
    assert normswap_table(_runs([("softmax", 3e-4, 0, 1.4, {})]), GRID).empty


def test_a3_vs_temperature_sets_each_gain_over_softmax_per_seed():
    from attnlab.pipeline import claims
    from attnlab.pipeline.tables import a3_vs_temperature_display, a3_vs_temperature_table

    rows = []
    seeds = [(1.50, 1.461, 1.49, 1.45), (1.52, 1.478, 1.50, 1.47), (1.51, 1.47, 1.495, 1.46)]
    for seed, (soft, a3, temp, heads) in enumerate(seeds):
        rows += [("softmax", 3e-4, seed, soft, {}), ("a3", 1e-3, seed, a3, {}), ("softmax_t", 1e-3, seed, temp, {}),
                 ("a3_heads", 1e-3, seed, heads, {}), ("a3", 3e-3, seed, 1.0, {})]  # a3 off its contest LR: ignored
    grid = dict(GRID, contest_seeds=[0, 1, 2])
    table = a3_vs_temperature_table(_runs(rows), grid)
    np.testing.assert_allclose(table.a3_gain, [0.039, 0.042, 0.04])
    np.testing.assert_allclose(table.softmax_t_gain, [0.01, 0.02, 0.015])
    np.testing.assert_allclose(table.softmax_t_share_of_a3_gain, [0.01 / 0.039, 0.02 / 0.042, 0.375])
    shown = a3_vs_temperature_display(table)
    assert list(shown.seed) == ["0", "1", "2", "mean"]
    assert float(shown["softmax_t / a3 gain"].iloc[-1]) == pytest.approx(0.369, abs=0.01)  # two decimals
    assert "a3 (LR 0.001)" in shown.columns
    pub = claims.published()
    claim = claims.a3_gain_is_per_token({"a3_vs_temperature": table}, pub, "paper")
    assert claim.source == claims.BEYOND and claim.verdict == "holds" and claim.seeds == 3
    assert "A3's gain: 95% CI [" in claim.interval and "softmax_t − A3: 95% CI [" in claim.interval
    # softmax_t matching A3 on every seed: a per-head temperature closes the gain
    closed = table.assign(softmax_t_best_val=table.a3_best_val - [0.01, 0.012, 0.009])
    assert claims.a3_gain_is_per_token({"a3_vs_temperature": closed}, pub, "paper").verdict == "contradicted"
    no_gain = table.assign(a3_best_val=table.softmax_best_val + 0.01)
    assert "does not beat" in claims.a3_gain_is_per_token({"a3_vs_temperature": no_gain}, pub, "smoke").measured
    two_seeds = table[table.seed < 2]  # the same gains on two seeds: the interval is too wide to tell
    assert claims.a3_gain_is_per_token({"a3_vs_temperature": two_seeds}, pub, "paper").verdict == "inconclusive"


def test_the_later_posts_softmax_kernel_is_checked_at_one_lr():
    from attnlab.pipeline import claims
    from claim_frames import on_protocol

    pub = claims.published()
    assert "yat_b_exp" not in {e["variant"] for e in pub["contest"]}  # the later post is no source here

    from attnlab.pipeline.tables import contest_table

    def built(exp_offsets, exp_lr=3e-3):
        """yat_b at 3e-3 and yat_b_exp = yat_b + offset per seed, as runs.csv and contest.csv."""
        base = [1.51, 1.512, 1.508]
        runs = _runs([("yat_b", 3e-3, s, b, {}) for s, b in enumerate(base)]
                     + [("yat_b_exp", exp_lr, s, b + o, {}) for s, (b, o) in enumerate(zip(base, exp_offsets))])
        spec = {"variants": ["yat_b", "yat_b_exp"], "contest_lr": {"yat_b": 3e-3, "yat_b_exp": exp_lr},
                "contest_seeds": [0, 1, 2]}
        return on_protocol({"runs": runs, "contest": contest_table(runs, spec)})

    check = claims.softmax_over_kernel
    assert check(built([-0.020, -0.021, -0.019]), pub, "paper").verdict == "holds"
    assert check(built([-0.004, 0.002, -0.003]), pub, "paper").verdict == "inconclusive"
    assert check(built([0.010, 0.011, 0.009]), pub, "smoke").verdict == "contradicted"
    # each at its own contest LR, as the posts compare variants
    own = check(built([-0.020, -0.021, -0.019], exp_lr=1e-3), pub, "paper")
    assert own.verdict == "holds" and "each at its own LR" in own.measured
