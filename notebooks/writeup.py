# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     notebook_metadata_filter: title,-jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
#   title: Does attention need the exponential?
# ---

# %% [markdown]
# # Does attention need the exponential?
#
# Character-level GPTs on tinyshakespeare that differ only in how a query and
# a key become an attention weight, trained from the same seeds on the same
# batches. The pipeline regenerates this page from the runs on disk: every
# number is read from `results/tables/`, every picture from
# `results/figures/`, and each section closes with what this build found.

# %%
# Set-up (hidden in the HTML). Run from the workspace that holds results/ (or set ATTNLAB_RESULTS).
from IPython.display import HTML, Markdown, display

from attnlab.pipeline.report import (a3, abstract, build, catalog, contest, ladder, ledger, methods, page,
                                     telemetry)
from attnlab.pipeline.report.style import PAGE_STYLE
from attnlab.pipeline.tables import arms
from attnlab.pipeline.tables.display import details, shown

TABLES = page.results_path("tables")
tables = build.load_tables(TABLES)
runs = tables["runs"]
claims_table = ledger.read_ledger(TABLES / "ledger.csv")  # written by the ledger rule (attnlab.pipeline.claims)
COMPARABLE = build.same_protocol(runs)
PROTOCOL = build.protocol(runs)
# A table is shown when it has rows (the temperature arms only when the build trained softmax_t).
SHOWN = {name for name, table in tables.items() if not table.empty} | {"ledger"}
if not a3.has_temperature_arm(tables["a3_vs_temperature"]):
    SHOWN.discard("a3_vs_temperature")
ladder_tables = ladder.load(TABLES)  # the scale ladder's tables, when the build has one
SHOWN |= set(ladder_tables)
numbers = page.Numbering()


def show_figure(name):
    display(HTML(page.figure_html(name, numbers.next("figure"))))


def show_table(frame, title, name, **layout):
    display(HTML(page.table_html(frame, numbers.next("table"), title, name=name, **layout)))


def say(text):
    display(Markdown(text))


display(HTML(PAGE_STYLE))
display(HTML(abstract.abstract_html(runs, tables["contest"], claims_table)))

# %% [markdown]
# ## Summary: each claim and its verdict
# One row per claim the ledger checks on this build's tables (the two posts',
# a later post of the kernel post's series, and the controls this project
# adds): what was measured, what the post published, the verdict at this
# build's protocol, why, and the table below that holds the evidence. The
# claims ledger at the end gives each check in full, with its note.

# %%
show_table(ledger.summary_display(claims_table, SHOWN), f"Claim → verdict at the ``{PROTOCOL}`` protocol.",
           "summary", widths=ledger.SUMMARY_WIDTHS, markup=("claim", "verdict", "evidence"), css="small")

# %% [markdown]
# ## The variants

# %%
say(abstract.variants_list(tables["contest"]))

# %% [markdown]
# ## Methods

# %%
say(methods.methods_text(runs))
show_table(methods.protocol_table(runs, tables["params"], tables["contest"], tables["lr_sweep"]),
           "This build's protocol beside the posts' (read from the bundles and from the published protocol's "
           "config).", "protocol")

# %% [markdown]
# ## 1. Parameter budget
# The variants are parameter-matched: the kernel with learned `b, ε` adds two
# scalars per head, A³ a shared gate and bias vector plus a layer/head
# embedding.

# %%
show_table(shown("params", arms.with_step_times(tables["params"], tables.get("step_times"))),
           "Trainable parameters per variant, and each variant's time per training step against softmax's "
           "(from the interleaved timing rounds where the build timed it, the estimate the ledger judges; else "
           "from the training logs' steps/s, paired by contest seed on a shared machine).", "params")

