"""Helpers the writeup notebook uses: tables formatted for reading, captioned figures, each section's results.

Every number the writeup prints is formatted here, once: a loss as mean ± std
at the precision its spread supports, a gap to softmax as
(variant − softmax) / softmax of the seed means in percent, the score scale
under the score_scale table's own names. Figure captions are read from
workflow/report/*.rst, the files the Snakemake report captions its figures
with, so both say the same.
"""

from __future__ import annotations

import base64
import html
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from attnlab.core.bundle_format import format_lr
from attnlab.pipeline.claims import published
from attnlab.pipeline.paths import results_dir
from attnlab.pipeline.tables import A3_GATE_INIT, SEED_MEAN_LABEL, sweep_display
from attnlab.pipeline.tables import SEED_MEAN_OVER_LAYERS as SEED_MEAN

BASELINE = "softmax"
CAPTIONS = Path("workflow") / "report"  # relative to the workspace, beside results/
SCALAR_INIT = math.log(2.0)  # softplus(0): where yat_b's b and ε start
# A verdict reads "holds at <protocol>", "not reproduced at <protocol>", ... (attnlab.pipeline.claims).
VERDICT_CLASSES = (("holds", "holds"), ("partly", "partly"), ("not reproduced", "missed"), ("fails", "fails"),
                   ("not tested", "untested"))
MISSED = ("partly", "not reproduced", "fails")
# no protocol column: every verdict names its protocol
LEDGER_COLUMNS = ("source", "claim", "check", "measured", "published", "verdict", "note")
LEDGER_WIDTHS = {"source": 7, "claim": 15, "check": 18, "measured": 16, "published": 14, "verdict": 10, "note": 20}

PAGE_STYLE = """
<style>
.jp-Notebook, body.jp-Notebook { max-width: 62rem; margin: 0 auto; }
.jp-RenderedHTMLCommon { font-size: 15px; line-height: 1.55; }
.jp-RenderedHTMLCommon p { max-width: 48rem; }
figure.paper { margin: 1.2em 0 1.8em 0; }
figure.paper img { display: block; max-width: 100%; height: auto; margin: 0 auto; }
figure.paper figcaption { font-size: 0.9em; color: #333; margin: 0.5em auto 0 auto; max-width: 48rem; }
.jp-RenderedHTMLCommon table.paper { border-collapse: collapse; margin: 0.4em 0 1.6em 0; font-size: 0.88em;
  table-layout: auto; }
.jp-RenderedHTMLCommon table.paper caption { caption-side: top; text-align: left; font-size: 0.95em;
  color: #333; padding-bottom: 0.4em; max-width: 48rem; }
.jp-RenderedHTMLCommon table.paper th { border-bottom: 1px solid #444; font-weight: 600; padding: 0.25em 0.7em;
  vertical-align: bottom; }
.jp-RenderedHTMLCommon table.paper th.group { border-bottom: 1px solid #aaa; text-align: center; }
.jp-RenderedHTMLCommon table.paper td { padding: 0.25em 0.7em; vertical-align: top; border: none; }
.jp-RenderedHTMLCommon table.paper tbody tr:nth-child(odd) { background: #f6f6f6; }
.jp-RenderedHTMLCommon table.paper tbody tr:hover { background: #eef3fa; }
.jp-RenderedHTMLCommon table.paper .text { text-align: left; }
.jp-RenderedHTMLCommon table.paper .num { text-align: right; white-space: nowrap;
  font-variant-numeric: tabular-nums; }
.jp-RenderedHTMLCommon table.paper.ledger { font-size: 0.8em; }
.jp-RenderedHTMLCommon table.paper td { overflow-wrap: anywhere; }
.jp-RenderedHTMLCommon table.paper span.verdict { font-weight: 600; padding: 0 0.3em; border-radius: 3px; }
span.verdict.holds { color: #0b5e3c; background: #dff3e8; }
span.verdict.partly { color: #7a4b00; background: #fbecd0; }
span.verdict.missed { color: #7a3300; background: #fde6d8; }
span.verdict.fails { color: #ffffff; background: #b3261e; }
span.verdict.untested { color: #444; background: #eee; }
</style>
"""


