"""Helpers the writeup notebook uses: load a build's tables and set published numbers beside them."""

from __future__ import annotations

import base64
import html
from pathlib import Path

import numpy as np
import pandas as pd

from attnlab.pipeline.claims import published
from attnlab.pipeline.paths import results_dir  # noqa: F401  (the notebook reads it from here)
from attnlab.pipeline.tables import sweep_display

def protocol(runs: pd.DataFrame) -> str:
    names = runs["config.name"].unique()
    return names[0] if len(names) == 1 else "mixed"


def same_protocol(runs: pd.DataFrame) -> bool:
    """Published numbers are only comparable when this build ran the paper protocol."""
    return protocol(runs) == published()["protocol"]


def contest_with_published(contest: pd.DataFrame, comparable: bool) -> pd.DataFrame:
    shown = contest[["variant", "lr", "n_seeds", "best_val_mean", "best_val_std", "bpc_mean"]].copy()
    if not comparable:
        return shown
    pub = pd.DataFrame(published()["contest"])
    pub["lr"] = pub.lr.astype(float)
    shown["lr_value"] = shown.lr.astype(float)
    merged = shown.merge(pub.rename(columns={"mean": "published_mean", "std": "published_std",
                                             "bpc": "published_bpc", "lr": "lr_value"}),
                         on=["variant", "lr_value"], how="left")
    return merged.drop(columns="lr_value")


def sweep_with_published(sweep: pd.DataFrame, comparable: bool) -> pd.DataFrame:
    """The lr_sweep table as the tables show it, plus published columns when comparable."""
    wide = sweep_display(sweep)
    if comparable:
        for variant, values in published()["lr_sweep"].items():
            wide[f"{variant} (published)"] = [values.get(float(lr), np.nan) for lr in wide.lr]
    return wide


def scores_with_published(scores: pd.DataFrame, comparable: bool) -> pd.DataFrame:
    per_variant = scores.groupby("variant", sort=False).agg(
        layer_mean_min=("mean_max_score", "min"), layer_mean_max=("mean_max_score", "max"),
        max=("max_score", "max")).reset_index()
    if comparable:
        pub = published()["score_scale"]
        per_variant["published max"] = per_variant.variant.map(lambda v: pub.get(v, {}).get("max", np.nan))
    return per_variant


def figure(name: str) -> Path:
    return results_dir() / "figures" / name


def figure_html(name: str, alt: str) -> str:
    """An <img> with the figure inlined: PNGs and animated GIFs both survive the HTML export."""
    path = figure(name)
    mime = {".png": "image/png", ".gif": "image/gif"}[path.suffix]
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img src="data:{mime};base64,{data}" alt="{html.escape(alt)}" style="max-width:100%">'
