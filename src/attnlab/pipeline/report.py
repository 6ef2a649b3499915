"""Helpers the writeup notebook uses: tables formatted for reading, captioned figures, each section's results.

Every number the writeup prints is formatted here, once: a loss as mean ± std
at the precision its spread supports, a comparison with softmax as the paired
difference by seed with its interval and wins (the contest table's columns,
from attnlab.pipeline.statistics), a gap to softmax in percent through the mean
per-seed log-ratio, the score scale under the score_scale table's own names.
Figure captions are read from workflow/report/*.rst, the files the Snakemake
report captions its figures with, so both say the same.
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
from attnlab.pipeline import statistics
from attnlab.pipeline.claims import POSTS, published
from attnlab.pipeline.paths import results_dir
from attnlab.pipeline.tables import A3_GATE_INIT, SEED_MEAN_LABEL, best_sweep_lr, sweep_display
from attnlab.pipeline.tables import SEED_MEAN_OVER_LAYERS as SEED_MEAN

BASELINE = "softmax"
CAPTIONS = Path("workflow") / "report"  # relative to the workspace, beside results/
SCALAR_INIT = math.log(2.0)  # softplus(0): where yat_b's b and ε start
# The ledger's five verdicts (attnlab.pipeline.statistics) and how each is coloured.
VERDICT_CLASSES = ((statistics.HOLDS, "holds"), (statistics.CONTRADICTED, "fails"),
                   (statistics.INCONCLUSIVE, "partly"), (statistics.NOT_TESTABLE, "untested"),
                   (statistics.BY_CONSTRUCTION, "construction"))
MISSED = (statistics.CONTRADICTED, statistics.INCONCLUSIVE)
# the caption names the protocol; ledger.csv keeps it on every row
LEDGER_COLUMNS = ("source", "claim", "check", "measured", "published", "verdict", "interval", "seeds", "note")
LEDGER_WIDTHS = {"source": 6, "claim": 12, "check": 14, "measured": 15, "published": 10, "verdict": 12,
                 "interval": 11, "seeds": 5, "note": 15}

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
.jp-RenderedHTMLCommon table.paper th.num { white-space: normal; }
.jp-RenderedHTMLCommon table.paper.ledger { font-size: 0.8em; }
.jp-RenderedHTMLCommon table.paper td { overflow-wrap: anywhere; }
.jp-RenderedHTMLCommon table.paper td:first-child { overflow-wrap: normal; }
.jp-RenderedHTMLCommon table.paper span.verdict { font-weight: 600; padding: 0 0.3em; border-radius: 3px; }
span.verdict.holds { color: #0b5e3c; background: #dff3e8; }
span.verdict.partly { color: #7a4b00; background: #fbecd0; }
span.verdict.missed { color: #7a3300; background: #fde6d8; }
span.verdict.fails { color: #ffffff; background: #b3261e; }
span.verdict.untested { color: #444; background: #eee; }
span.verdict.construction { color: #1c3d6e; background: #e3ecf8; }
span.resolution { display: block; font-size: 0.9em; color: #555; margin-top: 0.2em; }
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


_NUMERIC = re.compile(r"^[\s+\-−–±×%,.\d()\[\]e≈<>~]*$")


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


def signed(value: float, digits: int = 4) -> str:
    """A difference with its sign: '+0.0123', '−' for a missing one."""
    if value is None or not np.isfinite(value):
        return "—"
    return f"{value:+.{digits}f}"


def interval(low: float, high: float, digits: int = 4) -> str:
    """'[−0.0412, −0.0251]', or the reason there is none (one shared seed gives no interval)."""
    if low is None or high is None or not (np.isfinite(low) and np.isfinite(high)):
        return statistics.ONE_SEED
    return f"[{low:+.{digits}f}, {high:+.{digits}f}]"


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
    """Contest table for reading and its spanning headers: each variant's loss, and its paired comparison
    with softmax over the seeds both have (difference, interval, wins, gap in percent)."""
    level = f"{statistics.CONFIDENCE:.0%}"
    choice = contest.lr_choice if "lr_choice" in contest else pd.Series("given", index=contest.index)
    shown = pd.DataFrame({
        "variant": contest.variant,
        "LR": [format_lr(float(lr)) + (" (auto)" if c == "auto" else "") for lr, c in zip(contest.lr, choice)],
        "seeds": contest.n_seeds.astype(int),
        "best val. loss (nats/char)": mean_pm(contest.best_val_mean, contest.best_val_std),
        "bits/char": contest.bpc_mean.map(lambda x: f"{x:.3f}"),
    })
    paired = "delta_vs_softmax" in contest
    if paired:
        baseline = contest.variant == BASELINE
        shown[f"− {BASELINE} (nats) [{level} interval]"] = [
            "baseline" if b else f"{signed(d, 4)} {interval(lo, hi, 4)}"
            for b, d, lo, hi in zip(baseline, contest.delta_vs_softmax, contest.delta_ci_low, contest.delta_ci_high)]
        shown["wins"] = ["" if b else w for b, w in zip(baseline, contest.wins)]
        shown[f"gap to {BASELINE}"] = ["baseline" if b else percent(g)
                                       for b, g in zip(baseline, contest.gap_vs_softmax)]
    if "n_diverged" in contest.columns:
        shown["diverged seeds"] = contest.n_diverged.astype(int)
    if "n_diverged" in contest.columns:
        shown["diverged seeds"] = contest.n_diverged.astype(int)
    groups = None
    if paired:
        rest = len(shown.columns) - 8
        groups = [("", 5), (f"paired by seed with {BASELINE}", 3)] + ([("", rest)] if rest else [])
    if comparable:
        groups = [("this build" if not label else f"this build, {label}", span)
                  for label, span in (groups or [("", len(shown.columns))])]
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
    seeds = sweep.seed.nunique() if "seed" in sweep else 1
    label = ("best validation loss at the sweep seed (nats/char)" if seeds == 1
             else f"best validation loss, mean over the {seeds} sweep seeds (nats/char)")
    groups = [("", 1), (label, len(wide.columns) - 1)]
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
    """The ledger for the page: the verdict coloured, with what would resolve an inconclusive one under it."""
    shown = ledger[[c for c in LEDGER_COLUMNS if c in ledger.columns]].copy()
    resolution = ledger.get("resolution", pd.Series("", index=ledger.index)).fillna("")
    shown["verdict"] = [f'<span class="verdict {verdict_kind(v)[1]}">{html.escape(str(v))}</span>'
                        + (f'<span class="resolution">{html.escape(str(r))}</span>' if r else "")
                        for v, r in zip(shown.verdict, resolution)]
    if "seeds" in shown:
        shown["seeds"] = [str(int(n)) if pd.notna(n) and int(n) > 0 else "—" for n in shown.seeds]
    return shown.fillna("").replace("", "—")


def verdict_kind(verdict: str) -> tuple[str, str]:
    """('not testable', 'untested'): the verdict word without its protocol, and how it is coloured."""
    for kind, css in VERDICT_CLASSES:
        if str(verdict).startswith(kind):
            return kind, css
    return str(verdict), "untested"


def read_ledger(path: Path) -> pd.DataFrame:
    """ledger.csv as the page shows it: text columns empty rather than NaN."""
    ledger = pd.read_csv(path)
    text = [c for c in ledger.columns if c not in ("seeds", "seeds_to_resolve")]
    ledger[text] = ledger[text].astype(object).where(ledger[text].notna(), "")
    return ledger


def best_lr_display(best: pd.DataFrame) -> pd.DataFrame:
    """Each variant at its best sweep LR against softmax at its own, beside the same comparison in the contest."""
    level = f"{statistics.CONFIDENCE:.0%}"

    def cell(variant, mean, low, high, gap):
        if variant == BASELINE:
            return "baseline"
        if np.isfinite(low) and np.isfinite(high):
            return f"{signed(mean, 4)} {interval(low, high, 4)}, {percent(gap)}"
        return f"{signed(mean, 4)}, {percent(gap)} ({statistics.ONE_SEED})"

    choice = best.get("contest_lr_choice", pd.Series("given", index=best.index))
    return pd.DataFrame({
        "variant": best.variant,
        "best sweep LR": best.best_lr.map(lambda lr: format_lr(float(lr))),
        "sweep seeds": best.n_sweep_seeds.astype(int),
        f"− {BASELINE} at the best LRs (nats) [{level} interval], gap": [
            cell(r.variant, r.delta_vs_softmax, r.delta_ci_low, r.delta_ci_high, r.gap_vs_softmax)
            for r in best.itertuples()],
        "contest LR": ["—" if pd.isna(lr) else format_lr(float(lr)) + (" (auto)" if c == "auto" else "")
                       for lr, c in zip(best.contest_lr, choice)],
        f"− {BASELINE} in the contest (nats) [{level} interval], gap": [
            cell(r.variant, r.contest_delta_vs_softmax, r.contest_delta_ci_low, r.contest_delta_ci_high,
                 r.contest_gap_vs_softmax) for r in best.itertuples()],
    })


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
    if "delta_vs_softmax" in contest and (contest.variant == BASELINE).any():
        level = f"{statistics.CONFIDENCE:.0%}"
        parts = []
        for row in ranked.itertuples():
            if row.variant == BASELINE or not np.isfinite(row.delta_vs_softmax):
                continue
            described = f"{row.variant} {signed(row.delta_vs_softmax)} nats"
            if np.isfinite(row.delta_ci_low) and np.isfinite(row.delta_ci_high):
                described += (f" ({level} interval {interval(row.delta_ci_low, row.delta_ci_high)}, wins "
                              f"{row.wins}): {_reading(row.delta_ci_low, row.delta_ci_high)}")
            else:
                described += f" ({statistics.ONE_SEED})"
            parts.append(described)
        if parts:
            text += (f" Paired by seed with {BASELINE} (each variant at its own contest LR, over the seeds both "
                     f"have; below 0 beats {BASELINE}): " + "; ".join(parts) + ".")
    diverged = contest[contest.get("n_diverged", pd.Series(0, index=contest.index)) > 0]
    if len(diverged):
        text += " Diverged contest seeds: " + ", ".join(
            f"{r.variant} {int(r.n_diverged)}" for r in diverged.itertuples()) + "."
    return text


def _reading(low: float, high: float) -> str:
    """What an interval of a difference from softmax says."""
    if high < 0:
        return f"the interval lies below 0, better than {BASELINE}"
    if low > 0:
        return f"the interval lies above 0, worse than {BASELINE}"
    return "the interval spans 0, a difference the seeds do not resolve"


def best_lr_results(best: pd.DataFrame) -> str:
    """Where a variant's contest LR is not its best sweep LR, and what that changes against softmax."""
    if best.empty:
        return "No sweep cells trained, so no variant has a best sweep LR."
    off = [r for r in best.itertuples() if pd.notna(r.contest_lr) and not math.isclose(float(r.best_lr),
                                                                                          float(r.contest_lr))]
    seeds = int(best.n_sweep_seeds.max())
    text = (f"The sweep ran {seeds} seed{'s' if seeds > 1 else ''} per LR, so "
            + (f"these comparisons have no interval ({statistics.ONE_SEED})." if seeds == 1
               else "these comparisons carry intervals over the sweep seeds."))
    if off:
        def moved(r):
            lrs = f"{r.variant} (contest {format_lr(float(r.contest_lr))}, best {format_lr(float(r.best_lr))}"
            if r.variant == BASELINE:
                return lrs + ")"
            return (f"{lrs}: gap to {BASELINE} {percent(r.contest_gap_vs_softmax)} in the contest, "
                    f"{percent(r.gap_vs_softmax)} with each at its best LR)")
        text += (" The contest runs these variants away from their best sweep LR: " + "; ".join(map(moved, off))
                 + f". A claim about a gap to {BASELINE} can turn on that choice.")
    else:
        text += " Every variant's contest LR is its best sweep LR."
    return text