# ---- the build


def protocol(runs: pd.DataFrame) -> str:
    names = runs["config.name"].unique()
    return names[0] if len(names) == 1 else "mixed"


def same_protocol(runs: pd.DataFrame) -> bool:
    """Published numbers are only comparable when this build ran the paper protocol."""
    return protocol(runs) == published()["protocol"]


def protocol_line(runs: pd.DataFrame) -> str:
    first = runs.iloc[0]
    commit = _known(first.get("provenance.git.commit"), "not recorded")
    return (f"**Protocol:** `{protocol(runs)}`: d_model {int(first['config.model.d_model'])}, "
            f"{int(first['config.model.layers'])} layers, {int(first['config.model.heads'])} heads, "
            f"a window of {int(first['config.model.block_size'])} characters, "
            f"{int(first['config.train.steps']):,} steps of batch {int(first['config.train.batch_size'])}; "
            f"{len(runs)} trained cells; git commit `{commit}`.")


def provenance_table(runs: pd.DataFrame) -> pd.DataFrame:
    """What the cells ran on, one row per fact; a fact that differs between cells lists every value."""
    rows = []
    for column in sorted(c for c in runs.columns if c.startswith("provenance.") and c != "provenance.hostname"):
        values = sorted({str(_known(v, "—")) for v in runs[column]})
        rows.append({"fact": column.removeprefix("provenance."), "value": ", ".join(values)})
    return pd.DataFrame(rows, columns=["fact", "value"])


def results_path(*parts: str) -> Path:
    return results_dir().joinpath(*parts)


# ---- figures and their captions


class Numbering:
    """Figure and table numbers in the order the writeup shows them."""

    def __init__(self):
        self.counts = {}

    def next(self, kind: str) -> int:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        return self.counts[kind]


def caption(figure_name: str) -> str:
    """The figure's caption, from workflow/report/ (shared with the Snakemake report).

    <name>.rst (e.g. loss_curves.gif.rst) captions one format alone, where the still
    and the animation show different things; otherwise <stem>.rst captions both."""
    folder = results_dir().parent / CAPTIONS
    stem = Path(figure_name).stem
    path = next((p for p in (folder / f"{Path(figure_name).name}.rst", folder / f"{stem}.rst") if p.is_file()), None)
    if path is None:
        return f"(no caption: {CAPTIONS / (stem + '.rst')} is missing)"
    return " ".join(path.read_text().split())


def figure_html(name: str, number: int, lead: str = "") -> str:
    """The figure inlined (PNG or animated GIF, so the page stays one file) under a numbered caption."""
    path = results_path("figures", name)
    mime = {".png": "image/png", ".gif": "image/gif"}[path.suffix]
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    text = caption(name)
    alt = text.split(". ")[0]
    lead = f"{lead} " if lead else ""
    return (f'<figure class="paper"><img src="data:{mime};base64,{data}" alt="{html.escape(alt)}">'
            f"<figcaption><b>Figure {number}.</b> {html.escape(lead)}{_rst_inline(text)}</figcaption></figure>")


def _rst_inline(text: str) -> str:
    """The little reStructuredText a caption uses (``code``, *emphasis*) as HTML."""
    text = html.escape(text)
    text = re.sub(r"``(.+?)``", r"<code>\1</code>", text)
    return re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<em>\1</em>", text)


# ---- tables for reading


