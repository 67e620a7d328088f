"""The chapters' computed paragraphs (connlap_lite.pages.findings) on synthetic reports whose answer is known:
every key is written, the verdict words are the rows', and a sentence changes when the data do."""
import re

import numpy as np
import pytest

from connlap_lite.verdicts import record
from connlap_lite.verdicts import rules as R
from connlap_lite.verdicts import scorecard as S
from connlap_lite.pages import boxes as BX
from connlap_lite.pages.findings import e1 as F1
from connlap_lite.pages.findings import e2 as F2
from connlap_lite.pages.findings import scorecard as FS

L, B, H = 7, 8, 3
WALK = ("sink", "uniform_dist", "rev", "rev_nosink", "cross", "cross_nosink", "input_dependence_nosink")
STEP = ("tv", "tv_norm", "spec", "tv_nosink", "tv_norm_nosink", "spec_nosink")


def _curve(start, stop, rng, layers, units=B, noise=0.01):
    base = np.linspace(start, stop, layers)[:, None]
    return np.abs(base + noise * rng.standard_normal((layers, units))).tolist()


def fake(model="dec", *, effect=True, encoder=False, family="llama", size=1e8, seed=0):
    """A report with every metric E1's chapter and the scorecard read. With ``effect`` the trained
    ``tv_norm_nosink`` falls from 1.0 to 0.5, below every null (1.3 for the seeds, 1.1 inside the model);
    without, it is flat at the seeds' level. The trained model puts a growing mass on a sink; the seeds do not."""
    rng = np.random.default_rng(seed)

    def condition(trained):
        c = {k: _curve(0.5, 0.4, rng, L) for k in WALK}
        c.update({k: _curve(1.3, 1.3, rng, L - 1) for k in STEP})
        c["sink"] = _curve(0.2, 0.6, rng, L) if trained else _curve(0.02, 0.02, rng, L, noise=0.001)
        c["uniform_dist"] = _curve(0.4, 0.5, rng, L) if trained else _curve(0.01, 0.01, rng, L, noise=0.001)
        c["head_defect"] = _curve(0.2 if trained else 0.3, 0.2 if trained else 0.3, rng, L, H)
        c["head_defect_gain"] = c["head_defect"]
        c["data_defect"] = _curve(0.1, 0.1, rng, L)
        c["edge_defect"] = _curve(0.45 if trained else 0.4, 0.45 if trained else 0.4, rng, L, 4)
        for k in (2, 3, 4):                         # the separation profile: flat at the step's level
            c[f"sep{k}_tv_norm_nosink"] = _curve(1.3 + 0.05 * k, 1.3 + 0.05 * k, rng, L - k)
        return c

    conditions = {f"random{s}": condition(False) for s in range(3)}
    conditions.update({name: condition(True) for name in record.shuffle_names(5)})   # five shuffle permutations
    trained = condition(True)
    trained["tv_norm_nosink"] = _curve(1.0, 0.5, rng, L - 1) if effect else _curve(1.3, 1.3, rng, L - 1)
    trained["cross_passage_tv_norm_nosink"] = _curve(1.1, 1.1, rng, L - 1)
    trained["positional_tv_norm_nosink"] = _curve(1.12, 1.12, rng, L - 1)
    for k in (2, 3, 4):                             # with an effect, the deep layers stay alike at any separation
        trained[f"sep{k}_tv_norm_nosink"] = (_curve(1.0, 0.5 + 0.005 * k, rng, L - k) if effect else
                                             _curve(1.3 + 0.1 * k, 1.3 + 0.1 * k, rng, L - k))
    trained["head_defect_gaussian"] = _curve(0.3, 0.3, rng, L, H)
    trained["head_defect_rotation"] = _curve(0.25, 0.25, rng, L, H)
    for k, v in (("data_defect_nosink", 0.08), ("data_defect_cross", 0.1), ("data_defect_cross_2", 0.101),
                 ("data_defect_cross_3", 0.099), ("data_defect_gaussian", 0.1)):
        trained[k] = _curve(v, v, rng, L)
    conditions["trained"] = trained
    return {"model": model, "family": family, "encoder": encoder, "layers": L, "heads": H, "groups": H,
            "d": 64, "head_dim": 16, "passages": B, "corpus": "pydoc", "corpus_digest": "d",
            "windows": [[0, 30 * b] for b in range(B)], "sink_mass_columns": [0],
            "tokens": 32, "parameters": int(size * 1.3), "non_embedding_parameters": int(size),
            "conditions": conditions}


@pytest.fixture(scope="module")
def e1_book():
    reports = [fake("enc", encoder=True, family="bert", seed=1), fake("dec-a", size=2e8, seed=2),
               fake("dec-b", effect=False, family="qwen", seed=3)]
    rows = S.scorecard(reports, n_boot=200)
    grid = F1.ten_metrics(reports, rows)
    q4 = fake("enc", encoder=True, family="bert", seed=4)
    q4_grid = {row["metric"]: row for row in R.e1_table([R.substitute(reports[0], q4)], list(F1.METRICS))}
    long = fake("dec-a", seed=5)
    long["tokens"] = 600
    types = ["sliding_attention", "sliding_attention", "full_attention"] * 2 + ["full_attention"]
    says = F1.paragraphs(reports, rows, grid, q4=(q4, q4_grid), long=(long, types, R.e1(long, n_boot=200)))
    return reports, rows, grid, says


def test_e1_writes_every_key_in_markdown(e1_book):
    *_, says = e1_book
    assert tuple(says) == F1.KEYS
    assert all(isinstance(v, str) and v.strip() and "{" not in v.replace("{ref}", "").replace("```{dropdown}", "")
               for v in says.values())


def test_e1_report_paragraphs_are_the_chapters_less_the_two_with_measurements_of_their_own(e1_book):
    reports, rows, grid, says = e1_book
    alone = F1.report_paragraphs(reports, rows, grid)
    assert tuple(alone) == tuple(k for k in F1.KEYS if k not in ("e1_q4_says", "e1_long_says"))
    assert alone == {k: says[k] for k in alone}


def test_e1_verdict_words_are_the_rows(e1_book):
    reports, rows, grid, says = e1_book
    box, folded = says["e1_verdict"].split("```{dropdown}")
    for r in rows:
        if r["claim"] == "E1":
            assert f"- on {BX._on(r)}: **{r['verdict']}**" in box
            for x in r["per_model"]:             # each model named under its own word in the opening
                assert re.search(rf"\*{re.escape(x['verdict'])}\* on [^;.]*\b{x['model']}\b", says["e1_summary"])
    # plain words in the box; the metric's identifier and the per-metric counts folded below them
    assert box.startswith(f"**{BX.CLAIM_WORDS['E1']}**, judged by {BX.METRIC_WORDS['tv_norm_nosink']}:")
    assert "`" not in box and "_" not in box.replace("**", "")
    assert "`tv_norm_nosink`" in folded and f"table of {len(grid)} model-metric pairs" in folded
    holds = sum(row["verdict"] == "holds" for row in grid.values())
    assert f"E1 holds for {holds} of {len(grid)} model-metric pairs" in says["e1_says"]


def test_verdict_box_names_every_claim_and_metric_in_plain_words(e1_book):
    _, rows, *_ = e1_book
    for claim in ("E1", "E2", "E3"):
        box = BX.verdict_box(rows, claim).split("```{dropdown}")[0]
        assert box.startswith(f"**{BX.CLAIM_WORDS[claim]}**") and "`" not in box
        mine = [r for r in rows if r["claim"] == claim]
        assert all(BX.METRIC_WORDS[r["metric"]] in box and f"**{r['verdict']}**" in box for r in mine)
    e3 = BX.verdict_box(rows, "E3")
    assert e3.count("- judged by ") == len(S.E3_METRICS)             # one line per metric, both structures on it
    with pytest.raises(ValueError, match="METRIC_WORDS"):
        BX.verdict_box([dict(rows[0], metric="new_metric")], "E1")
    with pytest.raises(ValueError, match="no row"):
        BX.verdict_box(rows, "E4")


