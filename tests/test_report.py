"""The writeup's helpers (attnlab.pipeline.report) on a small synthetic build: what each sentence and table says.

The page must answer its question up front (the abstract and the claim →
verdict summary, each claim linked to its evidence), cite both posts, name
every ledger row's post, compute every number it prints from a table or a
constant, show what made each figure, and keep each table to the text column
(per-seed detail folded under it).
"""

from __future__ import annotations

import html
import re

import jupytext
import pandas as pd
import pytest

import results_folder
from attnlab.pipeline import claims
from attnlab.pipeline.ground import intervals, statistics, verdicts
from attnlab.pipeline.ground.contract import A3_GATE_INIT
from attnlab.pipeline.ground import figure_catalog as catalog
from attnlab.pipeline.ground import formatting
from attnlab.pipeline.report import a3, abstract, build, contest, ledger, page, telemetry
from attnlab.pipeline.report.style import PAGE_STYLE
from conftest import REPO
from processes import run


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A synthetic build at the published protocol; the report reads it through ATTNLAB_RESULTS."""
    root = results_folder.write(tmp_path / "ws")
    monkeypatch.setenv("ATTNLAB_RESULTS", str(root / "results"))
    return root


def tables_of(root):
    return build.load_tables(root / "results" / "tables")


# ---- numbers


def test_numbers_are_written_one_way():
    assert formatting.difference(0.01234, 0.005, 0.0196) == "+0.0123 [+0.0050, +0.0196]"
    assert formatting.difference(0.01234, float("nan"), float("nan")) == f"+0.0123 ({statistics.ONE_SEED})"
    assert formatting.percent(0.0131) == "+1.3%" and formatting.percent(0.2, signed=False) == "20.0%"
    assert formatting.lr_text(0.01, "auto") == "0.01 (auto)" and formatting.lr_text(3e-4) == "0.0003"
    assert formatting.mean_pm([1.49234], [0.0061]) == ["1.4923 ± 0.0061"]
    assert formatting.number(443508.0) == "443,508" and formatting.number(float("nan")) == formatting.MISSING


def test_the_a3_section_introduces_only_the_tables_it_shows():
    without_arm = {"a3_init", "a3_vs_softmax_entropy", "contest"}
    text = a3.section_intro(without_arm)
    assert "The first table checks where A³ starts" in text and "The second table sets A³'s rows" in text
    assert "third" not in text and "per-head temperature" not in text, "no table promised that is not shown"
    assert "the first table checks exactly that" in a3.start_paragraph(without_arm)
    with_arm = a3.section_intro(without_arm | {"a3_vs_temperature"})
    assert "The third table asks whether a learned per-head temperature" in with_arm
    assert a3.section_intro({"a3_vs_temperature"}).endswith("The table below asks whether a learned per-head "
                                                            "temperature, started where A³'s gate starts, gains as "
                                                            "much.")
    assert "table" not in a3.section_intro(set()) and "table" not in a3.start_paragraph(set())
    source = (REPO / "notebooks" / "writeup.py").read_text()
    assert "a3.section_intro(SHOWN)" in source and "The third asks" not in source


def test_a3_starts_at_the_computed_temperature_never_a_typed_one():
    assert f"{1 / A3_GATE_INIT:.4f}" == "1.0498"
    assert "temperature 1/σ(3) ≈ 1.0498" in a3.start_sentence()


# ---- the top of the page


def test_the_abstract_says_what_was_tested_at_which_protocol_and_what_it_found(workspace):
    t = tables_of(workspace)
    text = abstract.abstract_html(t["runs"], t["contest"], claims.ledger(t))
    assert "Softmax-Free Attention in JAX/Flax NNX" in text and "A³ Attention: The Softmax Is Not Sacred" in text
    assert "<code>paper</code> protocol: d_model 192, 6 layers, 4 heads" in text
    assert "That is the posts' published protocol" in text
    yat = t["contest"].set_index("variant").loc["yat"]
    assert f"yat {formatting.difference(yat.delta_vs_softmax, yat.delta_ci_low, yat.delta_ci_high)}" in text
    assert f"Of the {len(claims.ledger(t))} claims" in text


def test_the_abstract_opens_with_the_finding_and_how_many_of_the_posts_claims_are_decided(workspace):
    t = tables_of(workspace)
    ledger = claims.ledger(t)
    text = abstract.abstract_html(t["runs"], t["contest"], ledger)
    first = text.split("</p>")[0]
    assert "Against softmax, paired by seed" in first
    posts = abstract.posts_claims(ledger)
    assert f"Of the two posts' {len(posts)} claims, this build decides" in first
    assert "surviving Holm's step-down" in first
    assert len(posts) < len(ledger) and not posts.claim.str.startswith("on the scale ladder").any()
    # the abstract names the two posts, not the catalog's papers
    assert "Scaling Stick-Breaking Attention" not in text.split("</p>")[1]


def test_the_multiplicity_paragraph_counts_one_family_of_claims_and_contest_comparisons(workspace):
    """The ledger's tests and the contest's comparisons are one family: the paragraph counts both, and every
    ledger row it counts is one the ledger marked with Holm's outcome."""
    t = tables_of(workspace)
    tested = claims.ledger(t)
    members = claims.family(tested, t["contest"])
    in_ledger = (members.kind == "claim").sum()
    assert in_ledger == tested.holm.isin(["survives Holm", "does not survive Holm"]).sum() > 0
    said = ledger.multiplicity_text(tested, t["contest"])
    assert f"holds {len(members)} tests: {in_ledger} claims" in said
    assert f"and {(members.kind == 'contest').sum()} contest comparisons" in said
    assert "surviving Holm's step-down over the build's family" in abstract.abstract_html(
        t["runs"], t["contest"], tested).split("</p>")[0]


