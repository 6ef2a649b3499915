"""The methods section: how the cells were trained and scored, and this build's protocol beside the posts'.

Every number is read from runs.csv (each bundle's resolved config), the params
table and the published protocol's config file (config/paper.yaml beside the
results); nothing is typed by hand.
"""

from __future__ import annotations

import pandas as pd

from attnlab.core.config import load_config
from attnlab.pipeline.claims import published
from attnlab.pipeline.ground.contract import BASELINE
from attnlab.pipeline.ground.formatting import plural, lr_text
from attnlab.pipeline.ground.paths import results_dir
from attnlab.pipeline.tables.runs import LATE_SHARE, PLATEAU_TOLERANCE

PROTOCOL_ROWS = ("parameters (softmax)", "d_model / layers / heads", "context (characters)", "batch (windows)",
                 "training steps", "characters trained on", "evaluations", "characters per evaluation",
                 "dropout / weight decay", "LR sweep", "contest seeds")


def _first(runs: pd.DataFrame, key: str):
    column = f"config.{key}"
    return runs[column].dropna().iloc[0] if column in runs and runs[column].notna().any() else None


def _lrs(values) -> str:
    return ", ".join(lr_text(v) for v in sorted({float(v) for v in values}))


def protocol_values(model: dict, train: dict, n_params: int | None, sweep: str, seeds) -> dict[str, str]:
    """One protocol's facts, one value per PROTOCOL_ROWS entry (model and train as a config holds them)."""
    steps, batch, block = int(train["steps"]), int(train["batch_size"]), int(model["block_size"])
    every, batches = int(train["eval_every"]), int(train["eval_batches"])
    patience = train.get("plateau.patience")
    trained = f"{steps:,}"
    if patience is not None and patience == patience:  # trained to a plateau (NaN: a config without the rule)
        start = int(train.get("plateau.min_steps") or 0)
        trained = (f"to a plateau: until the best loss gains at most {float(train['plateau.tolerance']):.1%} over "
                   f"{int(patience):,} steps" + (f", from step {start:,}" if start else "") + f"; at most {steps:,}")
    evaluated = f"{batches * batch * block:,} ({plural(batches, 'batch', 'batches')})"
    whole = train.get("eval_whole_split")
    if whole is not None and whole == whole and bool(whole):  # NaN: a cell that left it unset
        evaluated = "the whole validation split, every character once"
    return {
        "parameters (softmax)": f"{int(n_params):,}" if n_params is not None else "–",
        "d_model / layers / heads": " / ".join(str(int(model[k])) for k in ("d_model", "layers", "heads")),
        "context (characters)": f"{block:,}",
        "batch (windows)": f"{batch:,}",
        "training steps": trained,
        "characters trained on": f"{steps * batch * block:,}" if trained == f"{steps:,}"
        else f"at most {steps * batch * block:,}",
        "evaluations": f"every {every:,} steps ({'at most ' if trained != f'{steps:,}' else ''}{steps // every + 1:,})",
        "characters per evaluation": evaluated,
        "dropout / weight decay": f"{float(model['dropout']):g} / {float(train['weight_decay']):g}",
        "LR sweep": sweep,
        "contest seeds": ", ".join(str(s) for s in seeds) or "–",
    }


def build_protocol_values(runs: pd.DataFrame, params: pd.DataFrame, contest: pd.DataFrame,
                          sweep: pd.DataFrame) -> dict[str, str]:
    """This build's protocol, from what its bundles recorded."""
    model = {k: _first(runs, f"model.{k}") for k in ("d_model", "layers", "heads", "block_size", "dropout")}
    train = {k: _first(runs, f"train.{k}") for k in ("steps", "batch_size", "eval_every", "eval_batches",
                                                      "weight_decay", "eval_whole_split", "plateau.patience",
                                                      "plateau.tolerance", "plateau.min_steps")}
    base = params[params.variant == BASELINE].n_params
    sweeps = {v: _lrs(c.lr) for v, c in sweep.groupby("variant", sort=False)} if not sweep.empty else {}
    sweep_text = ("; ".join(f"{v} {lrs}" for v, lrs in sweeps.items()) if len(set(sweeps.values())) > 1
                  else next(iter(sweeps.values()), "none"))
    seeds = sorted({s for text in contest.seeds.astype(str) for s in text.split()}, key=int) if len(contest) else []
    return protocol_values(model, train, int(base.iloc[0]) if len(base) else None, sweep_text, seeds)


