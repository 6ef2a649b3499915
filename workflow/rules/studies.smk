# The config's own studies (`studies:`): each gets its tables, study_<name> and runs_<name>, from the bundles
# of its cells (attnlab.pipeline.tables.study). train_cell trains the cells; a cell an earlier study also has
# is read from that study's folder. A study named `composability` also gets the composability table and the
# ledger's verdict on it (attnlab.pipeline.composability).

STUDIES = GRID.names()
STUDY_TABLES = [str(path) for name in STUDIES for path in
                [paths.study_table(name, ext) for ext in table_contract.DISPLAYED] + [paths.study_runs(name)]]
# What every bundle a study reads must have been trained with (collect.smk), one file per study.
EXPECTED_STUDY = {name: expected_file(expected_slices(name), "train_cell") for name in STUDIES}

COMPOSABILITY = "composability" in STUDIES
COMPOSABILITY_TABLES = [str(paths.table("composability", ext)) for ext in table_contract.DISPLAYED] + [
    str(paths.table("composability_verdict", "json"))]

wildcard_constraints:
    study="|".join(STUDIES) or "(?!)",


def study_grid(name):
    """The grid that knows this study's LRs: asks the select_lr checkpoints only when the study needs them."""
    study = GRID.study(name)
    needs_choice = study.lrs is None and any(config["contest"]["lr"][v] == attnlab_config.AUTO for v in study.variants)
    return resolved_grid() if needs_choice else GRID


def study_cells(wildcards):
    """The bundle folders of one study's cells (a shared cell: its owner's folder)."""
    return bundles(study_grid(wildcards.study).bundles(wildcards.study))


def study_json(wildcards):
    """The study's cells with the folder each is read from, for its table (and its params: an edit reruns it)."""
    built, name = study_grid(wildcards.study), wildcards.study
    cells = [[key.to_json(), str(paths.cell_bundle(built.owner(key)))] for key in built.cells(name)]
    return shlex.quote(attnlab_config.to_json(
        {"name": name, "at_contest_lr": built.study(name).lrs is None, "cells": cells}))


rule study_table:
    input:
        bundles=study_cells,
        expected=lambda wildcards: EXPECTED_STUDY[wildcards.study],
    output:
        tables=[str(paths.study_table("{study}", ext)) for ext in table_contract.DISPLAYED],
        runs=str(paths.study_runs("{study}")),
    params:
        code=pipeline_code("attnlab.pipeline.tables.study"),
        study=study_json,
        out=paths.TABLES,
    log:
        str(paths.log("study_table", "{study}")),
    message:
        "Collecting study {wildcards.study} into its tables"
    localrule: True
    shell:
        "python -m attnlab.pipeline.tables.study --study {params.study} --expect {input.expected} --out {params.out} "
        "> {log} 2>&1"


rule composability_table:
    input:
        bundles=lambda wildcards: bundles(study_grid("composability").bundles("composability")),
        expected=EXPECTED_STUDY.get("composability", []),
    output:
        tables=COMPOSABILITY_TABLES,
    params:
        code=pipeline_code("attnlab.pipeline.composability", "attnlab.pipeline.tables"),
        heads=config["model"]["heads"],
        out=paths.TABLES,
    log:
        str(paths.log("composability_table")),
    message:
        "Collecting the composability study (GQA/MQA x dense/blockwise) into a table and a verdict"
    localrule: True
    shell:
        # First every run is checked against what the grid expects of it (a stale run stops the table).
        "(python -m attnlab.pipeline.tables check --expect {input.expected} {input.bundles} && "
        "python -m attnlab.pipeline.composability --heads {params.heads} --out {params.out} {input.bundles}) "
        "> {log} 2>&1"
