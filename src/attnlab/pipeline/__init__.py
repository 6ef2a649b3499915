"""The pipeline side: grid, paths, bundle reader, tables, claims, figures and writeup helpers.

Nothing here imports JAX or Flax, so `snakemake -n` and every table, figure and
writeup job start without loading them (tests/test_layout.py checks it).
"""
