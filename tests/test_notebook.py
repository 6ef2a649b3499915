"""The writeup notebook as a reader uses it: notebooks/writeup.py paired with an .ipynb and run against a build.

The README tells a reader to open notebooks/writeup.py as a notebook through
jupytext and rerun it against a build's tables. These tests do exactly that
with jupytext's own API (`--set-formats` pairs the percent script with an
.ipynb, `--sync --execute` runs the pair and writes both back) on a small
synthetic results folder (tests/results_folder.py), at the published protocol
so the published columns show too.
"""

from __future__ import annotations

import re
import shutil

import jupytext as jupytext_api
import nbformat
import pytest
from jupytext.cli import jupytext

import results_folder
from attnlab.pipeline.ground import figure_catalog as catalog
from conftest import REPO

NOTEBOOK = REPO / "notebooks" / "writeup.py"


def run_paired(tmp_path, monkeypatch, protocol: str):
    """Pair a copy of the notebook and execute the pair against a synthetic workspace; the executed .ipynb."""
    workspace = results_folder.write(tmp_path / "workspace", protocol=protocol)
    folder = tmp_path / "notebooks"
    folder.mkdir()
    script = folder / "writeup.py"
    shutil.copy2(NOTEBOOK, script)
    shutil.copy2(REPO / "jupytext.toml", tmp_path / "jupytext.toml")  # the project's pairing settings
    monkeypatch.setenv("ATTNLAB_RESULTS", str(workspace / "results"))
    jupytext(["--set-formats", "ipynb,py:percent", str(script)])
    paired = folder / "writeup.ipynb"
    assert paired.is_file(), "--set-formats wrote the paired notebook"
    jupytext(["--sync", "--execute", "--run-path", str(workspace), str(paired)])
    return nbformat.read(paired, as_version=4), script


def outputs(notebook) -> str:
    """Everything the executed cells display (HTML and Markdown), as one text."""
    texts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            assert output.output_type != "error", "".join(output.get("traceback", []))
            data = output.get("data", {})
            texts += [data.get("text/html", ""), data.get("text/markdown", "")]
            if output.output_type == "stream":
                assert output.name != "stderr", output.text
    return "\n".join(t if isinstance(t, str) else "".join(t) for t in texts)


@pytest.mark.slow
def test_the_paired_notebook_runs_against_a_build_at_the_published_protocol(tmp_path, monkeypatch):
    notebook, script = run_paired(tmp_path, monkeypatch, protocol="paper")
    shown = outputs(notebook)
    assert "Abstract." in shown and 'id="table-summary"' in shown
    assert shown.index('id="table-summary"') < shown.index('id="table-params"'), "the summary comes first"
    words = re.sub(r"<[^>]+>", "", shown)  # a header's words are each kept whole by a tag of their own
    assert "the posts' published protocol" in shown and "published (nats/char)" in words
    assert 'id="references"' in shown and "https://tahabouhsine.com/blog/" in shown
    for table in ("contest", "lr_sweep", "normswap", "mass_auroc", "a3_vs_temperature", "ledger", "provenance"):
        assert f'id="table-{table}"' in shown, f"the {table} table is shown"
    assert len(re.findall(r'<figure class="paper"', shown)) == len(catalog.FIGURES)
    assert shown.count('class="made-by"') == len(catalog.FIGURES)
    # The pair stays one notebook: syncing and running it leaves the script exactly as git keeps it.
    assert script.read_text() == NOTEBOOK.read_text()
    assert [c.source for c in jupytext_api.read(script).cells] == [c.source for c in notebook.cells]
    assert notebook.metadata.title == "Does attention need the exponential?"


def test_the_notebooks_prose_types_no_number_a_table_or_constant_holds():
    """Markdown cells carry no decimal number (a loss, a threshold, 1/σ(3)): those come from tables and constants."""
    cells = [c.source for c in jupytext_api.read(NOTEBOOK).cells if c.cell_type == "markdown"]
    typed = [m for text in cells for m in re.findall(r"\d+\.\d+", text)]
    assert not typed, f"numbers typed into the notebook's prose: {typed}"