def table_html(frame: pd.DataFrame, number: int, title: str, groups: list[tuple[str, int]] | None = None,
               widths: dict[str, int] | None = None, left: tuple[str, ...] = (),
               markup: tuple[str, ...] = (), name: str = "") -> str:
    """A table of display strings: numbered caption above, no index, text left and numbers right.

    groups: optional (label, span) spanning headers over consecutive columns ('' for none).
    widths: percent of the page per column, for a table of running text that must fit the page.
    left: columns kept left-aligned even when they look numeric. markup: columns of trusted HTML.
    name: an extra CSS class (the ledger's smaller type).
    """
    columns = list(frame.columns)
    kinds = {c: "num" if _numeric_column(frame[c]) and c not in left else "text" for c in columns}
    layout, cols = "", ""
    if widths:
        layout = ' style="width:100%; table-layout:fixed"'
        cols = "<colgroup>" + "".join(f'<col style="width:{widths.get(c, 8)}%">' for c in columns) + "</colgroup>"
    head = ""
    if groups:
        head += "<tr>" + "".join(f'<th class="group" colspan="{span}">{html.escape(label)}</th>' if label
                                 else f'<th colspan="{span}"></th>' for label, span in groups) + "</tr>"
    head += "<tr>" + "".join(f'<th class="{kinds[c]}">{html.escape(str(c))}</th>' for c in columns) + "</tr>"
    body = []
    for row in frame.itertuples(index=False):
        cells = []
        for column, value in zip(columns, row):
            text = str(value) if column in markup else html.escape(_cell_text(value))
            cells.append(f'<td class="{kinds[column]}">{text}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<table class="paper {name}"{layout}><caption><b>Table {number}.</b> {_rst_inline(title)}</caption>'
            f"{cols}<thead>{head}</thead><tbody>{''.join(body)}</tbody></table>")


def _cell_text(value) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "—"
    return str(value)


_NUMERIC = re.compile(r"^[\s+\-−–±×%,.\d()e≈<>~]*$")


def _numeric_column(values: pd.Series) -> bool:
    """Right-align a column when most of its cells read as numbers ('3.130 ± 0.023', '+5.6%', '0.003')."""
    texts = [_cell_text(v).strip() for v in values]
    texts = [t for t in texts if t and t != "—"]
    numeric = [bool(_NUMERIC.match(t)) and any(ch.isdigit() for ch in t) for t in texts]
    return bool(texts) and sum(numeric) >= len(texts) / 2


def mean_pm(means, stds, digits: int | None = None) -> list[str]:
    """'mean ± std' for a column, every row at the precision two significant digits of the smallest std need."""
    means, stds = np.asarray(means, dtype=float), np.asarray(stds, dtype=float)
    if digits is None:
        digits = decimals_for(stds)
    return [f"{m:.{digits}f} ± {s:.{digits}f}" if np.isfinite(s) else f"{m:.{digits}f}"
            for m, s in zip(means, stds)]


def decimals_for(stds, low: int = 2, high: int = 4) -> int:
    """Decimals that show two significant digits of the smallest positive spread, within [low, high]."""
    stds = np.asarray(stds, dtype=float)
    stds = stds[np.isfinite(stds) & (stds > 0)]
    if stds.size == 0:
        return high
    return int(np.clip(1 - math.floor(math.log10(stds.min())), low, high))


def gap_to(values: pd.Series, reference: float) -> pd.Series:
    """(value − reference) / reference: the one definition of a gap in this writeup (and the ledger's)."""
    return (values.astype(float) - reference) / reference


def percent(value: float, signed: bool = True) -> str:
    if value is None or not np.isfinite(value):
        return "—"
    return f"{value:+.1%}" if signed else f"{value:.1%}"


def ratio(value: float, reference: float) -> str:
    """value / reference as '5.67×': the one way a ratio of scores is written."""
    if reference is None or not np.isfinite(reference) or reference <= 0 or not np.isfinite(value):
        return "—"
    return f"{value / reference:,.3g}×"


def number(value: float, significant: int = 4) -> str:
    """A score-like number: thousands separators, `significant` digits."""
    if value is None or not np.isfinite(value):
        return "—"
    return f"{value:,.{significant}g}" if abs(value) < 10 ** significant else f"{value:,.0f}"


# ---- the tables of each section


