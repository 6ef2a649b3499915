"""Does each score function compose with GQA/MQA and with blockwise (flash-style) attention? (JAX-free)

The composability config trains every variant at kv_heads = heads, heads/2 and
1, each densely and blockwise, from the same seeds. The blockwise path
computes the dense path's function up to float rounding and drops the same
dropout masks (tests/test_blockwise.py), so a dense run and its blockwise twin
start from the same parameters and see the same batches and masks. Two checks
follow:
- at step 0 (same parameters) their validation losses must be equal to float
  rounding (STEP0_NATS): the same function;
- their best validation losses must agree within DRIFT_RELATIVE of the dense
  one: the same training, up to the drift that rounding differences grow into
  over the run. That drift depends on the variant: the softmax-normalised
  variants drift far less than the kernel family (yat, yat_b and their _exp
  arms), whose drift is about that between yat blockwise runs that differ
  only in the key block size (the same arithmetic summed in another order):
  rounding drift, not a path difference (measured figures: CHANGELOG.md,
  Measurements). 1% of the loss covers that and is the scale of the quality
  claims the ledger checks.
A variant composes with GQA/MQA when those runs train: every run's validation
loss ends below its step-0 value.

The checks are ones that the claim's negation fails: a score function whose
modification did not survive blockwise normalisation (a normaliser that needs
the whole row at once, a per-key term that cannot be cut into blocks) gives a
different loss at step 0, and one that did not survive key sharing gives a
GQA/MQA run that does not learn.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from attnlab.pipeline.ground import contract
from attnlab.pipeline.ground.contract import COMPOSABILITY_CHECKS
from attnlab.pipeline.ground.verdicts import CONTRADICTED, HOLDS, NOT_TESTABLE

STEP0_NATS = 1e-4  # |dense - blockwise| validation loss at step 0 (same parameters): float32 rounding
DRIFT_RELATIVE = 0.01  # |dense - blockwise| best validation loss, relative to the dense one
REQUIRED = ("variant", "kv_heads", "attention_impl", "seed", "best_val_loss", "first_val_loss")
COLUMNS = list(COMPOSABILITY_CHECKS)  # the table contract's composability columns, before the speeds


def composability_table(runs: pd.DataFrame, heads: int | None = None, drift: float = DRIFT_RELATIVE,
                        step0: float = STEP0_NATS) -> pd.DataFrame:
    """One row per variant x kv_heads.

    runs: one row per training run with columns variant, kv_heads, attention_impl
    ("dense" / "blockwise"), seed, best_val_loss, first_val_loss (the step-0
    validation loss). A missing kv_heads means heads (pass heads to fill it).

    Columns: dense_loss and blockwise_loss (best validation loss, mean over
    seeds); over the seeds run both ways, the largest |dense - blockwise| at
    step 0 (step0_diff) and of the best loss (abs_diff, and rel_diff relative to
    the dense loss), NaN if no seed ran both ways; agree, step0_diff <= step0
    and rel_diff <= drift; loss_fell, every run of the row ended below its
    step-0 loss; loss_drop, the mean fall of the dense runs (first - best);
    vs_full_kv, dense_loss relative to the same variant at the largest kv_heads
    (full multi-head attention); cost_vs_softmax, dense_loss relative to
    softmax's at the same kv_heads (+0.01 = 1% worse).
    """
    missing = [c for c in REQUIRED if c not in runs.columns]
    if missing:
        raise ValueError(f"composability: runs lack the columns {missing}; need {list(REQUIRED)}")
    runs = runs.copy()
    if runs.kv_heads.isna().any():
        if heads is None:
            raise ValueError("composability: some runs have kv_heads null; pass heads= to read it as heads")
        runs["kv_heads"] = runs.kv_heads.fillna(heads)
    runs["kv_heads"] = runs.kv_heads.astype(int)
    unknown = set(runs.attention_impl) - {"dense", "blockwise"}
    if unknown:
        raise ValueError(f"composability: attention_impl {sorted(unknown)} is neither 'dense' nor 'blockwise'")
    rows = []
    for (variant, kv_heads), cell in runs.groupby(["variant", "kv_heads"], sort=False):
        dense = cell[cell.attention_impl == "dense"].set_index("seed")
        block = cell[cell.attention_impl == "blockwise"].set_index("seed")
        both = dense.index.intersection(block.index)
        if len(both):
            gap = (dense.best_val_loss[both] - block.best_val_loss[both]).abs()
            abs_diff, rel_diff = float(gap.max()), float((gap / dense.best_val_loss[both]).max())
            step0_diff = float((dense.first_val_loss[both] - block.first_val_loss[both]).abs().max())
        else:
            abs_diff = rel_diff = step0_diff = np.nan
        rows.append({
            "variant": variant, "kv_heads": int(kv_heads), "seeds": int(cell.seed.nunique()),
            "dense_loss": dense.best_val_loss.mean() if len(dense) else np.nan,
            "blockwise_loss": block.best_val_loss.mean() if len(block) else np.nan,
            "step0_diff": step0_diff, "abs_diff": abs_diff, "rel_diff": rel_diff,
            "agree": bool(len(both) and step0_diff <= step0 and rel_diff <= drift),
            "loss_fell": bool((cell.best_val_loss < cell.first_val_loss).all()),
            "loss_drop": (dense.first_val_loss - dense.best_val_loss).mean() if len(dense) else np.nan,
        })
    table = pd.DataFrame(rows, columns=COLUMNS[:-2])
    full = table.loc[table.groupby("variant").kv_heads.idxmax()].set_index("variant").dense_loss
    table["vs_full_kv"] = table.dense_loss / table.variant.map(full) - 1.0
    soft = table[table.variant == contract.BASELINE].set_index("kv_heads").dense_loss
    table["cost_vs_softmax"] = table.dense_loss / table.kv_heads.map(soft) - 1.0
    order = {v: i for i, v in enumerate(dict.fromkeys(runs.variant))}
    table = table.sort_values(["variant", "kv_heads"], key=lambda s: s.map(order) if s.name == "variant" else -s)
    return table.reset_index(drop=True)[COLUMNS]


def composability_verdict(table: pd.DataFrame, variant: str = "a3", drift: float = DRIFT_RELATIVE,
                          step0: float = STEP0_NATS) -> str:
    """The ledger's verdict for one variant ("holds: ...", "contradicted: ..." or "not testable: ...", the
    ledger's words), other variants named.

    holds: at every kv_heads tested (full, grouped and 1 among them) the
    blockwise and dense runs agree (table column agree) and every run's loss fell.
    """
    own = table[table.variant == variant]
    if own.empty:
        return f"{NOT_TESTABLE}: no composability runs of {variant}"
    kvs = sorted(own.kv_heads, reverse=True)
    if len(kvs) < 2 or min(kvs) != 1:
        return f"{NOT_TESTABLE}: {variant} ran at kv_heads {kvs} only; needs full, grouped and 1"
    if own.abs_diff.isna().any():
        lacking = own[own.abs_diff.isna()].kv_heads.tolist()
        return f"{NOT_TESTABLE}: {variant} lacks a dense/blockwise pair of one seed at kv_heads {lacking}"
    problems = []
    for r in own.itertuples():
        if r.step0_diff > step0:
            problems.append(f"kv_heads {r.kv_heads}: at step 0 blockwise differs from dense by {r.step0_diff:.2g} "
                            f"nats (> {step0:g})")
        if r.rel_diff > drift:
            problems.append(f"kv_heads {r.kv_heads}: best loss blockwise differs from dense by {r.abs_diff:.4f} "
                            f"nats ({r.rel_diff:.2%} > {drift:.0%})")
        if not r.loss_fell:
            problems.append(f"kv_heads {r.kv_heads}: a run's loss did not fall")
    others = sorted(set(table.variant) - {variant})
    failing_others = sorted(set(table[~(table.agree & table.loss_fell)].variant) - {variant})
    context = (f"; other variants: {'all compose' if not failing_others else 'fails for ' + ', '.join(failing_others)}"
               f" ({', '.join(others)})" if others else "")
    kv_text = ", ".join(str(k) for k in kvs)
    if problems:
        return f"{CONTRADICTED}: {variant}: " + "; ".join(problems) + context
    mqa = own[own.kv_heads == 1].iloc[0]
    return (f"{HOLDS}: {variant} at kv_heads {kv_text}: blockwise = dense at step 0 within "
            f"{own.step0_diff.max():.1g} nats and at the best loss within {own.abs_diff.max():.2g} nats "
            f"(tolerances {step0:g} nats, {drift:.0%}); every run's loss fell (MQA: {mqa.dense_loss:.3f}, "
            f"{mqa.vs_full_kv:+.1%} vs full heads)" + context)


def composability(runs: pd.DataFrame, heads: int | None = None, variant: str = "a3", drift: float = DRIFT_RELATIVE,
                  step0: float = STEP0_NATS) -> tuple[pd.DataFrame, str]:
    """The composability table and the ledger verdict for `variant` (A3's row by default)."""
    table = composability_table(runs, heads=heads, drift=drift, step0=step0)
    return table, composability_verdict(table, variant=variant, drift=drift, step0=step0)


def runs_from_bundles(bundle_dirs: list[Path]) -> pd.DataFrame:
    """One row per composability bundle (hash-checked through the one bundle reader)."""
    from attnlab.pipeline.ground.bundle_reader import read_bundle, read_curve

    rows = []
    for folder in bundle_dirs:
        b = read_bundle(folder)
        model = b["config"]["model"]
        curve = read_curve(folder)
        rows.append({"variant": b["variant"], "kv_heads": model.get("kv_heads") or model["heads"],
                     "attention_impl": model.get("attention_impl", "dense"), "seed": int(b["seed"]),
                     "lr": float(b["lr"]), "best_val_loss": float(b["best_val_loss"]),
                     "first_val_loss": float(curve.val_loss.iloc[0]), "n_params": int(b["n_params"]),
                     "steps_per_s": float(b["steps_per_s"])})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    """`python -m attnlab.pipeline.composability --heads H --out DIR BUNDLE...`: the table and the verdict."""
    import argparse
    import json
    import sys

    from attnlab.core.bundle_format import BundleError
    from attnlab.core.io import atomic_write_json
    from attnlab.pipeline.tables.display import display, write_table

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--heads", type=int, required=True, help="model.heads (fills kv_heads: null)")
    parser.add_argument("--out", type=Path, required=True, help="the tables folder")
    parser.add_argument("bundles", nargs="+", type=Path)
    args = parser.parse_args(argv)
    try:
        runs = runs_from_bundles(args.bundles)
    except BundleError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    table, verdict = composability(runs, heads=args.heads)
    speed = runs.groupby(["variant", "kv_heads", "attention_impl"]).steps_per_s.mean().unstack("attention_impl")
    table = table.merge(speed.add_suffix("_steps_per_s").reset_index(), on=["variant", "kv_heads"], how="left")
    write_table(table, Path(args.out) / "composability", display("composability", table))
    atomic_write_json(Path(args.out) / contract.files("composability_verdict")[0], {"a3": verdict})
    print(json.dumps({"a3": verdict}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
