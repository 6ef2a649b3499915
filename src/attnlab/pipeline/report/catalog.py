"""The writeup's words on the catalog view (attnlab.pipeline.tables.catalog): what the family reading found, and
what reading each interval alone would have claimed beside it."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnlab.pipeline.ground.contract import BASELINE
from attnlab.pipeline.ground.formatting import plural
from attnlab.pipeline.tables.catalog import AA, AA_FAILS, AA_HOLDS, HIGHER, LOWER, family_level


def catalog_results(table: pd.DataFrame) -> str:
    """One paragraph: how many functions the family finds different from softmax and which, how many intervals
    exclude 0 read alone, and whether the A/A reference holds 0."""
    functions = table[table.variant != AA]
    if functions.empty:
        return ""
    lower = list(functions.variant[functions.finding == LOWER])
    higher = list(functions.variant[functions.finding == HIGHER])
    alone = int(((functions.delta_ci_high < 0) | (functions.delta_ci_low > 0)).sum())
    has_family = pd.to_numeric(functions.family_confidence, errors="coerce").notna().any()
    parts = [f"Of the {plural(len(functions), 'catalogued function')} in this build, "]
    if not has_family:
        parts.append(f"none is read as a family ({family_level(table)}); each row's finding is its own. ")
    elif lower or higher:
        found = "; ".join(part for part in (
            f"lower loss than {BASELINE}: {', '.join(lower)}" if lower else "",
            f"higher loss: {', '.join(higher)}" if higher else "") if part)
        parts.append(f"Holm's step-down finds {len(lower) + len(higher)} different from {BASELINE} at the "
                     f"family-wise 5% level ({found}). ")
    else:
        parts.append(f"Holm's step-down finds none different from {BASELINE} at the family-wise 5% level. ")
    parts.append(f"Read one by one, {plural(alone, 'interval')} of {len(functions)} exclude{'s' if alone == 1 else ''} "
                 "0")
    parts.append("; among functions no different from softmax each such reading errs 5% of the time, so with several "
                 "functions the family's reading is the one to quote. " if has_family and len(functions) > 1 else ". ")
    reference = table[table.variant == AA]
    if len(reference):
        finding = str(reference.finding.iloc[0])
        if finding == AA_HOLDS:
            parts.append(f"The A/A reference, {BASELINE} against itself on two halves of its seeds, holds 0, as it "
                         "should.")
        elif finding == AA_FAILS:
            parts.append(f"The A/A reference, {BASELINE} against itself on two halves of its seeds, excludes 0: a "
                         "false positive of the interval, a reason to read every row here with more caution.")
        else:
            parts.append(f"The A/A reference has no interval here ({finding}).")
        width = float(reference.delta_ci_high.iloc[0] - reference.delta_ci_low.iloc[0])
        if np.isfinite(width):
            n = int(reference.n_paired.iloc[0])
            weak = "; with so few pairs it is a weak check, which only a gross fault would fail" if n < 4 else ""
            parts.append(f" Its interval, over {plural(n, 'pair')} of seeds, is {width:.4f} nats wide{weak}.")
    return "".join(parts)