def still_improving(runs: pd.DataFrame) -> str:
    """A sentence when the cells' best validation loss came at their last evaluation (still improving)."""
    if runs.empty or "best_step" not in runs or "config.train.steps" not in runs:
        return ""
    last = runs.best_step.astype(float) >= runs["config.train.steps"].astype(float)
    if last.all():
        return (f"Every one of the {len(runs)} trained cells reached its best validation loss at its last "
                "evaluation: the models were still improving when training stopped, so these rankings are of "
                "models that had not finished learning.")
    if last.any():
        return (f"{int(last.sum())} of the {len(runs)} trained cells reached their best validation loss at their "
                "last evaluation (still improving when training stopped).")
    return ""


def compute_used(runs: pd.DataFrame) -> str:
    """The compute the build's training used, from runs.csv: the cells' training loops (wall_time_s) and
    their compilation (compile_s), summed.

    Each training job declares one thread (workflow/rules/train.smk), so on a CPU a cell's wall time is
    its CPU time; on an accelerator the sentence says device-minutes instead.
    """
    if runs.empty or "wall_time_s" not in runs:
        return "**Compute:** not recorded (runs.csv has no wall times)."
    loops = float(runs.wall_time_s.astype(float).sum()) / 60
    compile_min = float(runs.compile_s.astype(float).sum()) / 60 if "compile_s" in runs else math.nan
    kinds = sorted({str(k) for k in runs.get("provenance.device.kind", pd.Series(dtype=object)).dropna()})
    unit = "CPU-minutes" if kinds == ["cpu"] else f"device-minutes ({', '.join(kinds) or 'device not recorded'})"
    text = (f"**Compute:** the {len(runs)} cells' training loops took {loops:,.2f} {unit} in all "
            f"(the sum of runs.csv's `wall_time_s`)")
    if np.isfinite(compile_min):
        text += (f", and compiling their steps {compile_min:,.2f} more (`compile_s`): "
                 f"{loops + compile_min:,.2f} {unit.split(' ')[0]} together")
    return text + "; reading the corpus, evaluation set-up, collection, figures and this page are not counted."


