"""Every bundle into pandas tables (csv, md, tex), one module per topic.

Where each table comes from (names and columns: attnlab.pipeline.ground.contract):
- checks: each bundle is whole, the cell its folder names, in the grid, and fresh;
- runs: runs.csv, every scalar of every bundle;
- contest: the contest and best_lr, paired by seed with the baseline;
- sweep: the LR sweep and a variant's best sweep LR; select_lr: the select_lr checkpoint's choice;
- arms: normswap, a3_vs_temperature, params;
- telemetry: score_scale, mass_auroc, entropy, scalars, a3_gates, a3_init, a3_vs_softmax_entropy;
- display: how each table reads in .md and .tex, and the writer of the three files;
- collect: the collect step over all of them; cli: the commands the Snakemake rules run.

The names below are this package's public functions, importable from here or from their module.
"""

from attnlab.pipeline.tables.arms import (a3_vs_temperature_table, normswap_table,
                                          params_table)
from attnlab.pipeline.tables.checks import check_bundles, check_expected
from attnlab.pipeline.tables.cli import main
from attnlab.pipeline.tables.collect import collect
from attnlab.pipeline.tables.contest import best_lr_table, contest_table
from attnlab.pipeline.tables.display import (SEED_MEAN_LABEL, a3_vs_temperature_display,
                                             best_lr_display, contest_display, normswap_display, sweep_display,
                                             write_table)
from attnlab.pipeline.tables.runs import load_runs
from attnlab.pipeline.tables.sweep import best_sweep_lr, grid_edge, sweep_table
from attnlab.pipeline.tables.telemetry import a3_init_table, a3_vs_softmax_table

__all__ = ["a3_init_table", "a3_vs_softmax_table", "a3_vs_temperature_display", "a3_vs_temperature_table",
           "best_lr_display", "best_lr_table", "best_sweep_lr", "check_bundles", "check_expected", "collect",
           "contest_display", "contest_table", "load_runs", "main", "normswap_display", "normswap_table",
           "grid_edge", "params_table", "SEED_MEAN_LABEL", "sweep_display", "sweep_table", "write_table"]
