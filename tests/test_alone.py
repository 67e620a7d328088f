"""tools/alone.py: chapters copied out alone and executed, each failure named, a run against the checkout refused."""
import json
import sys
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import alone  # noqa: E402


def notebook(path: Path, *sources: str) -> Path:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nbformat.write(nb, path)
    return path


def test_each_chapter_alone_passed_or_failed_with_its_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(alone, "ROOT", tmp_path / "elsewhere")       # (here any connlap_lite counts as installed)
    ok = notebook(tmp_path / "ok.ipynb", "import os; assert os.listdir('.') == ['ok.ipynb']  # alone in its folder")
    bad = notebook(tmp_path / "bad.ipynb", "x = 1", "raise ValueError('a chapter that breaks')")
    report = tmp_path / "chapters.json"
    assert alone.main(["--report", str(report), str(ok), str(bad)]) == 1
    rows = json.loads(report.read_text())
    assert [(Path(r["chapter"]).name, r["passed"]) for r in rows] == [("ok.ipynb", True), ("bad.ipynb", False)]
    assert "ValueError: a chapter that breaks" in rows[1]["error"] and rows[0]["where"].endswith("__init__.py")
    assert "1 of 2 chapters passed" in capsys.readouterr().out


def test_the_checkouts_package_does_not_pass_for_the_wheel(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(alone.ROOT))
    row = alone.run_alone(notebook(tmp_path / "ok.ipynb", "x = 1"), timeout=120)
    assert not row["passed"] and "was not the installed wheel" in row["error"]


def test_beside_copies_a_folder_of_the_checkout_only(tmp_path, monkeypatch):
    monkeypatch.setattr(alone, "ROOT", tmp_path)
    (tmp_path / "data" / "results").mkdir(parents=True)
    (tmp_path / "data" / "results" / "r.json").write_text("{}")
    nb = notebook(tmp_path / "nb.ipynb", "import json; assert json.load(open('data/results/r.json')) == {}")
    row = alone.run_alone(nb, timeout=120, beside=[tmp_path / "data" / "results"])
    assert row["passed"], row
    with pytest.raises(SystemExit):
        alone.main(["--beside", "/", str(nb)])
