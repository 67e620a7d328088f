"""The Colab edition as readers get it (``make colab-edition`` writes it to ``$CONNLAP_EDITION``, default
_build/colab): plain Jupyter Markdown, with no MyST left in any Markdown cell or shown caption, and its theory
chapters and explorers executed in a plain Jupyter kernel in which myst-nb cannot be imported, as on Colab, every
glued figure and paragraph shown in its place once computed."""
import json
import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EDITION = Path(os.environ.get("CONNLAP_EDITION", ROOT / "_build" / "colab"))
WITHOUT_MYST_NB = Path(__file__).resolve().parent / "without_myst_nb"
sys.path.insert(0, str(ROOT / "tools"))
import colab_edition  # noqa: E402  (tools/colab_edition.py: what counts as MyST left, what a show cell shows)

if not (EDITION / "book").is_dir():
    pytest.fail(f"no Colab edition in {EDITION}: run `make colab-edition` first (make test does)", pytrace=False)
NOTEBOOKS = sorted((EDITION / "book").rglob("*.ipynb"))
RUN = sorted((EDITION / "book" / "theory").glob("*.ipynb")) + [EDITION / "book" / "interactive" / "explorers.ipynb"]
PLACEHOLDER = "computed further down"
EXECUTED = ROOT / "_build" / "edition-executed"
COLAB_RECORD = ROOT / "benchmarks" / "results" / "colab_chapters.json"   # make colab's record of each chapter


def test_every_chapter_is_in_the_edition():
    chapters = sorted(p.relative_to(ROOT) for p in (ROOT / "book").rglob("*.ipynb") if ".ipynb_checkpoints" not in
                      p.parts)
    assert sorted(p.relative_to(EDITION) for p in NOTEBOOKS) == chapters


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_myst_left_in_markdown_or_captions(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    left = {i: colab_edition.myst_left(colab_edition.shown_text(c)) for i, c in enumerate(nb["cells"])}
    assert not {i: m for i, m in left.items() if m}, f"{path.name}: MyST that Colab would show raw: {left}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_set_up_is_a_short_colab_form(path):
    first = next(c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code")
    lines = "".join(first["source"]).splitlines()
    timed = any(c["chapter"] == path.relative_to(EDITION).as_posix() and c.get("passed")
                for c in json.loads(COLAB_RECORD.read_text(encoding="utf-8"))["chapters"])
    if timed:
        assert re.match(r"#@title Set-up: on Colab this installs connlap_lite[^.]*\((\d+ MB|[\d.]+ GB)\); a first "
                        r"run of the chapter takes (under a minute|about \d+ minutes) there\. "
                        r"\{ display-mode: \"form\" \}$", lines[0]), \
            f"{path.name}: the set-up form's title must say what it installs and how long a run takes, from make " \
            f"colab's record: {lines[0]}"
    else:                   # (a chapter make colab has not run: no size or time that was not measured)
        assert re.match(r"#@title Set-up: on Colab this installs connlap_lite[^.(]*; its first run there has not "
                        r"been timed yet\. \{ display-mode: \"form\" \}$", lines[0]), lines[0]
    assert len(lines) <= 6 and first["metadata"].get("cellView") == "form", lines


def test_the_kernel_cannot_import_myst_nb(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(WITHOUT_MYST_NB), os.environ.get("PYTHONPATH", "")]))
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                     "source": "try:\n    import myst_nb\nexcept ModuleNotFoundError:\n    print('absent')"}],
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    assert _execute(nb, ROOT)["cells"][0]["outputs"][0]["text"].strip() == "absent"


def _execute(nb: dict, cwd: Path) -> dict:
    import nbclient
    import nbformat

    node = nbformat.from_dict(nb)
    nbclient.NotebookClient(node, timeout=1800, kernel_name="python3",
                            resources={"metadata": {"path": str(cwd)}}).execute()
    return node


@pytest.mark.parametrize("path", RUN, ids=lambda p: p.stem)
def test_chapter_runs_in_plain_jupyter_and_shows_every_glued_value(path, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(WITHOUT_MYST_NB), os.environ.get("PYTHONPATH", "")]))
    nb = json.loads(path.read_text(encoding="utf-8"))
    ran = _execute(nb, tmp_path)
    kept = EXECUTED / path.relative_to(EDITION)             # to look at (nbconvert), as a student sees it run
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text(json.dumps(ran, indent=1, ensure_ascii=False), encoding="utf-8")
    shows = [c for c in ran["cells"] if colab_edition.SHOW in c["metadata"].get("tags", [])]
    for cell in shows:
        shown = json.dumps(cell["outputs"])
        assert cell["outputs"] and PLACEHOLDER not in shown, \
            f"{path.name}: a glued value was never shown in its place: {''.join(cell['source'])[:200]}"
        markdown = "\n".join("".join(o.get("data", {}).get("text/markdown", "")) for o in cell["outputs"])
        assert not colab_edition.myst_left(markdown), f"{path.name}: a computed paragraph shows MyST: {markdown}"
