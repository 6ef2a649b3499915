"""What every Snakemake rule reads: its inputs, outputs and params, worked out from one config.

The rule files (workflow/rules/*.smk) name these attributes and methods and
nothing else: a method that takes `wildcards` is an input, param or resource
function, evaluated when Snakemake needs it. Contest LRs of 'auto' variants are
read from the select_lr checkpoint through the `checkpoints` object Snakemake
hands the Snakefile; every other value is known when the plan is built. Building
a plan reads the config and stats the corpus and writes nothing; the Snakefile
then writes the files collection compares bundles with (write_expectations,
attnlab.pipeline.plan.expectation).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shlex
from pathlib import Path

from attnlab.core import fingerprint as code
from attnlab.core.bundle_format import format_lr
from attnlab.core import studies as studies_mod
from attnlab.core import variants as variants_mod
from attnlab.core.config import AUTO, load_config, to_json
from attnlab.core.config_types import PACK_MODE_ENV
from attnlab.core.packages import installed_versions
from attnlab.core.errors import ConfigError
from attnlab.core.estimate import bytes_text, device_memory
from attnlab.core.strict_yaml import parse_yaml
from attnlab.pipeline.ground import contract, environment
from attnlab.pipeline.ground.design import design_of
from attnlab.pipeline.ground import figure_catalog
from attnlab.pipeline.plan import device, ending, expectation, packs
from attnlab.pipeline.ground import paths, printer, rounds, sweep_extension
from attnlab.pipeline.ground.grid import Grid, check_corpus_room, grid, local_corpus

TRAIN_RULE = "train_cell"
LADDER = studies_mod.LADDER
TWICE_THE_HEADS = studies_mod.TWICE_THE_HEADS
COMPOSABILITY = "composability"
PUBLISHED = Path("attnlab") / "pipeline" / "ground" / "published.yaml"  # under src/: the posts' protocol


def quoted(value) -> str:
    """A JSON value as one shell word."""
    return shlex.quote(to_json(value))


def tables(*names: str) -> list[str]:
    """Every file of these contract tables, under results/tables."""
    return [str(paths.TABLES / file) for name in names for file in contract.files(name)]


class Plan:
    """The build one config asks for. `src` is the checkout's source folder (fingerprints follow its modules);
    `checkpoints` is Snakemake's object of that name (absent in tests, where no 'auto' LR is asked for)."""

    def __init__(self, config_file: Path, src: Path, checkpoints=None):
        self.config_file, self.src, self.checkpoints = Path(config_file), Path(src), checkpoints
        if paths.RESULTS.exists() and not paths.RESULTS.is_dir():
            raise ConfigError(f"{paths.RESULTS.resolve()} is a file, not a folder: every output of the build goes "
                              f"under {paths.RESULTS}/; move that file away (or build in another workspace)")
        self.config = load_config(self.config_file)
        self.grid = Grid(self.config)  # the cells whose LR is known before any training
        check_corpus_room(self.grid, local_corpus(self.config, paths.CORPUS))
        # Training jobs: one per pack of cells (attnlab.pipeline.plan.packs), or the one rule train_cell per cell.
        self.pack_size = self.config["execution"]["pack_size"]
        # Seeds added until decided (contest.rounds): the first round is contest.seeds, each later one trains only
        # once the seed_round checkpoint of the round before asks for it (attnlab.pipeline.ground.rounds).
        rounds.check_rounds(self.config, str(self.config_file))
        self.round_seeds = rounds.round_seeds(self.config)
        self.rounds = len(self.round_seeds) > 1
        # A sweep that brackets (sweep.extend): every LR a variant's sweep may add beyond its grid, known now;
        # the extend_sweep checkpoints decide which train (attnlab.pipeline.ground.sweep_extension).
        sweep_extension.check(self.config, str(self.config_file))
        self.extend = sweep_extension.limit(self.config)
        self.beyond_grid = sweep_extension.all_candidates(self.config)
        self.packs = packs.partition(Grid(self.config, packs.pending_lrs(self.config)).trained(), self.pack_size) \
            + self._round_packs() + self._extension_packs() if self.pack_size > 1 else []
        self.studies = self.grid.names()
        self.ladder = LADDER in self.studies
        self.composability = COMPOSABILITY in self.studies
        self.tables = tables(*contract.COLLECTED)
        self.ledger = tables(contract.LEDGER)
        self.study_tables = [str(path) for name in self.studies for path in
                             [paths.study_table(name, ext) for ext in contract.DISPLAYED] + [paths.study_runs(name)]]
        self.composability_tables = tables(*contract.written_by(COMPOSABILITY)) if self.composability else []
        self.ladder_tables = tables(*contract.written_by(LADDER))
        self.ladder_claims = tables(*contract.written_by("rungs"))
        self.ladder_outputs = self.ladder_tables + self.ladder_claims if self.ladder else []
        self.drawn = [entry for entry in figure_catalog.FIGURES if entry.drawn_for(self.studies)]
        self.figures = [str(path) for entry in self.drawn for path in entry.output_paths().values()]
        self.captions = [str(entry.caption) for entry in self.drawn]
        self._expected: dict[str, str] = {}  # expectation file -> its content
        self.expected_runs = self._expectation(expectation.RUNS, studies_mod.CONTEST, studies_mod.SWEEP)
        # What the collect step reads of the config (the variants, the contest, the sweep) as a file named by its
        # digest, as the expectations are: Snakemake compares no params of a job downstream of a checkpoint, so
        # an edit there (a wider sweep, a sweep.extend, a design) reruns collection by this file's time.
        self.contest_settings = self._settings(expectation.CONTEST_SETTINGS,
                                               {key: self.config[key] for key in ("variants", "contest", "sweep")})
        # what the seed_round rule reads of the config (the design, the seeds), the same way
        self.rounds_settings = self._settings(expectation.ROUNDS_SETTINGS, self._rounds_config()) \
            if self.rounds else ""
        # each extended sweep's grid and limit, which its extend_sweep steps read, the same way
        self.sweep_settings = {v: self._settings(f"{expectation.SWEEP_SETTINGS}-{v}", self._step_config(v))
                               for v in self.beyond_grid}
        self.expected_studies = {name: self._expectation(name, name) for name in self.studies}
        self.build_manifest = str(paths.table("build", "json"))
        self.rounds_tables = tables(*contract.written_by(rounds.STEP)) if self.rounds else []
        # the study `heads`'s cells, which the ledger's selective-attention row reads
        self.heads_tables = [str(paths.study_runs(TWICE_THE_HEADS))] if TWICE_THE_HEADS in self.studies else []
        # the training step timed in one process, interleaved, where the build trains the baseline and A³
        self.timed_variants = [v for v in contract.TIMED if v in self.config["variants"]]
        timed = {"a3", contract.BASELINE} <= set(self.timed_variants)
        self.step_times = tables(*contract.written_by(contract.TIMING)) if timed else []
        self.optional_tables = sorted(set(
            ([COMPOSABILITY] if self.composability else []) + [Path(t).stem for t in self.rounds_tables]
            + [Path(t).stem for t in self.heads_tables] + [Path(t).stem for t in self.step_times]
            + [Path(t).stem for t in self.ladder_outputs if t.endswith(".csv")]
            + [paths.study_file(name) for name in self.studies]))
        self.ledger_optional = [name for name in self.optional_tables if name in contract.LEDGER_OPTIONAL]
        # relative to the workspace the Snakefile is read in, so a copied workspace names the same input
        self.lock = [os.path.relpath(environment.LOCK)] if environment.LOCK.is_file() else []
        published = src / PUBLISHED
        self.published_config = f"config/{parse_yaml(published.read_text(), str(published))['protocol']}.yaml"
        self.gpus = device.gpus()
        self.jobs_per_gpu = self.config["execution"]["jobs_per_gpu"]
        # Training jobs that may run at once on the GPU (0: none seen, the cores alone decide): the Snakefile sets
        # it as the build's `gpu` limit unless the command line gives one (--resources gpu=N).
        self.gpu_slots = self.jobs_per_gpu if self.gpus else 0
        # The printed writeup is asked for by `all` only where a browser can print it; `snakemake writeup_pdf`
        # asks for it anywhere. Without one, `printer_missing` is the one line the build ends with.
        self.printer_missing = ""
        try:
            printer.find_browser()
        except printer.PrintError as err:
            self.printer_missing = (f"writeup.pdf was not printed: {err}; then run `snakemake writeup_pdf` "
                                    "(the target before any --configfile; writeup.html is made either way)")
        self.printed_writeup = [] if self.printer_missing else [str(paths.WRITEUP_PDF)]
        # Installed entry points the registry left out (a taken name, one two distributions register): said when
        # the build plans, never dropped without a word.
        self.plugin_notes = [f"an installed attnlab.variants entry point was left out: {why}"
                             for why in variants_mod.IGNORED.values()]
        self.ending = ending.Ending(self.printer_missing, paths.WRITEUP_HTML, paths.WRITEUP_PDF)
        if self.gpus:
            # one cell must fit its job's share; a vmapped pack trains as many at once as fit (training.lockstep)
            check_device_memory(self.config, self.gpus[0], self.jobs_per_gpu)

    def environment(self) -> dict[str, str]:
        """Variables the rules' commands read. They travel here, not in params (a param change reruns a rule and
        all that follows it): where the corpus comes from, so a new local path to the same bytes is no change,
        how a pack trains its cells (attnlab.training.pack), and on a GPU each training job's share of its memory,
        unless one is set already."""
        env = {"ATTNLAB_DATA_CONFIG": to_json(self.config["data"]),
               PACK_MODE_ENV: self.config["execution"]["pack_mode"]}
        if self.gpus and device.MEM_FRACTION_ENV not in os.environ:
            env[device.MEM_FRACTION_ENV] = str(device.memory_fraction(self.jobs_per_gpu))
        return env

    # ---- code fingerprints: a rule reruns when the behaviour of code it imports changes

    def pipeline_code(self, *modules: str) -> str:
        """Fingerprint of pipeline-side modules and what they import."""
        return code.cached_fingerprint(tuple(modules), str(self.src))

    def training_code(self, wildcards) -> str:
        """Fingerprint of the trainer, the cell's own variant module and its registry line."""
        return code.training_fingerprint(wildcards.variant, src=self.src)

    def data_identity(self, wildcards=None) -> dict:
        """What makes the corpus the corpus: a new local path with the same bytes is no change."""
        return {"sha256": self.config["data"]["sha256"]}

    # ---- contest and sweep

    def auto_variants(self) -> list[str]:
        """The variants whose contest LR is 'auto': the sweep chooses it."""
        return [v for v in self.config["variants"] if self.config["contest"]["lr"][v] == AUTO]

    def selected_lrs(self, variants: list[str] | None = None) -> dict[str, float]:
        """Contest LRs of 'auto' variants (of `variants`, default all), read from the select_lr checkpoints'
        outputs; asking for one whose checkpoint has not run raises Snakemake's incomplete-checkpoint signal."""
        chosen = {}
        for variant in self.config["variants"] if variants is None else variants:
            if self.config["contest"]["lr"][variant] == AUTO:
                path = self.checkpoints.select_lr.get(variant=variant).output[0]
                chosen[variant] = rounds.read_choice(path)
        return chosen

    def resolved_grid(self) -> Grid:
        """The grid with every 'auto' contest LR chosen (asks the select_lr checkpoints) and, where seeds are
        added until decided, every round's seeds (asks the seed_round checkpoints)."""
        return Grid(self.decided_config(), self.selected_lrs())

    # ---- seeds added until decided (attnlab.pipeline.ground.rounds)

    def _round_packs(self) -> list[packs.Pack]:
        """The training packs of every later round: that round's contest cells alone (their LR pending for an
        'auto' variant), named after the round, so the first round's packs are the ones a fixed-seed build has."""
        made = []
        for index, seeds in enumerate(self.round_seeds[1:], start=1):
            later = Grid(rounds.with_contest_seeds(self.config, seeds), packs.pending_lrs(self.config))
            made += [dataclasses.replace(pack, rule=f"{pack.rule}_round{index}")
                     for pack in packs.partition(later.bundles(studies_mod.CONTEST), self.pack_size)]
        return made

    # ---- a sweep that brackets (attnlab.pipeline.ground.sweep_extension)

    def _extension_packs(self) -> list[packs.Pack]:
        """One training pack per LR a sweep may add beyond its grid: its cells at the sweep seeds, named when the
        Snakefile is read, trained only once an extend_sweep step asks for that LR."""
        made = []
        for variant, lrs in self.beyond_grid.items():
            for lr in lrs:  # named by the LR, so a new limit renames no pack
                cells = tuple((format_lr(lr), seed) for seed in self.grid.study(studies_mod.SWEEP).seeds)
                name = f"train_pack_{variant}_runs_beyond_lr{format_lr(lr).replace('.', '_').replace('-', '_')}"
                made.append(packs.Pack(name, paths.RUNS.name, variant, cells))
        return made

    def sweep_added(self, variant: str, through: int | None = None) -> list[float]:
        """The LRs the extend_sweep steps 0..through-1 (all it took, when None) added to a variant's sweep, in
        order (asks those checkpoints; none where the sweep is not extended)."""
        if variant not in self.beyond_grid:
            return []
        return sweep_extension.added_lrs(sweep_extension.chain(
            lambda index: sweep_extension.read_step(self.checkpoints.extend_sweep.get(variant=variant, step=index)
                                                    .output[0]),
            self.extend + 1 if through is None else through))

    def extended_config(self, cfg: dict, variants: list[str] | None = None) -> dict:
        """`cfg` with the LRs the sweeps of `variants` (default every extended one) added beyond their grids."""
        names = self.beyond_grid if variants is None else [v for v in variants if v in self.beyond_grid]
        return sweep_extension.with_sweep_lrs(cfg, {v: self.sweep_added(v) for v in names})

    def _sweep_bundles(self, variant: str, added: list[float]) -> list[str]:
        """One variant's sweep cells with these LRs added (the config's own studies own no sweep cell, so the grid
        is built without them)."""
        cfg = sweep_extension.with_sweep_lrs({**self.config, "studies": []}, {variant: added})
        return bundles(key for key in Grid(cfg).bundles(studies_mod.SWEEP) if key.variant == variant)

    def step_cells(self, wildcards) -> list[str]:
        """The sweep cells extend_sweep's step k reads: the variant's grid and the k LRs the steps before added."""
        return self._sweep_bundles(wildcards.variant, self.sweep_added(wildcards.variant, int(wildcards.step)))

    def _step_config(self, variant: str) -> dict:
        return {"lrs": list(studies_mod.sweep_lrs(self.config)[variant]), "limit": self.extend}

    def step_config(self, wildcards) -> str:
        """What a step reads of the config: the variant's own grid and the limit."""
        return quoted(self._step_config(wildcards.variant))

    def step_settings(self, wildcards) -> str:
        """The same as a file named by its digest (a step is downstream of a checkpoint, where Snakemake compares
        no params): an edit of the grid or the limit reruns the variant's steps by this file's time."""
        return self.sweep_settings[wildcards.variant]

    # ---- seeds added until decided (attnlab.pipeline.ground.rounds), continued

    def decisions(self, through: int | None = None) -> list[dict]:
        """The rounds' decisions the build made, in order, up to round `through` (excluded; all when None),
        stopping after the first that asks for no more seeds (asks the seed_round checkpoints; none without
        contest.rounds)."""
        made = []
        if not self.rounds:
            return made
        for index in range(len(self.round_seeds) if through is None else through):
            if made and not made[-1]["next_seeds"]:
                break
            path = self.checkpoints.seed_round.get(round=index).output[0]
            made.append(self._current(rounds.read_decision(path), index, path))
        return made

    def _current(self, decision: dict, index: int, path) -> dict:
        """A decision made under this config's design and at the seeds its round trains, else a refusal naming it
        (a later round's decision left from a build of another design, which no rule reran)."""
        design = design_of(self.config).to_json()
        seeds = rounds.seeds_through(self.config, index)
        if decision.get("design") != design or [int(s) for s in decision["seeds"]] != seeds:
            raise ConfigError(f"{path}: a decision made under another design or seeds than this config's "
                              f"(round {index}: seeds {decision['seeds']}, this config's {seeds}); remove it and "
                              "every later round's decision, and build again")
        return decision

    def decided_rounds(self) -> int:
        """How many rounds the build trains: it reads each seed_round checkpoint's output in turn until one asks
        for no more seeds (one round, asking nothing, without contest.rounds)."""
        return len(self.decisions()) if self.rounds else 1

    def decided_config(self, variants: list[str] | None = None) -> dict:
        """The config with the LRs the sweeps of `variants` (default all) added beyond their grids and the contest
        seeds of every round the build trains."""
        cfg = self.extended_config(self.config, variants)
        if not self.rounds:
            return cfg
        return rounds.with_contest_seeds(cfg, rounds.seeds_through(self.config, self.decided_rounds() - 1))

    def left_out(self, through: int | None = None) -> frozenset:
        """The (variant, seed) contest cells the rounds decided so far leave untrained (rounds.left_out)."""
        return rounds.left_out(self.config, self.decisions(through)) if self.rounds else frozenset()

    def round_cells(self, wildcards) -> list[str]:
        """The contest cells of rounds 0..round, which the seed_round checkpoint of that round reads: each later
        round's of the variants the round before named."""
        upto = rounds.with_contest_seeds(self.config, rounds.seeds_through(self.config, int(wildcards.round)))
        keys = Grid(upto, self.selected_lrs()).bundles(studies_mod.CONTEST)
        return bundles(rounds.trained_keys(keys, self.left_out(int(wildcards.round))))

    def round_decisions(self, wildcards=None) -> list[str]:
        """Every round's decision the build made, in order (none without contest.rounds)."""
        if not self.rounds:
            return []
        return [str(paths.ROUND_PATTERN).format(round=index) for index in range(self.decided_rounds())]

    def _rounds_config(self) -> dict:
        studies = [{"seeds": entry["seeds"]} for entry in self.config.get("studies") or () if entry.get("seeds")]
        return {**{key: self.config[key] for key in ("variants", "contest", "sweep")}, "studies": studies}

    def rounds_config(self, wildcards=None) -> str:
        """What the rule reads of the config: the variants, the contest, the sweep and the seeds of the config's
        studies, which the rounds' seeds skip."""
        return quoted(self._rounds_config())

    def rounds_settings_file(self, wildcards=None) -> str:
        """The same as a file named by its digest: the seed_round rule is downstream of the select_lr checkpoints
        where the LRs are 'auto', and Snakemake compares no params there, so an edit reruns it by this file's time."""
        return self.rounds_settings

    def known_cells(self, wildcards=None) -> list[str]:
        """Contest and sweep cells whose LR is known before any training: the sweep and the fixed-LR contest."""
        return bundles(self.grid.bundles(studies_mod.CONTEST) + self.grid.bundles(studies_mod.SWEEP))

    def auto_cells(self, wildcards=None, variant: str | None = None) -> list[str]:
        """Contest cells of 'auto' variants (of `variant` alone, when given), known once their select_lr
        checkpoints have run."""
        known = set(self.known_cells())
        variants = None if variant is None else [variant]
        decided = Grid(self.decided_config(variants), self.selected_lrs(variants))
        cells = rounds.trained_keys(decided.bundles(studies_mod.CONTEST), self.left_out())
        cells += decided.bundles(studies_mod.SWEEP)  # with the LRs the sweep added beyond its grid
        return [b for b in bundles(k for k in cells if variant in (None, k.variant)) if b not in known]

    def auto_cell_inputs(self) -> dict:
        """collect_tables' inputs of the contest cells known only once the build has run its checkpoints.

        Without contest.rounds, one input function per 'auto' variant: Snakemake asks each on its own, so a
        variant's contest can start as soon as its own sweep is chosen from, while the other sweeps still
        train, and no core waits for the slowest sweep. With rounds, one function for every variant: a
        round's seeds follow from all variants' cells (so every sweep comes first anyway), the later rounds
        add cells of fixed-LR variants too, and asking for them is what makes collection wait for the
        seed_round checkpoints its grid depends on."""
        if self.rounds:
            return {"auto": self.auto_cells}
        return {f"auto_{v}": functools.partial(self.auto_cells, variant=v) for v in self.auto_variants()}

    def missing_cells(self) -> list[str]:
        """Every bundle folder of the grid that is not on disk, for `all` to name.

        Snakemake does not rerun a job whose output was deleted while the files made from it (the tables) are
        present and up to date, so a deleted bundle would not be trained again and the tables would keep
        reporting it. Named as a target, it is trained, and everything that reads it runs again. The cells of
        'auto' variants count at the LR their select_lr checkpoint chose, read from its output on disk while
        the Snakefile is read, once that variant's whole sweep is on disk (before that the LR is chosen anew
        and the checkpoint brings them in). Only once some table of the build is on disk: before that nothing
        was made from a bundle, and the build plans every cell as it always does.
        """
        if not any(Path(table).exists() for table in self.tables + self.study_tables + self.ladder_outputs):
            return []
        chosen, added = {}, {v: self._added_on_disk(v) for v in self.beyond_grid}
        for variant in self.config["variants"]:
            choice = Path(str(paths.SELECTED_LR_PATTERN).format(variant=variant))
            if self.config["contest"]["lr"][variant] != AUTO or not choice.is_file():
                continue
            if not all(Path(b).is_dir() for b in self._sweep_bundles(variant, added.get(variant, []))):
                continue
            try:
                chosen[variant] = rounds.read_choice(choice)
            except ConfigError:
                continue  # select_lr writes it again, and the checkpoint brings its cells in
        seeds, decided = self._decided_on_disk()
        cfg = sweep_extension.with_sweep_lrs(self.config, added)
        cfg = rounds.with_contest_seeds(cfg, seeds) if seeds else cfg
        cells = (Grid(cfg, chosen) if chosen or seeds or cfg is not self.config else self.grid).trained()
        untrained = rounds.left_out(self.config, decided[:-1]) if decided else frozenset()
        return [b for b in bundles(rounds.trained_keys(cells, untrained)) if not Path(b).exists()]

    def missing_decisions(self) -> list[str]:
        """The decision of the round the decisions on disk ask for, when no build made it: `all` names it.

        Snakemake does not make a checkpoint's missing output that only a rerun checkpoint's new content asks for
        (a build whose raised seed budget reran the earlier decisions ends with the round they now ask for
        untrained, and its tables as they were). Named as a target, that round's decision is made, its cells
        are trained and every table that reads the rounds is made again; `unfinished_rounds` says it at the end
        of the build that left it.
        """
        if not self.rounds or not any(Path(t).exists() for t in self.rounds_tables):
            return []
        _, decided = self._decided_on_disk()
        if not decided or not decided[-1]["next_seeds"] or len(decided) >= len(self.round_seeds):
            return []
        asked = Path(str(paths.ROUND_PATTERN).format(round=len(decided)))
        return [] if asked.exists() else [str(asked)]

    def unfinished_rounds(self) -> str:
        """The line a build ends with when its decisions ask for a round it did not train ('' otherwise)."""
        missing = self.missing_decisions()
        if not missing:
            return ""
        return (f"the seed rounds' decisions changed during this build and ask for a round it did not train "
                f"({missing[0]} is not made yet): run the build again to train it and refresh the tables")

    def _added_on_disk(self, variant: str) -> list[float]:
        """The LRs the extend_sweep steps on disk added to a variant's sweep (missing_cells names their bundles
        too); a step missing or unreadable ends the chain, and its checkpoint brings the rest in."""
        def on_disk(index: int) -> dict | None:
            try:
                return sweep_extension.read_step(Path(str(paths.SWEEP_STEP_PATTERN).format(variant=variant,
                                                                                             step=index)))
            except ConfigError:
                return None

        return sweep_extension.added_lrs(sweep_extension.chain(on_disk, self.extend + 1))

    def _decided_on_disk(self) -> tuple[list[int] | None, list[dict]]:
        """The contest seeds the seed_round decisions on disk say were trained (None without rounds or before
        any decision), and those decisions: missing_cells names their bundles too, read as it reads select_lr's
        choices."""
        if not self.rounds:
            return None, []
        seeds, decided = None, []
        for index in range(len(self.round_seeds)):
            try:
                path = Path(str(paths.ROUND_PATTERN).format(round=index))
                decision = self._current(rounds.read_decision(path), index, path)
                trained, asked = [int(s) for s in decision["seeds"]], decision["next_seeds"]
            except (ConfigError, ValueError, TypeError):
                break  # the checkpoint writes it again, and brings its cells in
            seeds = trained
            decided.append(decision)
            if not asked:
                break
        return seeds, decided

    def grid_json(self, wildcards=None) -> str:
        """The contest (with every round's seeds) and the sweep as the collect step reads them."""
        declared = design_of(self.config).to_json() if self.rounds else None
        return quoted(grid(self.decided_config(), self.selected_lrs(), self.left_out(), declared,
                           studies_mod.sweep_lrs(self.config)).to_json())

    def sweep_cells(self, wildcards) -> list[str]:
        """A variant's sweep cells, every sweep LR (with those its sweep added beyond the grid) at every sweep
        seed: the select_lr checkpoint reads them."""
        return self._sweep_bundles(wildcards.variant, self.sweep_added(wildcards.variant))

    # ---- one training cell (train_cell's wildcards: place, variant, lr, seed; a pack rule passes its Pack, which
    # has the place and the variant too)

    def timing_config(self) -> str:
        """The contest cells' config slice (JSON, quoted), whose step the step_times rule times."""
        return quoted(self.grid.slice_at(paths.study_place(studies_mod.CONTEST)))

    def timing_mem_mb(self, wildcards=None, attempt=1) -> int:
        """Declared memory of the step_times job: a training job's at the contest's model, one per timed variant."""
        contest = self.grid.slice_at(paths.study_place(studies_mod.CONTEST))
        return len(self.timed_variants) * folder_mem_mb(contest, attempt=attempt)

    def timing_code(self) -> str:
        """Fingerprint of the timing module and what it imports, the timed variants' modules among them."""
        from attnlab.core import variants

        return self.pipeline_code("attnlab.training.step_timing",
                                  *(variants.variant_module(v) for v in self.timed_variants))

    def cell_slice(self, wildcards) -> dict:
        """The config slice of the cells in one folder (paths.place): the identity train_cell's params carry."""
        try:
            return self.grid.slice_at(wildcards.place)
        except KeyError:
            raise LookupError(f"{paths.RESULTS / wildcards.place} is no folder of this config's studies") from None

    def cell_config(self, wildcards) -> str:
        return quoted(self.cell_slice(wildcards))

    def cell_root(self, wildcards) -> str:
        """The folder under which the trainer writes <variant>/lr<lr>/seed<seed> (results/<place>)."""
        return str(paths.RESULTS / wildcards.place)

    def checkpoint_root(self, wildcards) -> Path:
        """The trainer's resumable state for the cells of one folder (a Path, which Snakemake does not record as a
        param: moving it is never a change)."""
        return paths.checkpoint_root(wildcards.place)

    def cell_log(self, wildcards) -> str:
        """train_cell's log, which its trainer writes and holds (attnlab.training.files.job_log): a param, not a `log:`,
        since Snakemake removes a job's `log:` files when it starts the job, even while another build runs it."""
        return str(paths.TRAIN_LOG_PATTERN).format(place=wildcards.place, variant=wildcards.variant,
                                                   lr=wildcards.lr, seed=wildcards.seed)

    @staticmethod
    def pack_log(pack: packs.Pack):
        """A pack's log (see cell_log), with the LR its select_lr checkpoint chose where the LR was pending."""
        return lambda wildcards: pack.log().replace(packs.LR_WILDCARD, getattr(wildcards, "lr", packs.LR_WILDCARD))

    def train_gpu(self, wildcards=None) -> int:
        """The `gpu` resource one training job claims: 1 on a machine whose GPU the planning sees, else 0."""
        return 1 if self.gpus else 0

    def train_mem_mb(self, wildcards, attempt=1) -> int:
        """Declared memory of one training job, scaled from its model (measured peaks: smoke 0.77 GB, default
        0.88 GB, paper 2.94 GB on CPU). Override in a profile: set-resources train_cell:mem_mb=N."""
        return folder_mem_mb(self.cell_slice(wildcards), attempt=attempt)

    def pack_mem_mb(self, pack: packs.Pack):
        """A pack rule's mem_mb, a function of the attempt as train_mem_mb is: one cell's memory (a sequential
        pack holds one cell's state at a time; a vmapped one keeps its cells' states on the accelerator)."""
        return functools.partial(folder_mem_mb, self.cell_slice(pack))

    def pack_priority(self, pack: packs.Pack) -> int:
        """The pack's `priority:`, its training steps (cells x steps): of the packs ready at once Snakemake
        starts the longest first, so a build does not end with one long pack running while the other job slots
        stand empty, and any training starts before a figure that needs none (the priority decides only the
        order of ready jobs, never what reruns)."""
        return len(pack.cells) * self.cell_priority(pack)

    def cell_priority(self, wildcards) -> int:
        """train_cell's `priority:`, the cell's steps (see pack_priority)."""
        return int(self.cell_slice(wildcards)["train"]["steps"])

    # ---- what every bundle must have been trained with (attnlab.pipeline.plan.expectation)

    def _expectation(self, name: str, *studies: str) -> str:
        return self._named_file(name, self.expectation_content(*studies))

    def _settings(self, name: str, value) -> str:
        return self._named_file(name, to_json(value) + "\n")

    def _named_file(self, name: str, content: str) -> str:
        """The file named by its content's digest that write_expectations writes."""
        file = str(expectation.path(name, content))
        self._expected[file] = content
        return file

    def write_expectations(self) -> None:
        """Write every expectation file this plan names (attnlab.pipeline.plan.expectation says why the Snakefile
        does so while it is read); an unchanged one keeps its file and its time."""
        for file, content in self._expected.items():
            expectation.write(file, content)

    def expectation_content(self, *studies: str) -> str:
        """{"code": {variant: fingerprint}, "slices": {folder: config slice}, "rule": the rule that trains them} of
        every folder these studies' cells are read from (attnlab.pipeline.tables.check_expected)."""
        code_of = {variant: code.training_fingerprint(variant, src=self.src) for variant in self.config["variants"]}
        slices = {}
        for study in studies:
            slices.update({str(paths.RESULTS / place): sliced for place, sliced in self.grid.slices(study).items()})
        # The fix a stale bundle's message names: --forcerun train_cell, or with packs the stale folders themselves.
        rule = TRAIN_RULE if not self.packs else None
        return to_json({"code": code_of, "slices": slices, "rule": rule}) + "\n"

    def study_expectation(self, wildcards) -> str:
        return self.expected_studies[wildcards.study]

    # ---- the config's own studies

    def study_grid(self, name: str) -> Grid:
        """The grid that knows this study's LRs: asks the select_lr checkpoints only when the study needs them."""
        study = self.grid.study(name)
        needs_choice = study.lrs is None and any(self.config["contest"]["lr"][v] == AUTO for v in study.variants)
        return self.resolved_grid() if needs_choice else self.grid

    def study_cells(self, wildcards) -> list[str]:
        """The bundle folders of one study's cells (a shared cell: its owner's folder)."""
        return bundles(self.study_grid(wildcards.study).bundles(wildcards.study))

    def study_json(self, wildcards) -> str:
        """The study's cells with the folder each is read from, for its table (and its params: an edit reruns it)."""
        return self._study_json(wildcards.study)

    def _study_json(self, name: str) -> str:
        built = self.study_grid(name)
        cells = [[key.to_json(), str(paths.cell_bundle(built.owner(key)))] for key in built.cells(name)]
        return quoted({"name": name, "at_contest_lr": built.study(name).lrs is None, "cells": cells})

    def ladder_cells(self, wildcards=None) -> list[str]:
        return bundles(self.study_grid(LADDER).bundles(LADDER))

    def ladder_json(self, wildcards=None) -> str:
        return self._study_json(LADDER)

    def ladder_expectation(self, wildcards=None) -> str:
        return self.expected_studies[LADDER]

    def composability_cells(self, wildcards=None) -> list[str]:
        return bundles(self.study_grid(COMPOSABILITY).bundles(COMPOSABILITY))

    def composability_expectation(self, wildcards=None) -> list[str]:
        return [self.expected_studies[COMPOSABILITY]] if self.composability else []

    # ---- figures (one rule per entry of the figure catalog)

    def figure_style(self, wildcards=None) -> str:
        """The `figures` config section: presentation only, never retrains."""
        return quoted(self.config.get("figures", {}))

    @staticmethod
    def figure_outputs(entry, report) -> dict:
        """The figure's file, as a Snakemake report item (`report` is Snakemake's function) captioned from
        workflow/report, and an animation's poster."""
        found = entry.output_paths()
        outputs = {"file": report(str(found["file"]), caption=str(Path("..") / "report" / entry.caption.name),
                                  category="Figures")}
        if "poster" in found:
            outputs["poster"] = str(found["poster"])
        return outputs

    @staticmethod
    def figure_inputs(entry) -> dict[str, str]:
        return {name: str(path) for name, path in entry.table_paths().items()}

    @staticmethod
    def figure_priority(entry) -> int:
        """An animation drawn from the runs (the longest figure job, on the path to the writeup) starts before
        the other figures once the tables are in; one that needs no runs waits, as every figure does, for the
        training (whose priorities are higher) to leave a core free."""
        return 1 if entry.animated and entry.table_paths() else 0

    @staticmethod
    def figure_arguments(entry) -> str:
        """The command line's --table NAME=PATH for each table the figure reads (their paths are its inputs)."""
        return " ".join(shlex.quote(f"--table={name}={path}") for name, path in entry.table_paths().items())

    @staticmethod
    def figure_poster(entry) -> str:
        return f"--poster {entry.output_paths()['poster']}" if entry.animated else ""

    # ---- the writeup

    def locked_versions(self, wildcards=None) -> str:
        """The installed version of every package the lock pins (none when there is no lock), so installing other
        versions reruns the writeup (its "Version drift" line)."""
        if not self.lock:
            return "{}"
        try:
            pinned = environment.read_lock(environment.LOCK)
        except (OSError, UnicodeDecodeError) as err:
            raise LookupError(f"cannot read {environment.LOCK} ({err}); restore it (git checkout constraints.txt)")
        return to_json(installed_versions(pinned))


