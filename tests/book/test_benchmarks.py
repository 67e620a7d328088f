"""The benchmarks run (on tiny sizes), write the JSON the performance appendix reads, and that JSON is sound."""
import importlib.util
import json
import math
import re
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
RESULTS = BENCH / "results"
GOAL_KEYS = {"what", "measured", "goal", "op", "unit", "met", "reason"}


def load(name):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def positive(x):
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def check_schema(res, name, quick):
    assert res["benchmark"] == name
    assert res["quick"] is quick
    m = res["machine"]
    assert {"date_utc", "torch", "cpus", "memory_gib", "omp_num_threads"} <= set(m), m
    assert res["goals"], f"{name} states no goal"
    for g in res["goals"]:
        assert set(g) == GOAL_KEYS, g
        assert g["op"] in ("<=", ">=")
        if g["measured"] is None:
            assert g["met"] is None and g["reason"], f"{name}: an unmeasured goal must say why: {g}"
        else:
            count = g["unit"] == "notebooks"                    # a count of failures may be 0; times, ratios not
            assert positive(g["measured"]) or (count and g["measured"] == 0), g
            assert g["met"] == (g["measured"] <= g["goal"] if g["op"] == "<=" else g["measured"] >= g["goal"])


def test_walk_apply_quick(tmp_path):
    res = load("walk_apply").main(["--quick", "--json", str(tmp_path / "w.json")])
    check_schema(json.loads((tmp_path / "w.json").read_text()), "walk_apply", True)
    for row in res["rows"]:
        assert all(positive(r) for r in row["ratio"].values()), row["ratio"]
        assert row["error_vs_torch"] < 1e-10                    # the walk computes the same attention
        assert len(row["seconds"]["walk"]) == res["settings"]["rounds"]
    assert any("dense" in r["seconds"] for r in res["rows"])


def test_walk_apply_skips_dense_above_the_cap(tmp_path, monkeypatch):
    mod = load("walk_apply")
    monkeypatch.setitem(mod.QUICK, "dense_cap_gib", 1e-6)
    res = mod.main(["--quick", "--json", str(tmp_path / "w.json")])
    assert all("dense_skipped" in r and "GiB" in r["dense_skipped"] for r in res["rows"])
    assert res["dense_largest_n"] is None and res["dense_first_skipped_n"] == res["rows"][0]["n"]


def test_spectra_quick(tmp_path):
    res = load("spectra").main(["--quick", "--json", str(tmp_path / "s.json")])
    check_schema(json.loads((tmp_path / "s.json").read_text()), "spectra", True)
    for row in res["rows"]:
        assert positive(row["arpack_seconds"]) and row["matvecs"] > 0
        if "dense_seconds" in row:
            assert row["error_vs_dense"] < 1e-6                 # ARPACK finds the dense solver's eigenvalues


def test_extraction_quick(tmp_path):
    res = load("extraction").main(["--quick", "--json", str(tmp_path / "e.json")])
    check_schema(json.loads((tmp_path / "e.json").read_text()), "extraction", True)
    assert [r["n_layer"] for r in res["layers"]] == res["settings"]["layers"]
    for row in res["layers"]:
        assert all(positive(r) for r in row["ratio"].values())
        assert set(row["memory"]) >= {"floor", "forward", "walks"}


def test_gpu_8b_quick_and_no_gpu_report(tmp_path):
    mod = load("gpu_8b")
    res = mod.main(["--quick", "--json", str(tmp_path / "g.json")])
    assert all(positive(r["tokens_per_second"]) for r in res["runs"])
    check_schema(json.loads((tmp_path / "g.json").read_text()), "gpu_8b", True)
    import torch
    if not torch.cuda.is_available():
        none = mod.main(["--json", str(tmp_path / "none.json")])
        assert none["status"].startswith("not run") and none["goals"][0]["met"] is None
        assert "gpu_8b.py" in none["reproduce"]


def test_book_times_quick_and_log(tmp_path):
    mod = load("book_times")
    res = mod.main(["--quick", "--json", str(tmp_path / "b.json")])
    assert res["notebooks"]["scratch.ipynb"]["status"] == "ok"
    check_schema(json.loads((tmp_path / "b.json").read_text()), "book_times", True)
    log = ("12.50s call     book/theory/walks.ipynb::Cell 3\n 0.50s setup    book/theory/walks.ipynb::Cell 0\n"
           "3.00s call     book/models/reading.ipynb::Cell 7\n1.0s call tests/theory/test_walks.py::test_x\n")
    assert mod.parse_durations(log) == {"book/theory/walks.ipynb": 13.0, "book/models/reading.ipynb": 3.0}
    # a new --json file starts from the committed results: timing make test there keeps make book's numbers
    (tmp_path / "t.log").write_text(log)
    res = mod.main(["--from-log", str(tmp_path / "t.log"), "--json", str(tmp_path / "new.json")])
    committed = json.loads((RESULTS / "book_times.json").read_text())
    assert res["make_book"] == committed["make_book"] and res["notebooks"]["book/theory/walks.ipynb"]["seconds"] == 13.0