def params_display(params: pd.DataFrame) -> pd.DataFrame:
    base = params.n_params[params.variant == BASELINE]
    base = int(base.iloc[0]) if len(base) else None
    return pd.DataFrame({
        "variant": params.variant,
        "parameters": params.n_params.map(lambda n: f"{int(n):,}"),
        f"extra vs {BASELINE}": ["baseline" if v == BASELINE else ("—" if pd.isna(n) else f"{int(n):+,}")
                                 for v, n in zip(params.variant, params.vs_softmax)],
        f"extra vs {BASELINE} (%)": ["baseline" if v == BASELINE else (f"{n / base:+.3%}" if base else "—")
                                     for v, n in zip(params.variant, params.vs_softmax)],
    })


def contest_display(contest: pd.DataFrame, comparable: bool) -> tuple[pd.DataFrame, list[tuple[str, int]]]:
    """Contest table for reading and its spanning headers."""
    base = _baseline_mean(contest)
    shown = pd.DataFrame({
        "variant": contest.variant,
        "LR": contest.lr.map(lambda lr: format_lr(float(lr))),
        "seeds": contest.n_seeds.astype(int),
        "best val. loss (nats/char)": mean_pm(contest.best_val_mean, contest.best_val_std),
        "bits/char": contest.bpc_mean.map(lambda x: f"{x:.3f}"),
        f"gap to {BASELINE}": ["baseline" if v == BASELINE else percent(g)
                               for v, g in zip(contest.variant, gap_to(contest.best_val_mean, base))]
        if base else "—",
    })
    if "n_diverged" in contest.columns:
        shown["diverged seeds"] = contest.n_diverged.astype(int)
    groups = None
    if comparable:
        groups = [("this build", len(shown.columns))]
        pub = {(p["variant"], float(p["lr"])): p for p in published()["contest"]}
        rows = [pub.get((v, float(lr))) for v, lr in zip(contest.variant, contest.lr)]
        shown["published (nats/char)"] = [f"{p['mean']:.4f} ± {p['std']:.4f}" if p else "—" for p in rows]
        shown["published bits/char"] = [f"{p['bpc']:.3f}" if p else "—" for p in rows]
        groups.append(("published, same variant and LR", 2))
    return shown, groups


def sweep_table(sweep: pd.DataFrame, contest: pd.DataFrame,
                comparable: bool) -> tuple[pd.DataFrame, list[tuple[str, int]]]:
    """LR rows x variant columns (tables.sweep_display's cells, in contest order), published ones when comparable."""
    wide = sweep_display(sweep).rename(columns={"lr": "LR"})
    wide = wide[["LR"] + _ordered([c for c in wide.columns if c != "LR"], contest)]
    groups = [("", 1), ("best validation loss at the sweep seed (nats/char)", len(wide.columns) - 1)]
    if comparable:
        values = published()["lr_sweep"]
        lrs = [float(lr) for lr in wide.LR]
        for variant, by_lr in values.items():
            wide[f"{variant} "] = [_published_at(by_lr, lr) for lr in lrs]
        groups.append(("published", len(values)))
    return wide, groups


def _published_at(by_lr: dict, lr: float) -> str:
    for key, value in by_lr.items():
        if math.isclose(float(key), lr, rel_tol=1e-6):
            return f"{value:.4f}"
    return "—"


def score_display(score: pd.DataFrame, comparable: bool) -> pd.DataFrame:
    """Per variant: the seed means over layers of max score (range over seeds) and the max score.

    The same two numbers, under the same names, as score_scale.md and the score-scale figure.
    """
    per_seed = seed_means(score)
    rows = []
    base_max = score[score.variant == BASELINE].max_score.max()
    for variant, cells in score.groupby("variant", sort=False):
        mine = per_seed[per_seed.variant == variant][SEED_MEAN]
        row = {"variant": variant}
        if "lr" in cells.columns:
            row["LR"] = format_lr(float(cells.lr.iloc[0]))
        row[SEED_MEAN_LABEL] = f"{number(mine.min())} – {number(mine.max())}"
        row["max score"] = number(cells.max_score.max())
        row[f"max score / {BASELINE}'s"] = ("baseline" if variant == BASELINE
                                            else ratio(cells.max_score.max(), base_max))
        if comparable:
            pub = published().get("score_scale", {}).get(variant, {})
            row["published max score"] = number(pub["max"]) if "max" in pub else "—"
        rows.append(row)
    return pd.DataFrame(rows)