def test_e1_sentences_follow_the_data(e1_book):
    reports, rows, grid, says = e1_book
    reg = F1.registered(rows)
    # the model without an effect is not counted among those below every null, the other decoder is
    assert reg["dec-a"]["below_nulls"] and not reg["dec-b"]["below_nulls"]
    assert "closer to the next layer's than any null makes them in 2 of 3 models." in says["e1_summary"]
    assert "every null: 2 of 3 models (enc, dec-a)" in says["e1_main_take"]
    # the sinks grow in every trained model and never in a seed: "training makes the sinks" in every model
    assert "In every model no random-init seed reaches 1/3 of it on the same tokens: training makes the sinks" \
        in says["e1_diag_says"]
    assert "1 of 3 models (dec-b)" not in says["e1_nulls_says"].split("positional operator in")[1][:40]


def test_e1_label_names_the_condition_met():
    assert F1.label({"verdict": "partly", "falls": True, "below_nulls": False}) == "partly (trend)"   # rules 1-2
    assert F1.label({"verdict": "partly", "falls": True, "below_nulls": False, "rule": 3}) == "partly (depth)"
    assert F1.label({"verdict": "insufficient data", "falls": None}) == "insufficient data"   # new words pass


def test_e1_says_rule_4s_conditions_and_the_shared_structure(e1_book):
    reports, rows, grid, says = e1_book
    reg = F1.registered(rows)
    assert reg["dec-a"]["deepens"] and reg["dec-a"]["shares_structure"] and not reg["dec-b"]["shares_structure"]
    assert "falls from the first third of the layers to the last in 2 of 3 models" in says["e1_summary"]
    assert "the deep layers stay alike (layers further apart hardly differ more) in 2 of 3 models" in says["e1_summary"]
    assert "rule 4, registered on 2026-12-04 after the results under rules 1 to 3 had been read" in says["e1_summary"]
    assert "On these measurements the change from rule 3 moved" in says["e1_summary"]
    assert "at every depth in 2 of 3 models (enc, dec-a)" in says["e1_nulls_says"]
    dec = F1.decoder_finding(reports, rows)          # the decoders' paragraph, with the rows' numbers
    assert dec.strip() == says["e1_decoder_says"] and "shuffled text at every step in 1 of 2 decoders (dec-a)" in dec
    assert f"{reg['dec-a']['late_margin']:+.3f}" in dec and f"{reg['dec-b']['early_margin']:+.3f}" in dec
    # each model's level beside its own null, early and late (not pooled ranges)
    a = reg["dec-a"]
    assert (f"dec-a {a['early_trained']:.2f} over the first third of the layers and {a['late_trained']:.2f} over the "
            f"last, against {a['early_passage_null']:.2f} and {a['late_passage_null']:.2f}") in dec
    assert "*rises*" not in dec                       # dec-b's is flat
    assert "In dec-a it is lower over the last third than over the first" in dec
    assert "the deep layers stable: 2 of 3 models (enc, dec-a)" in says["e1_main_take"]


def test_e1_says_when_the_distance_rises_with_depth():
    """A decoder whose distance between consecutive layers rises (0.5 to 0.7) while its strongest null rises
    faster (0.5 to 1.0): the margin grows, and the sentence says that it grows only because the null rises."""
    rng = np.random.default_rng(0)
    r = fake("dec-r", seed=7)
    t = r["conditions"]["trained"]
    t["tv_norm_nosink"] = _curve(0.5, 0.7, rng, L - 1)
    for k in ("cross_passage_tv_norm_nosink", "positional_tv_norm_nosink"):
        t[k] = _curve(0.5, 1.0, rng, L - 1)
    r["conditions"]["shuffled"]["tv_norm_nosink"] = _curve(0.6, 1.1, rng, L - 1)
    rows = S.scorecard([r], n_boot=200)
    x = F1.registered(rows)["dec-r"]
    assert x["late_trained"] > x["early_trained"] and x["late_margin"] > x["early_margin"]
    dec = F1.decoder_finding([r], rows)
    assert "The distance itself *rises* with depth in dec-r" in dec
    assert "in dec-r the margin grows only because the strongest null rises faster" in dec
    assert "is not the layers converging to a stable operator" in dec
    # rule 4 asks the distance itself to fall: a rising one never holds, whatever the margin does
    assert x["verdict"] != "holds" and not x["falls"]
    opening = F1.summary([r], rows)                   # the opening says it in one sentence, with the numbers
    assert (f"On dec-r the distance between consecutive layers rises instead "
            f"(dec-r {x['early_trained']:.2f} to {x['late_trained']:.2f})") in opening
    assert "*holds*" not in opening


def test_e1_sinks_are_compared_on_the_same_columns_and_never_with_zero(e1_book):
    reports, rows, *_ = e1_book
    # the fakes' seeds put 0.02 on the trained columns, the trained models up to 0.6: training makes the sinks
    assert all(F1.sink_made(r) for r in reports)
    assert F1.columns_of(reports).startswith("enc column 0;")
    # a null as sink-heavy as the trained model: the comparison fails, and the sentence says so
    heavy = [{**r, "conditions": {**r["conditions"], **{c: {**r["conditions"][c], "sink": r["conditions"]["trained"]
                                                           ["sink"]} for c in ("random0", "random1", "random2")}}}
             for r in reports]
    assert not any(F1.sink_made(r) for r in heavy)
    assert "By this measure no model's sinks come from training" in F1.diagnostics(heavy)
    assert "exceeds 3 times every random-init seed's largest in no model" in F1.takeaways(heavy, rows)["e1_sinks_take"]
    # nulls whose sink mass is 0 in every layer (nothing measured there): no comparison with 0 is made
    zero = [{**r, "conditions": {**r["conditions"], **{c: {**r["conditions"][c], "sink": [[0.0] * B] * L}
                                                       for c in ("random0", "random1", "random2")}}} for r in reports]
    assert all(F1.sink_made(r) is None for r in zero)
    said = F1.diagnostics(zero)
    assert "training makes the sinks" not in said and "no sink column was found" in said
    assert "No sink column was found" in F1.takeaways(zero, rows)["e1_sinks_take"]


