# attnlab: train every cell of the grid, collect tables, draw figures, execute the writeup.
# snakemake --cores all                                (config/default.yaml, a laptop in minutes)
# snakemake --cores all --configfile config/paper.yaml (the published protocol; GPU or cluster)
# snakemake --cores all --config file=PATH             (any config, from anyone: only attnlab reads it)

# No `configfile:` here on purpose: common.smk loads config/default.yaml, or the one file named by
# --config file=PATH or --configfile, through attnlab's own loader, so a file means the same to the
# DAG as to `attnlab train`. Snakemake parses a --configfile itself as well, so use that form for
# trusted files only.


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/rounds.smk"
include: "workflow/rules/timing.smk"
include: "workflow/rules/collect.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/studies.smk"
include: "workflow/rules/ladder.smk"
include: "workflow/rules/writeup.smk"


# On a cluster, only training is worth a job of its own: every other rule declares `localrule: True` and
# runs on the submitting node (seconds of work; fetching the corpus needs the internet, which login nodes
# have and compute nodes often lack).


# Every cell trained and every table collected: what `all` asks for before the ledger, figures and writeup, and
# all that `snakemake tables` asks for (on a cluster, every job but training runs on the submitting node: the
# figures and the writeup after, where a browser is).
CELLS_AND_TABLES = dict(
    tables=PLAN.tables,
    studies=PLAN.study_tables,
    composability=PLAN.composability_tables,
    ladder=PLAN.ladder_outputs,
    rounds=PLAN.rounds_tables,
    timing=PLAN.step_times,
    missing=PLAN.missing_cells(),
    asked=PLAN.missing_decisions(),
)


rule all:
    default_target: True
    input:
        **CELLS_AND_TABLES,
        ledger=PLAN.ledger,
        figures=PLAN.figures,
        writeup=[str(paths.WRITEUP_NOTEBOOK), str(paths.WRITEUP_HTML)],
        printed=PLAN.printed_writeup,
    localrule: True


rule tables:
    input:
        **CELLS_AND_TABLES,
    localrule: True


# Without a browser, the build still makes the HTML writeup and ends with one line that says how to print it,
# whether it ran jobs or had nothing to do (attnlab.pipeline.plan.ending).
# A build whose seed-round decisions ask for a round it did not train (Snakemake schedules no new checkpoint output
# that only a rerun checkpoint asks for) ends with exit status 1 and the line that says to build again: its
# tables are not yet the decisions' (attnlab.pipeline.plan.round_rules.unfinished_rounds).
onsuccess:
    PLAN.ending.succeeded(workflow)
    if unfinished := PLAN.unfinished_rounds():  # reads the decisions on disk once
        logger.error(unfinished)
        raise SystemExit(1)


onerror:
    PLAN.ending.failed()


PLAN.ending.at_exit(workflow)
