"""nnx.Linear with its weight gradient computed as the plain product XLA's CPU backend runs fastest.

Differentiated automatically, a Linear's weight gradient x^T dy contracts the batch-and-time rows of both
operands, and on a CPU XLA lays dy out transposed for it: a copy, then a product that runs at about a third of
the GEMM rate (benchmarks/step_profile.py: the `dot` ops). Written out as a custom VJP the same product
contracts both operands' first axis in their own layout, with no copy. The parameters, their initial values
and the forward pass are nnx.Linear's; only how the backward pass is laid out differs.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx


def _forward(x, kernel):
    return jax.lax.dot_general(x, kernel, (((x.ndim - 1,), (0,)), ((), ())))


@jax.custom_vjp
def linear_product(x, kernel):
    """x @ kernel over x's last axis, with the gradients below."""
    return _forward(x, kernel)


def _linear_fwd(x, kernel):
    return _forward(x, kernel), (x, kernel)


def _linear_bwd(saved, dy):
    x, kernel = saved
    rows_x, rows_dy = x.reshape(-1, x.shape[-1]), dy.reshape(-1, dy.shape[-1])
    d_kernel = jax.lax.dot_general(rows_x, rows_dy, (((0,), (0,)), ((), ())))
    d_x = jax.lax.dot_general(dy, kernel, (((dy.ndim - 1,), (1,)), ((), ())))
    return d_x, d_kernel


linear_product.defvjp(_linear_fwd, _linear_bwd)


class Dense(nnx.Linear):
    """nnx.Linear (same parameters, names and initialisers) whose product has the gradients above."""

    def __call__(self, inputs, out_sharding=None):
        if self.dtype is not None or self.preferred_element_type is not None or out_sharding is not None:
            return super().__call__(inputs, out_sharding)  # what the custom product does not cover
        y = linear_product(inputs, self.kernel[...])
        if self.bias is not None:
            y = y + jnp.reshape(self.bias[...], (1,) * (y.ndim - 1) + (-1,))
        return y
