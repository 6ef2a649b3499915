# Seeds added until decided (contest.rounds; attnlab.pipeline.ground.rounds, attnlab.pipeline.tables.rounds). Round 0 is contest.seeds. After each
# round, the seed_round checkpoint reads the contest cells of the rounds so far and decides whether the next
# round's seeds are needed; the plan asks for round r + 1 only when round r has asked for it
# (Plan.decided_rounds), so a later round's training packs run only then. Without contest.rounds nothing
# here is asked for.


checkpoint seed_round:
    input:
        bundles=PLAN.round_cells,
        expected=PLAN.expected_runs,
        settings=PLAN.rounds_settings_file,
    output:
        decision=str(paths.ROUND_PATTERN),
    log:
        str(paths.log("seed_round", "round{round}")),
    wildcard_constraints:
        round=r"\d+",
    localrule: True
    params:
        config=PLAN.rounds_config,
        code=PLAN.pipeline_code("attnlab.pipeline.tables.rounds"),
    message:
        "Deciding whether the contest needs more seeds after round {wildcards.round}"
    shell:
        "python -m attnlab.pipeline.tables.rounds decide --config-json {params.config} --round {wildcards.round} "
        "--expect {input.expected} --out {output.decision} {input.bundles} > {log} 2>&1"


if PLAN.rounds:

    rule rounds_table:
        input:
            decisions=PLAN.round_decisions,
        output:
            table=update(PLAN.rounds_tables),
        log:
            str(paths.log("rounds_table")),
        localrule: True
        params:
            code=PLAN.pipeline_code("attnlab.pipeline.tables.rounds"),
        message:
            "Tabulating the contest's rounds of seeds"
        shell:
            "python -m attnlab.pipeline.tables.rounds table --out {output.table} {input.decisions} > {log} 2>&1"
