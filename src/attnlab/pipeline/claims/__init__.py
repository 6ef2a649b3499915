"""The claims ledger: each claim of the source posts as a check over this build's tables, with its interval.

Every check returns the measured value, the published value, a verdict, the
interval the verdict rests on (or why it has none), the number of seeds, and the
protocol it was measured at (runs.csv's config.name). A check compares like with
like (the same variant and LR as the published number beside it; where a
published number itself mixes conditions, the row's note says so) and is one
the claim's negation would fail. Comparisons between variants are paired by
seed, and every interval comes from attnlab.pipeline.ground.statistics. A verdict is
one of six:

- holds: the interval lies inside what the claim says;
- contradicted: the interval excludes it;
- inconclusive: the interval spans the claim's threshold (the row says about
  how many seeds would resolve it at the observed spread), or there is one seed
  and no noise scale to read it against; "inconclusive at <protocol>" when a
  precondition of the claim's protocol failed (each variant at its own best
  LR, inside its sweep grid, trained to a plateau: claims.protocol), whatever
  the interval says, with the data's lean beside it;
- not testable at <protocol>: this protocol cannot express the claim (a
  2-layer model has no early and deep layers to tell apart, a sweep without
  1e-2 cannot show a death at 1e-2, a build without a variant cannot compare it);
- holds or contradicted by construction: the claim follows from how the model
  is built; the row shows the check that this build's code does what the
  construction says. These are counted apart from the experiments.

An event (a divergence) is a count of seeds with an exact binomial interval;
one seed's value is read against the same variant's seed spread.

A verdict at a protocol other than the published one speaks for that protocol.
`python -m attnlab.pipeline.claims --tables DIR --out STEM` writes the ledger as
STEM.csv (one row per claim, a `verdict` column), .md and .tex.

One module per topic of a post: kernel_post (quality, learning rate),
kernel_post_scale (the trained scores' scale), kernel_post_scores (the trained
attention's shape), a3_post, later_post, score_papers, length_papers and
slay_paper and diff_paper (the catalog's papers), and beyond (controls no post runs); common
holds the Claim row and how a verdict is judged; ledger runs every check in
order. The names below are importable from here.
"""

from attnlab.pipeline.claims.a3_post import (a3_composes, a3_compute_overhead_small, a3_early_layers_softer,
                                             a3_overhead_small, a3_starts_at_softmax, a3_starts_close,
                                             a3_valid_distributions, early_and_deep)
from attnlab.pipeline.claims.beyond import a3_gain_is_per_token, softmax_against_itself
from attnlab.pipeline.claims.common import (A3_POST, BEYOND, KERNEL_POST, LATER_POST, PAPERS, SOURCES, Claim,
                                            contest_losses, published)
from attnlab.pipeline.claims.kernel_post import kernel_gap, kernel_lr_band, softmax_dies_at_high_lr
from attnlab.pipeline.claims.kernel_post_scale import (ablation_untames, kernel_scores_five_orders,
                                                       kernel_scores_larger, matched_lr_scores)
from attnlab.pipeline.claims.kernel_post_scores import (ablation_barely_moves_entropy, kernel_more_diffuse,
                                                        learned_scalars_specialise, mass_auroc_null)
from attnlab.pipeline.claims.later_post import softmax_over_kernel
from attnlab.pipeline.claims.ledger import CHECKS, build_protocol, family, ledger, load_tables, main

__all__ = ["A3_POST", "BEYOND", "CHECKS", "Claim", "KERNEL_POST", "LATER_POST", "PAPERS", "SOURCES", "a3_composes",
           "a3_compute_overhead_small", "ablation_barely_moves_entropy", "learned_scalars_specialise",
           "a3_early_layers_softer", "a3_gain_is_per_token", "a3_overhead_small", "a3_starts_at_softmax",
           "a3_starts_close", "a3_valid_distributions", "ablation_untames", "build_protocol", "contest_losses",
           "early_and_deep", "family", "kernel_gap", "kernel_lr_band", "kernel_more_diffuse",
           "kernel_scores_five_orders",
           "kernel_scores_larger", "ledger", "load_tables", "main", "mass_auroc_null", "matched_lr_scores",
           "published", "softmax_against_itself", "softmax_dies_at_high_lr", "softmax_over_kernel"]
