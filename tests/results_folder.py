"""A small synthetic results folder: every table the collect step writes, a scale ladder's tables, the ledger,
every figure file.

The tables follow the table contract (attnlab.pipeline.ground.contract) with made-up
losses and telemetry for five variants over three seeds; the ledger is the
real claims code run over them; the figures are tiny images under the names
the figure catalog gives. The writeup notebook and the report helpers run on
it in seconds, where a real build takes minutes.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

from attnlab.core.constants import A3_INIT_INVERSE_TEMPERATURE
from attnlab.pipeline.ground import contract, statistics, verdicts
from attnlab.pipeline.ground import figure_catalog
from attnlab.pipeline.ground.contest_grid import ContestGrid
from attnlab.pipeline.tables import catalog
from attnlab.pipeline.tables.contest import paired_columns

from conftest import REPO

VARIANTS = ("softmax", "yat", "yat_b", "a3", "softmax_t")
CONTEST_LR = {"softmax": 3e-4, "yat": 3e-3, "yat_b": 3e-3, "a3": 3e-3, "softmax_t": 3e-3}
SWEEP_LRS = (3e-4, 1e-3, 3e-3, 1e-2)
SEEDS = (0, 1, 2)
LOSS = {"softmax": 1.49, "yat": 1.51, "yat_b": 1.505, "a3": 1.48, "softmax_t": 1.485}
PARAMS = {"softmax": 2_719_169, "yat": 2_719_169, "yat_b": 2_719_217, "a3": 2_720_610, "softmax_t": 2_719_193}
MODEL = {"d_model": 192, "layers": 6, "heads": 4, "block_size": 128}


def _loss(variant: str, lr: float, seed: int) -> float:
    return LOSS[variant] + 0.004 * seed + 0.02 * abs(math.log10(lr / CONTEST_LR[variant]))


def runs_table(protocol: str) -> pd.DataFrame:
    cells = ({(v, CONTEST_LR[v], s) for v in VARIANTS for s in SEEDS}
             | {(v, lr, 0) for v in VARIANTS for lr in SWEEP_LRS})
    rows = []
    for variant, lr, seed in sorted(cells):
        diverged = variant == "softmax" and lr == 1e-2
        loss = 2.58 if diverged else _loss(variant, lr, seed)
        rows.append({"variant": variant, "lr": lr, "seed": seed, "best_val_loss": loss, "final_val_loss": loss,
                     "diverged": diverged, "diverged_step": 400.0 if diverged else np.nan, "n_params": PARAMS[variant],
                     "path": f"results/runs/{variant}/lr{lr!r}/seed{seed}", "best_step": 12000,
                     "wall_time_s": 600.0, "compile_s": 9.0, "config.name": protocol,
                     **{f"config.model.{k}": v for k, v in MODEL.items()},
                     "config.train.steps": 12000, "config.train.batch_size": 64, "config.train.eval_every": 500,
                     "config.train.eval_batches": 16, "config.train.weight_decay": 0.01, "config.model.dropout": 0.1,
                     "config.data.train_fraction": 0.9,
                     "config.telemetry.entropy_min_keys": 16,
                     "provenance.git.commit": "0123456789abcdef0123456789abcdef01234567", "provenance.git.dirty": False,
                     "provenance.python": "3.11.7", "provenance.packages.jax": "0.10.2",
                     "provenance.packages.flax": "0.12.8", "provenance.device.kind": "gpu",
                     "provenance.device.count": 1, "provenance.device.host_cpus": 16, "provenance.device.cpu_pool": 1,
                     "provenance.platform": "Linux-x86_64",
                     "provenance.slurm_job_id": np.nan,
                     "steps_per_s": 20.0 - (1.5 if variant == "a3" else 0) + 0.1 * seed,
                     "late_gain": 0.001, "improving": False,
                     "study": "contest sweep" if (lr == CONTEST_LR[variant] and seed == 0) else
                     ("contest" if lr == CONTEST_LR[variant] else "sweep")})
    return pd.DataFrame(rows)


def contest_table(runs: pd.DataFrame) -> pd.DataFrame:
    def losses(variant):
        cells = runs[(runs.variant == variant) & (runs.lr == CONTEST_LR[variant]) & runs.seed.isin(SEEDS)]
        return dict(zip(cells.seed, cells.best_val_loss))

    base = losses("softmax")
    rows = []
    for variant in VARIANTS:
        mine = losses(variant)
        values = np.array(list(mine.values()))
        rows.append({"variant": variant, "lr": CONTEST_LR[variant], "lr_choice": "auto" if variant == "a3" else "given",
                     "n_seeds": len(values), "best_val_mean": values.mean(), "best_val_std": values.std(),
                     "bpc_mean": values.mean() / math.log(2), "n_diverged": 0, "n_params": PARAMS[variant],
                     "seeds": " ".join(map(str, SEEDS)), **paired_columns(mine, base),  # the build's own columns
                     "lr_edge": "", "n_improving": 0, "best_val_whole_mean": values.mean() - 0.002})
    return pd.DataFrame(rows, columns=contract.columns("contest"))


def tables(protocol: str) -> dict[str, pd.DataFrame]:
    """Every collected table, consistent with one another (the contest cells' telemetry, the sweep's cells)."""
    runs = runs_table(protocol)
    contest_t = contest_table(runs)
    sweep = runs[runs.seed == 0][contract.columns("lr_sweep")].reset_index(drop=True)
    best = []
    for variant in VARIANTS:
        ok = sweep[(sweep.variant == variant) & ~sweep.diverged]
        row = ok.loc[ok.best_val_loss.idxmin()]
        c = contest_t.set_index("variant").loc[variant]
        best.append({"variant": variant, "best_lr": row.lr, "lr_edge": "", "n_sweep_seeds": 1,
                     "best_val_mean": row.best_val_loss,
                     "delta_vs_softmax": row.best_val_loss - LOSS["softmax"], "delta_ci_low": np.nan,
                     "delta_ci_high": np.nan, "wins": "0/1", "n_paired": 1, "gap_vs_softmax": 0.01,
                     "gap_ci_low": np.nan, "gap_ci_high": np.nan, "p_vs_softmax": np.nan,
                     "interval_note": statistics.ONE_SEED,
                     "contest_lr": c.lr, "contest_lr_choice": c.lr_choice,
                     "contest_delta_vs_softmax": c.delta_vs_softmax,
                     "contest_delta_ci_low": c.delta_ci_low, "contest_delta_ci_high": c.delta_ci_high,
                     "contest_gap_vs_softmax": c.gap_vs_softmax, "lrs_added": 0, "extend_limit": 0})
    cells = [(v, CONTEST_LR[v], s) for v in VARIANTS for s in SEEDS]
    kernels = [c for c in cells if c[0] in ("yat", "yat_b")]
    layers = range(MODEL["layers"])
    top = {"softmax": 20.0, "yat": 40_000.0, "yat_b": 9_000.0, "a3": 30.0, "softmax_t": 22.0}
    score = pd.DataFrame([{"variant": v, "lr": lr, "seed": s, "layer": layer,
                           "mean_max_score": top[v] * (1 + layer) / 8,
                           "max_score": top[v] * (1 + layer) / 6 * (1 + 0.1 * s),
                           contract.SEED_MEAN_OVER_LAYERS: top[v] * 3.5 / 6 * (1 + 0.1 * s),
                           contract.QUANTILE_COLUMN: top[v] * (1 + layer) / 60 * (1 + 0.05 * s)}
                          for v, lr, s in cells for layer in layers])
    entropy = pd.DataFrame([{"variant": v, "lr": lr, "seed": s, "mean": 0.5 + (0.2 if v.startswith("yat") else 0)
                             + 0.01 * s, contract.SHARE_SHARP: 0.2, contract.SHARE_DIFFUSE: 0.1} for v, lr, s in cells])
    gates = pd.DataFrame([{"variant": v, "seed": s, "layer": layer, "head": h, "entropy": 0.5 - 0.01 * layer,
                           "gate_mean": 0.8 if v == "a3" else np.nan, "gate_std": 0.05 if v == "a3" else np.nan,
                           "bias_mean": 0.0 if v == "a3" else np.nan, "bias_std": 1.0 if v == "a3" else np.nan}
                          for v, lr, s in cells if v in ("a3", "softmax") for layer in layers for h in range(4)])
    per_layer = pd.DataFrame({"layer": list(layers), "a3_entropy": [0.45 + 0.02 * (2.5 - i) for i in layers],
                              "softmax_entropy": [0.45] * len(layers), "a3_gate_mean": [0.8] * len(layers),
                              "a3_gate_init": [A3_INIT_INVERSE_TEMPERATURE] * len(layers),
                              "a3_bias_std": [1.0] * len(layers), "a3_lr": [3e-3] * len(layers),
                              "softmax_lr": [3e-4] * len(layers), "a3_seeds": ["0 1 2"] * len(layers),
                              "softmax_seeds": ["0 1 2"] * len(layers)})
    per_layer["entropy_diff"] = per_layer.a3_entropy - per_layer.softmax_entropy
    base = {s: _loss("softmax", 3e-4, s) for s in SEEDS}
    temperature = pd.DataFrame([{"seed": s, "softmax_best_val": base[s], "a3_best_val": _loss("a3", 3e-3, s),
                                 "softmax_t_best_val": _loss("softmax_t", 3e-3, s), "a3_heads_best_val": np.nan,
                                 "a3_gain": base[s] - _loss("a3", 3e-3, s),
                                 "softmax_t_gain": base[s] - _loss("softmax_t", 3e-3, s), "a3_heads_gain": np.nan,
                                 "softmax_t_share_of_a3_gain": 0.5, "softmax_lr": "0.0003", "a3_lr": "0.003",
                                 "softmax_t_lr": "0.003", "a3_heads_lr": "–"} for s in SEEDS])
    found = {
        "runs": runs, "contest": contest_t, "lr_sweep": sweep, "best_lr": pd.DataFrame(best),
        "params": pd.DataFrame({"variant": VARIANTS, "n_params": [PARAMS[v] for v in VARIANTS],
                                "vs_softmax": [PARAMS[v] - PARAMS["softmax"] for v in VARIANTS],
                                "steps_per_s": [20.0 - (1.5 if v == "a3" else 0) for v in VARIANTS],
                                "time_vs_softmax": [20.0 / (20.0 - (1.5 if v == "a3" else 0)) for v in VARIANTS],
                                "time_ci_low": np.nan, "time_ci_high": np.nan, "n_timed": 3}),
        "normswap": pd.DataFrame([{"variant": v, "lr": lr, "seed": s, "in_contest": True, "diverged": False,
                                   "native_normaliser": "kernel", "native_loss": _loss(v, lr, s),
                                   "swapped_to": f"{v}_exp", "swapped_normaliser": "softmax",
                                   "swapped_loss": _loss(v, lr, s) + 0.2 + 0.01 * s,
                                   "difference": 0.2 + 0.01 * s} for v, lr, s in kernels]),
        "a3_vs_temperature": temperature, "score_scale": score,
        "mass_auroc": pd.DataFrame([{"variant": v, "lr": lr, "seed": s, "mass_auroc": 0.5 + 0.004 * (s - 1),
                                     "mass_correct_mean": 150.0 + s, "mass_wrong_mean": 149.0}
                                    for v, lr, s in kernels]),
        "entropy": entropy,
        "sinks": pd.DataFrame([{"variant": v, "lr": lr, "seed": s, "sink_rate": 0.25 if v == "softmax" else 0.0,
                                "first_key_weight_max": 0.4 if v == "softmax" else 0.2, "negative_mass_share": 0.0,
                                "activation_kurtosis": 4.0 + 0.1 * s, "activation_max": 20.0 + s}
                               for v, lr, s in cells]),
        "context_length": pd.DataFrame([{"variant": v, "lr": lr, "seed": s, "multiple": m, "context_length": 64 * m,
                                         "val_loss": 2.0 + 0.05 * m + 0.01 * s, "vs_trained": 1.0 + 0.025 * (m - 1)}
                                        for v, lr, s in cells for m in (1, 2, 4)]),
        "scalars": pd.DataFrame([{"variant": "yat_b", "seed": s, "layer": layer, "head": h, "scalar": name,
                                  "value": 0.7 + 0.1 * h} for _, _, s in kernels[3:] for layer in layers
                                 for h in range(4) for name in ("b", "eps")]),
        "a3_gates": gates,
        "a3_init": pd.DataFrame({"seed": SEEDS, "max_diff_vs_softmax": [0.03] * 3,
                                 "max_diff_vs_tempered_softmax": [3e-4] * 3, "max_row_sum_error": [4e-4] * 3}),
        "a3_vs_softmax_entropy": per_layer,
        "catalog": catalog_table(),
    }
    return {name: found[name][contract.columns(name)] if name != "runs" else found[name] for name in found}


def catalog_table() -> pd.DataFrame:
    """The collect step's catalog table over two catalogued variants beside softmax, four seeds each (cog clearly
    below softmax, softpick level with it)."""
    base = {0: 2.00, 1: 2.02, 2: 1.99, 3: 2.04}
    losses = {"softmax": base, "cog": {s: x - 0.05 + 0.003 * (s % 2) for s, x in base.items()},
              "softpick": {s: x + 0.004 * (-1) ** s for s, x in base.items()}}
    runs = pd.DataFrame([{"variant": v, "lr": 3e-3, "seed": s, "best_val_loss": x, "diverged": False}
                         for v, values in losses.items() for s, x in values.items()])
    grid = ContestGrid(variants=tuple(losses), contest_lr={v: 3e-3 for v in losses}, contest_seeds=tuple(base))
    return catalog.catalog_table(runs, grid)


LADDER_RUNGS = (31_745, 94_289, 327_105)  # softmax's parameters at each rung of the synthetic scale ladder


def ladder_tables(protocol: str) -> dict[str, pd.DataFrame]:
    """A three-rung scale ladder (the second rung also trained 4x longer) of the contest's variants, and every
    check of the ledger at each rung, as the ladder rules write them (attnlab.pipeline.tables.ladder)."""
    from attnlab.pipeline import claims
    from attnlab.pipeline.tables import ladder

    rows = []
    for rung, n in enumerate(LADDER_RUNGS, start=1):
        for steps in (1000, 4000) if rung == 2 else (1000,):
            for v in ("softmax", "yat", "yat_b", "a3"):
                for s in SEEDS:
                    delta = {"softmax": 0.0, "yat": 0.06 - 0.01 * rung, "yat_b": 0.05 - 0.01 * rung,
                             "a3": -0.04 + 0.01 * rung}[v] + 0.002 * s
                    rows.append({"rung": rung, "d_model": 16 * (rung + 1), "steps": steps, "variant": v,
                                 "lr": 3e-3, "seed": s, "n_params": n + PARAMS[v] - PARAMS["softmax"],
                                 "log10_n_params": math.log10(n), "best_val_loss": 2.0 - 0.1 * rung + delta,
                                 "diverged": False, "max_score": top_score(v) * (1 + 0.1 * s),
                                 "entropy_mean": 0.5 + (0.2 if v.startswith("yat") else 0.0) + 0.01 * s,
                                 "a3_gate_mean": 0.9 if v == "a3" else np.nan, "delta_vs_softmax": delta,
                                 "max_score_ratio": top_score(v) / top_score("softmax"),
                                 "entropy_gap": 0.2 if v.startswith("yat") else 0.0,
                                 "series": ladder.SIZE if steps == 1000 else ladder.LENGTH,
                                 "late_gain": 0.001, "improving": False, "to_plateau": False,
                                 "trained_steps": steps})
    seeds = pd.DataFrame(rows)
    seeds = seeds[ladder.seed_columns(["d_model"])]
    ledger = claims.ledger(tables(protocol))
    checked = pd.DataFrame([{"rung": rung, "d_model": 16 * (rung + 1), "steps": 1000, "n_params": n,
                             "series": ladder.SIZE, "check": check.__name__, "source": row.source,
                             "claim": row.claim, "verdict": row.verdict if rung == 3 else verdicts.INCONCLUSIVE,
                             "outcome": row.outcome if rung == 3 else verdicts.INCONCLUSIVE,
                             "off_protocol": row.off_protocol if rung == 3 else False,
                             "lean_side": row.lean_side if rung == 3 else verdicts.INCONCLUSIVE,
                             "measured": row.measured, "interval": row.interval, "seeds": row.seeds,
                             "protocol": f"{protocol} (scale ladder rung {rung})"}
                            for rung, n in enumerate(LADDER_RUNGS, start=1)
                            for check, row in zip(claims.CHECKS, ledger.itertuples())])
    return {"ladder": ladder.ladder_table(seeds), "ladder_seeds": seeds, "ladder_claims": checked}


def top_score(variant: str) -> float:
    return {"softmax": 20.0, "yat": 40_000.0, "yat_b": 9_000.0, "a3": 30.0}[variant]


def write(root: Path, protocol: str = "paper") -> Path:
    """A workspace at root: results/tables (every collected table and the ledger), results/figures (tiny
    images under the catalog's names), and the repository's workflow/ and config/ beside them (captions,
    the published protocol's config). Returns root."""
    from attnlab.pipeline import claims

    folder = root / "results" / "tables"
    folder.mkdir(parents=True)
    made = tables(protocol) | ladder_tables(protocol)
    for name, table in made.items():
        table.to_csv(folder / f"{name}.csv", index=False)
    claims.ledger(made).to_csv(folder / "ledger.csv", index=False)
    figures = root / "results" / "figures"
    figures.mkdir()
    for figure in figure_catalog.FIGURES:
        for name in figure.outputs:
            Image.new("RGB", (40, 30), (200, 60, 60)).save(figures / name)
    for name in ("workflow", "config"):
        (root / name).symlink_to(REPO / name, target_is_directory=True)
    return root
