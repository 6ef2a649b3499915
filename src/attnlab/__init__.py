"""attnlab: parameter-matched char-level GPTs that differ only in the attention score function.

Three parts, one-way: attnlab.training (imports JAX) writes bundles,
attnlab.pipeline (never imports JAX) reads them into tables, figures and the
writeup, and attnlab.core is the JAX-free ground both stand on.
"""