def test_e1_input_dependence_is_reported(e1_book):
    reports, rows, grid, says = e1_book
    text = says["e1_input_says"]
    trained = record.layer_means(reports[1], "input_dependence_nosink")
    k = -(-len(trained) // 3)
    assert f"dec-a {trained[:k].mean():.2f} and {trained[-k:].mean():.2f}" in text
    assert "on shuffled passages" in text and "The random-init seeds' late value is" in text
    assert says["e1_input_take"].startswith("How much a layer's walk depends on its passage is lower over the last")


def test_e1_exercise_paragraphs(e1_book):
    reports, *_ = e1_book
    ex2 = F1.exercise_two([0.01, 0.02], [0.45, 0.46], reports[1], 32)
    assert "random 2-layer decoder are 0.010 to 0.020" in ex2 and "= 0.484$ ($n = 32$)" in ex2
    toy = {(c, s): v for c in (False, True) for s, v in ((0.01, 1.41), (0.1, 1.3), (1.0, 1.1), (10.0, 1.0))}
    ex3 = F1.exercise_three(toy, reports)
    null, trained = F1.tv_norm_levels(reports)
    assert f"dec-a {null['dec-a']:.2f}" in ex3 and "it falls as $\\sigma$ grows" in ex3
    assert null["dec-a"] == pytest.approx(np.mean([record.late_value(reports[1], "tv_norm", c).mean()
                                                   for c in ("random0", "random1")]))


def test_e1_long_context_with_three_passages_is_insufficient_data(e1_book):
    reports, rows, *_ = e1_book
    long = {**R.resample(fake("dec-a", seed=5), range(3)), "tokens": 600}      # 3 passages, in every list
    row = R.e1(long, n_boot=200)
    assert row["verdict"] == "insufficient data"
    types = ["sliding_attention", "sliding_attention", "full_attention"] * 2 + ["full_attention"]
    text = F1.long_context(reports[1], long, types, F1.registered(rows)["dec-a"], row, full=False)
    assert "*insufficient data*" in text and "3 passages (the rule needs 8)" in text
    assert "gives no verdict" in text


def test_e1_long_context_needs_both_kinds_of_layer(e1_book):
    reports, rows, *_ = e1_book
    with pytest.raises(ValueError, match="layer_types"):
        F1.long_context(reports[1], reports[1], ["full_attention"] * L, F1.registered(rows)["dec-a"],
                        F1.registered(rows)["dec-a"], full=True)


def test_scorecard_headline_and_grid(e1_book):
    reports, rows, *_ = e1_book
    robust = {S._key(r): 1.0 for r in rows}
    registered = {(r["claim"], x["model"]): x["verdict"] for r in rows if r["claim"] in ("E1", "E2")
                  for x in r["per_model"]}
    moved = [("sinks kept", "E1", "dec-b", "a word the rules may add")]
    few = {"stdlib": [{**r, "conditions": {c: v for c, v in r["conditions"].items() if c != "shuffled"}}
                      for r in reports]}
    says = FS.paragraphs(rows, robust, {S._key(r): {} for r in rows}, reports,
                         (moved, registered, {"dec-a": ("BOS left out", [0], 0.5, [1], 0.1)}), few)
    assert tuple(says) == FS.KEYS
    grid = FS.verdict_cells(rows)
    assert {c for c, _ in grid} == {"E1", "E2"} | {f"E3 ({m})" for m in S.E3_METRICS}
    for r in rows:
        if r["claim"] in ("E1", "E2"):
            for x in r["per_model"]:
                assert grid[r["claim"], x["model"]] == x["verdict"]
    # the headline names every verdict the rows give, and only those
    words = {r["verdict"] for r in rows}
    for w in words:
        assert w in says["scorecard_headline"]
    assert says["scorecard_headline"].count(".") >= 1 and "\n" not in says["scorecard_headline"]
    assert "E1 on dec-b with sinks kept: " + registered["E1", "dec-b"] + " -> a word the rules may add" \
        in says["scorecard_ablations"]
    assert "dec-a, BOS left out: column 0 (0.50) -> column 1 (0.10)" in says["scorecard_ablations"]
    assert "the detected sinks' mass" in says["scorecard_ablations"]
    # the other corpora's nulls, said from the reports: fewer here, so not comparable
    assert "3 random-init seeds, no shuffled passages" in says["scorecard_corpora"]
    assert "*not comparable*" in says["scorecard_corpora"]
    same = FS.corpora_note(reports, {"stdlib": reports})
    assert "can be set beside" in same and " only" not in same
    # fewer models on the other corpora (make test): the note names them
    few = FS.corpora_note(reports, {"stdlib": reports[:1]})
    assert f"measured for {reports[0]['model']} only" in few
    # every dated rule change, rule 1 -> 2 and rule 2 -> 3 (and E2's 3 -> 4), with its old and new verdicts
    changes = says["scorecard_rule_changes"]
    for c in ("E1", "E2", "E3"):
        assert f"**{c}, rule 1 -> rule 2, changed 2026-11-30.**" in changes
    assert "**E1, rule 2 -> rule 3, changed 2026-12-01.**" in changes
    assert "**E1, rule 3 -> rule 4, changed 2026-12-04.**" in changes
    assert "**E2, rule 3 -> rule 4, changed 2026-12-02.**" in changes
    assert "**Measurement of `tv_norm_nosink`, changed 2026-11-30.**" in changes
    for c, old in (("E1", 3), ("E2", 4), ("E3", 3)):
        assert f"**{c}, rule {old} -> rule {old + 1}, changed 2026-12-04.**" in changes
    rule4 = changes.split("**E1, rule 3 -> rule 4")[1].split("\n- ")[0]     # the rule in force: the rows' verdicts
    assert all(f"{x['model']}: " in rule4 and f"-> {x['verdict']}" in rule4
               for r in rows if r["claim"] == "E1" for x in r["per_model"])
    assert "On these measurements the change moved" in rule4        # which way, computed
    assert "Condition (i), the trained distance between consecutive layers falls" in says["scorecard_says"]


def test_e2_writes_every_key_and_reads_the_fair_nulls(e1_book):
    reports, rows, *_ = e1_book
    samples = {k: np.abs(np.random.default_rng(0).normal(v, 0.01, 50)) for k, v in
               (("trained", 0.3), ("Gaussian null", 0.2), ("rotation null", 0.28), ("random init (seed 0)", 0.2))}
    q4 = fake("enc", encoder=True, family="bert", seed=9)
    says = F2.paragraphs(reports, rows, mp_pred={r["model"]: 0.35 for r in reports}, edges=4,
                         hist=("dec-a", samples, 0.2, 0.35), q4=q4)
    assert tuple(says) == F2.KEYS
    reg = F2.registered(rows)
    # the data defect is described by the ratio the verdict uses: the rows' trained over strongest data null
    ratios = [x["data_defect"] / x["data_nulls"][x["strongest_data_null"]] for x in reg.values()]
    assert f"{min(ratios):.2f}" in says["e2_curves_says"] and f"{min(ratios):.2f}" in says["e2_data_span"]
    for x in reg.values():
        assert f"*{x['verdict']}*" in says["e2_headline"]
    # trained heads at 0.2 against Gaussian heads at 0.3 in every fake: the heads beat their nulls
    assert all(x["heads_below_nulls"] for x in reg.values())
    assert "in every model" in says["e2_summary"].split("closer to one than random heads")[1][:40]


def test_e2_edge_wording_follows_the_interval(e1_book):
    reports, *_ = e1_book
    gap, lo, hi = F2.edge_gap_interval(reports[1])
    assert lo <= gap <= hi
    # the fakes' trained edges sit 0.05 above the seeds': "further" only where the interval lies above 0
    text = F2.curves(reports, S.scorecard(reports, n_boot=200), {r["model"]: 0.35 for r in reports}, 4)[0]
    assert text.split("where that interval lies above 0, in")[1].startswith(" every model")
    flat = []
    for r in reports:
        trained = {**r["conditions"]["trained"], "edge_defect": r["conditions"]["random0"]["edge_defect"]}
        flat.append({**r, "conditions": {**r["conditions"], "trained": trained}})
    said = F2.curves(flat, S.scorecard(flat, n_boot=200), {r["model"]: 0.35 for r in reports}, 4)[0]
    assert "so there the sign of the gap is not settled" in said


def test_e2_takes_and_exercises(e1_book):
    reports, rows, *_ = e1_book
    take = F2.heads_take(reports, {r["model"]: 0.3 for r in reports})
    assert take.startswith("On the plots' scale the nulls of the heads form one narrow strip in")
    samples = {k: np.abs(np.random.default_rng(0).normal(v, w, 50)) for k, v, w in
               (("trained", 0.6, 0.1), ("Gaussian null", 0.2, 0.002), ("rotation null", 0.28, 0.01),
                ("random init (seed 0)", 0.2, 0.002))}
    assert F2.hist_take(samples) == "The nulls form a narrow spike; the trained heads lie far to the right of it."
    # the synthetic reports do not time their data null: said so, not a cost of nothing
    assert F2.data_cost(reports) == "These reports do not say what their data null cost."
    timed = [{**r, "data_null_seconds": 2.0, "seconds": 20.0, "data_null_seeds": [0, 1, 2]} for r in reports]
    assert "Building 3 seeds' transports and applying them cost 2.0 s per model" in F2.data_cost(timed)
    assert "10%" in F2.data_cost(timed) and "(2 of those 3 seeds were added on 2026-12-02" in F2.data_cost(timed)
    one = [{**r, "data_null_seeds": [0]} for r in timed]
    assert "Building 1 seed's transports" in F2.data_cost(one) and "added" not in F2.data_cost(one)
    ex2 = F2.exercise_two({"a": (0.1, 0.002, 0.01), "b": (0.4, 0.003, 0.05)})
    assert "within 0.003 of the simulation" in ex2 and "(a, $\\lambda = 0.10$)" in ex2
    frac = np.zeros((2, 4))
    frac[1] = 1.0
    ex3 = F2.exercise_three(frac, [0.3, 0.3], [0.301, 0.299], 100)
    assert "In layer 0 nearly every head" in ex3 and "4 heads in all are *less* isometric" in ex3


def test_e2_ratios_are_what_the_rule_compares(e1_book):
    _, rows, *_ = e1_book
    got = F2.ratios(rows)
    for m, x in F2.registered(rows).items():
        r, lo, hi = got["heads"][m]
        assert lo <= r <= hi and abs(r * x["head_nulls"][x["strongest_head_null"]] - x["head_defect"]) < 1e-12


def test_e3_step_reads_each_metric_where_both_reports_measured_it():
    """The full build's within-family step (0.5B -> 1.5B): E2's data defect is measured in the trained condition
    only, so it has no random-init change (the full build's E3 page failed on it, 2026-12-05); the step's sentence
    is written from what there is."""
    from connlap_lite.pages.findings import e3 as F3

    small, big = fake("s", effect=False, seed=1), fake("b", effect=True, seed=2)
    steps = F3.step_changes(small, big, draws=200)
    assert {m for m, c in steps if c == "trained"} == set(F3.METRICS)
    assert ("data_defect_nosink", "random0") not in steps and ("head_defect", "random0") in steps
    for (metric, cond), (delta, lo, hi) in steps.items():
        want = record.late_value(big, metric, cond).mean() - record.late_value(small, metric, cond).mean()
        assert abs(delta - want) < 1e-12 and lo <= delta <= hi
    assert steps["tv_norm_nosink", "trained"][2] < 0          # fake's effect: 1.3 flat against 1.0 -> 0.5
    assert "falls (interval below zero) for" in F3.step(steps) and "tv_norm_nosink" in F3.step(steps)


def test_e3_says_not_testable_without_a_ladder_and_names_one_with_it(e1_book):
    from connlap_lite.pages.findings import e3 as F3

    reports, rows, *_ = e1_book
    gaps = F3.gaps(reports)
    says = F3.paragraphs(reports, rows, gaps, pair=(reports[1], reports[2]), steps=None, full=False, ladder="-")
    assert tuple(says) == F3.KEYS
    assert {v["verdict"] for v in gaps.values()} == {"not testable"}     # no family with three sizes
    assert "no family here gives three" in says["e3_summary"]
    assert all(f"*{v['verdict']}*" in says["e3_says"] for v in gaps.values())
    assert "a fit across 2 designs" in says["e3_says"]
    ladder = [fake(f"q{k}", family="qwen", size=s, seed=10 + k) for k, s in enumerate((1e8, 3e8, 1e9))]
    rows3 = S.scorecard(ladder, n_boot=200)
    gaps3 = F3.gaps(ladder)
    said = F3.summary(ladder, gaps3)
    assert "qwen gives three or more" in said
    assert all(f"*{v['verdict']}*" in said for v in gaps3.values()) and rows3


def test_known_results_paragraphs_on_toy_reports():
    from connlap_lite import known as K
    from connlap_lite.pages.findings import known as FK

    reports = {}
    for name, encoder in (("enc", True), ("dec", False)):
        rep = K.toy_report(n_layers=4)
        rep.update(model=name, encoder=encoder, tokens=64)
        rep["verdicts"] = K.verdicts(rep)
        reports[name] = rep
    says = FK.paragraphs(reports)
    assert tuple(says) == FK.KEYS
    rows = [r for rep in reports.values() for r in rep["verdicts"]]
    for r in rows:                                    # every cell of the grid is a row's verdict
        assert FK.verdict_cells(reports)[K.STATEMENTS[r["key"]][3], r["model"]] == r["verdict"]
    words = {r["verdict"] for r in rows}
    assert all(f"*{w}*" in says["known_summary"] for w in words)
    n_agree = sum(r["verdict"] == "agree" for r in rows)
    assert f"{n_agree} *agree*" in says["known_summary"]
    assert says["known_tokens"] == "64"
    assert "**Rule 1 -> rule 2, changed 2026-12-02.**" in says["known_rule_changes"]
    assert all(f"`{m}` " in says["known_rule_changes"] for m in reports)
    assert "next layer of another passage" in says["known_reuse"]
    reports["dec"]["tokens"] = 32
    with pytest.raises(ValueError, match="one passage length"):
        FK.paragraphs(reports)


def test_known_results_sentences_follow_the_synthetic_reports():
    """findings.known on connlap_lite.known.synthetic.report reports whose answers are known: the captions' takeaways and
    the paragraphs say what the rows say, each way round."""
    import warnings

    from connlap_lite import known as K
    from connlap_lite.known import synthetic as KS
    from connlap_lite.pages.findings import known as FK

    def book(**kw):
        reports = {}
        for name, encoder in (("enc", True), ("dec", False)):
            rep = KS.report(model=name, encoder=encoder, seed=len(reports), **kw)
            rep["verdicts"] = K.verdicts(rep)
            reports[name] = rep
        return reports, FK.paragraphs(reports)

    strong = dict(effect=4.0, effects={"sinkformer": 10.0, "proposition": 1.0, "sink_repeated": 0.0})
    reports, says = book(**strong)
    assert tuple(says) == FK.KEYS
    assert "every model" in says["known_reuse_take"].split(", and")[0]
    assert "ends training closer to doubly stochastic" in says["known_ds_take"] and "`enc`" in says["known_ds_take"]
    assert "**agree**" in says["known_ds"] and "with the 5 seeds as units" in says["known_ds"]
    assert "lies above 0 and no step is reversed: **agree**" in says["known_sinks"]
    assert says["known_sinks_take"].startswith("Trained models make sinks that random ones do not")   # 0.38 > 0.30

    reports, says = book(effects={"sinkformer": -10.0, "reuse": (0.0, -4.0), "sink_order": -4.0})
    assert "no model" in says["known_reuse_take"].split(", and")[0]
    assert "farther from doubly stochastic" in says["known_ds_take"]
    assert "a step is reversed beyond the noise" in says["known_sinks"]
    assert all(f"**{r['verdict']}**" in says["known_table"] for rep in reports.values() for r in rep["verdicts"])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reports, says = book(passages=6, **strong)
    assert "**insufficient data**" in says["known_ds"] and "gets no comparison (insufficient data)" in says["known_ds_take"]
    assert "*insufficient data*" in says["known_summary"]

    for rep in reports.values():                     # a null with sinks on some input: the caption says so
        rep["conditions"]["random0"]["natural"]["rate"] = [0.9] * 6
    assert "not every sink comes from training" in FK.sinks_take(reports)
    rows = FK.rows_of(reports)
    kept = [rows[m]["kobayashi_norm"]["trained"][1] / rows[m]["kobayashi_norm"]["trained"][0] for m in reports]
    assert FK.special_take(reports).startswith("Weighting each edge by what it carries leaves the sinks "
                                               f"{min(kept):.0%}")


def test_beyond_paragraphs_from_synthetic_statistics(e1_book):
    from connlap_lite.pages.findings import beyond as FB

    reports = {r["model"]: r for r in e1_book[0]}
    for r in reports.values():
        for c in r["conditions"].values():
            c.setdefault("copy", c["head_defect"])
    copy_stats = {m: dict(copying=2, suppressing=1, max=0.4, min=-0.3, null_max=0.01, heads=L * H) for m in reports}
    copy_rows = FB.trend_rows(reports, "copy")
    sink_rows = FB.trend_rows(reports, "sink")
    sink_stats = {m: dict(u=0.05, first=2.0, peak=12.0, at=3, last=8.0, null_min=0.9, null_max=1.1,
                          shuffled_rho=0.9) for m in reports}
    gap = (np.array([0.1, -0.05]), None, None)
    gaps = {"rev": {m: {"trained": gap} for m in reports}}
    gap_stats = {m: dict(rev=(0.1, 0.001), tv=(0.05, 0.002)) for m in reports}
    overlap_stats = {m: dict(ref=0.1, null=0.1, mean=0.2, max=0.6) for m in reports}
    edges = dict(G=3, d_h=64, d=576, min_rank=192, ratio=0.4, rho_rg=0.5, p_rg=0.01, rho_copy=0.6, p_copy=0.001,
                 rho_gate=0.1, p_gate=0.5, first_c=0.05, last_c=0.3, layers=(3, 27), share={3: 0.5, 27: 0.8},
                 predecessor=0.7)
    headline = {m: dict(copying=2, suppressing=1, null_max_c=0.01, sink_peak_over_u=12.0, overlap=0.2,
                        overlap_ref=0.1) for m in reports}
    bound_gap = {m: -0.1 for m in reports}
    says = FB.paragraphs(reports, copy_stats=copy_stats, copy_rows=copy_rows, sink_stats=sink_stats,
                         sink_rows=sink_rows, gaps=gaps, gap_stats=gap_stats, overlap_stats=overlap_stats, n_one=0,
                         edges=edges, headline=headline, bound_gap=bound_gap)
    assert tuple(says) == FB.KEYS
    assert f"{3 * len(reports)} of {L * H * len(reports)} trained heads" in says["beyond_summary"]
    assert "in every model" in says["beyond_overlap_says"] and "no head's value sub-bundle" in says["beyond_overlap_says"]
    assert "rank exactly $G d_h = 192$" in says["beyond_edge_says"]
    assert "two signs" not in says["beyond_gap_says"] and "in every model removing the sink" in says["beyond_gap_says"]
    assert "within a factor 1.11 of $u_n$ in every layer of every model" in says["beyond_sink_says"]
    # a model whose trained walks have no sink column: its nulls' sink mass is 0, said as such, never a factor of 1/0
    first = next(iter(reports))
    sink_stats[first] = {**sink_stats[first], "null_min": 0.0}
    sinkless = FB.paragraphs(reports, copy_stats=copy_stats, copy_rows=copy_rows, sink_stats=sink_stats,
                             sink_rows=sink_rows, gaps=gaps, gap_stats=gap_stats, overlap_stats=overlap_stats,
                             n_one=0, edges=edges, headline=headline, bound_gap=bound_gap)["beyond_sink_says"]
    assert f"On {first} the trained walks have no sink column" in sinkless and "inf" not in sinkless
    # the captions' first sentences, computed
    assert says["beyond_sink_take"].startswith("On each model's sink columns the trained sink rises above five times")
    assert "stay within a factor 1.11 of it" in says["beyond_sink_take"]
    assert "in every model (the largest $|c_h| - \\sqrt{\\omega_h}$ is -0.10)" in says["beyond_bound_take"]
    assert says["beyond_edge_take"].startswith("Every heaviest edge mixes its heads into one operator of rank")
    # nulls with no sink column: their Delta is 0 by construction, and no comparison with it is made
    for m in gap_stats:
        gap_stats[m]["null_sinkless"] = True
    gap_says = FB.sink_removal(reports, gaps, gap_stats, sink_stats)
    assert "0 by construction" in gap_says and "five times the nulls'" not in gap_says


def _reading_inputs(worst=3e-7, special=False):
    import torch

    from connlap_lite.models.adapters import TESTED
    from connlap_lite.pages.findings import reading as FR

    errors = {"enc": {"heads": [1e-7, 2e-7], "walk": [5e-8, 3e-7]}, "dec": {"heads": [worst, 1e-7, 1e-7], "walk": [1e-7] * 3}}
    P = torch.tril(torch.ones(40, 40, dtype=torch.float64))
    P[:, 0] = 20.0                                     # a sink: token 0 takes most of every row
    walk = FR.walk_facts(P / P.sum(1, keepdim=True), causal=True)
    T = torch.diag(torch.tensor([2.0] * 60 + [0.0] * 4, dtype=torch.float64))   # rank 60 = G d_h of 64
    edge = FR.edge_facts(T, (30, 0), (30, 29), torch.linalg.svdvals(T), 30, 2)
    return dict(errors=errors, tested=TESTED, walk=walk, walk_model="dec", special=special, edge=edge,
                q4=(0.05, 0.005), null=("dec", 0.01, 0.3), gpu=None,
                shape={"layers": 32, "heads": 32, "groups": 8, "d": 4096})


def test_reading_writes_every_key_from_the_numbers():
    from connlap_lite.pages.findings import reading as FR

    inputs = _reading_inputs()
    says = FR.paragraphs(inputs.pop("errors"), **inputs)
    assert tuple(says) == FR.KEYS
    assert all(isinstance(v, str) and v.strip() and "{" not in v.replace("{cite}", "").replace("^{", "")
               .replace("{-", "").replace("{\\", "").replace("_{", "") for v in says.values())
    # the summary in plain words: how many layers, how close, no identifiers
    assert "all 5 attention layers of 2 small pretrained models" in says["reading_summary"]
    assert "$3.0 \\times 10^{-7}$" in says["reading_summary"] and "33 times inside" in says["reading_summary"]
    assert "`" not in says["reading_summary"] and "_" not in says["reading_summary"]
    assert says["reading_errors_take"].startswith("All 5 attention layers of the 2 models")
    assert "smaller error in 2 of the 5 layers" in says["reading_errors"]
    assert says["reading_families"].count("`") == 2 * len(inputs["tested"])
    assert "an ordinary word" in says["reading_sink_says"] and "*attention sink*" in says["reading_sink_says"]
    assert "60 singular values above" in says["reading_edge_says"] and "exactly the bound $G d_h$" in says["reading_edge_says"]
    assert "the other 4 are smaller" in says["reading_edge_says"]
    assert "copy a coordinate" in says["reading_edge_says"]
    assert "a sink edge" in says["reading_edge_choice"]
    assert "10 times less" in says["reading_q4_says"] and "30 times closer" in says["reading_null_says"]
    assert "has no `benchmarks/results/gpu_8b.json`" in says["reading_gpu_note"]
    assert says["reading_8b_shape"] == "32 layers, 32 heads, 8 key/value groups, width 4096"


def test_reading_sentences_change_when_the_data_do():
    from connlap_lite.pages.findings import reading as FR

    inputs = _reading_inputs(worst=2e-5, special=True)
    errors = inputs.pop("errors")
    says = FR.paragraphs(errors, **inputs)
    assert "misses by $2.0 \\times 10^{-5}$" in says["reading_summary"]
    assert says["reading_errors_take"].startswith("1 of the 5 attention layers miss")
    assert "above the tolerance" in says["reading_errors"]
    assert "ordinary word" not in says["reading_sink_says"]
    assert "moves no less" in FR.q4_says(0.01, 0.02)
    assert "not closer to uniform" in FR.null_says("m", 0.3, 0.2)
    assert "1.5 times closer" in FR.null_says("m", 0.2, 0.3) and "no trained distance" in FR.null_says("m", 0.2, None)
    assert "say *not run*" not in FR.gpu_note({"status": "not run", "runs": []})
    assert "says *not run*" in FR.gpu_note({"status": "not run", "runs": []})
    assert "measured on H100" in FR.gpu_note({"runs": [1], "device": "H100", "machine": {"date_utc": "2026-12-02T00"}})
    assert "does not point to token 0" in FR.edge_choice(dict(inputs["edge"], heaviest=(9, 4)))
    with pytest.raises(ValueError, match="errors must map"):
        FR.summary({"m": {"heads": [1e-7]}})


def test_reading_walk_facts_of_a_uniform_walk():
    import torch

    from connlap_lite.pages.findings import reading as FR

    U = torch.tril(torch.ones(30, 30, dtype=torch.float64))
    f = FR.walk_facts(U / U.sum(1, keepdim=True), causal=True)
    assert abs(f["recent"] - f["even"]) < 1e-12 and f["sink"] < 0.3
    assert FR.walk_facts(torch.full((30, 30), 1 / 30, dtype=torch.float64), causal=False)["recent"] is None


def perf_records(growth=1.0, *, dense=12.0, missed=True, book=True, gpu_runs=()):
    """Made-up benchmark records with every field the performance appendix reads: extraction's peak grows by
    ``growth`` from 2 to 8 layers (the floor's by 5), the dense apply takes ``dense`` times the factored one."""
    machine = {"processor": "CPU", "cpus": 2, "memory_gib": 8.0, "python": "3.11", "torch": "2", "transformers": "5",
               "omp_num_threads": 1, "date_utc": "2026-01-02T03:04:05Z", "load_average_at_start": [1.0, 1.0, 1.0],
               "cuda": None}
    mem = lambda walks, floor: {"walks": {"peak_bytes": walks}, "floor": {"peak_bytes": floor},  # noqa: E731
                                "forward": {"peak_bytes": walks / 2}}
    layers = [{"n_layer": n, "d": 256, "heads": 8, "B": 2, "n": 512, "attention_layer_bytes": 2**24,
               "memory": mem(1.5 * 2**24 * g, f * 2**24), "ratio": {"forward": 0.9, "walks": 1.1},
               "peak_in_layers": {"walks": 1.5 * g, "floor": f, "forward": 0.75 * g}}
              for n, g, f in ((2, 1.0, 3.0), (8, growth, 15.0))]
    E = {"machine": machine, "quick": False, "layers": layers, "growth": {"walks": growth, "floor": 5.0},
         "pretrained": [{"model": "enc", "B": 4, "n": 128, "layers": 6, "memory": {"walks": {"peak_bytes": 2**20}},
                         "ratio": {"walks": 1.2, "metrics": 3.0, "edges": 2.0}},
                        {"model": "dec", "B": 4, "n": 64, "layers": 30, "memory": {"walks": {"peak_bytes": 2**21}},
                         "ratio": {"walks": 1.3, "walks_eager": 1.0, "metrics": 4.0, "edges": 2.5}}],
         "transformer_lens": {"available": False},
         "goals": [{"what": "extraction: walks time / floor (enc)", "measured": 1.2, "goal": 1.15 if missed else 1.5,
                    "op": "<=", "unit": "x floor", "met": not missed, "reason": "the rebuilt queries"},
                   {"what": "extraction: nothing run", "measured": None, "goal": 1.0, "op": "<=", "unit": "x",
                    "met": None, "reason": "not run: no time"}]}
    W = {"machine": machine, "quick": False, "settings": {"d": 128, "H": 8}, "dense_exceeds_machine_memory_n": 512,
         "dense_largest_n": 64, "rows": [
             {"n": 64, "dense_bytes": 2**29, "error_vs_torch": 1e-16, "seconds": {"walk": [1.0]},
              "ratio": {"apply/torch": 0.4, "walk/torch": 2.0, "walk/eager": 0.8, "dense/apply": dense}},
             {"n": 512, "dense_bytes": 2**35, "dense_skipped": "cap", "error_vs_torch": 1e-16, "seconds": {},
              "ratio": {"apply/torch": 0.5, "walk/torch": 2.5, "walk/eager": 0.9}}],
         "goals": [{"what": "walk apply: x", "measured": 2.5, "goal": 3.0, "op": "<=", "unit": "x", "met": True,
                    "reason": ""}]}
    S = {"machine": machine, "quick": False, "settings": {"k": 4, "tol": 1e-8, "d": 256}, "dense_largest_N": 4096,
         "rows": [{"N": 1024, "arpack_seconds": 0.1, "matvecs": 200, "dense_seconds": 1.0, "error_vs_dense": 1e-10},
                  {"N": 65536, "arpack_seconds": 3.0, "matvecs": 300, "dense_skipped": "too big"}],
         "goals": [{"what": "spectra: y", "measured": 3.0, "goal": 60.0, "op": "<=", "unit": "seconds", "met": True,
                    "reason": ""}]}
    G = {"machine": machine, "quick": False, "status": "not run: no CUDA device", "reproduce": "python gpu.py",
         "runs": list(gpu_runs), "goals": []}
    make = {"seconds": 1500.0, "returncode": 0, "commit": "abcdef1234", "date_utc": "2026-01-01T00:00:00Z",
            "cache_at_start": "empty", "notebooks": {"book/a.ipynb": 100.0, "book/b.ipynb": 900.0},
            "failed": [], "setting": [8, 64], "measurements": [{"seconds": 600.0}]}
    Bk = {"machine": machine, "quick": False, "notebooks": {"book/a.ipynb": {"seconds": 10.0, "status": "ok"}},
          "make_test": dict(make) if book else None, "make_book": dict(make) if book else None, "goals": []}
    return {"extraction": E, "walk_apply": W, "spectra": S, "gpu_8b": G, "book_times": Bk}


def test_performance_opening_follows_the_records():
    from connlap_lite.pages.findings import performance as FP

    flat, growing = FP.paragraphs(perf_records(1.0)), FP.paragraphs(perf_records(3.0))
    assert tuple(flat) == FP.KEYS
    assert "stays flat" in flat["perf_summary"] and "grows by a factor 3.00" in growing["perf_summary"]
    assert "Of the 3 performance goals that were run, 2 are met" in flat["perf_summary"]   # not run: not counted
    assert "about the same memory" in flat["perf_depth_take"] and "growing with depth" in growing["perf_depth_take"]
    assert "0.50 times as long" in flat["perf_apply_take"] and "$nd = 65,536$ in 3 s" in flat["perf_spectra_take"]
    with pytest.raises(ValueError, match="spectra"):
        FP.paragraphs({k: v for k, v in perf_records(1.0).items() if k != "spectra"})


def test_performance_sections_say_what_the_records_hold():
    from connlap_lite.pages.findings import performance as FP

    says = FP.paragraphs(perf_records(1.0))
    assert says["perf_extraction"].startswith("On the two offline models (passages of 128 and 64 real tokens)")
    assert "1.20 times the floor on `enc` and 1.30 times the floor on `dec`" in says["perf_extraction"]
    assert "eager attention read instead: 1.00)" in says["perf_extraction"]
    assert says["perf_memory"].startswith("Memory is where streaming pays.")
    assert FP.paragraphs(perf_records(6.0))["perf_memory"].startswith("Memory is where streaming should pay")
    assert "is 12 times slower" in says["perf_apply"]
    assert "takes 0.50 times the factored one's time" in FP.paragraphs(perf_records(dense=0.5))["perf_apply"]
    assert "It was not installed" in says["perf_tl"]
    assert "agree to 1e-10 or better" in says["perf_spectra"]
    assert "The whole `make test` took 25.0 minutes, measured at abcdef1, 2026-01-01" in says["perf_book"]
    assert "outside the 20-minute goal" in says["perf_book"] and "inside its 60-minute goal" in says["perf_book"]
    assert "with 32 passages per setting instead of 8 they would take about 4.0 times" in says["perf_book"]
    assert "has not been timed" in FP.paragraphs(perf_records(book=False))["perf_book"]
    assert "*not run: no CUDA device*" in says["perf_gpu_status"]
    assert says["perf_missed"] == "Missed: walks time / floor (enc) (1.200 x floor, goal <= 1.15)."
    assert FP.paragraphs(perf_records(missed=False))["perf_missed"] == "Every goal that was run is met."


def test_performance_tables_list_every_row():
    from connlap_lite.pages.findings import performance as FP

    R = perf_records(1.0)
    assert FP.machine(R["extraction"]).startswith("CPU, 2 cores, 8.0 GiB; Python 3.11")
    table = FP.goals_table(R)
    assert table.count("<tr>") == 1 + 4 and "<b>no</b>" in table and "not run" in table
    assert FP.extraction_table(R["extraction"]).count("\n") == 1
    assert FP.depth_table(R["extraction"], ["walks", "floor"]).splitlines()[0] == \
        " 2 layers: peak in layers of attention: walks 1.50, floor 3.00"
    assert FP.apply_table(R["walk_apply"]).splitlines()[1].endswith("(skipped)")
    assert "dense skipped: too big" in FP.spectra_table(R["spectra"])
    assert FP.gpu_table(R["gpu_8b"]) == "not run: no CUDA device | python gpu.py"
    assert "make book: 25.0 min, exit 0, measured at abcdef1" in FP.book_table(R["book_times"])
    assert FP.missed_list(R).splitlines() == ["- extraction: walks time / floor (enc): 1.2 x floor (goal <= 1.15).",
                                              "    why: the rebuilt queries",
                                              "- extraction: nothing run: not run. not run: no time"]
    assert FP.worst_depth(R["extraction"])["n_layer"] == 2 and FP.dense_ratio(R["walk_apply"]) == (64, 12.0)


def test_the_grid_and_the_e3_figures_name_claims_and_metrics_in_words(e1_book):
    """Where a reader looks first, no identifier: the verdict grid's rows, E3's panel titles and its captions'
    first sentences say the claims and metrics in words (boxes.GRID_WORDS, METRIC_TITLES)."""
    from connlap_lite.pages.findings import e3 as F3

    reports, rows, *_ = e1_book
    labels = BX.grid_rows()
    assert {claim for claim, _ in FS.verdict_cells(rows)} <= set(labels)
    assert all("_" not in label and "`" not in label for label in labels.values())
    assert set(F3.CLAIM_METRICS) <= set(BX.METRIC_TITLES)
    assert all("_" not in t for t in BX.METRIC_TITLES.values())
    gap = F3.gaps(reports)
    for take in (F3.main_take(reports, gap), F3.gaps_take(gap)):
        assert "`" not in take and not re.search(r"\b[a-z]+_[a-z_]+\b", take), take


def test_e3_ladder_costs_count_the_data_seeds_transports_in_the_peak():
    """Two copies of the weights, and the value and output maps of each data seed beyond the twin kept whole."""
    import torch

    from connlap_lite.pages.findings import e3 as F3

    gib = 2 ** 30
    f = {"parameters": 8e9, "weight_bytes": 16 * gib, "attention_bytes": 2 ** 20, "heads": 32, "head_bytes": 2 ** 20,
         "edge_bytes": 2 ** 20, "ov_bytes": gib}
    cost, shapes = {"big": f, "small": {**f, "weight_bytes": gib, "ov_bytes": gib / 8}}, \
        {"big": (None, torch.bfloat16), "small": (None, torch.bfloat16)}
    text = F3.ladder_costs(cost, shapes, (32, 128), 5, "5.0", llama="big")
    assert "of 2 more twins" in text and "34.0 GiB for Llama-3-8B, 2.2 GiB for `small`" in text
    one = F3.ladder_costs(cost, shapes, (32, 128), 1, "5.0", llama="big")
    assert "more twin" not in one and "two copies of the weights: 32.0 GiB for Llama-3-8B" in one


def test_e1_structures_on_a_decoder_without_sink_mass(e1_book):
    """A decoder with no sink column (Qwen-0.5B without a BOS token, as transformers 5.15 tokenizes it) has a sink
    mass of 0 in every condition: the encoder-against-decoders paragraph is still written, never a division by 0."""
    import copy

    reports = copy.deepcopy(e1_book[0])
    for condition in reports[2]["conditions"].values():
        if "sink" in condition:
            condition["sink"] = [[0.0] * len(row) for row in condition["sink"]]
    said = F1.structures(reports)
    assert "nan" not in said and "enc has" in said and "within" in said


def _segment(lead: str, word: str) -> str:
    """The part of the scorecard's lead that follows ``*word* for``, up to the next word's."""
    found = re.search(rf"\*{re.escape(word)}\* for (.*?)(?:; \*|\.$)", lead)
    assert found, f"the lead names no *{word}*: {lead}"
    return found.group(1)


def test_no_first_screen_contradicts_its_grid(e1_book):
    """Issue 32, item 8: each empirical chapter's opening and verdict box, and the scorecard's lead, say per model and
    per structure the verdicts the rules computed (read through the functions that write them, on rows whose
    decoders disagree: dec-a holds E1, dec-b does not)."""
    reports, rows, grid, says = e1_book
    lead = FS.headline(rows)
    opening = {"E1": says["e1_summary"], "E2": F2.summary(reports, rows)}
    assert {x["verdict"] for r in rows if r["claim"] == "E1" and r["structure"] == "decoder"
            for x in r["per_model"]} == {"holds", "does not hold"}
    for r in rows:
        box = BX.verdict_box(rows, r["claim"]).split("```{dropdown}")[0]
        assert f"**{r['verdict']}**" in box and f"on {BX._on(r)}" in box          # the structure's word
        part = _segment(lead, r["verdict"])
        assert FS.CLAIMS[r["claim"]] in part                                    # the lead: the structure's word
        if r["claim"] == "E3":
            continue
        words = {x["verdict"] for x in r["per_model"]}
        for x in r["per_model"]:
            assert f"{x['model']}: {x['verdict']}" in box                      # the box: each model's word
            assert re.search(rf"\*{re.escape(x['verdict'])}\* on [^;.]*\b{x['model']}\b", opening[r["claim"]])
            if len(words) > 1:                                                 # a mixed structure: each model's own
                assert f"{x['model']} {x['verdict']}" in part                  # word beside the structure's
    # the headline names the reading it judges
    assert "converging to stable operators with depth (E1, read as convergence)" in lead
    assert BX.CLAIM_WORDS["E1"].startswith("Attention converges")
    # no model whose own consecutive-layer distance rises is said to hold E1
    for x in F1.registered(rows).values():
        assert not (x["trained_rise_interval"][0] > 0 and x["verdict"] == "holds")


def test_a_word_that_flips_under_a_round_trip_is_inconclusive(e1_book):
    """Issue 32, item 3: where a quantisation round trip is measured, a word stands only if it is the same after it;
    the ablation list names the round trip's word."""
    reports, rows, *_ = e1_book
    flat = fake("dec-a", effect=False, size=2e8, seed=11)       # dec-a's trained model without its effect
    swapped = {"dec-a": R.substitute(reports[1], flat)}
    after = S.same_after(reports, rows, swapped, "4-bit round trip", n_boot=200)
    x = F1.registered(after)["dec-a"]
    assert F1.registered(rows)["dec-a"]["verdict"] == "holds"
    assert x["verdict"] == "inconclusive" and x["moved"]["4-bit round trip"][0] == "holds"
    assert F1.registered(after)["dec-b"]["verdict"] == F1.registered(rows)["dec-b"]["verdict"]
    dec = next(r for r in after if r["claim"] == "E1" and r["structure"] == "decoder")
    assert dec["verdict"] == S._combine([y["verdict"] for y in dec["per_model"]]) == "inconclusive"
    same = S.same_after(reports, rows, {"dec-a": reports[1]}, "itself", n_boot=200)   # no change: every word stands
    assert [y["verdict"] for r in same for y in r.get("per_model", [])] == \
        [y["verdict"] for r in rows for y in r.get("per_model", [])]
    entries = FS.ablation_entries(reports, swapped, {}, {}, {"dec-a": "4-bit round trip"})
    registered = {(r["claim"], y["model"]): y["verdict"] for r in rows if r["claim"] in ("E1", "E2")
                  for y in r["per_model"]}
    said = FS.ablations(entries, registered, {})
    assert "E1 on dec-a with 4-bit round trip: holds -> " in said


def test_e2_does_not_count_an_edge_gap_within_its_own_round_trip(e1_book):
    """Issue 32, item 8: a model's edge gap no larger than its own 4-bit shift is counted neither further nor
    closer than random init."""
    reports, rows, *_ = e1_book
    mp = {r["model"]: 0.35 for r in reports}
    plain = F2.curves(reports, rows, mp, 4)[0]
    gap = F2.edge_gap_interval(reports[0])[0]
    shifted = F2.curves(reports, rows, mp, 4, {"enc": abs(gap) + 0.001})[0]
    assert "enc the gap" not in plain
    assert f"enc the gap ({gap:+.3f}) is no larger than its own 4-bit round trip's shift" in shifted
    assert "(enc" not in shifted.split("than those of the random-init model")[1].split(";")[0] or \
        "enc" not in shifted.split("lies above 0, in ")[1].split(";")[0]


def test_the_confirmation_is_shown_apart_and_says_where_it_differs(e1_book):
    """Issue 32, item 7: the confirmatory verdicts apart from the exploratory ones, dated, and where they differ;
    without a confirmation the text says the full build runs it."""
    reports, rows, *_ = e1_book
    other = S.scorecard([reports[0], fake("dec-a", effect=False, size=2e8, seed=12), reports[2]], n_boot=200)
    said = FS.confirmation("E1", rows, other, setting=(32, 128), when="2026-12-05")
    assert said.startswith("**Confirmatory verdicts** (rule 4 of 2026-12-04, frozen") and "2026-12-05" in said
    assert f"seed {R.CONFIRMATION_SEED}" in said and "They differ on dec-a (exploratory *holds*, confirmatory" in said
    assert said.index("**Confirmatory") < said.index("**Exploratory")
    same = FS.confirmation("E2", rows, rows, setting=(32, 128), when="2026-12-05")
    assert "rule 5 of 2026-12-04" in same and same.endswith("They agree on every one.")
    none = FS.confirmation("E3", rows, None, setting=(8, 64), when="2026-12-05")
    assert "the full build (`make book`)" in none and "exploratory only" in none


# --- the rival readings (connlap_lite.verdicts.readings' registered rules), in E1, E2 and Beyond --------------------------
def _rivals(**kw):
    """A synthetic record of the rival readings (connlap_lite.verdicts.synthetic.rivals), completed with the measures the
    chapters draw but the rules do not read: the update ratio, the mean-ablation cost, the output-value alignment
    and the random-direction alignment, each stated here."""
    from connlap_lite.verdicts import synthetic as Y

    r = Y.rivals(**kw)
    L, Bp = r["layers"], r["passages"]
    depth = np.linspace(1, 0, L)[:, None]
    flat = lambda v: np.full((L, Bp), v).tolist()     # noqa: E731
    t = r["conditions"]["trained"]
    t.update(update_ratio=(0.1 + 0.3 * depth + 0 * np.ones((L, Bp))).tolist(),
             ablation_mean=(0.8 * np.asarray(t["ablation_zero"])).tolist(), self_alignment=flat(0.4),
             self_alignment_uniform=flat(0.5), state_alignment_random=flat(0.05))
    for c in record.random_nulls(r):
        r["conditions"][c].update(update_ratio=flat(0.2), self_alignment=flat(0.6))
    r.update(head_dim=64, rival_seconds={"trained": {"rival": 1.5, "ablation": 12.0}})
    return r


def _line(text, model):
    return next(x for x in text.splitlines() if f"**{model}**" in x)


@pytest.mark.parametrize("case", [dict(e1_rest=0.1), dict(e1_matters=0.1, e1_rest=0.1),
                                  dict(matters=[0.3, 0.01] * 6), dict(passages=4)])
def test_e1_write_little_says_the_rules_words(case):
    from connlap_lite.verdicts import readings

    r = _rivals(model="m", layers=12, passages=case.pop("passages", 16), **case)
    row = readings.where_it_matters(r, n_boot=300)
    says = F1.write_paragraphs([r], {"m": row})
    line = _line(says["e1_write_says"], "m")
    assert f"*{row['verdict']}*" in line and f"*{row['reading']}*" in line
    if row["verdict"] == "not testable":
        assert "too few for the rule" in line
    if row["verdict"] in ("holds", "does not hold"):
        assert f"{row['margin']:+.3f}" in line
    assert "0.05 nats of next-token loss" in says["e1_write_says"] and "took 12 s" in says["e1_write_says"]
    n = len(r["conditions"]["trained"]["ablation_zero"][0])
    assert f"the first {n} passage" in says["e1_write_says"]
    assert not re.search(r"\{(?!ref\})[a-z_]", " ".join(says.values())), "a placeholder left unformatted"
    # the update ratio falls with depth in the record; the costs where they are 0.3 early and 0.01 late
    cost = record.layer_means(r, "ablation_zero")
    cheaper = cost[-4:].mean() < cost[:4].mean()
    assert says["e1_write_take"].count("in the model") == 1 + cheaper


def test_e1_write_little_changes_with_the_data():
    from connlap_lite.verdicts import readings

    fooled = _rivals(model="m", e1_rest=0.1, seed=1)
    everywhere = _rivals(model="m", e1_matters=0.1, e1_rest=0.1, seed=1)
    words = [_line(F1.write_little([r], {"m": readings.where_it_matters(r, n_boot=300)}), "m")
             for r in (fooled, everywhere)]
    assert words[0] != words[1]
    enc = _rivals(model="m", encoder=True)
    said = F1.write_little([enc], {"m": readings.where_it_matters(enc, n_boot=300)})
    assert "an encoder: 5% mean relative change" in said and "nats" not in said


def test_e1_write_figure_has_three_rows_per_model():
    from connlap_lite.verdicts import readings

    reports = [_rivals(model="a"), _rivals(model="b", seed=1)]
    fig = F1.write_figure(reports, {r["model"]: readings.where_it_matters(r, n_boot=100) for r in reports},
                          n_boot=50)
    assert len(fig.axes) == 6 and fig.axes[2].get_yscale() == "symlog" and fig.axes[4].get_yscale() == "log"


@pytest.mark.parametrize("kw", [dict(dominance_gaussian=0.3, dominance_rotation=0.3, alignment=10),
                                dict(dominance_gaussian=-0.1, dominance_rotation=-0.1), dict(), dict(seeds=2)])
def test_e2_dominance_says_the_rules_reading(kw):
    from connlap_lite.verdicts import readings

    r = _rivals(model="m", layers=24, **kw)
    row = readings.dominance(r, n_boot=300)
    e2 = [{"claim": "E2", "per_model": [{"model": "m", "verdict": "does not hold"}]}]
    says = F2.dominance_paragraphs([r], {"m": row}, e2)
    line = _line(says["e2_dominance_says"], "m")
    assert f"reading *{row['reading']}*" in line or f"gives *{row['reading']}*" in line
    assert "E2's verdict: *does not hold*" in line
    if "nulls" in row:
        assert f"1/d_h = {1 / 64:.3f}" in line
        assert ("above the Gaussian heads" in line) == bool(row["p_above"][0] < 0.05)
    dominant = row["reading"] == "dominant direction"
    assert ("in the model" in says["e2_dominance_take"].split(",")[0]) == dominant
    assert F2.dominance_figure([r], n_boot=50).axes


@pytest.mark.parametrize("kw", [dict(self_loop=0.05, self_loop_growth=0.05), dict(self_loop=0.05),
                                dict(self_loop=0.05, self_loop_growth=0.05, self_loop_seed_gap=0.0), dict(seeds=2)])
def test_beyond_self_loop_says_the_rules_verdict(kw):
    from connlap_lite.verdicts import readings
    from connlap_lite.pages.findings import beyond as FB

    reports = {"m": _rivals(model="m", **kw)}
    rows = {"m": readings.self_loop(reports["m"], n_boot=300)}
    says = FB.self_loop_paragraphs(reports, rows)
    line = _line(says["beyond_self_loop_says"], "m")
    assert f"*{rows['m']['verdict']}*" in line
    assert ("in the model" in says["beyond_self_loop_take"]) == (rows["m"]["verdict"] == "holds")
    if "late" in rows["m"]:
        assert "below uniform attention's in both thirds" in line      # 0.4 against 0.5, as stated above
        assert ("larger late" in line) == (rows["m"]["late_margin"] > rows["m"]["early_margin"])
    assert len(FB.self_loop_figure(reports, n_boot=50).axes) == 2
