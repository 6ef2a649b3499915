"""The A³ post's claims: valid distributions, the start at softmax, softer early and sharper deep layers, a
small parameter and compute overhead, composition with MQA/GQA and blockwise attention. Read from the a3_init,
a3_vs_softmax_entropy, a3_gates, params and composability tables. The start, the valid distributions and the
parameter count are settled by construction and kept apart from the experiments; the others state their Rule
(attnlab.pipeline.claims.protocol)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnlab.pipeline.ground import statistics
from attnlab.pipeline.claims import protocol as pp
from attnlab.pipeline.claims import words
from attnlab.pipeline.claims.common import (A3_POST, Claim, at_protocol, constructed, decide, judged,
                                            lr_text, stability_text, table_of, untestable)
from attnlab.pipeline.tables.arms import step_time_ratios
from attnlab.pipeline.ground.contract import A3_GATE_INIT, BASELINE
from attnlab.pipeline.ground.verdicts import CONTRADICTED, HOLDS, every, one_sided
from attnlab.pipeline.ground.estimate_text import describe

ROW_SUM_TOLERANCE = 5e-3  # float16 storage of the maps
EXACT_TOLERANCE = 1e-3  # max |A3 - softmax| that would count as starting at softmax
OVERHEAD_SMALL = 0.01  # share of softmax's parameters
COMPUTE_SMALL = 0.10  # time per step over softmax's: at most this much more

STAY_CLOSE = 0.05  # max |A3 − softmax| of the step-0 weights that counts as "close"
DEPTH_RULE = pp.Rule(
    words.DEPTH,
    "per contest seed, mean normalised row entropy of the first half of the layers minus the second half's: "
    "within A3 (early softer than deep), and that contrast minus softmax's own (a difference of differences, so "
    "a depth pattern softmax shares is not credited to A3)",
    "both above 0", "0: the post's direction; it gives no size", (*pp.TRAINED, pp.LAYERS), pairing=pp.OWN_LR)
COMPUTE_RULE = pp.Rule(words.OVERHEAD, "A3's time per training step over softmax's, timed in one process with the "
                       "variants taking turns, paired by round (mean log-ratio)", f"at most {COMPUTE_SMALL:.0%} more",
                       "this project's reading of 'small': the post gives no number", pairing=pp.SINGLE)


def a3_valid_distributions(t, pub, protocol) -> Claim:
    claim = Claim(A3_POST, "A3's outputs are always valid distributions",
                  "this project's reading: worst |row sum − 1| over every stored A3 attention map (float16 "
                  f"storage); below {ROW_SUM_TOLERANCE:g} keeps to the construction", "–", "Proposition 1", "",
                  quote=words.VALID.cited())
    init = table_of(t, "a3_init")
    if init.empty:
        return untestable(claim, protocol, "this build has no A3 and softmax contest cells of one seed")
    worst = float(init.max_row_sum_error.max())
    claim.measured = f"{worst:.2g} over {len(init)} seeds"
    if worst >= ROW_SUM_TOLERANCE:
        claim.note = "the stored maps do not sum to one: the code breaks the construction"
    return constructed(claim, len(init), "a softmax row sums to one whatever its logits (Proposition 1)",
                       worst < ROW_SUM_TOLERANCE)


def a3_starts_at_softmax(t, pub, protocol) -> Claim:
    claim = Claim(A3_POST, "with b_g = 3, W_g = 0, U = 0, A3 starts exactly at softmax",
                  "this project's reading: step-0 first-layer weights, per seed: max |A3 − softmax| vs max |A3 − "
                  f"softmax at temperature 1/σ(3)|; 'exactly' means below {EXACT_TOLERANCE:g} (float rounding)", "–",
                  "exact (post)", "", quote=words.EXACTLY.cited())
    init = table_of(t, "a3_init")
    if init.empty:
        return untestable(claim, protocol, "this build has no A3 and softmax contest cells of one seed")
    plain, tempered = float(init.max_diff_vs_softmax.max()), float(init.max_diff_vs_tempered_softmax.max())
    claim.measured = f"{plain:.3g} vs {tempered:.2g} (worst over {len(init)} seeds)"
    if plain < EXACT_TOLERANCE:
        return constructed(claim, len(init), "the step-0 maps are the same function at every seed", True)
    if tempered < plain / 10:
        claim.measured += f": it starts at softmax(σ(3)·S), temperature {1 / A3_GATE_INIT:.3f}"
        claim.note = (f"by construction at any protocol: the gate starts at σ(3) ≈ {A3_GATE_INIT:.4f}, not 1; "
                      "whether the scores stay close is the next row")
        return constructed(claim, len(init), "the gate starts at σ(3) at every seed", False)
    claim.note = "A3 at step 0 matches neither softmax nor softmax at temperature 1/σ(3)"
    return constructed(claim, len(init), "the step-0 maps follow from the initialisation", False)


def a3_starts_close(t, pub, protocol) -> Claim:
    """The post's next sentence, judged apart from 'exactly': the gated scores stay close to their originals."""
    claim = Claim(A3_POST, "A3's gated scores stay close to their originals at init",
                  "this project's reading: step-0 first-layer weights, per seed: max |A3 − softmax|; threshold: "
                  f"below {STAY_CLOSE:g} (this project's bound on 'close': the post's σ(3) ≈ 0.95 scales each "
                  "score by 0.95, which moves a weight by a few hundredths at the scores of an untrained model)",
                  "–", "σ(3) ≈ 0.95", "", quote=words.CLOSE.cited())
    init = table_of(t, "a3_init")
    if init.empty:
        return untestable(claim, protocol, "this build has no A3 and softmax contest cells of one seed")
    worst = float(init.max_diff_vs_softmax.max())
    claim.measured = f"max |Δ| {worst:.3g} (worst over {len(init)} seeds)"
    return constructed(claim, len(init), "the step-0 maps follow from the initialisation at every seed",
                       worst < STAY_CLOSE)