def test_a_smaller_build_says_the_published_protocol_is_the_larger_one(workspace):
    t = tables_of(workspace)
    runs = t["runs"].assign(**{"config.name": "default", "config.model.d_model": 64, "config.model.layers": 2})
    text = build.protocol_text(runs, t["contest"])
    assert text.startswith("It ran the <code>default</code> protocol: d_model 64, 2 layers")
    assert ("The posts published their numbers at the larger <code>paper</code> protocol (d_model 192, 6 layers, "
            "4 heads, a 128-character window, 12,000 steps of batch 64, 3 contest seeds)") in text
    assert "every verdict here is a verdict at <code>default</code>" in text


def test_every_claim_links_to_the_table_that_holds_its_evidence(workspace):
    t = tables_of(workspace)
    table = claims.ledger(t)
    shown = set(t) | {"composability"}
    tested = table[table.outcome != verdicts.NOT_TESTABLE]  # an untested claim's evidence is the ledger
    assert all(ledger.evidence(claim, shown) != "ledger" for claim in tested.claim), "a claim with no evidence"
    summary = ledger.summary_display(table, shown)
    targets = set(re.findall(r'href="#table-([a-z_0-9]+)"', "".join(summary.evidence)))
    assert targets <= shown | {"ledger"} and "contest" in targets  # the ledger is on every page
    assert ledger.evidence(table.claim.iloc[0], set()) == "ledger", "a table not on the page is not linked"


@pytest.mark.parametrize("verdict, interval, resolution, expected", [
    (verdicts.HOLDS, "95% CI [103×, 526×]", "", "95% CI [103×, 526×] lies inside the claim (at least 100×)"),
    (verdicts.CONTRADICTED, "95% CI [3×, 5×]", "", "95% CI [3×, 5×] excludes the claim (at least 100×)"),
    (verdicts.INCONCLUSIVE, "95% CI [50×, 526×]", "about 4 seeds would resolve it",
     "95% CI [50×, 526×] spans the claim (at least 100×); about 4 seeds would resolve it"),
    (verdicts.INCONCLUSIVE, statistics.ONE_SEED, "two or more seeds would give an interval",
     "two or more seeds would give an interval"),
    (verdicts.NOT_TESTABLE, "none: the model has 2 layers", "", "the model has 2 layers"),
    (verdicts.HOLDS_BY_CONSTRUCTION, "none needed: a softmax row sums to one", "", "a softmax row sums to one"),
])
def test_each_verdict_has_a_one_line_reason(verdict, interval, resolution, expected):
    row = pd.Series({"outcome": verdict, "off_protocol": False, "interval": interval, "resolution": resolution,
                     "check": "max score ratio; threshold: at least 100×"})
    assert ledger.reason(row) == expected


