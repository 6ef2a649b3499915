"""Which version of each package is installed, read one way for the whole project (JAX-free).

The trainer records a few of them in each bundle's provenance, the writeup
compares them with the lock (constraints.txt), and the writeup rule takes them
as a param so that installing other versions reruns it. All three read the
names of the metadata folders on the import path (`<name>-<version>.dist-info`),
the first one found winning as it does for importlib.metadata: a listing of a
few folders, cheap enough for every dry run, where reading every METADATA file
is not.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable


def normalize(name: str) -> str:
    """A distribution name as PEP 503 compares it: case and runs of -, _ and . do not matter."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_versions(names: Iterable[str] | None = None, path: list[str] | None = None) -> dict[str, str]:
    """{normalized name: version} of the installed distributions among `names` (every one when None), sorted.

    A name that is not installed is left out. `path` is the import path to
    search (sys.path when None).
    """
    wanted = None if names is None else {normalize(name) for name in names}
    found: dict[str, str] = {}
    for entry in sys.path if path is None else path:
        try:
            listing = sorted(os.listdir(entry or "."))
        except OSError:
            continue
        for folder in listing:
            if folder.endswith((".dist-info", ".egg-info")):
                name, _, version = folder.rsplit(".", 1)[0].partition("-")
                version = version.partition("-")[0]  # an egg-info's "-py3.11" tag is not part of the version
                key = normalize(name)
                if (wanted is None or key in wanted) and key not in found and version:
                    found[key] = version
    return dict(sorted(found.items()))
