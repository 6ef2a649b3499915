"""Errors that reach the user as one line naming the problem and the fix (exit code 2, no traceback)."""


class ConfigError(ValueError):
    """A config or argument that cannot run; the message names the key and how to fix it."""