def test_book_times_reads_a_make_book_log(tmp_path):
    mod = load("book_times")
    log = tmp_path / "make_book.log"
    log.write_text("12s /clone/book/theory/walks.ipynb: Executing notebook using local CWD [mystnb]\n"
                   "15s /clone/book/theory/walks.ipynb: Executed notebook in 3.25 seconds [mystnb]\n"
                   "700s /clone/book/empirical/beyond.ipynb: WARNING: Executing notebook failed: CellTimeoutError "
                   "[mystnb.exec]\n"
                   "make book finished: 3100 s, exit 0\n")
    parsed = mod.parse_book_log(log.read_text())
    assert parsed == {"notebooks": {"book/theory/walks.ipynb": 3.25}, "failed": ["book/empirical/beyond.ipynb"],
                      "seconds": 3100.0, "returncode": 0}
    res = mod.main(["--from-book-log", str(log), "--list-only", "--json", str(tmp_path / "b.json")])
    cache = tmp_path / "cache" / "measurements"
    cache.mkdir(parents=True)
    (cache / "m-1.json").write_text(json.dumps({"model": "m", "passages": 16, "tokens": 128, "corpus": "pydoc",
                                                "conditions": {"trained": {}, "random0": {}}, "seconds": 12.5}))
    (cache / "m-2.json").write_text("{not json")
    res = mod.main(["--from-book-log", str(log), "--book-cache-dir", str(tmp_path / "cache"), "--list-only",
                    "--json", str(tmp_path / "b.json")])
    assert res["make_book"]["seconds"] == 3100.0 and res["make_book"]["cache_at_start"] == {"measurement": "empty"}
    assert res["make_book"]["commit"] is None, "a log read afterwards has the commit its caller names, or none"
    assert [(m["model"], m["seconds"], m["conditions"]) for m in res["make_book"]["measurements"]] == \
        [("m", 12.5, ["random0", "trained"])]
    goal = [g for g in res["goals"] if "make book" in g["what"]]
    assert [g["met"] for g in goal] == [True, False] and "beyond" in goal[1]["reason"]   # in time, but a page failed
    assert goal[0]["what"].endswith("16 x 128)")                  # the setting most of its measurements use
    assert mod.main_setting([{"passages": 8, "tokens": 640}] + [{"passages": 32, "tokens": 128}] * 2) == (32, 128)
    log.write_text(log.read_text().replace("WARNING: Executing notebook failed: CellTimeoutError", "Executed"))
    res = mod.main(["--from-book-log", str(log), "--list-only", "--json", str(tmp_path / "b.json")])
    assert [g["met"] for g in res["goals"] if "make book" in g["what"]] == [True, True]


def test_goal_rows_say_whether_they_are_met():
    C = load("_common")
    assert C.goal("x", 1.2, 1.3, "x")["met"] is True
    assert C.goal("x", 1.4, 1.3, "x")["met"] is False
    assert C.goal("x", 2.0, 1.0, "x", op=">=")["met"] is True
    assert C.goal("x", None, 1.0, "x", reason="no GPU")["met"] is None


NAMES = ["extraction", "walk_apply", "spectra", "gpu_8b", "book_times"]


@pytest.mark.parametrize("name", NAMES)
def test_committed_results_parse(name):
    path = RESULTS / f"{name}.json"
    assert path.exists(), f"{path} is missing: run `python benchmarks/{name}.py` (or `make bench`)"
    check_schema(json.loads(path.read_text()), name, False)


def test_run_prints_the_table_of_committed_results(capsys):
    assert load("run").main(["--table"]) == 0
    out = capsys.readouterr().out
    for name in NAMES:
        assert name in out
    assert "(no results" not in out


def test_book_times_records_each_cache_as_a_run_found_it(tmp_path):
    mod = load("book_times")
    home, cache = tmp_path / "home", tmp_path / "connlap"
    env = {"HOME": str(home), "CONNLAP_CACHE": str(cache)}
    assert mod.cache_state(env) == {"pip": "empty", "model": "empty", "measurement": "empty"}
    (cache / "measurements").mkdir(parents=True)
    (cache / "measurements.lock").write_text("")                     # a lock is not a cache entry
    assert mod.cache_state(env) == {"pip": "empty", "model": "empty", "measurement": "empty"}
    (cache / "measurements" / "m-1.json").write_text("{}")
    assert mod.cache_state(env)["measurement"] == "warm" and mod.cache_state(env)["model"] == "empty"
    (cache / "converted" / "m").mkdir(parents=True)
    (cache / "converted" / "m" / "model.safetensors").write_text("x")
    (home / ".cache" / "pip" / "http").mkdir(parents=True)
    (home / ".cache" / "pip" / "http" / "a").write_text("x")
    assert mod.cache_state(env) == {"pip": "warm", "model": "warm", "measurement": "warm"}
    assert mod.cache_state({**env, "PIP_NO_CACHE_DIR": "off"})["pip"] == "warm"
    assert mod.cache_state({**env, "PIP_NO_CACHE_DIR": "1"})["pip"] == "off"
    facts = mod._run_facts()
    assert facts["commit"] == mod.commit() and re.fullmatch(r"[0-9a-f]{40}", facts["commit"])
    assert set(facts["cache_at_start"]) == {"pip", "model", "measurement"}
    assert facts["venv_at_start"] in ("installed", "absent")


def test_book_times_goal_reads_one_run_only():
    mod = load("book_times")
    report = {"notebooks": {}, "make_test": {"seconds": 900.0, "returncode": 2}}
    goal = mod.summarise(report)["goals"][0]
    assert goal["measured"] is None and goal["met"] is None and "failed: exit status 2" in goal["reason"]
    report["make_test"]["returncode"] = 0
    assert mod.summarise(report)["goals"][0]["met"] is True
    committed = json.loads((RESULTS / "book_times.json").read_text())
    assert all(r.get("what") for r in committed.get("earlier", [])), "an earlier record says what it was"
    for name in ("make_test", "make_book"):
        rec = committed.get(name)
        assert rec is None or (rec.get("commit") and rec.get("date_utc")), f"{name} names its commit and date"
