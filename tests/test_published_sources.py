"""Every published number the ledger sets beside a measurement has a source: it is written in the posts or in
../shared/docs/published.md (the posts' numbers, checked). A number found in neither (before: the ablation
row's 169,234 and 211,756, and a bits/char the later post never gave) fails here, naming where it sits."""

from __future__ import annotations


import pytest
import yaml

from conftest import REPO

PUBLISHED = REPO / "src" / "attnlab" / "pipeline" / "ground" / "published.yaml"
SOURCES = [REPO.parent / "shared" / "docs" / "published.md", *sorted((REPO.parent / "shared" / "seeds").glob("*.txt"))]


def written_forms(x) -> set[str]:
    """The ways a post or the digest writes a number, each keeping every digit of it: as is, with thousands
    separators, an LR's short form (3e-4), a share in percent. A rounded form (1.5 for 1.4968) is no source."""
    forms = {str(x), f"{x:g}", f"{x:,}", f"{x:,g}"}
    if isinstance(x, float):
        forms |= {f"{x:.{d}f}" for d in range(5)} | {f"{100 * x:.{d}f}%" for d in range(3)}
        forms |= {f"{x:.0e}".replace("e-0", "e-"), f"{x:.1e}".replace("e-0", "e-")}
        if x == int(x):
            forms |= {f"{int(x):,}", str(int(x))}
    return {f for f in forms if _same(f, x)}


def _same(form: str, x) -> bool:
    text = form.replace(",", "")
    value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    return abs(value - x) <= 1e-9 * max(1.0, abs(x))


def numbers(obj, path=()):
    """Every numeric leaf of published.yaml with its path (keys that are LRs stay keys, not numbers)."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from numbers(value, (*path, str(key)))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from numbers(value, (*path, str(i)))
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield ".".join(path), obj


def unsourced(published: dict, text: str) -> list[tuple[str, float]]:
    return [(where, x) for where, x in numbers(published) if not any(f in text for f in written_forms(x))]


@pytest.fixture(scope="module")
def source_text() -> str:
    missing = [p for p in SOURCES if not p.is_file()]
    if missing or len(SOURCES) < 3:
        pytest.skip(f"the posts' text is not beside this checkout ({missing or 'no seeds'})")
    return "\n".join(p.read_text(encoding="utf-8") for p in SOURCES).replace("\u2212", "-")


def test_every_published_number_is_written_in_a_source(source_text):
    published = yaml.safe_load(PUBLISHED.read_text())
    assert unsourced(published, source_text) == []


def test_a_number_from_nowhere_is_caught(source_text):
    published = yaml.safe_load(PUBLISHED.read_text())
    planted = published | {"ablation": published["ablation"] | {"matched": {"yat": {"max": 169234}}}}
    assert unsourced(planted, source_text) == [("ablation.matched.yat.max", 169234)]
