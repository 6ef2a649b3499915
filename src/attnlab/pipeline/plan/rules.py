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

import os
import shlex
from pathlib import Path

from attnlab.core import fingerprint as code
from attnlab.core import studies as studies_mod
from attnlab.core import switches
from attnlab.core import variants as variants_mod
from attnlab.core.config import AUTO, load_config, to_json
from attnlab.core.config_types import PACK_MODE_ENV
from attnlab.core.errors import ConfigError
from attnlab.core.estimate import bytes_text, device_memory
from attnlab.core.strict_yaml import parse_yaml
from attnlab.pipeline.ground import contract, environment
from attnlab.pipeline.ground import figure_catalog
from attnlab.pipeline.plan import device, ending, expectation, packs
from attnlab.pipeline.ground import paths, printer, rounds, sealed_files, sweep_extension
from attnlab.pipeline.ground.grid import Grid, check_corpus_room, local_corpus
from attnlab.pipeline.plan.collect_rules import CollectRules
from attnlab.pipeline.plan.common import (COMPOSABILITY, LADDER, LEDGER_STUDIES, TRAIN_RULE, tables)
from attnlab.pipeline.plan.report_rules import ReportRules
from attnlab.pipeline.plan.round_rules import RoundRules
from attnlab.pipeline.plan.study_rules import StudyRules
from attnlab.pipeline.plan.sweep_rules import SweepRules
from attnlab.pipeline.plan.train_rules import TrainRules

PUBLISHED = Path("attnlab") / "pipeline" / "ground" / "published.yaml"  # under src/: the posts' protocol


class Plan(RoundRules, SweepRules, CollectRules, TrainRules, StudyRules, ReportRules):
    """The build one config asks for. `src` is the checkout's source folder (fingerprints follow its modules);
    `checkpoints` is Snakemake's object of that name (absent in tests, where no 'auto' LR is asked for).

    The state is worked out here; what each group of rule files reads of it is one part (plan/*_rules.py): the
    seed rounds, the sweep's checkpoints, the collect step, the training jobs, the studies, the figures and
    the writeup."""

    def __init__(self, config_file: Path, src: Path, checkpoints=None, thread_counts=None):
        self.config_file, self.src, self.checkpoints = Path(config_file), Path(src), checkpoints
        # the threads the command line or a profile sets per rule (Snakemake's --set-threads), which a training
        # job's XLA pool is: a param of its rule (TrainRules.pool)
        self.thread_counts = dict(thread_counts or {})
        if paths.RESULTS.exists() and not paths.RESULTS.is_dir():
            raise ConfigError(f"{paths.RESULTS.resolve()} is a file, not a folder: every output of the build goes "
                              f"under {paths.RESULTS}/; move that file away (or build in another workspace)")
        self.config = load_config(self.config_file)
        # the jobs inherit this process's environment: ATTNLAB_CPU_SLOTS in the one spelling they read (a value
        # that is neither a switch nor a folder is refused here, before any job)
        switches.settle_folder_switch(switches.CPU_SLOTS_ENV)
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
        # the cells of the studies a ledger row reads: `heads` (selective attention's), `positions` (forgetting
        # attention's without position embeddings), `slay_small` and `slay_large` (SLAY by feature count)
        self.ledger_study_tables = [str(paths.study_runs(name)) for name in LEDGER_STUDIES if name in self.studies]
        # the training step timed in one process, interleaved, where the build trains the baseline and A³
        self.timed_variants = [v for v in contract.TIMED if v in self.config["variants"]]
        timed = {"a3", contract.BASELINE} <= set(self.timed_variants)
        self.step_times = tables(*contract.written_by(contract.TIMING)) if timed else []
        self.optional_tables = sorted(set(
            ([COMPOSABILITY] if self.composability else []) + [Path(t).stem for t in self.rounds_tables]
            + [Path(t).stem for t in self.ledger_study_tables] + [Path(t).stem for t in self.step_times]
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
                                    "(the target before any --configfile; the default target makes writeup.html "
                                    "without a browser)")
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
                chosen[variant] = sealed_files.read_choice(path, variant,
                                                           self.sweep_lrs_of(variant, self.sweep_added(variant)))
        return chosen

    def resolved_grid(self) -> Grid:
        """The grid with every 'auto' contest LR chosen (asks the select_lr checkpoints) and, where seeds are
        added until decided, every round's seeds (asks the seed_round checkpoints)."""
        return Grid(self.decided_config(), self.selected_lrs())

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


def export(plan: Plan, argv) -> None:
    """Put the plan's variables in this process's environment, which the rules' commands inherit, with this build's
    command line for the fix a stale bundle's message names (never a param: it is no input)."""
    os.environ.update(plan.environment(), ATTNLAB_SNAKEMAKE_COMMAND=shlex.join(["snakemake", *argv[1:]]))

