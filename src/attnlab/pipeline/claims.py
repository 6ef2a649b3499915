"""The claims ledger: each claim of the source posts as a check over this build's tables.

Every check returns the measured value, the published value, and a verdict
(holds / partly / fails / not tested). A claim that fails on the data says so.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

HOLDS, PARTLY, FAILS, UNTESTED = "holds", "partly", "fails", "not tested"
KERNELS = ("yat_b", "yat")


@dataclass
class Claim:
    source: str  # which post makes it
    claim: str  # the claim in a sentence
    check: str  # what is computed from the tables
    measured: str
    published: str
    verdict: str


def published() -> dict:
    return yaml.safe_load(resources.files("attnlab.pipeline").joinpath("published.yaml").read_text())


def load_tables(tables_dir: Path) -> dict[str, pd.DataFrame]:
    names = ("contest", "lr_sweep", "params", "score_scale", "mass_auroc", "entropy", "a3_gates", "a3_init")
    return {name: pd.read_csv(Path(tables_dir) / f"{name}.csv") for name in names}


def ledger(tables: dict[str, pd.DataFrame], pub: dict | None = None) -> pd.DataFrame:
    pub = pub or published()
    checks = (kernel_gap, softmax_dies_at_high_lr, kernel_lr_band, kernel_scores_larger, ablation_untames,
              mass_auroc_null, kernel_more_diffuse, a3_valid_distributions, a3_starts_at_softmax,
              a3_early_layers_softer, a3_overhead_small)
    return pd.DataFrame([check(tables, pub).__dict__ for check in checks])


def _contest_mean(tables, variant) -> float | None:
    rows = tables["contest"][tables["contest"].variant == variant]
    return float(rows.best_val_mean.iloc[0]) if len(rows) else None


def kernel_gap(t, pub) -> Claim:
    soft = _contest_mean(t, "softmax")
    kernels = {v: _contest_mean(t, v) for v in KERNELS if _contest_mean(t, v) is not None}
    check = "(best kernel contest mean − softmax mean) / softmax mean"
    text = "softmax beats the kernel on quality by about 1% (kernel within 1.1–1.4%)"
    published_text = f"{pub['claims']['kernel_gap']['low']:.1%}–{pub['claims']['kernel_gap']['high']:.1%}"
    if soft is None or not kernels:
        return Claim("yat", text, check, "–", published_text, UNTESTED)
    best = min(kernels, key=kernels.get)
    gap = (kernels[best] - soft) / soft
    verdict = HOLDS if 0.005 <= gap <= 0.025 else (PARTLY if 0 < gap <= 0.05 else FAILS)
    return Claim("yat", text, check, f"{gap:+.2%} ({best})", published_text, verdict)


def softmax_dies_at_high_lr(t, pub) -> Claim:
    text = "softmax's quality depends on its LR and it dies at 1e-2"
    check = "softmax at the sweep's highest LR: diverged, or ≥ 0.5 nats worse than its best LR"
    sweep = t["lr_sweep"][t["lr_sweep"].variant == "softmax"].sort_values("lr")
    if sweep.empty or not math.isclose(sweep.lr.max(), 1e-2):
        return Claim("yat", text, check, "sweep has no 1e-2", "2.5849 at 1e-2 (untrained level)", UNTESTED)
    top = sweep.iloc[-1]
    gap = float(top.best_val_loss - sweep.best_val_loss.min())
    measured = "diverged" if top.diverged else f"{top.best_val_loss:.4f} at 1e-2 (+{gap:.3f} vs best)"
    verdict = HOLDS if (top.diverged or gap >= 0.5) else FAILS
    return Claim("yat", text, check, measured, "2.5849 at 1e-2 (untrained level)", verdict)


def kernel_lr_band(t, pub) -> Claim:
    text = "the kernel's whole LR column stays within about 1%"
    check = "yat sweep: (max − min) / min of best-val over sweep LRs"
    sweep = t["lr_sweep"][t["lr_sweep"].variant == "yat"]
    pub_band = pub["lr_sweep"]["yat"]
    pub_value = (max(pub_band.values()) - min(pub_band.values())) / min(pub_band.values())
    if sweep.empty:
        return Claim("yat", text, check, "–", f"{pub_value:.2%}", UNTESTED)
    if sweep.diverged.any():
        return Claim("yat", text, check, "a kernel sweep cell diverged", f"{pub_value:.2%}", FAILS)
    band = float((sweep.best_val_loss.max() - sweep.best_val_loss.min()) / sweep.best_val_loss.min())
    verdict = HOLDS if band <= 0.015 else (PARTLY if band <= 0.05 else FAILS)
    return Claim("yat", text, check, f"{band:.2%} over {len(sweep)} LRs", f"{pub_value:.2%}", verdict)


def _max_score(t, variant) -> float | None:
    rows = t["score_scale"][t["score_scale"].variant == variant]
    return float(rows.max_score.max()) if len(rows) else None


def kernel_scores_larger(t, pub) -> Claim:
    text = "kernel scores are orders of magnitude larger than softmax logits"
    check = "max trained score: yat / softmax"
    published_ratio = pub["score_scale"]["yat"]["max"] / pub["score_scale"]["softmax"]["max"]
    soft, kern = _max_score(t, "softmax"), _max_score(t, "yat")
    if soft is None or kern is None:
        return Claim("yat", text, check, "–", f"{published_ratio:,.0f}×", UNTESTED)
    ratio = kern / soft
    verdict = HOLDS if ratio >= 100 else (PARTLY if ratio >= 10 else FAILS)
    return Claim("yat", text, check, f"{ratio:,.1f}× ({kern:,.4g} vs {soft:.4g})", f"{published_ratio:,.0f}×", verdict)


def ablation_untames(t, pub) -> Claim:
    text = "the b = 0 ablation raises the max score several-fold against learned b"
    check = "max trained score: yat / yat_b"
    published_ratio = pub["claims"]["ablation_score_ratio"]
    yat, yat_b = _max_score(t, "yat"), _max_score(t, "yat_b")
    if yat is None or yat_b is None:
        return Claim("yat", text, check, "–", f"{published_ratio:.1f}×", UNTESTED)
    ratio = yat / yat_b
    verdict = HOLDS if ratio >= 2 else (PARTLY if ratio > 1 else FAILS)
    return Claim("yat", text, check, f"{ratio:.2f}×", f"{published_ratio:.1f}×", verdict)


def mass_auroc_null(t, pub) -> Claim:
    text = "the kernel's row mass does not predict next-token correctness (AUROC ≈ 0.5)"
    check = "|mean mass AUROC − 0.5| ≤ 0.03 for every kernel variant"
    auroc = t["mass_auroc"]
    pub_text = ", ".join(f"{v} {np.mean(x):.3f}" for v, x in pub["mass_auroc"].items())
    if auroc.empty:
        return Claim("yat", text, check, "–", pub_text, UNTESTED)
    means = auroc.groupby("variant").mass_auroc.mean()
    verdict = HOLDS if ((means - 0.5).abs() <= 0.03).all() else FAILS
    return Claim("yat", text, check, ", ".join(f"{v} {m:.3f}" for v, m in means.items()), pub_text, verdict)


def kernel_more_diffuse(t, pub) -> Claim:
    text = "the kernel's attention rows are more diffuse than softmax's"
    check = "mean normalised row entropy and share of sharp rows (< 0.3): yat vs softmax"
    ent = t["entropy"].groupby("variant")[["mean", "share_below_0.3"]].mean()
    pub_text = (f"{pub['entropy']['kernel']['mean']:.2f} vs {pub['entropy']['softmax']['mean']:.2f}; "
                f"sharp {pub['entropy']['kernel']['share_below_0.3']:.1%} vs {pub['entropy']['softmax']['share_below_0.3']:.0%}")
    if "yat" not in ent.index or "softmax" not in ent.index:
        return Claim("yat", text, check, "–", pub_text, UNTESTED)
    k, s = ent.loc["yat"], ent.loc["softmax"]
    more_entropy, fewer_sharp = k["mean"] > s["mean"], k["share_below_0.3"] <= s["share_below_0.3"]
    verdict = HOLDS if (more_entropy and fewer_sharp) else (PARTLY if more_entropy or fewer_sharp else FAILS)
    measured = f"{k['mean']:.2f} vs {s['mean']:.2f}; sharp {k['share_below_0.3']:.1%} vs {s['share_below_0.3']:.1%}"
    return Claim("yat", text, check, measured, pub_text, verdict)


def a3_valid_distributions(t, pub) -> Claim:
    text = "A3's outputs are always valid distributions"
    check = "worst |row sum − 1| over every stored A3 attention map (float16 storage)"
    init = t["a3_init"]
    if init.empty:
        return Claim("a3", text, check, "–", "Proposition 1", UNTESTED)
    worst = float(init.max_row_sum_error.max())
    return Claim("a3", text, check, f"{worst:.2g}", "Proposition 1", HOLDS if worst < 5e-3 else FAILS)


def a3_starts_at_softmax(t, pub) -> Claim:
    text = "with b_g = 3, W_g = 0, U = 0, A3 starts exactly at softmax"
    check = "step-0 first-layer maps: max |A3 − softmax| vs max |A3 − softmax at temperature 1/σ(3)|"
    init = t["a3_init"]
    if init.empty:
        return Claim("a3", text, check, "–", "exact (post)", UNTESTED)
    plain, tempered = float(init.max_diff_vs_softmax.max()), float(init.max_diff_vs_tempered_softmax.max())
    measured = f"{plain:.3g} vs {tempered:.2g}"
    if tempered < plain / 10:
        return Claim("a3", text, check, measured + ": it starts at softmax(σ(3)·S), temperature 1.047",
                     "exact (post)", FAILS if plain > 1e-3 else HOLDS)
    return Claim("a3", text, check, measured, "exact (post)", HOLDS if plain < 1e-3 else FAILS)


def a3_early_layers_softer(t, pub) -> Claim:
    text = "A3's early layers learn softer distributions; deeper heads sharpen"
    check = "A3 mean normalised entropy, first layer vs last layer"
    gates = t["a3_gates"][t["a3_gates"].variant == "a3"]
    if gates.empty or gates.layer.nunique() < 2:
        return Claim("a3", text, check, "–", "qualitative", UNTESTED)
    per_layer = gates.groupby("layer").entropy.mean()
    first, last = per_layer.iloc[0], per_layer.iloc[-1]
    return Claim("a3", text, check, f"{first:.3f} (layer 0) vs {last:.3f} (layer {per_layer.index[-1]})",
                 "qualitative", HOLDS if first > last else FAILS)


def a3_overhead_small(t, pub) -> Claim:
    text = "A3's parameter overhead is small"
    check = "(A3 parameters − softmax parameters) / softmax parameters < 1%"
    params = t["params"].set_index("variant").n_params
    if "a3" not in params or "softmax" not in params:
        return Claim("a3", text, check, "–", "small", UNTESTED)
    extra = int(params["a3"] - params["softmax"])
    share = extra / params["softmax"]
    return Claim("a3", text, check, f"+{extra:,} ({share:.3%})", "small", HOLDS if share < 0.01 else FAILS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Print the claims ledger of a build.")
    parser.add_argument("--tables", type=Path, default=Path("results/tables"))
    args = parser.parse_args(argv)
    table = ledger(load_tables(args.tables))
    with pd.option_context("display.max_colwidth", 80, "display.width", 250):
        print(table[["claim", "measured", "published", "verdict"]].to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