def check_device_memory(cfg: dict, gpu_mib: int, jobs_per_gpu: int) -> None:
    """Refuse a study point whose cell would not fit in its share of the GPU, before any job, naming the fix."""
    share = gpu_mib * 2**20 * device.memory_fraction(jobs_per_gpu)
    for study in studies_mod.studies(cfg):
        for point in study.points():
            need, (what, key, value, fix, _) = device_memory(studies_mod.resolved(cfg, study.fixed + point))
            if need > share:
                where = "" if study.name in studies_mod.BUILT_IN else f"studies.{study.name} at " \
                    f"{studies_mod.point_text(point)}: "
                raise ConfigError(
                    f"{where}a training job would need about {bytes_text(need)} of GPU memory ({what}: {key} "
                    f"{value:,}), more than its share {bytes_text(share)} of the {gpu_mib:,} MiB GPU with "
                    f"execution.jobs_per_gpu {jobs_per_gpu}; lower execution.jobs_per_gpu, or {fix}")


def folder_mem_mb(sliced: dict, wildcards=None, attempt: int = 1) -> int:
    """Memory of one training process for the cells of one config slice, from its attention's size (Snakemake
    passes a resource function its `wildcards` and `attempt` by name)."""
    m, t = sliced["model"], sliced["train"]
    attention_bytes = 4 * t["batch_size"] * m["heads"] * m["block_size"] ** 2 * m["layers"]
    return int(1000 + 24 * attention_bytes / 2**20) * attempt


def bundles(keys) -> list[str]:
    """The bundle folders of these cells, each once, in order (a shared cell lives in its owner's folder)."""
    return list(dict.fromkeys(str(paths.cell_bundle(key)) for key in keys))


def export(plan: Plan, argv) -> None:
    """Put the plan's variables in this process's environment, which the rules' commands inherit, with this build's
    command line for the fix a stale bundle's message names (never a param: it is no input)."""
    os.environ.update(plan.environment(), ATTNLAB_SNAKEMAKE_COMMAND=shlex.join(["snakemake", *argv[1:]]))

