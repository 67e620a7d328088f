"""The rules of connlap_lite.verdicts.rules and the scorecard's robustness, on synthetic reports whose answer is known."""
import numpy as np
import pytest

from connlap_lite.verdicts import rules as R
from connlap_lite.verdicts import scorecard as S
from connlap_lite.measure import stats
from connlap_lite.verdicts import words as verdicts
from connlap_lite.verdicts import record
from connlap_lite.verdicts.record import Report

from fake_reports import B, L, fake


def test_holm_matches_the_step_down_definition():
    assert stats.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert stats.holm([0.5]) == [0.5]
    assert stats.holm([0.001, 0.9]) == pytest.approx([0.002, 0.9])


def test_e1_holds_when_the_curve_falls_below_every_null_and_not_otherwise():
    clear = R.e1(fake())
    assert clear["verdict"] == "holds" and clear["strongest_null"] == "cross-passage"
    lo, hi = clear["late_interval"]
    assert lo <= clear["late_trained"] <= hi and clear["gap_interval"][1] < 0
    flat = R.e1(fake(falls=False))
    assert flat["verdict"] == "partly" and not flat["falls"] and flat["below_nulls"]
    above = R.e1(fake(falls=False, gap=0.3))
    assert above["verdict"] == "does not hold" and above["gap_to_strongest"] > 0


def test_a_null_that_falls_as_fast_as_the_trained_curve_takes_the_trend_away():
    from connlap_lite.verdicts import history as H

    r = fake()
    r["conditions"]["random3"]["tv_norm_nosink"] = r["conditions"]["trained"]["tv_norm_nosink"]
    assert not H.e1_rule2(r)["falls"]                                     # rule 2: the seeds' rho
    r = fake()
    assert R.e1(r)["deepens"] and H.e1_rule3(r)["falls"]
    close = [[v + 0.01 for v in layer] for layer in r["conditions"]["trained"]["tv_norm_nosink"]]
    for cond, key in (("trained", "positional_tv_norm_nosink"), ("trained", "cross_passage_tv_norm_nosink"),
                      *((c, "tv_norm_nosink") for c in ("shuffled", "shuffled1", "shuffled2", "shuffled3", "shuffled4"))):
        r["conditions"][cond][key] = close
    assert not H.e1_rule3(r)["falls"]                                    # rule 3: the margin over the nulls
    row = R.e1(r)                                                         # rule 4: the curve itself falls; its
    assert row["falls"] and not row["deepens"]                            # advantage (a finding) does not grow


def test_holm_is_applied_across_the_table():
    rows = R.e1_table([fake(m, seed=i) for i, m in enumerate("abcd")])
    for x in rows:
        assert x["p_falls_holm"] >= x["p_falls"] and x["p_level_holm"] >= x["p_level"]
        assert x["p_stable_holm"] >= x["p_stable"]
        assert x["falls"] == (x["p_falls_holm"] < verdicts.ALPHA)


def test_e2_uses_the_nulls_on_the_trained_inputs():
    ok = R.e2(fake())
    assert ok["verdict"] == "holds" and ok["rule"] == R.E2_RULE == 5 and ok["data_null_seeds"] == 3
    assert len(ok["data_seed_nulls"]) == 3 and ok["p_data"] == max(ok["p_data_gaussian"], ok["p_data_seeds"])
    one = fake()                                    # one seed's transports: the seeds cannot be units
    del one["conditions"]["trained"]["data_defect_cross_2"], one["conditions"]["trained"]["data_defect_cross_3"]
    assert R.e2(one)["verdict"] == "insufficient data"
    worse = R.e2(fake(data_gap=+0.02))
    assert worse["verdict"] == "partly" and worse["heads_below_nulls"] and not worse["data_below_nulls"]
    assert set(worse["data_nulls"]) == {"random-init transports", "Gaussian transports"}


def test_e3_is_not_testable_across_families_and_reads_the_gap_within_one():
    two_families = [fake("a", family="x", size=1e8), fake("b", family="y", size=3e8), fake("c", family="x", size=1e9)]
    out = R.e3(two_families, "tv_norm_nosink")
    assert out["verdict"] == "not testable" and out["across"] is not None
    assert [s["from"] for s in out["steps"]] == ["a"] and len(out["across"]["leave_one_out"]) == 3
    # one family, gap shrinking (more negative) with size: the claim's direction
    ladder = [fake(f"s{i}", gap=g, size=s, seed=i) for i, (g, s) in enumerate([(-0.1, 1e8), (-0.3, 1e9), (-0.5, 1e10)])]
    out = R.e3(ladder, "tv_norm_nosink")
    assert out["verdict"] == "holds" and out["within"]["llama"]["interval"][1] < 0
    for m in out["models"]:
        assert m["interval"][0] <= m["gap"] <= m["interval"][1]