# %% [markdown]
# ## 2. The contest
# Each variant trains at its contest learning rate from several seeds; the
# score is the best validation loss in nats per character (mean ± std over the
# seeds, std with ddof 0). Every variant of a seed trains on the same batches,
# in the same order, from the same skeleton initialisation, so each variant is
# compared with softmax seed by seed: the mean of the per-seed differences, its
# 95% interval over the seeds both have (a t-interval, unless the seeds were
# added until decided, as the text below the table then says), and the seeds
# the variant wins. An
# interval that excludes 0 is a difference the seeds resolve; one that spans 0
# is not. A contest LR marked `auto` is the sweep's best on the select half of
# the validation windows; the text below the table says the contest's design
# and whether a contest seed also chose an LR.

# %%
frame, groups = contest.contest_display(tables["contest"], COMPARABLE)
show_table(frame, "The contest: best validation loss per variant at its contest LR, and its paired difference "
           "from softmax (variant − softmax of the same seed; the gap in percent through the mean per-seed "
           "log-ratio).", "contest", groups=groups)
say(contest.contest_results(tables["contest"], PROTOCOL, claims_table))
say(contest.design_text(tables))
if "seed_rounds" in tables:
    say(contest.rounds_text(tables["seed_rounds"]))
show_figure("paired_differences")
show_figure("loss_curves")
say(contest.still_improving(runs))

# %% [markdown]
# ## 3. The learning-rate audit
# Every variant at every sweep LR, at the sweep seed (or seeds: `sweep.seeds`).
# A diverged cell is marked as such, never as a number. The second table sets
# each variant at its own best sweep LR against softmax at its own, beside the
# contest's comparison, so a gap that turns on the choice of LR shows.

# %%
frame, groups = contest.sweep_display(tables["lr_sweep"], tables["contest"], COMPARABLE)
show_table(frame, "The learning-rate sweep.", "lr_sweep", groups=groups)
say(contest.sweep_results(tables["lr_sweep"], tables["best_lr"], tables["contest"]))
show_figure("lr_sweep")
show_table(shown("best_lr", tables["best_lr"]),
           "Each variant at its best sweep LR against softmax at its best, beside the contest (paired by seed).",
           "best_lr")
say(contest.best_lr_results(tables["best_lr"]))

# %% [markdown]
# ## 4. How large do the scores get?
# The attention score before normalisation on held-out batches: softmax's
# scaled logit, the kernel's κ, A³'s gated logit. A ratio of polynomials has no
# max-subtraction trick and needs none; but bounded inputs do not keep the
# scores bounded once training grows the projection norms. *Max score* is a
# layer's largest score over every held-out batch; the *mean over layers of
# max score, per seed* averages it over the layers of one seed's model (the
# posts' "per-layer mean"), and the table gives its range over the seeds.

# %%
show_table(telemetry.score_display(tables["score_scale"], COMPARABLE),
           "Attention score scale of the contest cells (scores are unitless).", "score_scale")
say(telemetry.score_results(tables["score_scale"], tables["contest"]))
show_figure("score_scale")

# %% [markdown]
# ## 5. Does the kernel's row mass carry a signal?
# Per token, the kernel's row mass `Σκ` averaged over layers and heads, ranked
# against whether the argmax next-token prediction is correct.

# %%
if "mass_auroc" in SHOWN:
    frame, per_seed = telemetry.auroc_display(tables["mass_auroc"], COMPARABLE)
    show_table(frame, "Mass AUROC per kernel variant over its contest seeds (0.5 is chance); mass is unitless.",
               "mass_auroc", per_seed=per_seed)
say(telemetry.auroc_results(tables["mass_auroc"], ledger.verdict_of(claims_table, "row mass")))
show_figure("mass_auroc")

# %% [markdown]
# ## 6. Sharp or diffuse?
# Normalised row entropy (entropy / log of the visible keys) at the final
# checkpoint: 0 is one key taking all the weight, 1 is uniform over the
# visible keys.

# %%
say(telemetry.entropy_scope(runs))
show_table(telemetry.entropy_display(tables["entropy"], COMPARABLE),
           "Attention-row entropy per variant (mean ± std over seeds; shares of rows).", "entropy")
say(telemetry.entropy_results(tables["entropy"]))
show_figure("entropy")

