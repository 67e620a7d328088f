"""tools/same_numbers.py: the numbers every runtime must reproduce, compared with the golden file (each difference
named, a share within its tolerance the same), in the chapters' own setting, and run by make floor and make colab."""
import json
import os
import re
import sys
from pathlib import Path

import pytest

from connlap_lite.pages.findings import e1 as F1
from connlap_lite.models.text import CORPORA
from make_dry_run import commands, runs

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import same_numbers as S  # noqa: E402


def fake(share=0.66, edge=(42, 40), summary="11 of these 12 sink-free curves") -> dict:
    """A small record of the shape tools/same_numbers.py writes."""
    nums = {"passages": {"m": {c: f"{c}-digest" for c in CORPORA}},
            "reading": {"m": {"layer": 15, "first_column_share": share, "first_column_percent": f"{share:.0%}",
                              "heaviest_edge": list(edge), "heaviest_edge_not_into_0": list(edge)}},
            "e1": {"e1_summary": summary}}
    return {"setting": {"models": ["m"], "passages": 8, "tokens": 64}, "versions": {"python": "3.11.7"},
            "numbers": nums}


def write(path: Path, rec: dict) -> Path:
    path.write_text(json.dumps(rec))
    return path


def test_the_same_numbers_are_the_same_and_a_share_within_its_tolerance_too(tmp_path):
    golden = write(tmp_path / "golden.json", fake())
    assert S.check_against(fake(), golden) == []
    assert S.check_against(fake(share=0.66 + 0.5 * S.TOLERANCE["first_column_share"]), golden) == []


def test_every_difference_is_named(tmp_path):
    golden = write(tmp_path / "golden.json", fake())
    new = fake(share=0.61, edge=(16, 13), summary="10 of these 12 sink-free curves")
    new["numbers"]["passages"]["m"]["narrative"] = "another digest"
    del new["numbers"]["passages"]["m"]["stdlib"]
    new["numbers"]["e1"]["e1_new"] = "a paragraph the golden file lacks"
    diffs = S.check_against(new, golden)
    assert diffs == [
        "e1/e1_new: here only, not in the golden file",
        "e1/e1_summary: '10 of these 12 sink-free curves' here, '11 of these 12 sink-free curves' in the golden file",
        "passages/m/narrative: 'another digest' here, 'narrative-digest' in the golden file",
        "passages/m/stdlib: in the golden file only, not computed here",
        "reading/m/first_column_percent: '61%' here, '66%' in the golden file",
        "reading/m/first_column_share: 0.61 here, 0.66 in the golden file (more than 1e-06 apart)",
        "reading/m/heaviest_edge: [16, 13] here, [42, 40] in the golden file",
        "reading/m/heaviest_edge_not_into_0: [16, 13] here, [42, 40] in the golden file"]


def test_another_setting_is_refused_rather_than_compared(tmp_path):
    golden = write(tmp_path / "golden.json", fake())
    other = fake()
    other["setting"]["passages"] = 32
    [diff] = S.check_against(other, golden)
    assert diff.startswith("setting:") and "remake it" in diff


def test_the_command_writes_its_record_and_exits_1_naming_each_difference(tmp_path, monkeypatch, capsys):
    golden = write(tmp_path / "golden.json", fake())
    monkeypatch.setattr(S, "numbers", lambda progress: fake(share=0.61)["numbers"])
    monkeypatch.setattr(S, "record", lambda nums, cache: {**fake(), "numbers": nums,
                                                          "versions": S.versions(), "cache": cache})
    out = tmp_path / "out" / "same.json"
    monkeypatch.setenv("CONNLAP_CACHE", str(tmp_path / "mine"))
    assert S.main(["--json", str(out), "--compare", str(golden)]) == 1
    # the caller's measurement cache again afterwards (a later model load wrote into the removed folder before)
    assert os.environ["CONNLAP_CACHE"] == str(tmp_path / "mine")
    rec = json.loads(out.read_text())
    assert rec["compared_with"]["same"] is False and rec["compared_with"]["golden"] == "golden.json"
    assert "first_column_share: 0.61 here, 0.66" in "\n".join(rec["compared_with"]["differences"])
    printed = capsys.readouterr().out
    assert "2 differences from" in printed and "reading/m/first_column_percent" in printed
    monkeypatch.setattr(S, "numbers", lambda progress: fake()["numbers"])
    assert S.main(["--json", str(out), "--compare", str(golden)]) == 0
    assert json.loads(out.read_text())["compared_with"] == {"golden": "golden.json", "same": True, "differences": []}
    with pytest.raises(SystemExit):
        S.main(["--compare", str(tmp_path / "missing.json")])


