"""The telemetry tables of the contest cells: score scale, mass AUROC, entropy, learned scalars, A³'s gates,
A³ at init and A³ against the baseline per layer. The columns are the table contract's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.ground import contract
from attnlab.pipeline.ground.bundle_reader import read_arrays
from attnlab.pipeline.ground.contract import (A3_GATE_INIT, BASELINE, QUANTILE_COLUMN, SEED_MEAN_OVER_LAYERS,
                                              SHARE_DIFFUSE, SHARE_SHARP)
from attnlab.pipeline.tables.contest import contest_cells, trained
from attnlab.pipeline.ground.contest_grid import ContestGrid

GATE_VARIANTS = ("a3", "a3_heads", BASELINE)  # the a3_gates table's rows: the gated variants and what they face


def telemetry_tables(runs: pd.DataFrame, grid: ContestGrid | dict, bundles: dict[str, dict]) -> dict[str, pd.DataFrame]:
    """score_scale, mass_auroc, entropy, sinks, scalars, a3_gates, a3_init and a3_vs_softmax_entropy.

    All from the contest cells' bundle.json; arrays are read only for what no
    bundle summary holds: the A³-at-init comparison (two bundles side by side)
    and the mean kernel mass of correct and of wrong predictions. A diverged
    cell's telemetry is of the weights it rolled back to, not of a trained
    model: it enters none of these (the contest table counts it).
    """
    grid = ContestGrid.of(grid)
    contest = {v: [bundles[p] for p in trained(contest_cells(runs, grid, v)).path] for v in grid.variants}
    score_rows, auroc_rows, entropy_rows, sink_rows, scalar_rows, gate_rows = [], [], [], [], [], []
    context_rows = []
    for variant, cells in contest.items():
        for b in cells:
            tel, cell = b["telemetry"], {"variant": variant, "lr": float(b["lr"]), "seed": b["seed"]}
            per_layer_max = tel["max_score_per_layer"]
            seed_mean = float(np.mean(per_layer_max))  # the published "per-layer mean" (contract)
            quantiles = tel.get("q999_score_per_layer") or [np.nan] * len(per_layer_max)
            for layer, (mean_max, top, q) in enumerate(zip(tel["mean_max_score_per_layer"], per_layer_max,
                                                           quantiles)):
                score_rows.append({**cell, "layer": layer, "mean_max_score": mean_max, "max_score": top,
                                   SEED_MEAN_OVER_LAYERS: seed_mean, QUANTILE_COLUMN: q})
            if "mass_auroc" in tel:
                correct_mean, wrong_mean = mass_by_correctness(Path(b["path"]))
                auroc_rows.append({**cell, "mass_auroc": tel["mass_auroc"], "mass_correct_mean": correct_mean,
                                   "mass_wrong_mean": wrong_mean})
            if "sink_rate" in tel:  # bundles written before these summaries existed have none
                sink_rows.append({**cell, "sink_rate": tel["sink_rate"],
                                  "first_key_weight_max": float(np.max(tel["first_key_weight_per_layer_head"])),
                                  **{k: tel[k] for k in ("negative_mass_share", "activation_kurtosis",
                                                         "activation_max")}})
            context_rows += context_length_rows(cell, b)
            ent = tel["entropy"]
            entropy_rows.append({**cell, "mean": ent["mean"], SHARE_SHARP: ent["share_sharp"],
                                 SHARE_DIFFUSE: ent["share_diffuse"]})
            for layer, per_head in enumerate(ent["mean_per_layer_head"]):
                for head, value in enumerate(per_head):
                    gate_rows.append({"variant": variant, "seed": b["seed"], "layer": layer, "head": head,
                                      "entropy": value,
                                      "gate_mean": _at(tel.get("a3_gate_mean"), layer, head),
                                      "gate_std": _at(tel.get("a3_gate_std"), layer, head),
                                      "bias_mean": _at(tel.get("a3_bias_mean"), layer, head),
                                      "bias_std": _at(tel.get("a3_bias_std"), layer, head)})
            for name, values in b.get("learned", {}).items():
                for layer, per_head in enumerate(values):
                    # a scalar learned per layer (differential attention's λ) has no head: one row, head empty
                    heads = enumerate(per_head) if isinstance(per_head, list) else [(None, per_head)]
                    for head, value in heads:
                        scalar_rows.append({"variant": variant, "seed": b["seed"], "layer": layer,
                                            "head": head, "scalar": name, "value": value})
    gates = pd.DataFrame(gate_rows, columns=contract.columns("a3_gates"))
    return {
        "score_scale": pd.DataFrame(score_rows, columns=contract.columns("score_scale")),
        "mass_auroc": pd.DataFrame(auroc_rows, columns=contract.columns("mass_auroc")),
        "entropy": pd.DataFrame(entropy_rows, columns=contract.columns("entropy")),
        "sinks": pd.DataFrame(sink_rows, columns=contract.columns("sinks")),
        "context_length": pd.DataFrame(context_rows, columns=contract.columns("context_length")),
        "scalars": pd.DataFrame(scalar_rows, columns=contract.columns("scalars")),
        "a3_gates": gates[gates.variant.isin(GATE_VARIANTS)],
        "a3_init": a3_init_table(contest),
        "a3_vs_softmax_entropy": a3_vs_softmax_table(contest),
    }


def context_length_rows(cell: dict, bundle: dict) -> list[dict]:
    """One row per window length a cell was evaluated at (bundle.json's val_loss_at_context: none for a cell
    without train.eval_context_multiples)."""
    losses = bundle.get("val_loss_at_context") or {}
    if not losses:
        return []
    trained_at = losses.get("1")
    block = int(bundle["config"]["model"]["block_size"])
    return [{**cell, "multiple": int(m), "context_length": int(m) * block, "val_loss": float(loss),
             "vs_trained": float(loss) / float(trained_at) if trained_at else np.nan}
            for m, loss in sorted(losses.items(), key=lambda item: int(item[0]))]


def a3_init_table(contest: dict[str, list[dict]]) -> pd.DataFrame:
    """A³ at step 0 against the baseline at step 0 of the same seed, first layer.

    Both models start from identical skeleton weights, so their first layer sees
    the same scores S (deeper layers see inputs that already differ). From
    softmax's weights w = softmax(S), softmax(sigmoid(3) * log w) is softmax at
    temperature 1/sigmoid(3) of the same S: A³ at init should match that, not w.
    Also A³'s worst row-sum error over all snapshots and layers.
    """
    soft = {b["seed"]: b for b in contest.get(BASELINE, [])}
    rows = []
    for b in contest.get("a3", []):
        if b["seed"] not in soft:
            continue
        a3 = read_arrays(Path(b["path"]), "attention.npz")["weights"].astype(np.float64)
        sm = read_arrays(Path(soft[b["seed"]]["path"]), "attention.npz")["weights"].astype(np.float64)
        a3_first, sm_first = a3[0, 0], sm[0, 0]  # step 0, layer 0: (heads, T, T)
        mask = np.tril(np.ones(sm.shape[-2:], dtype=bool))
        logits = np.where(mask, np.log(np.where(mask, np.maximum(sm_first, 1e-30), 1.0)), -np.inf)
        tempered = logits * A3_GATE_INIT
        tempered = np.exp(tempered - tempered.max(-1, keepdims=True))
        tempered /= tempered.sum(-1, keepdims=True)
        rows.append({"seed": b["seed"], "max_diff_vs_softmax": float(np.abs(a3_first - sm_first).max()),
                     "max_diff_vs_tempered_softmax": float(np.abs(a3_first - tempered).max()),
                     "max_row_sum_error": float(np.abs(a3.sum(-1) - 1.0).max())})
    return pd.DataFrame(rows, columns=contract.columns("a3_init"))


def a3_vs_softmax_table(contest: dict[str, list[dict]]) -> pd.DataFrame:
    """Per layer, A³ against the baseline at their contest cells (each variant's mean over its seeds).

    a3_entropy, softmax_entropy: mean normalised row entropy of the layer (bundle
    telemetry entropy.mean_per_layer); entropy_diff = a3 - softmax (> 0: A³ softer).
    a3_gate_mean: A³'s mean gate G over tokens and heads; below a3_gate_init
    (sigmoid(3)) the gate has cooled the logits (softer). a3_bias_std: the spread
    of A³'s per-key bias B (std over keys, mean over heads); a larger spread sharpens.
    """
    columns = contract.columns("a3_vs_softmax_entropy")
    a3, soft = contest.get("a3", []), contest.get(BASELINE, [])
    if not a3 or not soft:
        return pd.DataFrame(columns=columns)

    def per_layer(cells, key):
        return np.mean([np.asarray(b["telemetry"]["entropy"][key], dtype=float) for b in cells], axis=0)

    a3_entropy, soft_entropy = per_layer(a3, "mean_per_layer"), per_layer(soft, "mean_per_layer")
    layers = min(len(a3_entropy), len(soft_entropy))

    def head_mean(name):
        grids = [np.asarray(b["telemetry"][name], dtype=float) for b in a3 if name in b["telemetry"]]
        return np.mean(grids, axis=(0, 2)) if grids else np.full(layers, np.nan)

    gate, bias_std = head_mean("a3_gate_mean"), head_mean("a3_bias_std")
    rows = [{"layer": layer, "a3_entropy": a3_entropy[layer], "softmax_entropy": soft_entropy[layer],
             "entropy_diff": a3_entropy[layer] - soft_entropy[layer], "a3_gate_mean": gate[layer],
             "a3_gate_init": A3_GATE_INIT, "a3_bias_std": bias_std[layer],
             "a3_lr": format_lr(a3[0]["lr"]), "softmax_lr": format_lr(soft[0]["lr"]),
             "a3_seeds": " ".join(str(b["seed"]) for b in a3),
             "softmax_seeds": " ".join(str(b["seed"]) for b in soft)} for layer in range(layers)]
    return pd.DataFrame(rows, columns=columns)


def mass_by_correctness(folder: Path) -> tuple[float, float]:
    """Mean kernel row mass (over layers and heads, as the AUROC ranks it) of correct and of wrong tokens."""
    arrays = read_arrays(folder, "telemetry.npz")
    mass = np.asarray(arrays["mass"], dtype=float).ravel()
    correct = np.asarray(arrays["correct"]).astype(bool).ravel()
    return (float(mass[correct].mean()) if correct.any() else float("nan"),
            float(mass[~correct].mean()) if (~correct).any() else float("nan"))


def _at(grid_values, layer, head):
    return float(grid_values[layer][head]) if grid_values is not None else np.nan
