"""The table contract: every table the pipeline writes, its columns, and the facts tables share.

The collect step, the ledger, the composability rule, the report, the figures
and the Snakemake rules read table names, columns, the baseline variant, the
telemetry thresholds and A³'s initial gate from here, and nowhere else
(tests/test_contract.py fails on a second definition). Pure data and two helpers: no
JAX, no pandas, so a Snakefile can import it while it plans.

An LR's identity is its exact text (attnlab.core.bundle_format.format_lr, the
text that names its folder): tables and claims match rows by LR with `at_lr`,
never with a tolerance, so 0.0010000001 and 0.001 stay two LRs.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.core.bundle_format import format_lr
from attnlab.core import variants
from attnlab.core.constants import A3_INIT_INVERSE_TEMPERATURE
from attnlab.core.telemetry_stats import DIFFUSE_ABOVE, SHARP_BELOW

# Every paired comparison (contest, best_lr, params, figures, prose) is against it; core names it, so the
# trainer's command lines and the benchmarks can say it without reading the pipeline.
BASELINE = variants.BASELINE
# A³'s gate before training: sigmoid(b_g) with b_g = 3 (the trainer's constant, attnlab.core.constants).
A3_GATE_INIT = A3_INIT_INVERSE_TEMPERATURE
# The entropy telemetry's thresholds (attnlab.core.telemetry_stats, where the trainer summarises rows):
# a row below SHARP_BELOW is sharp, above DIFFUSE_ABOVE diffuse; the entropy table names its columns by them.
SHARE_SHARP = f"share_below_{SHARP_BELOW:g}"
SHARE_DIFFUSE = f"share_above_{DIFFUSE_ABOVE:g}"
# What the posts call a score scale's "per-layer mean": per seed, the mean over layers of each layer's max score.
SEED_MEAN_OVER_LAYERS = "seed_mean_over_layers_of_max_score"
# "Orders of magnitude" (plural): the kernel's largest score at least this many times softmax's (the ledger's check,
# attnlab.pipeline.claims.kernel_post_scale, and the rule that adds seeds).
ORDERS_OF_MAGNITUDE = 100.0
# The robust reading of the score scale beside the maximum: per layer, the 99.9th percentile of the visible
# trained scores on the held-out batches (attnlab.core.telemetry_stats), in the score_scale table.
QUANTILE_COLUMN = "q999_score"
QUANTILE_NAME = "99.9th percentile"
TEMPERATURE_ARMS = ("a3", "softmax_t", "a3_heads")  # the a3_vs_temperature table's arms, against the baseline
DISPLAYED = ("csv", "md", "tex")  # numbers, and the human form of the same table


READING = "this project's reading"  # the ledger's check column, labelled: never the post's words
TIMING = "timing"  # the step that times the training step (attnlab.training.step_timing)


@dataclass(frozen=True)
class Table:
    name: str  # results/tables/<name>.<format>
    step: str  # what writes it: "collect" (attnlab.pipeline.tables), "ledger" (claims), "composability", "study"
    row: str  # what one row is
    columns: tuple[str, ...]  # the CSV's columns, in order
    formats: tuple[str, ...] = DISPLAYED
    open: bool = False  # True: these columns and more (runs.csv carries every scalar of every bundle)


# A comparison with the baseline, paired by seed: the difference and its interval, the seeds the variant wins, the
# loss ratio's gap and its interval, and p_vs_softmax, the two-sided p-value of the difference read as its interval
# is (verdicts.p_value: a t-test, or the design's repeated p-value), which the ledger's Holm family takes.
PAIRED_COLUMNS = ("delta_vs_softmax", "delta_ci_low", "delta_ci_high", "wins", "n_paired", "gap_vs_softmax",
                  "gap_ci_low", "gap_ci_high", "p_vs_softmax")
COMPOSABILITY_CHECKS = ("variant", "kv_heads", "seeds", "dense_loss", "blockwise_loss", "step0_diff", "abs_diff",
                        "rel_diff", "agree", "loss_fell", "loss_drop", "vs_full_kv", "cost_vs_softmax")

_TABLES = (
    # Every scalar of every bundle (nested keys joined by '.'); these are the ones the other tables read.
    # study: the built-in studies the cell belongs to ("contest", "sweep" or "contest sweep"). best_val_loss is
    # the posts' measure: the lowest over evaluations of the loss on every validation window, chosen and read on
    # the same windows. Each evaluation also reads two fixed halves of the windows: best_val_loss_select is the
    # select half's lowest (what an LR is chosen on), best_val_loss_heldout the report half's loss at that
    # evaluation, a reading the choice never saw.
    Table("runs", "collect", "one cell", ("study", "variant", "lr", "seed", "best_val_loss", "best_val_loss_select",
                                          "best_val_loss_heldout", "final_val_loss", "diverged", "diverged_step",
                                          "n_params", "path"), formats=("csv",), open=True),
    # best_val_mean/std over the contest seeds (std ddof 0, as the posts report it: the posts' measure);
    # heldout_val_mean/std, the same over best_val_loss_heldout (runs), NaN where a cell has none; the paired columns:
    #   delta_vs_softmax, the mean over the seeds both have of (variant - baseline) best validation loss in nats,
    #   each at its own contest LR (0 for the baseline), its 95% t-interval (NaN with one shared seed), wins
    #   "k/n" (seeds where the variant is below the baseline), n_paired = n; gap_vs_softmax = variant / baseline
    #   - 1 through the mean per-seed log-ratio, with its interval. lr_choice: "auto" (the sweep chose) or "given".
    #   Diverged cells are counted in n_diverged and enter no mean or difference (seeds lists the ones that do).
    #   lr_edge: "lowest", "highest" or "only" when the LR sits at the edge of the variant's sweep grid (a better
    #   LR may lie beyond it), else empty; n_improving: the contest cells still improving at their last step;
    #   best_val_whole_mean: each cell's best checkpoint evaluated once on every validation character, mean over
    #   the seeds (the seed's metric, best_val_mean, is the minimum over evaluations of a few sampled batches).
    Table("contest", "collect", "one variant at its contest LR",
          ("variant", "lr", "lr_choice", "n_seeds", "best_val_mean", "best_val_std", "heldout_val_mean",
           "heldout_val_std", "bpc_mean", "n_diverged", "n_params", "seeds") + PAIRED_COLUMNS
          + ("lr_edge", "n_improving", "best_val_whole_mean")),
    Table("lr_sweep", "collect", "one sweep cell (variant, sweep LR, sweep seed)",
          ("variant", "lr", "seed", "best_val_loss", "final_val_loss", "diverged", "diverged_step")),
    # The variant at its best sweep LR (lowest mean best_val_loss_select over the sweep seeds, no seed diverged)
    # against the baseline at its own, paired over the sweep seeds on best_val_loss, beside the contest's comparison
    # (contest_*); interval_note says why a row has no interval. lrs_added: the LRs the sweep added beyond the
    # grid the config gave (sweep.extend, extend_limit: 0 where it may add none), so a best LR still at an edge
    # with lrs_added = extend_limit > 0 is one the limit stopped.
    Table("best_lr", "collect", "one variant at its best sweep LR",
          ("variant", "best_lr", "lr_edge", "n_sweep_seeds", "best_val_mean") + PAIRED_COLUMNS
          + ("interval_note", "contest_lr", "contest_lr_choice", "contest_delta_vs_softmax", "contest_delta_ci_low",
             "contest_delta_ci_high", "contest_gap_vs_softmax", "lrs_added", "extend_limit")),
    # Each variant's parameters beside its compute: steps_per_s, the mean over its contest cells;
    # time_vs_softmax, its time per step over the baseline's, paired by contest seed (mean log-ratio), with
    # its 95% interval over the n_timed seeds both have.
    Table("params", "collect", "one variant", ("variant", "n_params", "vs_softmax", "steps_per_s",
                                                "time_vs_softmax", "time_ci_low", "time_ci_high", "n_timed")),
    # native_loss: the final weights' validation loss under the normaliser they trained with; swapped_loss: the
    # same weights and batches with kappa normalised the other way (l1 <-> softmax), which is what the twin
    # variant swapped_to computes with them; difference = swapped - native.
    Table("normswap", "collect", "one kernel-family cell",
          ("variant", "lr", "seed", "in_contest", "diverged", "native_normaliser", "native_loss", "swapped_to",
           "swapped_normaliser", "swapped_loss", "difference")),
    # Each arm's best validation loss at its contest LR and its gain over the baseline of the same seed
    # (baseline - arm: > 0 is better); softmax_t_share_of_a3_gain = softmax_t_gain / a3_gain.
    Table("a3_vs_temperature", "collect", "one contest seed",
          ("seed", "softmax_best_val") + tuple(f"{v}_best_val" for v in TEMPERATURE_ARMS)
          + tuple(f"{v}_gain" for v in TEMPERATURE_ARMS) + ("softmax_t_share_of_a3_gain", "softmax_lr")
          + tuple(f"{v}_lr" for v in TEMPERATURE_ARMS)),
    # mean_max_score: that layer's max score per held-out batch, averaged over the batches; max_score: the
    # largest over every batch; SEED_MEAN_OVER_LAYERS: the seed's mean over layers of max_score (every layer row);
    # QUANTILE_COLUMN: that layer's 99.9th percentile of visible scores per batch, averaged over the batches.
    Table("score_scale", "collect", "one contest cell and layer",
          ("variant", "lr", "seed", "layer", "mean_max_score", "max_score", SEED_MEAN_OVER_LAYERS, QUANTILE_COLUMN)),
    Table("mass_auroc", "collect", "one kernel contest cell",
          ("variant", "lr", "seed", "mass_auroc", "mass_correct_mean", "mass_wrong_mean")),
    Table("entropy", "collect", "one contest cell", ("variant", "lr", "seed", "mean", SHARE_SHARP, SHARE_DIFFUSE)),
    # Attention sinks, signed weights and activation outliers (attnlab.core.telemetry_stats): the sink rate, the
    # largest mean weight one head puts on its window's first key, the share of weight magnitude on negative
    # weights, and the residual stream's kurtosis and largest |activation| (each the maximum over layers).
    Table("sinks", "collect", "one contest cell",
          ("variant", "lr", "seed", "sink_rate", "first_key_weight_max", "negative_mass_share", "activation_kurtosis",
           "activation_max")),
    # Longer contexts than trained on (train.eval_context_multiples, models without position embeddings): the best
    # checkpoint's loss on the whole validation split in windows of `multiple` x the trained block (multiple 1 is
    # the trained block itself), and its ratio to the loss at the trained block (vs_trained, 1 + the change).
    Table("context_length", "collect", "one contest cell and window length",
          ("variant", "lr", "seed", "multiple", "context_length", "val_loss", "vs_trained")),
    # The catalog view (attnlab.pipeline.tables.catalog): first the A/A reference (softmax's contest seeds in two
    # halves, variant "softmax (A/A)", seeds "<first half> against <second half>"), then each catalogued variant of
    # the build (published.yaml's catalog; source: its paper) at its contest LR, paired by contest seed with the
    # baseline over the seeds neither diverged on (n_diverged counts the variant's diverged cells): the paired
    # difference with the contest's interval (`interval`: CI, or a design's RCI or CS where seeds were added under
    # one; empty with interval_note saying why there is none), the two-sided paired t-test p_value, Holm's
    # adjusted p_holm over the catalogued variants with a t-interval, the finding at the family-wise 5% level, and
    # the Bonferroni interval at family_confidence = 1 - 0.05/m (NaN where no variant has a t-interval, under a
    # design, and for the A/A row, which is not one of the family).
    Table("catalog", "collect", "the A/A reference, then one catalogued variant at its contest LR",
          ("variant", "source", "lr", "lr_choice", "lr_edge", "n_diverged", "n_paired", "seeds", "delta_vs_softmax",
           "delta_ci_low", "delta_ci_high", "interval", "interval_note", "wins", "gap_vs_softmax", "family_ci_low",
           "family_ci_high", "family_confidence", "p_value", "p_holm", "finding")),
    Table("scalars", "collect", "one learned scalar of one contest cell, layer and head",
          ("variant", "seed", "layer", "head", "scalar", "value")),
    Table("a3_gates", "collect", "one contest cell (a3, a3_heads, the baseline), layer and head",
          ("variant", "seed", "layer", "head", "entropy", "gate_mean", "gate_std", "bias_mean", "bias_std")),
    Table("a3_init", "collect", "one seed with A³ and baseline contest cells",
          ("seed", "max_diff_vs_softmax", "max_diff_vs_tempered_softmax", "max_row_sum_error")),
    # Per layer, A³ against the baseline (each variant's mean over its contest seeds); a3_gate_init = A3_GATE_INIT.
    Table("a3_vs_softmax_entropy", "collect", "one layer",
          ("layer", "a3_entropy", "softmax_entropy", "entropy_diff", "a3_gate_mean", "a3_gate_init", "a3_bias_std",
           "a3_lr", "softmax_lr", "a3_seeds", "softmax_seeds")),
    Table("ledger", "ledger", "one claim",
          ("source", "claim", "quote", "check", "measured", "published", "verdict", "interval", "seeds",
           "seeds_to_resolve", "resolution", "protocol", "note", "preconditions", "lean", "p_value", "holm",
           "p_holm", "outcome", "off_protocol", "lean_side")),
    # One study of the config's `studies:` (attnlab.pipeline.tables.study), written as study_<name>: per point
    # of its axes (the study's axis columns follow `study`), variant and LR, the best validation loss over the
    # seeds, paired with the baseline at the same point (delta_vs_softmax ...) and with the same variant at the
    # study's first point (delta_vs_first, its interval, first_wins); interval_note says why one has none.
    Table("study", "study", "one point of a study's axes, variant and LR",
          ("study", "variant", "lr", "n_seeds", "seeds", "best_val_mean", "best_val_std", "n_diverged", "n_params",
           "delta_vs_softmax", "delta_ci_low", "delta_ci_high", "wins", "n_paired", "delta_vs_first",
           "first_ci_low", "first_ci_high", "first_wins", "interval_note"), open=True),
    # Every cell of one study (runs_<name>): its study, its axis values, then the columns of runs (late_gain and
    # improving among them).
    Table("study_runs", "study", "one cell of a study", ("study", "variant", "lr", "seed", "best_val_loss",
                                                         "path"), formats=("csv",), open=True),
    # The scale ladder (the study named `ladder`, attnlab.pipeline.tables.ladder): the ladder's axis columns follow
    # `rung` (1, 2, ... by parameter count; `steps` is always there: train.steps, the ceiling where to_plateau, the
    # cells then training trained_steps each). ladder_seeds: one row per cell, with the
    # paired values against the baseline of the same seed and point (delta_vs_softmax in nats, max_score_ratio
    # = variant / baseline max score, entropy_gap = variant - baseline mean normalised entropy); series is
    # "size" at the ladder's length (the steps value most rungs share) and "length" at another.
    Table("ladder_seeds", "ladder", "one cell of the ladder",
          ("rung", "steps", "variant", "lr", "seed", "n_params", "log10_n_params", "best_val_loss", "diverged",
           "max_score", "entropy_mean", "a3_gate_mean", "delta_vs_softmax", "max_score_ratio", "entropy_gap",
           "series", "late_gain", "improving", "to_plateau", "trained_steps"), formats=("csv",), open=True),
    # ladder: per point and variant, the best validation loss (mean over seeds, its t-interval), the paired
    # columns against the baseline at the same point, the max-score ratio and entropy gap paired by seed with
    # their intervals, A³'s gate mean over layers and heads (interval over seeds; a3_gate_init = A3_GATE_INIT).
    Table("ladder", "ladder", "one point of the ladder (a rung at one training length) and variant",
          ("rung", "steps", "n_params", "variant", "lr", "n_seeds", "seeds", "n_diverged", "best_val_mean",
           "best_val_ci_low", "best_val_ci_high") + PAIRED_COLUMNS
          + ("max_score_ratio", "max_score_ratio_ci_low", "max_score_ratio_ci_high", "entropy_gap",
             "entropy_gap_ci_low", "entropy_gap_ci_high", "a3_gate_mean", "a3_gate_ci_low", "a3_gate_ci_high",
             "a3_gate_init", "series", "interval_note", "to_plateau", "trained_steps_min", "trained_steps_max"),
          open=True),
    # Every check of the ledger run on one point's cells alone (attnlab.pipeline.claims.ladder_points): its verdict
    # there, what it measured and the interval it rests on; the ledger's scale rows read the smallest rung.
    Table("ladder_claims", "rungs", "one check of the ledger at one point of the ladder",
          ("rung", "steps", "n_params", "series", "check", "source", "claim", "quote", "verdict", "measured",
           "interval", "seeds", "protocol", "lean", "outcome", "off_protocol", "lean_side"), open=True),
    # Seeds added under a declared design (contest.rounds, attnlab.pipeline.tables.rounds): one row per round and
    # comparison the rule reads, its interval under the design over the seeds so far (low, high on the reported
    # scale: a ratio where `ratio`; `reading`: the mean, or the median with its sign-test interval), its state,
    # whether its open state asks for another round (`decides`), about how many seeds would decide it at the
    # observed spread, the round's outcome and the seeds it asked for next, of the variants still open; `method`
    # names the design and its error rate, `design` the same as JSON (attnlab.pipeline.ground.design.Design);
    # `confidence` is the level the row's interval was read at (a group-sequential look's nominal level, the exact
    # sign test's at its look), `precision` a confidence sequence's mixture precision.
    # The training step of the baseline and A³ (and a3_heads) timed in one process, the variants taking turns
    # (attnlab.training.step_timing): one row per variant and round; the compute-overhead row reads it.
    Table("step_times", TIMING, "one variant's step in one timed round",
          ("variant", "round", "seconds_per_step", "steps", "d_model", "layers", "heads", "block_size", "batch_size"),
          formats=("csv",)),
    Table("seed_rounds", "rounds", "one round of seeds and one comparison the rule reads",
          ("round", "n_seeds", "seeds", "comparison", "first", "second", "ratio", "thresholds", "n_paired", "mean",
           "low", "high", "state", "decides", "seeds_needed", "outcome", "next_seeds", "next_variants", "max_seeds",
           "precision",
           "confidence", "quantity", "reading", "design", "method"), formats=("csv",)),
    # The composability grid's checks, then each path's mean steps/s (<impl>_steps_per_s).
    Table("composability", "composability", "one variant and kv_heads",
          COMPOSABILITY_CHECKS + ("blockwise_steps_per_s", "dense_steps_per_s")),
    # The composability study's verdict on A3 ({"a3": verdict text}), which the ledger's composability row reads.
    Table("composability_verdict", "composability", "the study's verdict per variant", ("a3",), formats=("json",)),
)
TABLES: dict[str, Table] = {t.name: t for t in _TABLES}
COLLECTED = tuple(t.name for t in _TABLES if t.step == "collect")  # what one collect run writes, in this order
LEDGER = "ledger"  # the claims ledger's own table
# Tables the ledger reads where the build ran that study (the composability study, the scale ladder, the cells of
# the studies `heads`, `positions`, `slay_small` and `slay_large`: runs_<study>) or added seeds until decided
# (seed_rounds).
SLAY_FEATURES = ("slay_small", "slay_large")  # the studies of SLAY at other feature counts a ledger row reads
LEDGER_OPTIONAL = ("composability", "ladder_seeds", "ladder_claims", "seed_rounds", "runs_heads", "runs_positions",
                   *(f"runs_{name}" for name in SLAY_FEATURES), "step_times")
TIMED = (BASELINE, "a3", "a3_heads")  # the variants the step_times rule times, where the build trains them


def written_by(step: str) -> tuple[str, ...]:
    """The tables one step writes, in the contract's order (a rule's outputs: attnlab.pipeline.plan)."""
    return tuple(t.name for t in _TABLES if t.step == step)


def columns(name: str) -> list[str]:
    """The columns of a table, in order (a new list: callers may extend it)."""
    return list(TABLES[name].columns)


def files(name: str) -> list[str]:
    """The file names of a table: '<name>.csv' and, for a displayed table, its .md and .tex."""
    return [f"{name}.{ext}" for ext in TABLES[name].formats]


def at_lr(frame, lr):
    """Which rows of a table (a pandas frame with an `lr` column) are at this LR, by its exact text."""
    return frame.lr.map(format_lr) == format_lr(lr)


def seeds_of(value) -> list[int]:
    """A table's `seeds` cell ("0 1 2"; a lone seed reads back from a CSV as a number) as a list of seeds."""
    return [int(float(s)) for s in str(value).split()]


def contest_rows(runs, variant: str, lr, seeds):
    """The rows of runs.csv (a pandas frame) that are one variant's contest cells: that variant, at its contest LR
    by exact text, at the contest's seeds, in runs.csv's order. The tables, the claims and the figures all find
    the contest here."""
    if lr is None or runs.empty:
        return runs.iloc[0:0]
    return runs[(runs.variant == variant).to_numpy() & at_lr(runs, lr).to_numpy() & runs.seed.isin(list(seeds))]