def test_both_posts_and_the_catalogs_papers_are_cited_and_every_ledger_row_names_its_source(workspace):
    refs = ledger.references_html()
    assert refs.count("<li>") == 2 + len(claims.PAPERS), "the two posts, then the catalog's six papers"
    assert '<a href="https://arxiv.org/abs/2504.20966">“Softpick: No Attention Sink' in refs
    assert ('<a href="https://tahabouhsine.com/blog/attention-is-a-compatibility-kernel-jax-flax-nnx/">'
            "“Softmax-Free Attention in JAX/Flax NNX”</a>") in refs and "Taha Bouhsine" in refs
    assert "“A³ Attention: The Softmax Is Not Sacred”" in refs
    table = claims.ledger(tables_of(workspace))
    assert set(table.source) <= set(ledger.sources()), "every source of the ledger has a citation"
    shown = ledger.ledger_html(table)
    assert all('<span class="post">' in c and html.escape(ledger.sources()[s]["short"]) in c
               for s, c in zip(table.source, shown["the source's words"]))
    quoted = [c for s, c in zip(table.source, shown["the source's words"])
              if s in (claims.KERNEL_POST, claims.A3_POST)]
    assert all('<span class="words">' in c and "this project's name for it" in c for c in quoted)
    assert all(ledger.reference_number(s) in (1, 2, None) for s in table.source if s not in claims.PAPERS)
    assert [ledger.reference_number(s) for s in claims.PAPERS] == list(range(3, 3 + len(claims.PAPERS)))


def test_verdict_badges_carry_their_kind_and_the_full_verdict_as_a_title():
    badge = ledger.badge(verdicts.NOT_TESTABLE, "not testable at default")
    assert badge == '<span class="verdict untested" title="not testable at default">not testable</span>'


# ---- tables and figures


def test_provenance_reads_as_words_not_raw_keys(workspace):
    runs = tables_of(workspace)["runs"]
    runs.loc[runs.index[0], "provenance.git.dirty"] = True
    shown = build.provenance_table(runs)
    text = shown.to_string()
    assert not re.search(r"\b(git|packages|device|provenance)\.", text), text
    facts = dict(zip(shown.what, shown.value))
    assert facts["attnlab source (git commit)"].endswith("(with uncommitted changes)")
    assert facts["packages"] == "jax 0.10.2 · flax 0.12.8"
    assert facts["device"] == "1 × gpu" and facts["scheduler"] == "local (no SLURM job)"
    assert facts["CPUs a training job could use"] == "16"
    assert facts["XLA CPU thread pool of a training job"] == "1"
    assert facts["compute"].startswith(f"{len(runs) * 609 / 60:,.1f} GPU-minutes for {len(runs)} cells")


def test_cpu_counts_sort_as_numbers_and_name_bundles_that_did_not_record_them(workspace):
    runs = tables_of(workspace)["runs"]
    column = "provenance.device.host_cpus"
    runs[column] = [16, 2, 16.0] + [float("nan")] * (len(runs) - 3)
    assert build.cpu_counts(runs) == ["2", "16", "not recorded"]
    assert build.cpu_counts(runs.drop(columns=column)) == []
    runs[column] = float("nan")
    assert build.cpu_counts(runs) == [], "no bundle recorded them: no row, as for any unrecorded fact"


