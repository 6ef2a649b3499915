"""The posts' published numbers (published.yaml beside this module): what the ledger, the tables' displays and
the writeup set beside this build's. Pure data, read once."""

from __future__ import annotations

from functools import cache
from importlib import resources

import yaml


@cache
def _text() -> str:
    return resources.files("attnlab.pipeline").joinpath("published.yaml").read_text()


def published() -> dict:
    """The posts' numbers, a fresh copy per call (callers may not change the shared one)."""
    return yaml.safe_load(_text())
