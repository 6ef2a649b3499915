"""Is this build running on the locked environment? (JAX-free; the writeup calls it.)

constraints.txt at the repository root pins every package to the exact
version the project is tested with (`pip install -c constraints.txt -e .`).
A build made with other versions may not give the paper's numbers back, so the
writeup lists the packages whose installed version differs from the lock
(installed versions as attnlab.core.packages reads them for the whole project).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from attnlab.core.packages import installed_versions, normalize

LOCK = Path(__file__).resolve().parents[4] / "constraints.txt"  # the checkout's lock (src/attnlab/pipeline/ground/..)
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s;]+)")


def read_lock(constraints_path: str | Path = LOCK) -> dict[str, str]:
    """{normalized name: pinned version} of every `name==version` line; comments and options are skipped."""
    pins = {}
    for line in Path(constraints_path).read_text(encoding="utf-8").splitlines():
        line = line.split(" #", 1)[0].strip()
        match = _PIN.match(line)
        if match and not line.startswith("#"):
            pins[normalize(match.group(1))] = match.group(2)
    return pins


def version_drift(constraints_path: str | Path = LOCK) -> list[str]:
    """Installed packages whose version differs from the lock, one line each ('jax 0.4.36 installed, 0.4.35 locked').

    Packages the lock pins but this environment lacks (a platform-only
    dependency) and packages the lock does not name are not drift. An empty
    list means every locked package that is installed has its locked version.
    """
    pins = read_lock(constraints_path)
    installed = installed_versions(pins)
    return [f"{name} {installed[name]} installed, {version} locked"
            for name, version in sorted(pins.items())
            if name in installed and installed[name] != version]


def main(argv: list[str] | None = None) -> int:
    """`python -m attnlab.pipeline.ground.environment [constraints.txt]`: print the drift; exit 1 if there is any."""
    argv = sys.argv[1:] if argv is None else argv
    path = Path(argv[0]) if argv else LOCK
    drift = version_drift(path)
    for line in drift:
        print(line)
    if not drift:
        print(f"every installed package matches {path}")
    return 1 if drift else 0


if __name__ == "__main__":
    sys.exit(main())
