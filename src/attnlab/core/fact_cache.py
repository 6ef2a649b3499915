"""A small JSON cache of what source files imply, keyed by their bytes, kept between processes.

The fingerprints (attnlab.core.fingerprint) parse every attnlab module on each
`snakemake -n`; what a file's bytes imply is stored here under the sha256 of
those bytes, so an edited file is never served from the cache. The file as a
whole is tagged with the Python version and a digest of the scanner's source
(which the scanner supplies), and carries a checksum of its entries: another Python,
another scanner or a hand edit makes the whole file be ignored. A lost, corrupt
or foreign cache only costs the parse.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import sys
from pathlib import Path


def _checksum(tag: str, entries: dict) -> str:
    return hashlib.sha256(json.dumps([tag, entries], sort_keys=True).encode()).hexdigest()


class FactCache:
    """What file bytes imply, keyed by their sha256; optionally kept in a JSON file between processes.

    A save keeps only the entries this process used, so the file tracks the checkout, not its history.
    The file is trusted only whole: its tag must name this Python and these scanners, and its checksum
    must match its entries."""

    def __init__(self, scanner_digest: str, version: int):
        self.entries: dict = {}
        self.checked: dict[str, dict] = {}  # facts key -> its facts, read and checked once in this process
        self.used: set[str] = set()
        self.path: Path | None = None
        self.dirty = False
        self.tag = f"{version}:{sys.version_info[0]}.{sys.version_info[1]}:{scanner_digest}"

    def persist_to(self, path: Path) -> None:
        """Load `path` now and write it back when the process exits."""
        if self.path is None:
            atexit.register(self.save)
        self.load(path)

    def load(self, path: Path) -> None:
        self.path = Path(path)
        try:
            stored = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return  # absent or unreadable: start empty, the parse is the fallback
        if not (isinstance(stored, dict) and stored.get("tag") == self.tag and isinstance(stored.get("entries"), dict)):
            return  # another Python, another scanner, or not a cache at all
        if stored.get("checksum") != _checksum(self.tag, stored["entries"]):
            return  # edited since it was written: none of it is trusted
        self.entries = {**stored["entries"], **self.entries}

    def get(self, key: str):
        if key in self.entries:
            self.used.add(key)
        return self.entries.get(key)

    def put(self, key: str, value) -> None:
        self.entries[key] = value
        self.used.add(key)
        self.dirty = True

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        from attnlab.core.io import atomic_write_text

        try:
            kept = {key: self.entries[key] for key in self.used}
            atomic_write_text(self.path, json.dumps(
                {"tag": self.tag, "entries": kept, "checksum": _checksum(self.tag, kept)}, sort_keys=True))
            self.dirty = False
        except OSError:
            pass  # a read-only workspace just parses again next time
