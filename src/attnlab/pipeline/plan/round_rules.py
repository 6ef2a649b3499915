"""The seed_round checkpoint's inputs and what the rounds decided (rounds.smk; attnlab.pipeline.ground.rounds).

A part of attnlab.pipeline.plan.rules.Plan, which holds the state these methods read."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from attnlab.core import studies as studies_mod
from attnlab.core.errors import ConfigError
from attnlab.pipeline.ground.design import design_of
from attnlab.pipeline.plan import packs
from attnlab.pipeline.ground import paths, rounds
from attnlab.pipeline.ground.grid import Grid

from attnlab.pipeline.plan.common import (bundles, quoted)


class RoundRules:
    """The seed_round checkpoint's inputs and what the rounds decided."""

    def _round_packs(self) -> list[packs.Pack]:
        """The training packs of every later round: that round's contest cells alone (their LR pending for an
        'auto' variant), named after the round, so the first round's packs are the ones a fixed-seed build has."""
        made = []
        for index, seeds in enumerate(self.round_seeds[1:], start=1):
            later = Grid(rounds.with_contest_seeds(self.config, seeds), packs.pending_lrs(self.config))
            made += [dataclasses.replace(pack, rule=f"{pack.rule}_round{index}")
                     for pack in packs.partition(later.bundles(studies_mod.CONTEST), self.pack_size)]
        return made


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
            checkpoint = self.checkpoints.seed_round
            path = checkpoint.get(round=index).output[0]
            decision = rounds.read_decision(path)
            if self._stale(decision, index) and hasattr(checkpoint, "rule"):
                # made under another design or seeds (a raised budget): Snakemake makes it again before reading it
                raise _not_made_yet(checkpoint, path)
            made.append(self._current(decision, index, path))
        return made


    def _stale(self, decision: dict, index: int) -> str:
        """Why a decision is not this config's ('' when it is): another design, or other seeds for its round."""
        design, seeds = design_of(self.config), rounds.seeds_through(self.config, index)
        if decision.get("design") != design.to_json():
            made = decision.get("design") or {}
            return (f"made under another design ({made.get('kind')}, looks {made.get('looks')}) than this "
                    f"config's ({design.kind}, looks {list(design.looks)})")
        if [int(s) for s in decision["seeds"]] != seeds:
            return f"made at the seeds {decision['seeds']}, where this config's round {index} has {seeds}"
        return ""


    def _current(self, decision: dict, index: int, path) -> dict:
        """A decision made under this config's design and at the seeds its round trains, else a refusal naming it
        and what differs (a later round's decision left from a build of another design, which no rule reran)."""
        if why := self._stale(decision, index):
            raise ConfigError(f"{path}: a decision {why}; remove it and every later round's decision, and build "
                              "again")
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


def _not_made_yet(checkpoint, path) -> Exception:
    """Snakemake's own signal that a checkpoint's output is still to be made: what a stale decision is, since the
    design it was made under changed (the checkpoint's settings file, newer, makes it run again)."""
    from snakemake.exceptions import IncompleteCheckpointException
    from snakemake.io import checkpoint_target

    return IncompleteCheckpointException(checkpoint.rule, checkpoint_target(path))
