"""Group-sequential designs: K looks at the paired per-seed differences, planned before any seed is trained.

Reading a 95% t-interval after 10 seeds and again after 20 and stopping at the first that clears a claim's
threshold errs far more often than 5% (about 8% at two looks). A design declared before the seeds, with
alpha spent across the looks by a Lan–DeMets spending function, keeps the error rate at alpha however many
of its K looks the build reads; each look reads an interval at a higher nominal confidence (repeated
confidence intervals, Jennison & Turnbull 2000, ch. 9). For a few planned looks these intervals are much
narrower than an anytime-valid confidence sequence (attnlab.pipeline.ground.confidence_sequence), which pays for
being readable after every seed.

The critical values solve, look by look, P(first exit at look k) = α(t_k) − α(t_{k−1}) for a standard
Brownian motion observed at the information fractions t_k, with the exit probabilities computed by the
recursive numerical integration of Armitage, McPherson & Rowe (1969): deterministic, no simulation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from scipy import optimize, special, stats

METHOD = ("group-sequential repeated confidence intervals (Jennison & Turnbull 2000, ch. 9) with Lan–DeMets "
          "alpha spending (Lan & DeMets 1983, Biometrika 70:659–663); boundaries by the recursive numerical "
          "integration of Armitage, McPherson & Rowe (1969)")

SPEND_FLOOR = 1e-12  # a look whose spend is below this gets no boundary (c = inf)
_WIDTH = 10.0  # an unbounded continuation region is carried over ±_WIDTH·sqrt(t) (mass beyond: ~1e-23)
_STEPS_PER_SD = 16  # grid points per standard deviation of the narrowest Gaussian kernel the grid meets
_POINTS = (101, 2001)  # fewest and most grid points (odd: Simpson's rule)


def _obrien_fleming(t, alpha: float):
    """Each side spends alpha/2 by Lan & DeMets' one-sided O'Brien–Fleming-type 2 − 2Φ(z_{1−a/2}/√t) at a = α/2
    (the convention of DeMets & Lan 1994's tables, ldbounds and gsDesign): 2·(2 − 2Φ(z_{1−α/4}/√t)) in all."""
    return 4 * special.ndtr(special.ndtri(alpha / 4) / np.sqrt(t))  # 4Φ(−z/√t): no cancellation at small t


def _pocock(t, alpha: float):
    """Lan & DeMets' Pocock-type α·ln(1 + (e − 1)t) (alpha/2 per side)."""
    return alpha * np.log1p((math.e - 1) * np.asarray(t, dtype=float))


# name -> alpha(t, alpha): the two-sided alpha spent by information fraction t; each reaches alpha at t = 1
SPENDING: dict[str, Callable] = {"obrien_fleming": _obrien_fleming, "pocock": _pocock}


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), not {alpha}: pass the two-sided error rate, e.g. 0.05")


def _spending(name: str) -> Callable:
    if name not in SPENDING:
        raise ValueError(f"unknown spending function {name!r}: use one of {', '.join(sorted(SPENDING))}")
    return SPENDING[name]


def _check_fractions(fractions: Sequence[float]) -> np.ndarray:
    t = np.asarray(fractions, dtype=float)
    if t.ndim != 1 or t.size == 0 or not np.all(np.isfinite(t)):
        raise ValueError(f"fractions must be a non-empty sequence of numbers, not {fractions!r}")
    if t[0] <= 0 or np.any(np.diff(t) <= 0) or t[-1] > 1:
        raise ValueError(f"information fractions must be strictly increasing in (0, 1], not {tuple(t)}: "
                         "pass seeds at each look over the last look's seeds (fractions_of)")
    if t[-1] != 1:
        raise ValueError(f"information fractions must end at 1, not {t[-1]}: the last look is the full design "
                         "(divide by the last look's seeds, as fractions_of does)")
    return t


def _check_looks(looks: Sequence[int]) -> tuple[int, ...]:
    if len(looks) == 0 or any(isinstance(n, bool) or int(n) != n for n in looks):
        raise ValueError(f"looks must be a non-empty sequence of whole numbers of seeds, not {looks!r}")
    n = tuple(int(k) for k in looks)
    if n[0] < 2 or any(b <= a for a, b in zip(n, n[1:])):
        raise ValueError(f"looks must be strictly increasing seed counts of at least 2 (a t-interval needs two "
                         f"seeds), not {n}: e.g. (10, 20)")
    return n