def seed_means(score: pd.DataFrame) -> pd.DataFrame:
    """variant, seed and the score_scale table's mean over layers of max score (one value per seed)."""
    return score.groupby(["variant", "seed"], sort=False)[SEED_MEAN].first().reset_index()


def auroc_display(auroc: pd.DataFrame, comparable: bool) -> pd.DataFrame:
    rows = []
    for variant, cells in auroc.groupby("variant", sort=False):
        row = {"variant": variant}
        if "lr" in cells.columns:
            row["LR"] = format_lr(float(cells.lr.iloc[0]))
        row["AUROC per seed"] = ", ".join(f"{x:.3f}" for x in cells.mass_auroc)
        row["AUROC mean"] = f"{cells.mass_auroc.mean():.3f}"
        row["distance from 0.5"] = f"{abs(cells.mass_auroc.mean() - 0.5):.3f}"
        for column, label in (("mass_correct_mean", "mean mass of correct tokens, per seed"),
                              ("mass_wrong_mean", "mean mass of wrong tokens, per seed")):
            if column in cells.columns:
                row[label] = ", ".join(number(x, 3) for x in cells[column])
        if comparable:
            pub = published().get("mass_auroc", {}).get(variant)
            row["published AUROC"] = ", ".join(f"{x:.3f}" for x in pub) if pub else "—"
        rows.append(row)
    return pd.DataFrame(rows)


def entropy_display(entropy: pd.DataFrame, comparable: bool, sharp: float, diffuse: float) -> pd.DataFrame:
    sharp_col, diffuse_col = f"share_below_{sharp:g}", f"share_above_{diffuse:g}"
    stats = entropy.groupby("variant", sort=False).agg(mean=("mean", "mean"), std=("mean", lambda x: x.std(ddof=0)),
                                                       sharp=(sharp_col, "mean"), diffuse=(diffuse_col, "mean"),
                                                       seeds=("seed", "nunique")).reset_index()
    shown = pd.DataFrame({
        "variant": stats.variant,
        "seeds": stats.seeds,
        "mean normalised entropy": mean_pm(stats["mean"], stats["std"], digits=3),
        f"sharp rows (< {sharp:g})": stats.sharp.map(lambda x: percent(x, signed=False)),
        f"diffuse rows (> {diffuse:g})": stats.diffuse.map(lambda x: percent(x, signed=False)),
    })
    if comparable:
        pub = published().get("entropy", {})
        shown["published mean"] = [f"{pub[v]['mean']:.2f}" if "mean" in pub.get(v, {}) else "—"
                                   for v in stats.variant]
    return shown


def scalars_display(scalars: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (variant, name), cells in scalars.groupby(["variant", "scalar"], sort=False):
        per_head = cells.groupby(["layer", "head"]).value.mean()
        rows.append({"variant": variant, "scalar": {"eps": "ε"}.get(name, name),
                     "init": f"{SCALAR_INIT:.3f}", "min": f"{per_head.min():.3f}",
                     "mean": f"{per_head.mean():.3f}", "max": f"{per_head.max():.3f}",
                     "largest move from init": f"{(per_head - SCALAR_INIT).abs().max():.3f}"})
    return pd.DataFrame(rows)


def a3_init_display(init: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "seed": init.seed.astype(int),
        "max |A³ − softmax|": init.max_diff_vs_softmax.map(lambda x: f"{x:.2g}"),
        "max |A³ − softmax at temperature 1/σ(3)|": init.max_diff_vs_tempered_softmax.map(lambda x: f"{x:.2g}"),
        "worst |row sum − 1|": init.max_row_sum_error.map(lambda x: f"{x:.2g}"),
    })


