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
include: "workflow/rules/collect.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/composability.smk"
include: "workflow/rules/writeup.smk"

# On a cluster, only training is worth a job of its own; the rest is seconds of work (and
# fetching the corpus needs the internet, which login nodes have and compute nodes often lack).
localrules:
    all,
    fetch_corpus,
    select_lr,
    collect_tables,
    writeup,
    figure_loss_curves,
    figure_lr_sweep,
    figure_depth_grid,
    figure_training_maps,
    figure_reading,
    figure_score_orbit,
    figure_scalars,
    figure_a3_gates,
    figure_entropy,
    figure_score_scale,
    figure_mass_auroc,
    figure_paired_differences,
    composability_table,
    ledger,


rule all:
    default_target: True
    input:
        tables=TABLES,
        ledger=LEDGER,
        figures=FIGURES,
        writeup=WRITEUP,
        composability=COMPOSABILITY_TABLES if COMPOSABILITY else [],