def test_per_seed_values_fold_under_their_table(workspace):
    t = tables_of(workspace)
    frame, per_seed = telemetry.auroc_display(t["mass_auroc"], comparable=True)
    assert len(frame) == 2 and len(per_seed) == len(t["mass_auroc"])
    assert "published AUROC per seed" in frame and not any("per seed" in c for c in per_seed.columns)
    html = page.table_html(frame, 3, "Mass AUROC.", name="mass_auroc", per_seed=per_seed)
    assert html.startswith('<table class="paper keep" id="table-mass_auroc">'), "two rows print on one page"
    assert '<details class="per-seed"><summary>Per seed (Table 3)</summary>' in html
    # paper cannot unfold a <details>: the same table follows in a block only print shows, captioned
    folded, printed = html.split('<details class="per-seed">')[1].split('<div class="per-seed-print">')
    assert '<caption>Per seed (Table 3).</caption>' in printed
    assert re.sub(r"<caption>.*?</caption>", "", printed).count("<tr>") == folded.count("<tr>") == len(per_seed) + 1
    assert "div.per-seed-print { display: none; }" in PAGE_STYLE
    screen, print_rules = PAGE_STYLE.split("@media print")
    assert "details.per-seed { display: none; }" in print_rules
    assert "div.per-seed-print { display: block;" in print_rules


def test_table_text_breaks_only_where_a_reader_expects():
    """A header wraps only at its spaces; a cell keeps an interval, a mean ± std and an e-notation number whole,
    and lets a path wrap after its slash."""
    header = page.header_html("max |A³ − softmax at temperature 1/σ(3)| [95% interval]")
    words = re.findall(r'<span class="unbroken">(.*?)</span>', header)
    assert words == ["max", "|A³", "−\u00a0softmax", "at", "temperature", "1/σ(3)|", "[95%\u00a0interval]"]
    assert re.sub(r'<span class="unbroken">.*?</span>', "", header) == " " * (len(words) - 1), "breaks: spaces"
    cell = page.cell_html("+0.1767 [−0.0453, +0.3986] at 1e-2 over 3e-4–3e-3, 3.1301 ± 0.0231 (config/ladder.yaml) <b>")
    assert '+0.1767 <span class="unbroken interval">[−0.0453, +0.3986]</span>' in cell
    assert '<span class="unbroken">1e-2</span>' in cell and '<span class="unbroken">3e-4–3e-3</span>' in cell
    assert '<span class="unbroken">3.1301 ± 0.0231</span>' in cell
    assert "(config/<wbr>ladder.yaml) &lt;b&gt;" in cell, "a path wraps after its slash; text stays escaped"


def test_column_widths_add_up_to_the_table_on_any_page():
    html = page.table_html(pd.DataFrame({"claim": ["x"], "verdict": ["y"], "why": ["z"]}), 1, "T.",
                           widths={"claim": 60, "verdict": "13em", "why": 20})
    widths = re.findall(r'<col style="width:([^"]+)">', html)
    assert widths == ["calc((100% - 13em) * 0.7500)", "13em", "calc((100% - 13em) * 0.2500)"]
    wide = pd.DataFrame({f"c{i}": ["1"] for i in range(page.DENSE_COLUMNS)})
    assert 'class="paper keep dense"' in page.table_html(wide, 2, "Many columns.")


def test_published_columns_stand_beside_the_same_variant_and_lr_only():
    contest_t = results_folder.contest_table(results_folder.runs_table("paper"))
    frame, groups = contest.contest_display(contest_t, comparable=True)
    published = dict(zip(frame.variant, frame["published (nats/char)"]))
    assert published["softmax"] == "1.4923 ± 0.0060" and published["yat"] == "1.5163 ± 0.0023"
    assert published["a3"] == formatting.MISSING
    assert sum(span for _, span in groups) == len(frame.columns)
    paired = sum(span for _, span in groups[:1])  # the group over the paired columns starts at the difference
    assert frame.columns[paired].startswith("− softmax") and frame.columns[paired + 2] == "gap to softmax"
    assert "whole split (nats/char)" in frame.columns[:paired]
    frame, groups = contest.contest_display(contest_t, comparable=False)
    assert not any("published" in c for c in frame.columns)