def a3_layers(tables: dict) -> pd.DataFrame:
    """Per layer: A³'s and softmax's mean row entropy, their difference, A³'s gate mean and bias spread.

    From the a3_vs_softmax_entropy table when the build has it, else the same means over a3_gates.csv.
    """
    if "a3_vs_softmax_entropy" in tables and not tables["a3_vs_softmax_entropy"].empty:
        t = tables["a3_vs_softmax_entropy"]
        return pd.DataFrame({"layer": t.layer.astype(int), "a3_entropy": t.a3_entropy,
                             "softmax_entropy": t.softmax_entropy, "entropy_diff": t.entropy_diff,
                             "gate_mean": t.a3_gate_mean, "bias_spread": t.get("a3_bias_std", np.nan)})
    gates = tables["a3_gates"]
    a3 = gates[gates.variant == "a3"].groupby("layer")
    soft = gates[gates.variant == BASELINE].groupby("layer").entropy.mean()
    layers = a3.entropy.mean()
    return pd.DataFrame({"layer": layers.index.astype(int), "a3_entropy": layers.values,
                         "softmax_entropy": soft.reindex(layers.index).values,
                         "entropy_diff": layers.values - soft.reindex(layers.index).values,
                         "gate_mean": a3.gate_mean.mean().values, "bias_spread": a3.bias_std.mean().values})


def a3_layers_display(layers: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "layer": layers.layer,
        "A³ entropy": layers.a3_entropy.map(lambda x: f"{x:.3f}"),
        f"{BASELINE} entropy": layers.softmax_entropy.map(lambda x: f"{x:.3f}"),
        f"A³ − {BASELINE}": layers.entropy_diff.map(lambda x: f"{x:+.3f}"),
        f"gate G mean (init {A3_GATE_INIT:.3f})": layers.gate_mean.map(lambda x: f"{x:.3f}"),
        "bias B spread over keys": layers.bias_spread.map(lambda x: "—" if pd.isna(x) else f"{x:.3f}"),
    })


def ledger_display(ledger: pd.DataFrame) -> pd.DataFrame:
    shown = ledger[[c for c in LEDGER_COLUMNS if c in ledger.columns]].copy()
    shown["verdict"] = [f'<span class="verdict {verdict_kind(v)[1]}">{html.escape(str(v))}</span>'
                        for v in shown.verdict]
    return shown.fillna("").replace("", "—")


def verdict_kind(verdict: str) -> tuple[str, str]:
    """('not reproduced', 'fails'): the verdict without its protocol, and how it is coloured."""
    for kind, css in VERDICT_CLASSES:
        if str(verdict).startswith(kind):
            return kind, css
    return str(verdict), "untested"


# ---- results paragraphs, written from the data


def contest_results(contest: pd.DataFrame, protocol_name: str) -> str:
    ranked = contest.sort_values("best_val_mean").reset_index(drop=True)
    losses = dict(zip(contest.variant, mean_pm(contest.best_val_mean, contest.best_val_std)))
    winner = ranked.iloc[0]
    text = (f"At the `{protocol_name}` protocol ({_seeds_phrase(contest)}), **{winner.variant}** has the lowest "
            f"best validation loss, {losses[winner.variant]} nats/char")
    if len(ranked) > 1:
        text += "; then " + ", ".join(f"{r.variant} {losses[r.variant]}" for r in ranked.iloc[1:].itertuples())
    text += "."
    base = _baseline_mean(contest)
    if base:
        soft = contest[contest.variant == BASELINE].iloc[0]
        gaps = []
        for row in ranked.itertuples():
            if row.variant == BASELINE:
                continue
            gap = (row.best_val_mean - base) / base
            spread = math.hypot(row.best_val_std, soft.best_val_std)
            noise = " (within the seeds' spread)" if abs(row.best_val_mean - base) <= spread else ""
            gaps.append(f"{row.variant} {percent(gap)}{noise}")
        text += (f" Against {BASELINE}, the gap (variant − {BASELINE}) / {BASELINE} of the seed means is "
                 + ", ".join(gaps) + "; a negative gap is a variant that beat softmax.")
    diverged = contest[contest.get("n_diverged", pd.Series(0, index=contest.index)) > 0]
    if len(diverged):
        text += " Diverged contest seeds: " + ", ".join(
            f"{r.variant} {int(r.n_diverged)}" for r in diverged.itertuples()) + "."
    return text