def paper_protocol_values() -> dict[str, str] | None:
    """The posts' protocol (config/<published protocol>.yaml beside the results), as build_protocol_values."""
    path = results_dir().parent / "config" / f"{published()['protocol']}.yaml"
    if not path.is_file():
        return None
    cfg = load_config(path)
    lrs = cfg["sweep"]["lrs"]
    lrs = sorted({lr for values in lrs.values() for lr in values}) if isinstance(lrs, dict) else lrs
    return protocol_values(cfg["model"], cfg["train"], published()["params"][BASELINE], _lrs(lrs),
                           cfg["contest"]["seeds"])


def protocol_table(runs, params, contest, sweep) -> pd.DataFrame:
    """This build's protocol beside the posts', one row per fact."""
    ours = build_protocol_values(runs, params, contest, sweep)
    theirs = paper_protocol_values() or {}
    return pd.DataFrame({"": list(PROTOCOL_ROWS), "this build": [ours[k] for k in PROTOCOL_ROWS],
                         "the posts": [theirs.get(k, "–") for k in PROTOCOL_ROWS]})


def methods_text(runs: pd.DataFrame) -> str:
    """How every cell was trained and scored (Markdown), from the recorded config."""
    steps, every = int(_first(runs, "train.steps")), int(_first(runs, "train.eval_every"))
    batches, batch, block = (int(_first(runs, k)) for k in ("train.eval_batches", "train.batch_size",
                                                           "model.block_size"))
    fraction = _first(runs, "data.train_fraction")
    fraction = float(fraction) if fraction is not None else 0.9
    return (
        "Every variant shares the seed author's skeleton: token and position embeddings summed, pre-norm blocks "
        "(LayerNorm, then attention, then a GELU MLP), a final LayerNorm and an untied linear head. Dropout acts "
        "in two places, on the attention weights and on the MLP output. Only the map from a query and a key to "
        "an attention weight differs between variants. "
        f"The optimiser is AdamW with weight decay {float(_first(runs, 'train.weight_decay')):g} on every "
        "parameter, at a constant learning rate: no warm-up, no decay and no gradient clipping. "
        f"The corpus is split by position: the first {fraction:.0%} of tinyshakespeare trains, the last "
        f"{1 - fraction:.0%} validates. Every variant of a seed sees the same batches in the same order from "
        "the same initial skeleton weights, so variants are compared seed by seed.\n\n"
        f"The model is evaluated every {every:,} steps on {plural(batches, 'held-out batch', 'held-out batches')} "
        f"({batches * batch * block:,} characters, the same at every evaluation). A cell's *best validation "
        f"loss* is the minimum over its {steps // every + 1:,} evaluations, as in the posts; its best checkpoint "
        "is also evaluated once on every character of the validation split (the contest's *whole split* column), "
        "so the selection's luck on a few sampled batches shows. A diverged cell "
        "counts as a divergence and enters no mean or difference. A contest LR marked *auto* is the "
        "variant's best sweep LR. A cell is *still improving* when the last "
        f"{LATE_SHARE:.0%} of its training lowered its best loss by more than {PLATEAU_TOLERANCE:.1%}. This is "
        "the project's plateau rule; the posts state none. A verdict whose claim needs trained models is "
        "*inconclusive at* this protocol while the cells it reads are still improving, and the same holds for "
        "a variant off its own best LR, or at the edge of its sweep grid.")