def test_every_figure_in_the_catalog_is_shown_with_the_rule_and_csvs_that_made_it(workspace):
    source = jupytext.read(REPO / "notebooks" / "writeup.py")
    shown = re.findall(r'show_figure\("(\w+)"\)', "\n".join(c.source for c in source.cells))
    assert sorted(shown) == sorted(catalog.BY_NAME)
    html = page.figure_html("reading", 4)
    assert html.count("<img") == 2 and 'class="animated"' in html and 'class="poster"' in html
    assert 'rule <a href="../../workflow/rules/figures.smk">figure_reading</a>' in html
    assert '<a href="../tables/runs.csv">runs.csv</a>' in html and '<a href="../tables/contest.csv">' in html
    still = page.figure_html("lr_sweep", 5)
    assert still.count("<img") == 1 and '<a href="../tables/lr_sweep.csv">lr_sweep.csv</a>' in still
    assert "from no table" in page.figure_html("score_orbit", 6)


def test_a_study_reads_as_its_md_without_the_study_column(tmp_path):
    from attnlab.pipeline.ground.contract import columns

    row = {c: None for c in columns("study")}
    rows = [dict(row, study="kv", kv_heads=k, variant=v, lr="0.003", n_seeds=1, seeds="0", best_val_mean=m,
                 best_val_std=0.0, n_diverged=0, n_params=1000, delta_vs_softmax=d, delta_ci_low=float("nan"),
                 delta_ci_high=float("nan"), wins="0/1", n_paired=1, delta_vs_first=f, first_ci_low=float("nan"),
                 first_ci_high=float("nan"), first_wins="0/1", interval_note=statistics.ONE_SEED)
            for k, v, m, d, f in ((4, "softmax", 1.9, 0.0, 0.0), (4, "yat", 2.0, 0.1, 0.0),
                                  (1, "softmax", 1.95, 0.0, 0.05), (1, "yat", 2.1, 0.15, 0.1))]
    folder = tmp_path / "tables"
    folder.mkdir()
    pd.DataFrame(rows)[["study", "kv_heads"] + columns("study")[1:]].to_csv(folder / "study_kv.csv", index=False)
    studies = build.load_studies(folder)
    assert list(studies) == ["kv"]
    shown = build.study_display(studies["kv"])
    assert list(shown.columns[:3]) == ["kv_heads", "variant", "LR"] and "study" not in shown
    assert list(shown.kv_heads) == ["4", "4", "1", "1"]
    assert shown.iloc[3]["Δ vs first point (nats) [95% CI]"] == f"+0.1000 ({statistics.ONE_SEED})"


def test_tables_another_config_left_on_disk_are_not_this_builds(workspace):
    """The ledger and the writeup read the optional tables this build lists (results/tables/build.json), not
    every file in the folder: after a ladder build, a build without one reports no ladder and no old study."""
    from attnlab.pipeline.ground import build_manifest
    from attnlab.pipeline.report import ladder

    folder = workspace / "results" / "tables"
    pd.read_csv(folder / "ladder.csv").head(0).to_csv(folder / "study_old.csv", index=False)
    # without a manifest (a folder assembled by hand), whatever is on disk is read
    assert set(ladder.load(folder)) == {"ladder", "ladder_claims"} and list(build.load_studies(folder)) == ["old"]
    assert "ladder_seeds" in claims.load_tables(folder)
    build_manifest.main(["--out", str(folder / build_manifest.MANIFEST)])  # a build with no optional table
    assert ladder.load(folder) == {} and build.load_studies(folder) == {}
    loaded = claims.load_tables(folder)
    assert not {"ladder_seeds", "ladder_claims", "composability"} & set(loaded)
    from attnlab.pipeline.claims.ladder_rows import TRENDS

    assert len(claims.ledger(loaded)) == len(claims.CHECKS) + len(TRENDS), "the ledger took in the ladder left on disk"
    build_manifest.write(folder / build_manifest.MANIFEST, ["ladder", "ladder_claims", "ladder_seeds", "study_old"])
    assert set(ladder.load(folder)) == {"ladder", "ladder_claims"} and list(build.load_studies(folder)) == ["old"]
    assert len(claims.ledger(claims.load_tables(folder))) > len(claims.CHECKS)