def sweep_results(sweep: pd.DataFrame, contest: pd.DataFrame) -> str:
    parts, spreads, diverged = [], [], []
    for variant in _ordered(sweep.variant, contest):
        cells = sweep[sweep.variant == variant]
        ok = cells[~cells.diverged.astype(bool) & np.isfinite(cells.best_val_loss.astype(float))]
        for row in cells[~cells.index.isin(ok.index)].itertuples():
            step = f" at step {int(row.diverged_step)}" if pd.notna(row.diverged_step) else ""
            diverged.append(f"{variant} at LR {format_lr(row.lr)}{step}")
        if ok.empty:
            continue
        best = ok.loc[ok.best_val_loss.idxmin()]
        parts.append(f"{variant} {format_lr(best.lr)} ({best.best_val_loss:.3f})")
        if len(ok) > 1:
            spread = (ok.best_val_loss.max() - ok.best_val_loss.min()) / ok.best_val_loss.min()
            spreads.append(f"{variant} {percent(spread, signed=False)}")
    text = f"Best LR of each variant at the sweep seed: {', '.join(parts)}."
    if spreads:
        text += (" How much the best loss moves over the sweep's LRs, (max − min) / min (the ledger's LR-band "
                 f"measure): {', '.join(spreads)}.")
    text += f" Diverged cells: {', '.join(diverged)}." if diverged else " No cell diverged."
    lrs = sorted(float(lr) for lr in sweep.lr.unique())
    if len(lrs) < 3:
        text += f" With {len(lrs)} LRs ({', '.join(format_lr(lr) for lr in lrs)}) the sweep only brackets each optimum."
    return text


def score_results(score: pd.DataFrame, contest: pd.DataFrame) -> str:
    top = score.groupby("variant", sort=False).max_score.max()
    order = _ordered(top.index, contest)
    text = "Max score (the largest over layers, seeds and held-out batches): " + ", ".join(
        f"{v} {number(top[v])}" for v in order) + "."
    if BASELINE in top and top[BASELINE] > 0:
        ratios = [f"{v} {ratio(top[v], top[BASELINE])}" for v in order if v != BASELINE]
        text += f" Against {BASELINE}'s max score: {', '.join(ratios)}."
    return text


def auroc_results(auroc: pd.DataFrame, ledger: pd.DataFrame | None = None) -> str:
    if auroc.empty:
        return "No kernel variant ran, so there is no kernel mass to test."
    means = auroc.groupby("variant", sort=False).mass_auroc.mean()
    text = ("AUROC here is the probability that a correctly predicted token's kernel mass outranks a wrongly "
            "predicted one's. 0.5 is the null: the mass then carries no information about whether the "
            "prediction is right, and \"mass AUROC is null\" means the measured value sits at 0.5 within "
            "the ledger's tolerance. Measured: " + ", ".join(f"{v} {m:.3f}" for v, m in means.items()) + ".")
    row = _ledger_row(ledger, "row mass")
    if row is not None:
        text += f" The ledger's check ({row['check']}) says **{row['verdict']}**."
    return text


def entropy_results(entropy: pd.DataFrame, sharp: float) -> str:
    means = entropy.groupby("variant", sort=False)["mean"].mean().sort_values()
    sharp_share = entropy.groupby("variant", sort=False)[f"share_below_{sharp:g}"].mean()
    text = ("Sharpest rows (lowest mean normalised entropy) first: "
            + ", ".join(f"{v} {m:.3f}" for v, m in means.items()) + ".")
    text += (f" Share of sharp rows (entropy < {sharp:g}): "
             + ", ".join(f"{v} {percent(sharp_share[v], signed=False)}" for v in means.index) + ".")
    return text


