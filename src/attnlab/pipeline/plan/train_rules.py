"""One training job's params and resources, a cell's or a pack's, and the step timing's (train.smk, timing.smk).

A part of attnlab.pipeline.plan.rules.Plan, which holds the state these methods read."""

from __future__ import annotations

import functools
from pathlib import Path

from attnlab.core import studies as studies_mod
from attnlab.pipeline.plan import packs
from attnlab.pipeline.ground import paths

from attnlab.pipeline.plan.common import (TRAIN_RULE, folder_mem_mb, quoted)


class TrainRules:
    """One training job's params and resources, a cell's or a pack's, and the step timing's."""

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
        """The config slice of one variant's cells in one folder (paths.place): the identity train_cell's params
        carry (a pack's variant, or the cell's)."""
        try:
            return self.grid.slice_at(wildcards.place, getattr(wildcards, "variant", None))
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


    def pool(self, rule: str) -> int | str:
        """The XLA pool a training rule's jobs compute with: its threads (1, or what --set-threads or a profile
        sets), as a param of the rule. A cell's numbers depend on the pool (attnlab.training.runtime), so a job
        whose threads change runs again, and the trainer retrains every cell of another pool
        (attnlab.training.current). Read when the Snakefile is read: Snakemake compares no param computed from
        a job's threads."""
        given = self.thread_counts.get(rule, 1)
        value = getattr(given, "value", given)
        return value if isinstance(value, int) else str(getattr(given, "raw", value))


    def pack_pool(self, pack: packs.Pack) -> int | str:
        return self.pool(pack.rule)


    def cell_pool(self) -> int | str:
        return self.pool(TRAIN_RULE)


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