# %% [markdown]
# ## 7. The normaliser, swapped
# Every kernel-family cell is evaluated once more with the other normaliser
# over the same `κ` (the kernel's `κ/Σκ` and a softmax over `κ` trade
# places), with the same trained weights on the same held-out batches.

# %%
if "normswap" in SHOWN:
    show_table(shown("normswap", tables["normswap"]), "The normaliser swap: each kernel-family variant's contest "
               "cells under their own and the other normaliser (validation loss of the final weights, nats/char).",
               "normswap", per_seed=details("normswap", tables["normswap"]))
say(telemetry.normswap_results(tables["normswap"], tables["contest"].variant))

# %% [markdown]
# ## 8. The routing, watched
# Trained attention maps through depth (heads averaged), one head through
# training, and one head of every variant reading the fixed validation window.
# Then the two score functions as geometry, independent of any run.

# %%
show_figure("depth_grid")
show_figure("training_maps")
show_figure("reading")
show_figure("score_orbit")

# %% [markdown]
# ## 9. What the learned kernel scalars did

# %%
if "scalars" in SHOWN:
    show_table(shown("scalars", tables["scalars"]),
               "yat_b's learned scalars over layers and heads (seed means; unitless; each run's own range is in "
               "the text below).", "scalars")
say(telemetry.scalars_results(tables["scalars"]))
show_figure("scalars")

# %% [markdown]
# ## 10. What A³'s gates did

# %%
say(a3.section_intro(SHOWN))  # names only the tables this build shows (the temperature arm's when it has one)
say(a3.start_paragraph(SHOWN))
if "a3_init" in SHOWN:
    show_table(shown("a3_init", tables["a3_init"]),
               "A³ at step 0 against softmax at step 0, first layer, per seed (attention weights, unitless).",
               "a3_init")
if "a3_vs_softmax_entropy" in SHOWN:
    show_table(shown("a3_vs_softmax_entropy", tables["a3_vs_softmax_entropy"]),
               "A³ against softmax per layer: mean normalised row entropy, and A³'s gate and bias.",
               "a3_vs_softmax_entropy")
say(a3.a3_results(tables["a3_vs_softmax_entropy"]))
show_figure("a3_gates")
if "a3_vs_temperature" in SHOWN:
    show_table(shown("a3_vs_temperature", tables["a3_vs_temperature"]),
               "A³ against softmax beside a learned per-head temperature, per contest seed (each arm − softmax, "
               "nats/char; below 0 is better).",
               "a3_vs_temperature")
say(a3.temperature_results(tables["a3_vs_temperature"]))
if "composability" in SHOWN:
    show_table(shown("composability", tables["composability"]),
               "Every variant at fewer key/value heads and with blockwise attention, against its dense twin.",
               "composability")

# %% [markdown]
# ## 11. The catalog: published score functions beside softmax
# Every catalogued score function the build trains, each at its own
# contest LR, against softmax of the same seed, read as one family: with
# several functions, some interval read alone would exclude 0 by chance
# even where none differs from softmax. Holm's step-down over the
# two-sided paired t-tests holds the chance of calling any equal function
# different to at most 5%; the family-wise intervals cover all functions
# together at 95% or more. The first row, softmax against itself on two halves of its
# seeds, is the null reference: it should hold 0.

# %%
if "catalog" in SHOWN:
    show_table(shown("catalog", tables["catalog"]),
               "The catalog against softmax, paired by contest seed: the difference in best validation loss with "
               "its interval read alone and the family-wise one, Holm's adjusted p and the family's finding.",
               "catalog")
    show_figure("catalog_forest")
    say(catalog.catalog_results(tables["catalog"]))
else:
    say("This build trains no catalogued score function: config/catalog.yaml trains them beside softmax.")

# %% [markdown]
# ### Sinks, signed weights and outliers
# What the papers behind the catalog's score functions claim about trained
# attention, measured on every variant's contest cells on the held-out
# telemetry batches: the *sink rate* (the share of layer × head pairs whose
# queries put, on average, more of their weight on the window's first key
# than the sink threshold of Gu et al. 2024, which the table's header
# gives), the share of the weights' magnitude on negative weights (only Cog
# attention's can be negative), and the residual stream after each block:
# its kurtosis (3 for a normal distribution; heavy outliers raise it) and
# its largest |activation|, each the largest over layers.

