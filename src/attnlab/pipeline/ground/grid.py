"""The cells to train: every study's cells (the contest, the LR sweep, the config's own), each distinct cell once.

A cell is named by a CellKey: its variant, its LR as exact text, its seed, its
study and the study's axis values at that cell. Two keys of different studies
are the same cell when they train the same resolved config slice with the same
variant, LR and seed; the first study that has the cell (the contest, then the
sweep, then `studies:` in order) owns it, and the others read its bundle.
"""

from __future__ import annotations

from pathlib import Path

from attnlab.core import studies as studies_mod
from attnlab.core.config import AUTO, cell_slice, to_json, variant_slice
from attnlab.core.corpus import local_copy
from attnlab.core.errors import ConfigError
from attnlab.core.cell_key import CellKey
from attnlab.pipeline.ground.design import design_of
from attnlab.pipeline.ground.contest_grid import ContestGrid
from attnlab.pipeline.ground.paths import study_place


class Grid:
    """Every study's cells, the cell that owns each one's folder, and each folder's config slice.

    A contest LR of 'auto' resolves through `selected_lr` (the sweep's best, {variant: LR}); until then
    the cells that need it (that variant's contest cells, and the cells of studies at contest LRs) are left
    out.
    """

    def __init__(self, cfg: dict, selected_lr: dict | None = None):
        self.cfg = cfg
        self.studies = studies_mod.studies(cfg)
        self.contest_lr = contest_lrs(cfg, selected_lr or {})
        self._keys: dict[str, list[CellKey]] = {}
        self._owner: dict[CellKey, CellKey] = {}
        self._slices: dict[str, dict] = {}  # study folder (place) -> the config slice of its cells
        self._where: dict[str, str] = {}  # study folder (place) -> the study and point, as a message names them
        self._reads: dict[str, list[str]] = {}  # study -> the folders its cells may be owned in
        homes: dict[str, list[str]] = {}  # config slice (JSON) -> the folders that train it, in study order
        owners: dict[tuple, CellKey] = {}
        for study in self.studies:
            keys, identities = self._keys.setdefault(study.name, []), []
            for point in study.points():
                sliced = cell_slice(studies_mod.resolved(cfg, study.fixed + point))
                home = study_place(study.name, point)
                self._slices.setdefault(home, sliced)
                self._where.setdefault(home, where(study, point))
                for variant in study.variants:
                    # a cell's identity: its folder's slice as its variant reads it (its own settings alone)
                    identity = to_json(variant_slice(sliced, variant))
                    homes.setdefault(identity, [])
                    if home not in homes[identity]:
                        homes[identity].append(home)
                    identities.append(identity)
                    lrs = study.lrs_of(variant)
                    lrs = lrs if lrs is not None else [self.contest_lr.get(variant)]
                    for lr in (lr for lr in lrs if lr is not None):
                        for seed in study.seeds:
                            key = CellKey.of(variant, lr, seed, study.name, point)
                            self._owner[key] = owners.setdefault((identity, key.variant, key.lr, key.seed), key)
                            keys.append(key)
            # an owner comes from this study or an earlier one with the same slice, whatever the LRs turn out
            self._reads[study.name] = list(dict.fromkeys(h for identity in identities for h in homes[identity]))

    def cells(self, study: str) -> list[CellKey]:
        """The keys of one study's cells (an unknown study has none)."""
        return list(self._keys.get(study, ()))

    def owner(self, key: CellKey) -> CellKey:
        """The key whose folder holds this cell's bundle (itself, unless an earlier study has the cell)."""
        return self._owner[key]

    def bundles(self, study: str) -> list[CellKey]:
        """The owners of one study's cells: the folders its table reads, in the study's order."""
        return [self._owner[key] for key in self._keys.get(study, ())]

    def trained(self) -> list[CellKey]:
        """Every distinct cell, once, by its owner key."""
        return list(dict.fromkeys(self._owner.values()))

    def slices(self, study: str | None = None) -> dict[str, dict]:
        """{place: config slice} of the folders one study's cells may be read from (known before any LR is
        chosen), or of every folder of every study."""
        if study is None:
            return dict(self._slices)
        return {p: self._slices[p] for p in self._reads.get(study, ())}

    def slice_at(self, folder_place: str, variant: str | None = None) -> dict:
        """The config slice of the cells trained under results/<place> (every study folder has one); with a
        variant, as that variant's cells are identified by it (attnlab.core.config.variant_slice)."""
        sliced = self._slices[folder_place]
        return sliced if variant is None else variant_slice(sliced, variant)

    def places(self) -> dict[str, str]:
        """{place: the study and axis values it stands for, as a message names them} of every folder."""
        return dict(self._where)

    def names(self) -> list[str]:
        """The config's own studies (the contest and the sweep are built in)."""
        return [s.name for s in self.studies if s.name not in studies_mod.BUILT_IN]

    def study(self, name: str) -> studies_mod.Study:
        return next(s for s in self.studies if s.name == name)