def test_where_names_no_path_of_this_machine():
    assert S.where(ROOT / "connlap_lite") == "the checkout (connlap_lite)"
    assert S.where(Path(sys.prefix) / "lib" / "x") == "the environment (lib/x)"


def parameters(notebook: str, monkeypatch, full: bool) -> dict:
    """What a chapter's parameters cell sets, run as the chapter runs it (``CONNLAP_FULL=1`` in make book)."""
    cells = json.loads((ROOT / notebook).read_text())["cells"]
    [cell] = [c for c in cells if "parameters" in c["metadata"].get("tags", [])]
    if full:
        monkeypatch.setenv("CONNLAP_FULL", "1")
    else:
        monkeypatch.delenv("CONNLAP_FULL", raising=False)
    names = {"sys": sys}                                          # (the chapter's set-up cell imports sys)
    exec("".join(cell["source"]), names)
    return names


@pytest.mark.parametrize("full", [False, True], ids=["make test", "make book"])
def test_the_setting_is_the_chapters_own(monkeypatch, full):
    """tools/same_numbers.py measures what the chapters measure in make test: E1's models, passages and tokens
    and the reading chapter's, as their parameters cells set them (and in make book E1 reads its larger sample)."""
    from connlap_lite.pages.settings import BOOK

    e1 = parameters("book/empirical/e1_stability.ipynb", monkeypatch, full)
    assert tuple(e1["MODELS"]) == S.MODELS == BOOK.models
    assert (e1["N_PASSAGES"], e1["N_TOKENS"]) == BOOK.sample(full)
    if not full:
        assert (e1["N_PASSAGES"], e1["N_TOKENS"]) == (S.N_PASSAGES, S.N_TOKENS), "make test's setting of E1"
    reading = parameters("book/models/reading.ipynb", monkeypatch, full)
    assert tuple(reading["MODELS"]) == S.MODELS
    assert (reading["N_PASSAGES"], reading["N_TOKENS"]) == (S.READING_PASSAGES, S.READING_TOKENS)


def test_the_golden_file_holds_every_number_of_this_setting():
    golden = json.loads(S.GOLDEN.read_text())
    assert golden["setting"] == S.record({}, "")["setting"]
    nums = golden["numbers"]
    assert set(nums["passages"]) == set(nums["reading"]) == set(S.MODELS)
    assert all(set(d) == set(CORPORA) and all(re.fullmatch(r"[0-9a-f]{64}", h) for h in d.values())
               for d in nums["passages"].values())
    for r in nums["reading"].values():
        assert 0 < r["first_column_share"] < 1 and r["first_column_percent"] == f"{r['first_column_share']:.0%}"
        assert r["heaviest_edge"][0] != r["heaviest_edge"][1] and r["heaviest_edge_not_into_0"][1] != 0
    assert tuple(nums["e1"]) == tuple(k for k in F1.KEYS if k not in ("e1_q4_says", "e1_long_says"))
    assert {"python", "torch", "transformers", "numpy"} <= set(golden["versions"])


@pytest.mark.parametrize("target", ["floor", "colab"])
def test_make_floor_and_make_colab_compare_with_the_golden_file_after_their_chapters(target):
    """make floor and make colab run tools/same_numbers.py on their own venv after their chapters, comparing with
    the golden file that this script writes with the project's venv (make's dry run)."""
    cmds = commands(target)
    [(chapters_by, _)] = runs(cmds, "tools/alone.py")
    [(by, args)] = runs(cmds, "tools/same_numbers.py")
    assert by == chapters_by and by.endswith("/venv/bin/python") and not by.startswith(".venv/"), \
        f"make {target} compares with its own runtime"
    assert (ROOT / args[args.index("--compare") + 1]).resolve() == S.GOLDEN.resolve()
    alone = next(i for i, c in enumerate(cmds) if "tools/alone.py" in c)
    assert alone < next(i for i, c in enumerate(cmds) if "tools/same_numbers.py" in c), "after its chapters"