def test_resample_keeps_trained_and_nulls_paired():
    r = fake()
    idx = [3, 3, 0, 11]
    out = R.resample(r, idx)
    for cond in ("trained", "random0"):
        got = out["conditions"][cond]["tv_norm_nosink"][2]
        assert got == [r["conditions"][cond]["tv_norm_nosink"][2][i] for i in idx]
    assert out["conditions"]["trained"]["head_defect"] == r["conditions"]["trained"]["head_defect"]  # per head


def test_scorecard_rows_robustness_and_corpora():
    reports = [fake("enc", encoder=True, family="bert"), fake("a", seed=1), fake("b", seed=2, family="q")]
    rows = S.scorecard(reports, n_boot=200)
    assert {(r["claim"], r["structure"]) for r in rows} >= {("E1", "decoder"), ("E2", "encoder"), ("E3", "decoder")}
    assert all(r["verdict"] in verdicts.VERDICTS for r in rows)
    rates = S.robustness(reports, rows, resamples=3)
    assert set(rates) == {S.row_key(r) for r in rows} and all(0 <= v <= 1 for v in rates.values())
    assert rates["E1", "decoder", "tv_norm_nosink"] == 1.0
    corpora = S.by_corpus(rows, {"other": [fake("a", falls=False, gap=0.3)]}, n_boot=200)
    assert corpora["E1", "decoder", "tv_norm_nosink"] == {"other": "does not hold"}
    assert corpora["E1", "encoder", "tv_norm_nosink"] == {}


def test_bad_reports_get_clear_errors():
    with pytest.raises(TypeError, match="wrap a single report"):
        R.e1_table(fake())
    r = fake()
    del r["conditions"]["trained"]["data_defect_nosink"]
    with pytest.raises(ValueError, match="refresh=True"):
        R.e2(r)
    no_null = fake()
    no_null["conditions"] = {"trained": no_null["conditions"]["trained"]}
    with pytest.raises(ValueError, match="no random-init null"):
        R.e1(no_null)


# ------------------------------------------------------------------ the Report type
def test_report_is_validated_once_read_only_and_json_able():
    import json

    from connlap_lite.verdicts.record import Report

    raw = fake()
    r = Report(raw)
    assert r["conditions"]["trained"]["head_defect"] == raw["conditions"]["trained"]["head_defect"]
    assert json.loads(json.dumps(r)) == json.loads(json.dumps(raw))
    for change in (lambda: r.__setitem__("model", "x"), lambda: r["conditions"]["trained"].pop("head_defect"),
                   lambda: r["conditions"]["trained"]["head_defect"][0].append(1.0),
                   lambda: setattr(r, "nonfinite", [])):
        with pytest.raises(TypeError, match="read-only"):
            change()
    copy = r.to_dict()
    copy["model"] = "changed"
    assert r["model"] == "m" and isinstance(copy["conditions"]["trained"]["head_defect"], list)
    assert R.e1(r)["verdict"] == R.e1(raw)["verdict"]                       # the rules read either
    assert not any(callable(getattr(Report, m, None)) for m in ("layer_means", "curve", "strongest_null")), \
        "one way to read a report: record's functions, not methods beside them"
    assert record.strongest_null(r, "tv_norm_nosink") == "cross-passage" and record.random_nulls(r)[0] == "random0"
    bad = fake()
    bad["layers"] = L + 2
    with pytest.raises(ValueError, match=r"random0/tv_norm_nosink holds 8 per-layer lists, not 10.*more"):
        Report(bad)


# ------------------------------------------------------------------ the measured metrics' new parts
def test_sinks_are_found_in_the_data():
    import torch

    from connlap_lite.measure import metrics as M

    U = M.uniform_walk(32, causal=True)
    assert M.detect_sinks(U) == []                                          # the causal uniform walk has none
    P = U.clone()
    P[2:, 1] += 4.0                                                         # BOS first: the sink moves to column 1
    P = P / P.sum(-1, keepdim=True)
    assert M.detect_sinks(torch.stack([P, P])) == [1]
    with pytest.raises(ValueError, match="multiple must be a positive number"):
        M.detect_sinks(P, multiple=0)