def _simpson(half: float, points: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and Simpson weights on [−half, half] (points odd)."""
    nodes = np.linspace(-half, half, points)
    weights = np.full(points, 2.0)
    weights[1::2] = 4.0
    weights[[0, -1]] = 1.0
    return nodes, weights * (nodes[1] - nodes[0]) / 3


def boundaries(fractions: Sequence[float], alpha: float = 0.05,
               spending: str = "obrien_fleming") -> tuple[float, ...]:
    """Two-sided symmetric z critical values c_1..c_K at the information fractions (inf where a look spends
    nothing): the first exit of a standard Brownian motion at look k has probability α(t_k) − α(t_{k−1})."""
    _check_alpha(alpha)
    spend_at = _spending(spending)
    t = _check_fractions(fractions)
    spent = np.diff(np.concatenate(([0.0], spend_at(t, alpha))))
    sds = np.sqrt(np.diff(np.concatenate(([0.0], t))))  # of each look's increment of the score S = Z·sqrt(t)
    critical: list[float] = []
    nodes = weights = density = None  # the sub-density of S over the last continuation region
    for k in range(t.size):
        sd = sds[k]
        if density is None:  # the first look: S ~ N(0, t_1)
            def exits(b):
                return 2 * special.ndtr(-b / sd)
        else:
            mass = weights * density

            def exits(b):
                return float(mass @ (special.ndtr((-b - nodes) / sd) + special.ndtr((nodes - b) / sd)))
        if spent[k] < SPEND_FLOOR:
            c = math.inf
        else:  # exits(0) is the mass still in play (≥ 1 − α); at the fixed-sample z the exit is ≤ the spend
            top = -math.sqrt(t[k]) * float(special.ndtri(spent[k] / 2)) * 1.0001
            while exits(top) >= spent[k]:  # only where the grid's rounding outweighs the earlier looks' share
                top *= 1.01
            b = optimize.brentq(lambda b: exits(b) - spent[k], 0.0, top, xtol=1e-12, rtol=1e-12)
            c = b / math.sqrt(t[k])
        critical.append(c)
        if k + 1 < t.size:  # carry the sub-density of S_k over |S_k| < c_k·sqrt(t_k) to the next look
            half = min(c, _WIDTH) * math.sqrt(t[k])
            step = min(sd, sds[k + 1]) / _STEPS_PER_SD
            points = int(np.clip(2 * math.ceil(half / step) + 1, *_POINTS))
            new_nodes, new_weights = _simpson(half, points)
            if density is None:
                density = stats.norm.pdf(new_nodes, scale=sd)
            else:
                density = stats.norm.pdf(new_nodes[:, None] - nodes[None, :], scale=sd) @ mass
            nodes, weights = new_nodes, new_weights
    return tuple(float(c) for c in critical)


def nominal_confidences(fractions: Sequence[float], alpha: float = 0.05,
                        spending: str = "obrien_fleming") -> tuple[float, ...]:
    """The confidence 1 − 2(1 − Φ(c_k)) of the interval read at each look (1 where a look spends nothing).
    With few seeds the build reads a t-interval at this nominal level: the usual t-approximation to the
    normal-theory design, whose error rate is then close to, not exactly, alpha."""
    return tuple(float(2 * special.ndtr(c) - 1) for c in boundaries(fractions, alpha, spending))


def fractions_of(looks: Sequence[int]) -> tuple[float, ...]:
    """The information fractions of looks at these seed counts: seeds at each look over the last look's."""
    n = _check_looks(looks)
    return tuple(k / n[-1] for k in n)


def power(looks: Sequence[int], confidences: Sequence[float], mean: float, spread: float,
          thresholds: float | Sequence[float], draws: int = 20000, seed: int = 0) -> float:
    """The probability (simulated, fixed seed) that Gaussian per-seed values of this mean and standard deviation
    give, at some look, a t-interval at that look's confidence over the first looks[k] values that holds none
    of the thresholds. Seeds accrue: every look reads the same draws' first values."""
    n = _check_looks(looks)
    levels = np.asarray(confidences, dtype=float)
    if levels.shape != (len(n),) or not np.all((levels > 0) & (levels <= 1)):
        raise ValueError(f"confidences must be one level in (0, 1] per look ({len(n)}), not {confidences!r}: "
                         "use nominal_confidences(fractions_of(looks))")
    if not (math.isfinite(spread) and spread > 0):
        raise ValueError(f"spread must be a positive standard deviation, not {spread}")
    if draws < 1:
        raise ValueError(f"draws must be at least 1, not {draws}")
    marks = np.atleast_1d(np.asarray(thresholds, dtype=float))
    values = np.random.default_rng(seed).normal(mean, spread, size=(draws, n[-1]))
    decided = np.zeros(draws, dtype=bool)
    for k, level in zip(n, levels):
        first = values[:, :k]
        centre = first.mean(axis=1)
        half = stats.t.ppf(0.5 + level / 2, k - 1) * first.std(axis=1, ddof=1) / math.sqrt(k)
        outside = np.abs(centre[:, None] - marks[None, :]) > half[:, None]
        decided |= outside.all(axis=1)
    return float(decided.mean())
