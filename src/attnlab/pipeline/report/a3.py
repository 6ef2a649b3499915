"""The writeup's A³ section: where A³ starts (step-0 maps), what its gate and bias did per layer, and whether a
learned per-head temperature (softmax_t) closes A³'s gain over the baseline.

A³'s gate starts at σ(b_g) with b_g = 3 (attnlab.pipeline.ground.contract.A3_GATE_INIT), so A³ starts at the
baseline's softmax at temperature 1/σ(3), computed here from that constant, never typed.
"""

from __future__ import annotations

import pandas as pd

from attnlab.core.constants import A3_GATE_BIAS_INIT
from attnlab.pipeline.ground.contract import A3_GATE_INIT, BASELINE
from attnlab.pipeline.ground.formatting import MISSING, fixed, signed

START_TEMPERATURE = 1.0 / A3_GATE_INIT  # A³ at init is softmax(σ(3)·S): softmax at temperature 1/σ(3)


def start_sentence() -> str:
    """Where A³ starts, from the gate's initial bias and value (never typed)."""
    b = f"{A3_GATE_BIAS_INIT:g}"
    return (f"At init (`b_g = {b}`, `W_g = 0`, `U = 0`) the gate is σ({b}) ≈ {A3_GATE_INIT:.4f} everywhere, so A³ "
            f"starts at {BASELINE} with temperature 1/σ({b}) ≈ {START_TEMPERATURE:.4f}, not at {BASELINE} itself")


# The section's tables in the order it shows them, and what each one asks.
SECTION_TABLES = (
    ("a3_init", "checks where A³ starts on the stored step-0 maps"),
    ("a3_vs_softmax_entropy", f"sets A³'s rows against {BASELINE}'s layer by layer, with the two mechanisms that "
     "shape them: the gate (below its init it cools the logits) and the spread of the key bias over the keys "
     "(wider sharpens)"),
    ("a3_vs_temperature", "asks whether a learned per-head temperature, started where A³'s gate starts, gains as "
     "much"),
)
ORDINALS = ("first", "second", "third")


def section_intro(shown) -> str:
    """The section's opening: what A³'s gate is, then each of the section's tables this build shows (`shown`:
    the names of the tables on the page), and no other."""
    present = [what for name, what in SECTION_TABLES if name in shown]
    text = "The gate is a learned inverse temperature per query row and head."
    if len(present) == 1:
        return f"{text} The table below {present[0]}."
    return " ".join([text] + [f"The {ordinal} table {what}." for ordinal, what in zip(ORDINALS, present)])


def start_paragraph(shown) -> str:
    """Where A³ starts, and which table checks it when the build shows the step-0 table."""
    if "a3_init" not in shown:
        return start_sentence() + "."
    alone = sum(name in shown for name, _ in SECTION_TABLES) == 1
    return start_sentence() + f"; the {'table below' if alone else 'first table'} checks exactly that."


def a3_results(layers: pd.DataFrame) -> str:
    if layers.empty:
        return "No A³ cells with gate telemetry in this build."
    below = (layers.a3_gate_mean < A3_GATE_INIT).all()
    sharper = layers[layers.entropy_diff < 0]
    text = ("Per layer, A³'s gate mean is " + ", ".join(fixed(g) for g in layers.a3_gate_mean)
            + f" against its init {A3_GATE_INIT:.3f}; A³'s row entropy minus {BASELINE}'s is "
            + ", ".join(signed(d, 3) for d in layers.entropy_diff) + " (below 0: sharper).")
    if below and len(sharper):
        text += (f" Every gate sits below its init, which on its own would cool the logits and soften the rows; "
                 f"yet A³ is sharper than {BASELINE} in layer{'s' if len(sharper) > 1 else ''} "
                 + ", ".join(str(int(layer)) for layer in sharper.layer)
                 + ". So the sharpening does not come from the gate: it comes from the key bias B (its spread over "
                 "the keys is the last column) or from A³'s own trained q·k scale, which these tables do not "
                 "separate.")
    return text


def has_temperature_arm(table: pd.DataFrame) -> bool:
    """Whether the a3_vs_temperature table holds softmax_t cells (a build without the arms has none)."""
    return not table.empty and table.softmax_t_best_val.notna().any()


def temperature_results(table: pd.DataFrame) -> str:
    """A³'s mean gain over the baseline beside softmax_t's, when the build trained the temperature arm."""
    if table.empty:
        return f"No A³ and {BASELINE} contest seeds in this build, so no gain to compare."
    mean = table.mean(numeric_only=True)
    text = (f"Over {len(table)} contest seeds, A³ − {BASELINE} is {signed(-mean.a3_gain)} nats (below 0 is better, "
            "as everywhere in this report)")
    if not has_temperature_arm(table):
        return text + ("; this build has no softmax_t cells, so whether a learned per-head temperature closes that "
                       "gain is left to a build with the arms (`config/arms.yaml`, `config/paper.yaml`).")
    share = mean.softmax_t_gain / mean.a3_gain if mean.a3_gain else float("nan")
    return text + (f"; softmax_t − {BASELINE} is {signed(-mean.softmax_t_gain)}, "
                   f"{fixed(share, 2) if share == share else MISSING} of A³'s difference.")