def scalars_results(scalars: pd.DataFrame) -> str:
    if scalars.empty:
        return "No yat_b cells in this build, so no learned kernel scalars."
    parts = []
    for name, cells in scalars.groupby("scalar", sort=False):
        per_head = cells.groupby(["variant", "layer", "head"]).value.mean()
        label = {"eps": "ε"}.get(name, name)
        parts.append(f"learned {label} spans {per_head.min():.3f}–{per_head.max():.3f} across layers and heads, "
                     f"at most {(per_head - SCALAR_INIT).abs().max():.3f} from its init log 2 ≈ {SCALAR_INIT:.3f}")
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


def a3_results(layers: pd.DataFrame) -> str:
    if layers.empty:
        return "No A³ cells with gate telemetry in this build."
    below = (layers.gate_mean < A3_GATE_INIT).all()
    sharper = layers[layers.entropy_diff < 0]
    text = ("Per layer, A³'s gate mean is " + ", ".join(f"{g:.3f}" for g in layers.gate_mean)
            + f" against its init {A3_GATE_INIT:.3f}; A³'s row entropy minus {BASELINE}'s is "
            + ", ".join(f"{d:+.3f}" for d in layers.entropy_diff) + " (below 0: sharper).")
    if below and len(sharper):
        text += (f" Every gate sits below its init, which on its own would cool the logits and soften the rows; "
                 f"yet A³ is sharper than {BASELINE} in layer{'s' if len(sharper) > 1 else ''} "
                 + ", ".join(str(int(layer)) for layer in sharper.layer)
                 + ". So the sharpening does not come from the gate: it comes from the key bias B (its spread over "
                 "the keys is the last column) or from A³'s own trained q·k scale, which these tables do not "
                 "separate.")
    return text


def ledger_results(ledger: pd.DataFrame, protocol_name: str, comparable: bool) -> str:
    kinds = ledger.verdict.map(lambda v: verdict_kind(v)[0])
    counts = kinds.value_counts()
    text = (f"At the `{protocol_name}` protocol, of {len(ledger)} claims: "
            + ", ".join(f"{n} {kind}" for kind, n in counts.items()) + ".")
    if not comparable:
        text += (f" The `{protocol_name}` protocol is not the published one, so a claim that does not reproduce "
                 "here is not reproduced at this protocol; it does not refute the published number.")
    missed = ledger[kinds.isin(MISSED)]
    if len(missed):
        text += "\n\nDid not reproduce here (the measured values are in the table):\n\n" + "\n".join(
            f"* {r.claim} ({verdict_kind(r.verdict)[0]})" for r in missed.itertuples())
    return text


# ---- helpers


def _baseline_mean(contest: pd.DataFrame) -> float | None:
    rows = contest[contest.variant == BASELINE]
    return float(rows.best_val_mean.iloc[0]) if len(rows) else None


def _seeds_phrase(contest: pd.DataFrame) -> str:
    seeds = sorted(set(int(n) for n in contest.n_seeds))
    return f"{seeds[0]} seeds per variant" if len(seeds) == 1 else "seeds per variant as listed"


def _ordered(variants, contest: pd.DataFrame) -> list[str]:
    present = list(dict.fromkeys(variants))
    return [v for v in contest.variant if v in present] + [v for v in present if v not in set(contest.variant)]


def _ledger_row(ledger: pd.DataFrame | None, words: str):
    if ledger is None or ledger.empty:
        return None
    hits = ledger[ledger.claim.str.contains(words, case=False, regex=False)]
    return hits.iloc[0] if len(hits) else None


def _known(value, missing: str):
    return missing if value is None or (isinstance(value, float) and not np.isfinite(value)) else value
