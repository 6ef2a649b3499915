"""One spelling rule for variables of the environment that switch a feature off or on, or name its folder.

ATTNLAB_CPU_SLOTS is such a variable: off leaves training jobs free to run on any CPU, on (or unset) keeps
their CPU locks in a folder of the user's, and a path names that folder. Off is `off`, `0`, `false` or `no`,
on is `on`, `1`, `true` or `yes`, in any case and with any spaces around; a folder is written as a path with a
`/` (`./slots` for one in the workspace), so a mistyped switch (`of`, `disable`) is refused rather than taken
as a folder and made. Every entry point (the build's planning, `attnlab train`, the pack trainer) writes the
variable back in the one spelling the trainer reads before any job starts: `off`, unset, or the folder.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

from attnlab.core.errors import ConfigError

CPU_SLOTS_ENV = "ATTNLAB_CPU_SLOTS"  # attnlab.training.cpu_slots reads it
OFF = "off"
OFF_WORDS = ("off", "0", "false", "no")
ON_WORDS = ("on", "1", "true", "yes")


def folder_switch(name: str, environ: MutableMapping[str, str] | None = None) -> str:
    """The variable `name` read by the rule above: 'off', '' (on: the default folder) or a folder path; a value
    that is neither is refused, naming the variable and the spellings it takes."""
    raw = (os.environ if environ is None else environ).get(name)
    if raw is None:
        return ""
    word = raw.strip().lower()
    if word in OFF_WORDS:
        return OFF
    if word in ON_WORDS or not word:
        return ""
    if "/" in raw:
        return raw
    raise ConfigError(f"{name}={raw!r} is neither a switch nor a folder: write off (or 0, false, no; any case) to "
                      f"leave training jobs on any CPU, on (or 1, true, yes) for the default folder of CPU locks, "
                      f"or a folder path with a '/' (./{raw.strip() or 'slots'} for one here)")


def settle_folder_switch(name: str = CPU_SLOTS_ENV, environ: MutableMapping[str, str] | None = None) -> None:
    """Write the variable back in the one spelling the trainer reads: 'off', unset (on) or the folder."""
    environ = os.environ if environ is None else environ
    value = folder_switch(name, environ)
    if value:
        environ[name] = value
    else:
        environ.pop(name, None)
