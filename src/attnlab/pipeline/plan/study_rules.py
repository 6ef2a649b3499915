"""The config's own studies, the ladder and the composability grid (studies.smk, ladder.smk).

A part of attnlab.pipeline.plan.rules.Plan, which holds the state these methods read."""

from __future__ import annotations


from attnlab.core.config import AUTO
from attnlab.pipeline.ground import paths
from attnlab.pipeline.ground.grid import Grid

from attnlab.pipeline.plan.common import (COMPOSABILITY, LADDER, bundles, quoted)


class StudyRules:
    """The config's own studies, the ladder and the composability grid."""

    def study_expectation(self, wildcards) -> str:
        return self.expected_studies[wildcards.study]


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