def test_inner_nulls_share_the_trained_steps_yardstick_and_input_dependence():
    import torch

    from connlap_lite.measure import metrics as M
    from connlap_lite.measure.analysis import _step_metrics, _walk_metrics

    g = torch.Generator().manual_seed(0)
    W = torch.rand(3, 6, 6, generator=g, dtype=torch.float64).tril()
    W = W / W.sum(-1, keepdim=True)
    V = torch.rand(3, 6, 6, generator=g, dtype=torch.float64).tril()
    V = V / V.sum(-1, keepdim=True)
    out = _step_metrics(W, V, [0], True)
    Wn, Vn = M.without_sinks(W, [0]), M.without_sinks(V, [0])
    scale = M.uniform_scale(Wn, Vn, True, [0])
    assert torch.allclose(out["cross_passage_tv_norm_nosink"], M.walk_distance(Wn, Vn.roll(-1, 0)) / scale)
    assert torch.allclose(out["tv_norm_nosink"], M.normalised_walk_distance(Wn, Vn, True, [0]))
    assert set(out) >= {"cross_passage_tv_norm", "positional_tv_norm"}        # the sinks-kept ablation's nulls
    same = _walk_metrics(W[:1].expand(3, 6, 6).clone(), [0])["input_dependence_nosink"]
    assert torch.allclose(same, torch.zeros(3, dtype=torch.float64))        # one walk for every input: 0
    assert bool((_walk_metrics(W, [0])["input_dependence_nosink"] > 0).all())


def test_every_condition_measures_its_sink_mass_on_the_same_columns():
    """A model without a sink of its own (a tiny random Llama: no column detected) has sink mass 0 on its own
    columns, and on given columns the mass a walk near uniform gives them: comparable, never 0 by construction."""
    import sys
    from pathlib import Path

    import torch

    from connlap_lite.measure import metrics as M
    from connlap_lite.measure.analysis import measure, sink_columns_of

    sys.path.insert(0, str(Path(__file__).parents[1]))
    import tiny_models

    model = tiny_models.build("llama", "sdpa")
    batch = {"input_ids": torch.randint(0, 100, (3, 24), generator=torch.Generator().manual_seed(0))}
    batch["attention_mask"] = torch.ones_like(batch["input_ids"])
    found = []
    own = measure(model, batch, encoder=False, head_nulls=False, sinks_found=found)
    assert sink_columns_of(found) == [] and np.all(np.array(own["sink"]) == 0)
    given = measure(model, batch, encoder=False, head_nulls=False, sink_mass_columns=[0])
    mass = np.array(given["sink"])
    share = M.uniform_sink_mass(24, True, [0])
    assert mass.min() > 0 and np.allclose(mass.mean(), share, rtol=0.5)      # near the uniform walk's share
    assert given["tv_norm_nosink"] == own["tv_norm_nosink"]                  # (the _nosink metrics: its own)


def test_substitute_refuses_other_passages_and_keeps_the_ablations_sinks():
    r, a = fake(), fake(seed=1)
    for x, cols in ((r, [0]), (a, [1])):
        x.update(corpus="pydoc", corpus_digest="d", windows=[[0, 8 * i] for i in range(B)], sink_mass_columns=cols,
                 sink_columns={c: [[0]] * L for c in x["conditions"]})
        x["conditions"]["trained"]["sink"] = x["conditions"]["random0"]["sink"] = [[0.1] * B] * L
    out = R.substitute(r, a)
    assert out["conditions"]["trained"] == a["conditions"]["trained"] and out["sink_mass_columns"] == [1]
    assert isinstance(out, Report) and isinstance(R.resample(r, [0, 1]), Report)      # validated once, read-only
    assert "sink" not in out["conditions"]["random0"]          # measured on other tokens: left out, not compared
    moved = {**a, "windows": [[0, 8 * i + 1] for i in range(B)]}
    with pytest.raises(ValueError, match=r"differ in \['windows'\]"):
        R.substitute(r, moved)
    with pytest.raises(ValueError, match="does not say which passages"):
        R.substitute(r, {k: v for k, v in a.items() if k != "windows"})


def test_the_rules_read_reports_validated_once():
    """check_reports makes every plain record a Report (its shape checked, its problems named) and takes a Report as
    it is; a synthetic record is one; a malformed one is refused by name before any rule runs."""
    from connlap_lite.verdicts import synthetic

    plain = fake()
    made = verdicts.check_reports([plain])[0]
    assert isinstance(made, Report) and made == plain
    assert verdicts.check_reports([made])[0] is made                  # not validated (nor copied) again
    assert isinstance(verdicts.check_reports([synthetic.record(seed=0)])[0], Report)
    broken = fake()
    broken["conditions"]["random2"]["head_defect"] = broken["conditions"]["random2"]["head_defect"][:-1]
    with pytest.raises(ValueError, match=r"^reports\[1\] is not a measurement record .*random2/head_defect holds "
                                         rf"{L - 1} per-layer lists, not {L}"):
        R.e2_table([plain, broken])
