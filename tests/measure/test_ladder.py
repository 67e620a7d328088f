"""``connlap ladder`` on tiny random GPT-NeoX ladders of growing width (saved as folders, no network): with a planted
effect (heads moved towards isometries, more with size) E3 says "holds", without one it does not; the command
line writes the reports and the figure, resumes from the cache, and refuses bad ladders by name.

Each ladder is four models of 2 layers (widths 32 to 96) on 8 passages of 16 tokens with 3 random-init seeds:
about 15 s per ladder on an idle two-core machine.  Two ladder seeds with the effect and two without: E3 holds on
the head defect in both with it (a rate of at least 80% needs both here) and in neither without it (at most 5%)."""
from __future__ import annotations

import json

import pytest

from connlap_lite.measure import ladder as L
from connlap_lite.__main__ import main

from tiny_models import save_family

SETTING = dict(n_passages=8, n_tokens=16, random_seeds=(0, 1, 2))
SEEDS = (0, 1)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    import os

    old = os.environ.get("CONNLAP_CACHE")
    os.environ["CONNLAP_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if old is None:
        os.environ.pop("CONNLAP_CACHE")
    else:
        os.environ["CONNLAP_CACHE"] = old


@pytest.fixture(scope="module")
def ladders(tmp_path_factory, cache):
    out = {}
    for planted in (0.0, 0.8):
        for seed in SEEDS:
            folders = L.tiny_ladder(tmp_path_factory.mktemp(f"ladder{planted}-{seed}"), seed=seed, planted=planted)
            out[planted, seed] = folders, L.measure_ladder(folders, **SETTING)
    return out


def test_a_planted_effect_holds_and_none_does_not(ladders):
    planted = [L.verdicts(reports)["head_defect"]["verdict"] for (p, _), (_, reports) in ladders.items() if p]
    none = [L.verdicts(reports)["head_defect"]["verdict"] for (p, _), (_, reports) in ladders.items() if not p]
    assert planted.count("holds") / len(planted) >= 0.8, planted
    assert none.count("holds") / len(none) <= 0.05, none
    for (_, _), (folders, reports) in ladders.items():
        assert [r["model"] for r in reports] == folders                     # smallest first, as given
        assert len({r["family"] for r in reports}) == 1


def test_the_planted_heads_are_isometries_at_full_strength(tmp_path):
    from connlap_lite.measure import metrics as M
    from connlap_lite.models.extraction import head_transports
    from tiny_models import build

    model = build("gpt_neox")
    before = M.scaled_isometry_defect(head_transports(model, 0))
    L.plant_isometry(model, 1.0)
    after = M.scaled_isometry_defect(head_transports(model, 0))
    assert (before > 0.05).all() and (after < 1e-6).all()


def test_the_command_resumes_from_the_cache_and_writes_its_outputs(ladders, tmp_path, capsys):
    folders, reports = ladders[0.8, SEEDS[0]]
    assert main(["ladder", *folders, "--passages", "8", "--tokens", "16", "--seeds", "3", "--out",
                 str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "E3 head_defect" in printed and "holds" in printed and "power" in printed
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert "e3.json" in written and "e3_ladder.png" in written and len(written) == len(folders) + 2
    again = json.loads((tmp_path / "out" / "0-neox-32.json").read_text())
    assert again["conditions"] == reports[0].to_dict()["conditions"]       # the cached report, not a new one


@pytest.mark.parametrize("case,message", [
    ("one", "at least two sizes"),
    ("missing", "does not exist"),
    ("mixed", "one family"),
    ("order", "smallest first"),
])
def test_bad_ladders_are_refused_by_name(case, message, tmp_path, ladders, capsys):
    folders = ladders[0.0, SEEDS[0]][0]
    args = {"one": folders[:1], "missing": [folders[0], str(tmp_path / "nowhere")],
            "mixed": [folders[0], str(save_family("llama", tmp_path / "llama"))],
            "order": [folders[1], folders[0]]}[case]
    assert main(["ladder", *args]) == 2
    err = capsys.readouterr().err
    assert "error: " in err and message in err and "models" in err and "Traceback" not in err


def test_power_of_the_ladder():
    assert L.slope_power(2) == 0.0 < L.slope_power(3) < L.slope_power(5) < L.slope_power(8) <= 1.0


def test_a_tiny_ladder_needs_no_model_package(tmp_path, monkeypatch):
    """make colab found the ladder appendix failing on Colab, whose set-up cell installs the package and
    transformers only: the tiny ladder read the offline MiniLM's tokenizer. It now makes its own."""
    from connlap_lite.models import load as models

    def refused(*args, **kwargs):
        raise ModuleNotFoundError("no offline model package here")

    monkeypatch.setattr(models, "offline_source", refused)
    monkeypatch.setattr(models, "packaged", refused)
    folders = L.tiny_ladder(tmp_path, widths=(32, 48), layers=1)
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(folders[0])
    assert len(tok) == 257 and tok.pad_token == "<|endoftext|>"