def early_and_deep(n_layers: int) -> tuple[list[int], list[int]]:
    """The first and the second half of the layers (the middle layer of an odd depth is in neither)."""
    half = n_layers // 2
    return list(range(half)), list(range(n_layers - half, n_layers))


def _layer_entropy(gates: pd.DataFrame, variant: str, layers: list[int]) -> dict[int, float]:
    """seed -> mean normalised entropy over the given layers (heads averaged) of a variant's contest cell."""
    if gates.empty or "variant" not in gates:
        return {}
    cells = gates[(gates.variant == variant) & gates.layer.isin(layers)]
    return {int(s): float(v) for s, v in cells.groupby("seed").entropy.mean().items()}


def a3_early_layers_softer(t, pub, protocol) -> Claim:
    claim = Claim(A3_POST, "A3's early layers learn softer distributions; deeper heads sharpen",
                  DEPTH_RULE.text(), "–", "qualitative", "", quote=DEPTH_RULE.quote())
    table = table_of(t, "a3_vs_softmax_entropy")
    if table.empty:
        return untestable(claim, protocol, "this build has no A3 and softmax contest cells")
    table = table.sort_values("layer").reset_index(drop=True)
    diff = table.entropy_diff.to_numpy(dtype=float)
    claim.note = _a3_sharpening_note(table, diff)
    claim.measured = "A3 − softmax per layer (seed means) " + ", ".join(
        f"L{int(r.layer)} {r.entropy_diff:+.3f}" for r in table.itertuples())
    depth = pp.layers(len(table))
    if not depth.met:
        return untestable(claim, protocol, f"the model has {len(table)} layers; telling early from deep layers "
                                           f"takes at least {pp.MIN_LAYERS}, two on each side")
    early, deep = early_and_deep(len(table))
    gates = table_of(t, "a3_gates")
    a3 = contrast(gates, "a3", early, deep)
    soft = contrast(gates, "softmax", early, deep)
    within = statistics.mean_interval(list(a3.values()), list(a3))
    beyond = statistics.paired(a3, soft)
    if not within.n or not beyond.n:
        return untestable(claim, protocol, "the a3_gates table has no per-seed entropy of A3 and softmax")
    fmt = lambda x: f"{x:+.3f}"  # noqa: E731
    claim.measured += (f"; early − deep within A3 {describe(within, fmt, wins=False)}; minus softmax's "
                       f"{describe(beyond, fmt, wins=False)}")
    verdict = every(one_sided(within, 0.0, above=True), one_sided(beyond, 0.0, above=True))
    judged(claim, verdict, {"within A3": within, "minus softmax's": beyond}, fmt)
    direction = "; ".join(filter(None, [
        f"within A3 the deep layers are the softer ({within.mean:+.3f})" if within.mean <= 0 else "",
        f"softmax shows the same depth pattern or more ({beyond.mean:+.3f})" if beyond.mean <= 0 else ""]))
    return at_protocol(claim, protocol, pp.conditions(t, DEPTH_RULE, ["a3", "softmax"]), direction)


