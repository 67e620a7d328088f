"""The book's notebooks keep their promises: they assert, they are in the table of contents,
their install cells name the repository of _config.yml, and each chapter has its exercises."""
import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p for p in (ROOT / "book").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())


def toc_files():
    files = [TOC["root"]]
    for part in TOC.get("parts", []):
        for ch in part.get("chapters", []):
            files.append(ch["file"])
            files += [s["file"] for s in ch.get("sections", [])]
    return files


def cells(nb, kind):
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == kind]


def load(path):
    return json.loads(path.read_text())


def test_notebooks_found():
    assert len(NOTEBOOKS) >= 5, NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_asserts_what_it_claims(path):
    code = "\n".join(cells(load(path), "code"))
    assert re.search(r"^\s*assert\b", code, re.M), f"{path.name} has no assert"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stored_without_outputs(path):
    for c in load(path)["cells"]:
        if c["cell_type"] == "code":
            assert not c.get("outputs"), f"{path.name} stores outputs; clear them before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_install_cell_names_the_configured_repository(path):
    nb = load(path)
    first = next(c for c in nb["cells"] if c["cell_type"] == "code")
    src = "".join(first["source"])
    assert "hide-output" in first["metadata"].get("tags", []), f"{path.name}: first code cell must be tagged hide-output"
    assert f"git+{CONFIG['repository']['url']}" in src, f"{path.name}: install cell must use {CONFIG['repository']['url']}"


def test_every_notebook_is_in_the_toc_and_every_toc_entry_exists():
    listed = set(toc_files())
    for path in NOTEBOOKS:
        assert str(path.relative_to(ROOT).with_suffix("")) in listed, f"{path} is missing from _toc.yml"
    for f in listed:
        assert any((ROOT / f).with_suffix(s).exists() for s in (".md", ".ipynb")), f"_toc.yml lists missing {f}"


THEORY = [p for p in NOTEBOOKS if p.parent.name == "theory"]


@pytest.mark.parametrize("path", THEORY, ids=lambda p: p.stem)
def test_theory_chapter_has_results_and_exercises(path):
    md = "\n".join(cells(load(path), "markdown"))
    assert re.search(r"\{prf:(theorem|proposition|definition|corollary)\}", md), path.name
    assert "{prf:proof}" in md, path.name
    exercises = re.findall(r"```\{exercise\}", md)
    solutions = re.findall(r"```\{solution-start\}", md)
    assert len(exercises) >= 2, f"{path.name} has {len(exercises)} exercises"
    assert len(solutions) == len(exercises), f"{path.name}: every exercise needs a solution"
    assert ":class: dropdown" in md


def test_bibliography_keys_exist():
    bib = (ROOT / "book" / "references.bib").read_text()
    keys = set(re.findall(r"@\w+\{([^,]+),", bib))
    text = "\n".join(p.read_text() for p in NOTEBOOKS) + "\n".join(p.read_text() for p in (ROOT / "book").rglob("*.md"))
    for cited in re.findall(r"\{cite(?::\w+)?\}`([^`]+)`", text):
        for key in cited.split(","):
            assert key.strip() in keys, f"cited key {key} is not in references.bib"
    assert {"singer2012vector", "vaswani2017attention"} <= keys
