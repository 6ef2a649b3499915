"""attnlab: parameter-matched char-level GPTs that differ only in the attention score function."""

__version__ = "0.1.0"