def test_short_names_never_break_mid_word_but_running_text_still_wraps():
    frame = pd.DataFrame({"variant": ["softmax", "yat_b"], "note": ["wraps at its spaces", "x"],
                          "loss": ["2.1756", "2.3022"]})
    shown = page.table_html(frame, 1, "t")
    assert shown.count('<td class="text word">') == 2, "a variant name could break as 'softma / x'"
    assert shown.count('<td class="text">') == 2 and shown.count('<td class="num">') == 2
    assert "td.word { overflow-wrap: normal; white-space: nowrap; }" in " ".join(PAGE_STYLE.split())


@pytest.mark.parametrize("make", [
    lambda p: p.mkdir(),
    lambda p: p.write_text('{"optional_tables": ["ladder"'),
    lambda p: p.write_text("{}"),
    lambda p: p.write_text("[]"),
    lambda p: p.write_text("null"),
    lambda p: p.write_text('{"optional_tables": [3]}'),
], ids=["a folder", "truncated", "empty object", "a list", "null", "not names"])
def test_a_build_manifest_that_is_not_one_is_refused_in_one_line_never_read_as_every_table(tmp_path, make):
    from attnlab.core.bundle_format import BundleError
    from attnlab.pipeline.ground import build_manifest

    (tmp_path / "ladder.csv").write_text("rung\n1\n")
    make(tmp_path / build_manifest.MANIFEST)
    with pytest.raises(BundleError, match="run snakemake again, which writes it"):
        build_manifest.has_table(tmp_path, "ladder")
    result = run(["-m", "attnlab.pipeline.ground.build_manifest", "--check", tmp_path / build_manifest.MANIFEST],
                 tmp_path, None, 60)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "build.json" in result.stderr


def test_the_abstract_shows_the_interval_a_verdict_rests_on_whether_a_t_interval_or_a_confidence_sequence():
    ledger = pd.DataFrame({
        "claim": ["fixed seeds", "seeds added until decided", "a count"],
        "verdict": [verdicts.HOLDS, verdicts.HOLDS, verdicts.CONTRADICTED],
        "outcome": [verdicts.HOLDS, verdicts.HOLDS, verdicts.CONTRADICTED],
        "interval": ["a: 95% CI [0.1, 0.2]", "b: 95% CS [0.3, 0.4]", "no interval (one seed)"],
        "lean": ["", "", "lower"],
    })
    text = abstract.settled(ledger)
    assert "fixed seeds (a: 95% CI [0.1, 0.2])" in text
    assert "seeds added until decided (b: 95% CS [0.3, 0.4])" in text
    assert "a count: lower." in text and "one seed" not in text


def test_an_interval_is_named_for_how_it_was_computed():
    assert intervals.interval_kind() == "CI"
    with intervals.sequential(1.0):
        assert intervals.interval_kind() == "CS"


def test_the_ledger_shows_the_posts_claims_apart_from_the_catalogs_and_this_projects(workspace):
    table = claims.ledger(tables_of(workspace))
    parts = {name: rows for name, _, rows in ledger.ledger_parts(table)}
    assert set(parts["ledger"].source) <= {claims.KERNEL_POST, claims.A3_POST}
    assert not parts["ledger"].claim.str.startswith("on the scale ladder").any()
    assert set(parts["ledger_papers"].source) <= set(claims.PAPERS)
    assert sorted(i for rows in parts.values() for i in rows.index) == list(table.index), "every row, once"


def test_the_abstract_states_only_this_build(workspace):
    """Another build's findings (what a settle build decided, from the changelog) never appear in this build's
    abstract: it names the config that would decide what is held back, and no result of it."""
    t = tables_of(workspace)
    runs = t["runs"].assign(**{"config.name": "default"})
    text = abstract.abstract_html(runs, t["contest"], claims.ledger({**t, "runs": runs}))
    assert "config/settle.yaml" in text
    for other_build in ("it decided", "On a 2-core machine", "stayed out of reach", "1 h 50 min"):
        assert other_build not in text
