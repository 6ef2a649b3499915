"""yat's kernel under a softmax: w = softmax(kappa) over the causal window, kappa = (q.k)^2 / (||q-k||^2 + 1).

The ablation of the posts' thesis (is it the kernel that matters, or dropping
the exponential?): the same kappa as yat, b = 0 and eps = 1 frozen, with the
seed's l1 normaliser kappa / sum kappa replaced by a softmax over the visible
keys (masked keys excluded, not given kappa = 0). No parameters of its own, so
the same count as yat.

Telemetry: the max score is kappa's, as for yat. No row mass: under a softmax
sum_j kappa_ij does not enter the weights, so there is no mass channel to rank
(the mass AUROC stays with the l1 kernels).
"""

from __future__ import annotations

from attnlab.training.attention.normalisers import KAPPA_SOFTMAX
from attnlab.training.attention.yat import YatScore


class YatExpScore(YatScore):
    """yat's kappa (b = 0, eps = 1), softmax-normalised."""

    normaliser = KAPPA_SOFTMAX
