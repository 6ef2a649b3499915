"""The training side: everything that imports JAX/Flax, from the score functions to the bundle writer.

It may import attnlab.core, never attnlab.pipeline (tests/test_layout.py checks both directions).
"""