def contrast(gates: pd.DataFrame, variant: str, early: list[int], deep: list[int]) -> dict[int, float]:
    """seed -> early-layer minus deep-layer mean normalised entropy of a variant's contest cell."""
    first, last = _layer_entropy(gates, variant, early), _layer_entropy(gates, variant, deep)
    return {s: first[s] - last[s] for s in sorted(set(first) & set(last))}


def _a3_sharpening_note(table: pd.DataFrame, diff: np.ndarray) -> str:
    """What does A3's sharpening: the gate G (vs its init) or the bias B's spread over keys."""
    parts = []
    if {"a3_lr", "softmax_lr"} <= set(table.columns):
        parts.append(f"A3 at {lr_text(table.a3_lr.iloc[0])}, softmax at {lr_text(table.softmax_lr.iloc[0])}")
    if "a3_gate_mean" in table and table.a3_gate_mean.notna().any():
        init = float(table.a3_gate_init.iloc[0]) if "a3_gate_init" in table else A3_GATE_INIT
        parts.append(f"gate G per layer {', '.join(f'{g:.2f}' for g in table.a3_gate_mean)} (init {init:.3f}; "
                     "below init cools the logits)")
        if "a3_bias_std" in table:
            parts.append(f"bias B std over keys {', '.join(f'{b:.2f}' for b in table.a3_bias_std)} "
                         "(a wider spread sharpens)")
        sharper = [i for i, d in enumerate(diff) if d < 0]
        by_gate = [int(table.layer[i]) for i in sharper if table.a3_gate_mean[i] > init]
        not_gate = [int(table.layer[i]) for i in sharper if table.a3_gate_mean[i] <= init]
        if by_gate:
            parts.append(f"where A3 is sharper, G above init sharpens (layers {', '.join(map(str, by_gate))})")
        if not_gate:
            parts.append(f"where A3 is sharper with G at or below init (layers {', '.join(map(str, not_gate))}), "
                         "the sharpening is B's or the trained q·k scale's, not the gate's")
    return "; ".join(parts)


def a3_overhead_small(t, pub, protocol) -> Claim:
    claim = Claim(A3_POST, "A3's parameter overhead is small",
                  "this project's reading: (A3 parameters − softmax parameters) / softmax parameters; threshold: "
                  f"below {OVERHEAD_SMALL:.0%} (this project's reading of 'small': the post gives no number); a count "
                  "that follows from the config", "–", "small", "", quote=words.OVERHEAD.cited())
    params = table_of(t, "params")
    params = params.set_index("variant").n_params if not params.empty else pd.Series(dtype=float)
    if "a3" not in params or "softmax" not in params:
        return untestable(claim, protocol, "this build has no A3 or no softmax")
    extra = int(params["a3"] - params["softmax"])
    share = extra / params["softmax"]
    claim.measured = f"+{extra:,} ({share:.3%})"
    notes = [] if share < OVERHEAD_SMALL else [
        "the shared gate network is a fixed cost: its share shrinks as the model grows"]
    notes.append("a3 shares one gate and bias across layers and heads (the two-matrix reading)")
    if "a3_heads" in params:
        heads_extra = int(params["a3_heads"] - params["softmax"])
        notes.append(f"the per-head reading (a3_heads: w_g, b_g, u per layer x head) costs +{heads_extra:,} "
                     f"({heads_extra / params['softmax']:.3%}), {heads_extra / max(extra, 1):.1f}× a3's overhead")
    claim.note = "; ".join(notes)
    return constructed(claim, 0, "a parameter count follows from the config, whatever the seed",
                       share < OVERHEAD_SMALL)


