"""A verdict is typed values (its outcome, whether the build is off the claim's protocol, the side the data alone
take) from which its text is rendered once; no code reads a verdict back out of its text."""

from __future__ import annotations

import re

import pytest

from attnlab.pipeline import claims
from attnlab.pipeline.claims import common
from attnlab.pipeline.ground import verdicts
from conftest import REPO

# What reading a verdict out of its text looks like: its word parsed by prefix, a verdict column mapped or matched.
PARSING = re.compile(r"verdict_word\(|\.verdict\.(map|str|isin|astype)\b|verdict\)?\.startswith\(|"
                     r"\.verdict == |\.verdict\.eq\(")


def test_no_code_reads_a_verdict_out_of_its_text():
    found = []
    for path in sorted((REPO / "src" / "attnlab").rglob("*.py")) + [REPO / "notebooks" / "writeup.py"]:
        if path.name == "verdicts.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if PARSING.search(line):
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert found == []


def test_the_scan_catches_a_verdict_parsed_from_its_text():
    assert PARSING.search('rows = ledger[ledger.verdict.astype(str).str.startswith("inconclusive at")]')
    assert PARSING.search("word = verdicts.verdict_word(claim.verdict)")


@pytest.mark.parametrize("word", verdicts.VERDICTS)
@pytest.mark.parametrize("off", [False, True])
def test_the_text_is_rendered_from_the_typed_outcome(word, off):
    claim = common.Claim(common.BEYOND, "c", "check", "–", "–", "")
    if off and word != verdicts.INCONCLUSIVE:
        return
    common.decide(claim, word, "default", off_protocol=off)
    assert claim.outcome == word and claim.off_protocol == off
    expected = ("not testable at default" if word == verdicts.NOT_TESTABLE
                else "inconclusive at default" if off else word)
    assert claim.verdict == expected
    with pytest.raises(ValueError, match="a verdict is one of"):
        common.decide(claim, "holds at default")


def test_every_row_of_a_build_carries_its_typed_verdict(tmp_path):
    import results_folder

    ledger = claims.ledger(results_folder.tables("default"))
    assert set(ledger.outcome) <= set(verdicts.VERDICTS)
    for row in ledger.itertuples():
        off = bool(row.off_protocol)
        assert row.verdict.startswith(row.outcome)  # rendered from it, never the other way
        assert off == row.verdict.startswith("inconclusive at")
        if off:
            assert row.lean_side in common.LEAN_SIDES
