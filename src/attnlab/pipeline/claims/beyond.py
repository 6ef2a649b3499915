"""Controls beyond the posts: is A³'s gain over softmax its per-token temperature, or would one learned
temperature per head (softmax_t, the same start) do? Read from the a3_vs_temperature table. And an A/A check of
the design itself: softmax against softmax, on disjoint seeds of the contest, should find no difference."""

from __future__ import annotations

import math

from attnlab.pipeline.ground import intervals, statistics, verdicts
from attnlab.pipeline.claims import protocol as pp
from attnlab.pipeline.claims import words
from attnlab.pipeline.claims.common import (BEYOND, Claim, at_protocol, contest_losses, judged, lr_text, table_of,
                                            untestable)
from attnlab.pipeline.ground.verdicts import CONTRADICTED, HOLDS, Verdict, every, one_sided
from attnlab.pipeline.ground.estimate_text import describe

RULE = pp.Rule(words.CONTROL, "softmax − A3 (A3's gain) and softmax_t − A3 (what a per-head "
               "temperature leaves of it) best validation loss, paired by contest seed, each at its contest LR",
               "both above 0", "0: the direction this project asks about",
               pp.TRAINED, pairing=pp.OWN_LR)


def a3_gain_is_per_token(t, pub, protocol) -> Claim:
    claim = Claim(BEYOND, "A3's gain over softmax is its per-token temperature: a learned per-head temperature "
                  "(softmax_t, the same start) does not close it",
                  RULE.text(), "–", "not in the posts", "")
    claim.quote = RULE.quote()
    table = table_of(t, "a3_vs_temperature")
    needed = {"seed", "softmax_best_val", "a3_best_val", "softmax_t_best_val"}
    if table.empty or not needed <= set(table.columns) or table[list(needed)].isna().all().any():
        return untestable(claim, protocol, "this build has no softmax, A3 and softmax_t contest cells")

    def per_seed(column):
        cells = table[["seed", column]].dropna()
        return dict(zip(cells.seed.astype(int), cells[column].astype(float)))

    gain = statistics.paired(per_seed("softmax_best_val"), per_seed("a3_best_val"))
    left = statistics.paired(per_seed("softmax_t_best_val"), per_seed("a3_best_val"))
    t_gain = statistics.paired(per_seed("softmax_best_val"), per_seed("softmax_t_best_val"))
    share = t_gain.mean / gain.mean if gain.mean else math.nan
    claim.measured = (f"A3's gain over softmax {describe(gain, wins=False)}; softmax_t − A3 "
                      f"{describe(left, wins=False)}")
    if gain.mean > 0:
        claim.measured += f" (softmax_t closes {share:.0%} of A3's gain, seed means)"
    else:
        claim.measured += ": A3 does not beat softmax"
    lrs = ", ".join(f"{v} at {lr_text(table[f'{v}_lr'].iloc[0])}" for v in ("softmax", "a3", "softmax_t")
                    if f"{v}_lr" in table and str(table[f"{v}_lr"].iloc[0]) not in ("–", "nan"))
    notes = [lrs] if lrs else []
    if "a3_heads_gain" in table and table.a3_heads_gain.notna().any():
        heads = statistics.paired(per_seed("softmax_best_val"), per_seed("a3_heads_best_val"))
        notes.append(f"a3_heads (gate and bias per head) gains {describe(heads, wins=False)}")
    claim.note = "; ".join(notes)
    verdict = every(one_sided(gain, 0.0, above=True), one_sided(left, 0.0, above=True))
    judged(claim, verdict, {"A3's gain": gain, "softmax_t − A3": left})
    direction = ("A3 does not beat softmax" if gain.mean <= 0
                 else "a per-head temperature does as well as A3" if left.mean <= 0 else "")
    return at_protocol(claim, protocol, pp.conditions(t, RULE, ["softmax", "a3", "softmax_t"]), direction)



AA_RULE = pp.Rule(words.CONTROL, "softmax − softmax best validation loss over the contest's softmax seeds split in two "
                  "halves in seed order (the k-th seed of the first half against the k-th of the second, each pair "
                  "a unit; an odd seed left out), read through the build's own design and interval",
                  "the interval holds 0", "0: both halves are one variant, so the true difference is 0; an "
                  "interval clear of it is a false positive of the design (this project's A/A check)", (),
                  pairing=pp.SINGLE)


def softmax_against_itself(t, pub, protocol) -> Claim:
    """The A/A row: the design's interval on a difference that is 0 by construction should hold 0. It costs no
    cell (it reads softmax's contest seeds) and tests the reading, not the model."""
    claim = Claim(BEYOND, "A/A: the design finds no difference between softmax and itself on disjoint seeds",
                  AA_RULE.text(), "–", "not in the posts", "", quote=AA_RULE.quote())
    losses = contest_losses(t, "softmax")
    seeds = sorted(losses)
    first_seeds, second_seeds = statistics.seed_halves(seeds)
    if len(first_seeds) < 2:
        return untestable(claim, protocol, f"an A/A split needs at least 4 softmax contest seeds, this build has "
                                           f"{len(seeds)}")
    first, second = statistics.halves(losses)
    with intervals.halved():  # pairs of seeds: the look softmax's seeds reached
        estimate = statistics.paired(first, second)
    claim.measured = f"first half − second half {describe(estimate, wins=False)}"
    claim.note = (f"seeds {', '.join(map(str, first_seeds))} against {', '.join(map(str, second_seeds))}"
                  + (f"; seed {seeds[-1]} left out" if len(seeds) % 2 else ""))
    if not estimate.has_interval:
        verdict = Verdict(verdicts.INCONCLUSIVE, estimate.reason)
    else:
        verdict = Verdict(HOLDS if estimate.low <= 0 <= estimate.high else CONTRADICTED)
    judged(claim, verdict, {"softmax − softmax": estimate})
    return at_protocol(claim, protocol, [], "a false positive: the design's interval excludes a zero difference"
                       if verdict.word == CONTRADICTED else "")
