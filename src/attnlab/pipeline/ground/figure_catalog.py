"""Every figure the pipeline draws, in one table: its module, outputs, the tables it reads and its caption.

The figure rules are generated from this table (workflow/rules/figures.smk), the
writeup prints under each figure the rule and the CSVs that made it from here,
and the tests check both against it. A figure called <name> is the module
attnlab.pipeline.figures.<name>, the rule figure_<name> and the caption
workflow/report/<name>.rst. An animated figure writes a GIF and a poster: a
PNG of its last frame, the still that print shows in the GIF's place.

Plain data on purpose (no matplotlib, no pandas), so the Snakefile and the
writeup read it without loading any drawing code.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from attnlab.pipeline.ground import paths

PACKAGE = "attnlab.pipeline.figures"
CAPTIONS = Path("workflow") / "report"  # beside results/, relative to the repository or workspace
POSTER_SUFFIX = "_poster.png"


@dataclass(frozen=True)
class Figure:
    name: str
    tables: tuple[str, ...]  # results/tables/<table>.csv; runs.csv also leads to the bundles it lists
    message: str  # what the rule says while it draws
    animated: bool = False
    study: str | None = None  # drawn only for a config with this study (config `studies:`); None: always

    def drawn_for(self, studies) -> bool:
        """Whether a build whose config has these studies (names) draws this figure."""
        return self.study is None or self.study in studies

    @property
    def module(self) -> str:
        return f"{PACKAGE}.{self.name}"

    @property
    def rule(self) -> str:
        return f"figure_{self.name}"

    @property
    def file(self) -> str:
        """The file the writeup shows: <name>.gif when animated, else <name>.png."""
        return f"{self.name}.gif" if self.animated else f"{self.name}.png"

    @property
    def poster(self) -> str | None:
        """The still of an animated figure (its last frame), for print; None for a still figure."""
        return f"{self.name}{POSTER_SUFFIX}" if self.animated else None

    @property
    def outputs(self) -> tuple[str, ...]:
        return (self.file, self.poster) if self.animated else (self.file,)

    @property
    def caption(self) -> Path:
        return CAPTIONS / f"{self.name}.rst"

    def table_paths(self) -> dict[str, Path]:
        """Each table the figure reads and its path in the workspace (results/tables/<table>.csv)."""
        return {table: paths.table(table) for table in self.tables}

    def output_paths(self) -> dict[str, Path]:
        """'file' (and 'poster' when animated) and their paths in the workspace (results/figures/...)."""
        named = {"file": self.file, "poster": self.poster}
        return {key: paths.figure(name) for key, name in named.items() if name}


FIGURES = (
    Figure("loss_curves", ("runs", "contest"),
           "Drawing the contest runs' validation-loss curves"),
    Figure("lr_sweep", ("lr_sweep", "contest"),
           "Drawing best validation loss against learning rate"),
    Figure("depth_grid", ("runs", "contest"),
           "Drawing trained attention maps through depth"),
    Figure("training_maps", ("runs", "contest"),
           "Drawing one head's attention map at the four training checkpoints"),
    Figure("reading", ("runs", "contest"),
           "Animating one head of every variant reading the window, query by query", animated=True),
    Figure("score_orbit", (),
           "Animating the bilinear and Yat scores of an orbiting query (analytic, no runs)", animated=True),
    Figure("scalars", ("scalars", "contest"),
           "Drawing yat_b's learned b and epsilon per layer and head"),
    Figure("a3_gates", ("a3_gates", "contest"),
           "Drawing the A3 gate and bias per layer and head"),
    Figure("entropy", ("runs", "contest", "entropy"),
           "Drawing the attention-entropy distributions"),
    Figure("score_scale", ("score_scale", "contest"),
           "Drawing the attention score scale per layer and per seed"),
    Figure("mass_auroc", ("runs", "contest", "mass_auroc"),
           "Drawing the kernel mass against next-token correctness (ROC and distributions)"),
    Figure("paired_differences", ("runs", "contest", "best_lr"),
           "Drawing each variant's paired difference from softmax with its interval"),
    Figure("catalog_forest", ("catalog", "contest"),
           "Drawing the catalog's score functions against softmax as one family, with the A/A reference"),
    Figure("ladder_gap", ("ladder", "ladder_seeds"),
           "Drawing the scale ladder's paired difference from softmax against parameter count", study="ladder"),
    Figure("ladder_telemetry", ("ladder", "ladder_seeds"),
           "Drawing the scale ladder's score scale, entropy gap and A3 gate against parameter count",
           study="ladder"),
    Figure("ladder_length", ("ladder", "ladder_seeds"),
           "Drawing the scale ladder's training-length axis", study="ladder"),
)
BY_NAME = {figure.name: figure for figure in FIGURES}

