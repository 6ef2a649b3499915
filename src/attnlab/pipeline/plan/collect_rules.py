"""What the collect step reads: every contest and sweep cell, known now or once the checkpoints have run
(collect.smk, and `all`'s missing cells).

A part of attnlab.pipeline.plan.rules.Plan, which holds the state these methods read."""

from __future__ import annotations

import functools
from pathlib import Path

from attnlab.core import studies as studies_mod
from attnlab.core.config import AUTO
from attnlab.core.errors import ConfigError
from attnlab.pipeline.ground.design import design_of
from attnlab.pipeline.ground import paths, rounds, sealed_files, sweep_extension
from attnlab.pipeline.ground.grid import Grid, grid

from attnlab.pipeline.plan.common import (bundles, quoted)


class CollectRules:
    """What the collect step reads: every contest and sweep cell, known now or once the checkpoints have run."""

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
                chosen[variant] = sealed_files.read_choice(choice, variant,
                                                           self.sweep_lrs_of(variant, added.get(variant, [])))
            except ConfigError:
                continue  # select_lr writes it again, and the checkpoint brings its cells in
        seeds, decided = self._decided_on_disk()
        cfg = sweep_extension.with_sweep_lrs(self.config, added)
        cfg = rounds.with_contest_seeds(cfg, seeds) if seeds else cfg
        cells = (Grid(cfg, chosen) if chosen or seeds or cfg is not self.config else self.grid).trained()
        untrained = rounds.left_out(self.config, decided[:-1]) if decided else frozenset()
        return [b for b in bundles(rounds.trained_keys(cells, untrained)) if not Path(b).exists()]


    def grid_json(self, wildcards=None) -> str:
        """The contest (with every round's seeds) and the sweep as the collect step reads them."""
        declared = design_of(self.config).to_json() if self.rounds else None
        return quoted(grid(self.decided_config(), self.selected_lrs(), self.left_out(), declared,
                           studies_mod.sweep_lrs(self.config)).to_json())
