"""Numbers the variants' definitions and the seed script fix, stated once."""

from __future__ import annotations

import math

A3_GATE_BIAS_INIT = 3.0  # b_g at init, so every gate starts at sigmoid(3)
A3_INIT_INVERSE_TEMPERATURE = 1.0 / (1.0 + math.exp(-A3_GATE_BIAS_INIT))  # sigmoid(3) = 0.9526
YAT_FROZEN_EPS = 1.0  # yat's epsilon (b = 0); yat_b learns both
KERNEL_NORMALISER_EPS = 1e-9  # the seed's kappa / (mass + 1e-9)
TINYSHAKESPEARE_VOCAB = 65  # distinct characters in the corpus: parameter counts assume it
# softmax_t's raw inverse temperature at init: softplus(raw) = sigmoid(3), where A3's gate starts
SOFTMAX_T_RAW_INIT = math.log(math.expm1(A3_INIT_INVERSE_TEMPERATURE))