# %%
if "sinks" in SHOWN:
    show_table(shown("sinks", tables["sinks"]),
               "Attention sinks, negative weight and activation outliers per variant (means over the contest "
               "seeds, ± std; unitless).", "sinks")
say(telemetry.sinks_results(tables["sinks"], claims_table))

# %% [markdown]
# Where the build trains models without position embeddings and evaluates
# them at windows longer than the block they trained on, the table below
# gives each variant's loss on the whole validation split in windows of each
# length, and its change from the trained window: the measurement behind the
# longer-context claims of stick-breaking attention and Scalable-Softmax.

# %%
if "context_length" in SHOWN:
    show_table(shown("context_length", tables["context_length"]),
               "Validation loss at windows longer than the trained block (nats/char, mean ± std over the "
               "contest seeds), models without position embeddings.", "context_length")
say(telemetry.context_results(tables["context_length"]))

# %% [markdown]
# ## 12. The config's own studies
# A study trains every variant at each point of its axes (model or training
# keys the config gives several values): each point's best validation loss,
# paired by seed with softmax at the same point and with the same variant at
# the study's first point.

# %%
studies = build.load_studies(TABLES)
for name, table in studies.items():
    show_table(build.study_display(table), f"The study ``{name}``: each point of its axes and variant.",
               f"study_{name}")
if not studies:
    say("This build's config has no studies beyond the contest and the learning-rate sweep.")

# %% [markdown]
# ## 13. Scale
# The scale ladder (`config/ladder.yaml`) trains the variants at model sizes
# rising together in width, depth and heads, each cell to its plateau (a
# ladder of fixed steps may also train one size for longer), from the same
# seeds on the same batches. It asks the two claims the posts
# make about scale (A³'s benefit shrinks as models grow; the kernel's gap to
# softmax closes), and at which size each other claim starts to hold.

# %%
if "ladder" in ladder_tables:
    show_table(ladder.ladder_shown(ladder_tables["ladder"]),
               "The scale ladder: each rung and variant, paired by seed with softmax at the same rung.", "ladder",
               css="small")
    show_figure("ladder_gap")
    show_figure("ladder_telemetry")
    show_figure("ladder_length")
    if "ladder_claims" in ladder_tables:
        show_table(ladder.claims_shown(ladder_tables["ladder_claims"]),
                   "Each claim of the ledger checked on each rung's cells alone: its verdict there.", "ladder_claims",
                   css="small")
    say(ladder.scale_results(ladder_tables["ladder"], claims_table))
else:
    say("This build has no scale ladder (a study named `ladder`, as in `config/ladder.yaml`).")

# %% [markdown]
# ## 14. Claims ledger
# Each claim of the posts, in the post's own words, under the post it comes
# from, then this project's reading of it as a check over the tables above:
# the value measured here (the published one stands in the summary), a verdict
# at this build's protocol with the interval it rests on (or why there is
# none) and the number of seeds. The catalog papers' claims and this project's own questions
# follow in tables of their own. All of it is `results/tables/ledger.csv`.

# %%
for name, part, rows in ledger.ledger_parts(claims_table):
    show_table(ledger.ledger_html(rows), f"The claims ledger at the ``{PROTOCOL}`` protocol: {part}.", name,
               widths=ledger.LEDGER_WIDTHS, markup=("the source's words", "verdict"), css="small")
say(ledger.ledger_results(claims_table, PROTOCOL, COMPARABLE, tables["contest"]))

# %% [markdown]
# ## References

# %%
display(HTML(ledger.references_html()))

# %% [markdown]
# ## Provenance

# %%
show_table(build.provenance_table(runs), "What the trained cells ran on (from each bundle's provenance).",
           "provenance", left=("value",))
say(build.version_drift())