def sweep_results(sweep: pd.DataFrame, contest: pd.DataFrame) -> str:
    parts, spreads, diverged = [], [], []
    sweep = sweep if "seed" in sweep else sweep.assign(seed=0)
    n_seeds = sweep.seed.nunique()
    for variant in _ordered(sweep.variant, contest):
        cells = sweep[sweep.variant == variant]
        ok = cells[~cells.diverged.astype(bool) & np.isfinite(cells.best_val_loss.astype(float))]
        for row in cells[~cells.index.isin(ok.index)].itertuples():
            step = f" at step {int(row.diverged_step)}" if pd.notna(row.diverged_step) else ""
            seed = f" seed {int(row.seed)}" if n_seeds > 1 else ""
            diverged.append(f"{variant} at LR {format_lr(row.lr)}{seed}{step}")
        choice = best_sweep_lr(cells)
        if choice is None:
            continue
        parts.append(f"{variant} {format_lr(choice['lr'])} ({choice['best_val_loss']:.3f})")
        means = ok.groupby("lr").best_val_loss.mean()
        if len(means) > 1:
            spreads.append(f"{variant} {percent((means.max() - means.min()) / means.min(), signed=False)}")
    where = "at the sweep seed" if n_seeds == 1 else f"mean over the {n_seeds} sweep seeds"
    text = f"Best LR of each variant ({where}): {', '.join(parts)}."
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
    text += (f" A verdict rests on the interval beside it ({statistics.CONFIDENCE:.0%}, t distribution, over the "
             "seeds named): *holds* when it lies inside what the claim says, *contradicted* when it excludes "
             "it, *inconclusive* when it spans the claim's threshold or when one seed gives no interval, *not "
             "testable* when this protocol cannot express the claim, *by construction* when the model's "
             "construction settles it.")
    if not comparable:
        text += (f" The `{protocol_name}` protocol is not the published one, so a claim contradicted here is "
                 "contradicted at this protocol; it does not refute the published number.")
    missed = ledger[kinds.isin(MISSED)]
    if len(missed):
        resolution = missed.get("resolution", pd.Series("", index=missed.index)).fillna("")
        text += "\n\nContradicted or inconclusive here (the measured values and intervals are in the table):\n\n" + \
            "\n".join(f"* {r.claim}: {verdict_kind(r.verdict)[0]}" + (f" ({res})" if res else "")
                      for r, res in zip(missed.itertuples(), resolution))
    return text


def sources_line() -> str:
    """The posts the ledger's claims come from, as the source column names them."""
    return "**Sources of the claims.** " + " ".join(f"*{name}*: {cite}." for name, cite in POSTS.items())


# ---- helpers


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
