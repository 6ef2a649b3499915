"""yat_b's kernel under a softmax: w = softmax(kappa) over the causal window, kappa = (q.k + b)^2 / (||q-k||^2 + eps).

b = softplus(b_raw) and eps = softplus(eps_raw) learned per layer and head
(raw init 0), exactly as yat_b; only the normaliser differs (a softmax over the
visible keys instead of kappa / sum kappa). The same 2 x layers x heads
parameters as yat_b, under the same names, so a yat_b_exp model and a yat_b
model have identical parameter structures. The later post of the series reports
this arm on the paper protocol (attnlab/pipeline/ground/published.yaml).

Telemetry: the max score is kappa's; no row mass (see yat_exp).
"""

from __future__ import annotations

from attnlab.training.attention.normalisers import KAPPA_SOFTMAX
from attnlab.training.attention.yat_b import YatBiasScore


class YatBiasExpScore(YatBiasScore):
    """yat_b's learned b and eps (scalars() reports them), softmax-normalised."""

    normaliser = KAPPA_SOFTMAX
