"""The sweep's checkpoints, select_lr and extend_sweep, and what they added (train.smk, collect.smk;
attnlab.pipeline.ground.sweep_extension).

A part of attnlab.pipeline.plan.rules.Plan, which holds the state these methods read."""

from __future__ import annotations

from pathlib import Path

from attnlab.core.bundle_format import format_lr
from attnlab.core import studies as studies_mod
from attnlab.core.errors import ConfigError
from attnlab.pipeline.plan import packs
from attnlab.pipeline.ground import paths, sweep_extension
from attnlab.pipeline.ground.grid import Grid

from attnlab.pipeline.plan.common import (bundles, quoted)


class SweepRules:
    """The sweep's checkpoints, select_lr and extend_sweep, and what they added."""

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
                                                    .output[0], *self._step_made_for(variant)),
            self.extend + 1 if through is None else through))

    def _step_made_for(self, variant: str) -> tuple[list[float], int]:
        """The grid and limit a variant's steps must have been made for (sweep_extension.read_step checks them)."""
        return list(studies_mod.sweep_lrs(self.config)[variant]), self.extend

    def sweep_lrs_of(self, variant: str, added: list[float]) -> list[float]:
        """A variant's sweep LRs: its grid and those its sweep added (what its LR choice chose among)."""
        grid, _ = self._step_made_for(variant)
        return grid + list(added)


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


    def sweep_cells(self, wildcards) -> list[str]:
        """A variant's sweep cells, every sweep LR (with those its sweep added beyond the grid) at every sweep
        seed: the select_lr checkpoint reads them."""
        return self._sweep_bundles(wildcards.variant, self.sweep_added(wildcards.variant))


    def _added_on_disk(self, variant: str) -> list[float]:
        """The LRs the extend_sweep steps on disk added to a variant's sweep (missing_cells names their bundles
        too); a step missing or unreadable ends the chain, and its checkpoint brings the rest in."""
        def on_disk(index: int) -> dict | None:
            try:
                return sweep_extension.read_step(Path(str(paths.SWEEP_STEP_PATTERN).format(variant=variant,
                                                                                             step=index)),
                                                 *self._step_made_for(variant))
            except ConfigError:
                return None

        return sweep_extension.added_lrs(sweep_extension.chain(on_disk, self.extend + 1))
