"""Benchmarks: each prints its figures (`python benchmarks/<name>.py --help`); none is a test."""
