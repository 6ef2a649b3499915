"""A3 with its gate and bias per head: w = softmax(S * G + B), w_g, b_g and u per layer x head.

The same context as A3 (attention.a3): for head h of layer l,
c_i = [prefix-mean q_{<=i}; prefix-mean k_{<=i}; e_{l,h}], with the learned
layer/head embedding e_{l,h}. Where A3 shares one gate vector w_g, one bias b_g
and one key-bias vector u across every layer and head (the "two-matrix change"),
here each (layer, head) has its own, as in the post's reference code and its
"small parameter and compute overhead per head":
  G_i = sigmoid(w_g[l,h] . c_i + b_g[l,h]),  B_ij = u[l,h] . c_j.
The same init: w_g = 0, u = 0, b_g = 3, so at step 0 it is softmax(sigmoid(3) * S),
A3's starting function. The embedding is kept so that the two arms differ only
in sharing: with per-head gates its term e_{l,h} . w_g[l,h] is a per-head
constant that b_g could also carry.

Parameters: layers x heads x (2 x context + 1) plus the embedding, against A3's
2 x context + 1 plus the embedding.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from attnlab.training.attention.a3 import A3Score


class A3HeadsScore(A3Score):
    @staticmethod
    def gate_shape(layers: int, heads: int) -> tuple[int, ...]:
        return (layers, heads)

    def _gate_and_bias(self, context: jnp.ndarray, layer: int) -> tuple[jnp.ndarray, jnp.ndarray]:
        """context (B, H, T, C) -> gate (B, H, T) per query row, bias (B, H, T) per key position."""
        w_g, u = self.w_g[...][layer], self.u[...][layer]  # (H, C)
        gate = jax.nn.sigmoid(jnp.einsum("bhtc,hc->bht", context, w_g) + self.b_g[...][layer][None, :, None])
        bias = jnp.einsum("bhtc,hc->bht", context, u)
        return gate, bias