def a3_compute_overhead_small(t, pub, protocol) -> Claim:
    claim = Claim(A3_POST, "A3's compute overhead is small", COMPUTE_RULE.text(), "–", "small", "",
                  quote=COMPUTE_RULE.quote())
    times = table_of(t, "step_times")
    if times.empty or not {"a3", BASELINE} <= set(times.variant):
        return untestable(claim, protocol, "this build has no timed steps of A3 and softmax (the step_times rule "
                                           "times them where the build trains both)")

    ratios = step_time_ratios(times)  # the one estimate of the overhead: the parameters table shows it too
    estimate = ratios["a3"]
    fmt = lambda x: f"{x - 1:+.1%}"  # noqa: E731
    median = times.groupby("variant").seconds_per_step.median()
    shape = times.iloc[0]
    claim.measured = (f"time per step {describe(estimate, fmt, wins=False)} over {estimate.n} interleaved rounds "
                      f"(median {median['a3'] * 1e3:.2f} vs {median[BASELINE] * 1e3:.2f} ms per step)")
    others = [f"{v} {describe(e, fmt, wins=False)}" for v, e in ratios.items() if v != "a3"]
    claim.note = "; ".join(filter(None, [
        f"timed in one process at the contest's model (d_model {int(shape.d_model)}, {int(shape.layers)} layers, "
        f"{int(shape.heads)} heads, block {int(shape.block_size)}, batch {int(shape.batch_size)}), "
        f"{int(shape.steps)} steps per call, the variants taking turns: the interval is over timing rounds, "
        "not seeds (a step's cost does not depend on the seed)", "; ".join(others)]))
    judged(claim, one_sided(estimate, 1 + COMPUTE_SMALL, above=False), {"": estimate}, fmt,
           stability_text(estimate, 1 + COMPUTE_SMALL))
    claim.resolution = claim.resolution.replace("seeds", "rounds").replace("seed", "round")
    return at_protocol(claim, protocol, [], f"A3 takes {estimate.mean - 1:+.1%} time per step")


def a3_composes(t, pub, protocol) -> Claim:
    """Read from the composability grid (config/composability.yaml); not testable where a build did not run it."""
    claim = Claim(A3_POST, "A3 composes with MQA, GQA and FlashAttention-style (blockwise) attention",
                  "this project's reading: kv_heads = heads, heads/2, 1, each dense and blockwise from the same "
                  "seeds; threshold: blockwise = dense at step 0 and within 1% at the end, and every run's loss falls "
                  "(this project's tolerances)", "–", "claimed", "", quote=words.COMPOSES.cited())
    table = t.get("composability")
    if table is None or table.empty:
        return untestable(claim, protocol, "this build has no composability grid (config/composability.yaml)")
    from attnlab.pipeline.composability import composability_verdict

    outcome = composability_verdict(table, variant="a3")
    head = outcome.split(":", 1)[0]
    rows = table[table.variant == "a3"]
    claim.measured = "; ".join(f"kv {int(r.kv_heads)}: dense {r.dense_loss:.4f} / blockwise {r.blockwise_loss:.4f}"
                               for r in rows.itertuples()) or "–"
    claim.note = outcome
    if head not in (HOLDS, CONTRADICTED):
        return untestable(claim, protocol, outcome.split(":", 1)[-1].strip())
    decide(claim, head)
    claim.interval = ("none: a numerical equivalence, checked seed by seed against its tolerance, not a mean "
                      "over seeds")
    claim.seeds = int(rows.seeds.min()) if "seeds" in rows and len(rows) else 0
    return claim
