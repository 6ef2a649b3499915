"""What the spherical Yat kernel's formula alone does (attnlab.training.attention.spherical_yat): it reads the
cosine of query and key and nothing else, and it peaks at 1/ε where they align. Blockwise = dense = its float64
reference, and the rest every catalogued function must do, is tests/test_catalog_scores.py's."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from attnlab.training.attention.spherical_yat import SPHERICAL_EPS, cosine_kernel, unit
from score_catalog import make
from score_reference import inputs


def test_the_kernel_reads_the_cosine_alone_unlike_yat():
    q, k, _ = inputs(scale=1.0, seed=2)
    stretch = jnp.arange(1, q.shape[-2] + 1, dtype=q.dtype)[None, None, :, None]  # a scale per head
    spherical, yat = make("spherical_yat"), make("yat")
    np.testing.assert_allclose(np.asarray(spherical(3.0 * q * stretch, 0.2 * k, 0).weights),
                               np.asarray(spherical(q, k, 0).weights), rtol=1e-5, atol=1e-7)
    assert not np.allclose(np.asarray(yat(3.0 * q * stretch, 0.2 * k, 0).weights), np.asarray(yat(q, k, 0).weights),
                           atol=1e-3), "yat's kernel grows with the norms: the check can tell the two apart"


def test_the_kernel_peaks_at_one_over_eps_where_query_and_key_align_and_is_zero_where_orthogonal():
    q, _, _ = inputs(scale=1.0, seed=4)
    own = cosine_kernel(unit(q), unit(q))  # each query against itself on the diagonal
    diagonal = np.asarray(jnp.diagonal(own, axis1=-2, axis2=-1))
    np.testing.assert_allclose(diagonal, 1.0 / SPHERICAL_EPS, rtol=2e-3)
    assert float(own.max()) <= 1.0 / SPHERICAL_EPS * (1 + 2e-3)
    e0, e1 = jnp.eye(8)[0][None, None, None, :], jnp.eye(8)[1][None, None, None, :]
    assert float(cosine_kernel(e0, e1)[0, 0, 0, 0]) == 0.0
