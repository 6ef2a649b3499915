# attnlab: train every cell of the grid, collect tables, draw figures, execute the writeup.
# snakemake --cores all                          (config/default.yaml, a laptop in minutes)
# snakemake --cores all --configfile config/paper.yaml   (the published protocol; GPU or cluster)

configfile: "config/default.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/collect.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/writeup.smk"


rule all:
    default_target: True
    input:
        tables=TABLES,
        figures=FIGURES,
        writeup=WRITEUP,