def where(study: studies_mod.Study, point) -> str:
    """How a message names one point of a study: '' for the contest and the sweep (the config as written)."""
    if study.name in studies_mod.BUILT_IN:
        return ""
    return f"studies.{study.name} at {studies_mod.point_text(point)}"


def local_corpus(cfg: dict, fetched: Path) -> Path | None:
    """The corpus file this build will train on, when it is already on this machine (else None)."""
    for candidate in (Path(fetched), local_copy(cfg["data"])):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def check_corpus_room(built: Grid, corpus: Path | None) -> None:
    """Refuse a folder's model whose context the corpus cannot supply, before any job (a stat, no read).

    A character takes at least one byte, so a split has at most as many characters as the bytes it is cut
    from: a block the byte count already rules out is refused here, naming the study and the key; a
    closer case is left to the trainer's check on the characters themselves (attnlab.core.corpus.check_fits).
    """
    if corpus is None:
        return
    size = corpus.stat().st_size
    problems = []
    for folder, sliced in built.slices().items():
        block, fraction = sliced["model"]["block_size"], sliced["data"]["train_fraction"]
        train = int(size * fraction)
        room = min(train, size - train)
        if block + 2 > room:
            at = built.places()[folder]
            problems.append(f"{at + ': ' if at else ''}model.block_size: {block:,} needs at least {block + 2:,} "
                            f"characters in each split, and the corpus {corpus} ({size:,} bytes) has at most "
                            f"{room:,} in one; lower block_size or use a larger corpus")
    if problems:
        raise ConfigError("; ".join(problems))


def contest_lrs(cfg: dict, selected_lr: dict) -> dict[str, float]:
    """Each variant's contest LR: the given number, or the sweep's choice for 'auto' once it is known."""
    chosen = {}
    for variant in cfg["variants"]:
        lr = cfg["contest"]["lr"][variant]
        if lr == AUTO:
            lr = selected_lr.get(variant)
        if lr is not None:
            chosen[variant] = float(lr)
    return chosen


def grid(cfg: dict, selected_lr: dict[str, float] | None = None,
         left_out: frozenset[tuple[str, int]] = frozenset(), design: dict | None = None,
         given_sweep: dict | None = None) -> ContestGrid:
    """The contest and the LR sweep as the collect step reads them.

    A contest LR of 'auto' resolves through selected_lr (the sweep's best);
    unresolved auto variants contribute only their sweep cells. The sweep
    trains every sweep LR at each of its seeds (sweep.seeds, which defaults to
    the one sweep.seed). `cells` lists each distinct cell once as
    [variant, LR, seed]; `keys` every cell of each of the two studies as a CellKey (JSON), so a cell both
    have appears once under each. `left_out`: the (variant, seed) contest cells a round did not train (the
    variants of comparisons already decided: attnlab.pipeline.ground.rounds.left_out); `design`: the contest's
    design as the config declared it (attnlab.pipeline.ground.design), which a config whose contest.seeds a round has
    grown no longer says; `given_sweep`: each variant's sweep LRs as the config gave them, where the sweep
    may add LRs beyond them (sweep.extend; attnlab.pipeline.ground.sweep_extension), so the tables can say
    how many it added and whether the limit was reached.
    """
    built = Grid({**cfg, "studies": []}, selected_lr)

    def kept(keys):
        return [key for key in keys if (key.variant, key.seed) not in left_out]

    cells = {(key.variant, key.lr_value, key.seed) for key in kept(built.trained())}
    auto = tuple(v for v in cfg["variants"] if cfg["contest"]["lr"][v] == AUTO)
    given = given_sweep or studies_mod.sweep_lrs(cfg)
    return ContestGrid(
        variants=tuple(cfg["variants"]),
        contest_lr=dict(built.contest_lr),
        contest_seeds=tuple(cfg["contest"]["seeds"]),
        sweep_seeds=tuple(sweep_seeds(cfg)),
        sweep_lrs=tuple(studies_mod.all_sweep_lrs(cfg)),
        sweep_lrs_by_variant={v: tuple(lrs) for v, lrs in studies_mod.sweep_lrs(cfg).items()},
        auto=auto,
        cells=tuple(sorted(cells)),
        keys=tuple(key for name in studies_mod.BUILT_IN for key in kept(built.cells(name))),
        protocol=cfg["name"],
        rounds_design=(design if design is not None
                       else design_of(cfg).to_json() if cfg["contest"].get("rounds") else {}),
        sweep_extend=int(cfg["sweep"].get("extend") or 0),
        sweep_given={v: tuple(float(lr) for lr in given[v]) for v in auto} if cfg["sweep"].get("extend") else {},
    )


def sweep_seeds(cfg: dict) -> list[int]:
    """The seeds the sweep trains at: sweep.seeds, else the one sweep.seed."""
    return list(cfg["sweep"].get("seeds") or [cfg["sweep"]["seed"]])
