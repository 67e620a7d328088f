"""connlap_lite.known: the reproduction chapter's measurements, on small cases whose answer is known, on tiny
random models (the exact proposition of Gu et al. included), through the command line, and its checkers."""
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from connlap_lite import HeadTransports
from connlap_lite._backend import UndefinedWarning
from connlap_lite import attention_walks
from connlap_lite.pages import exercises as E
from connlap_lite import known as K
from connlap_lite.measure import metrics as M
from connlap_lite.known import report as KR       # the private passes and the cache reader


def causal_uniform(n):
    return torch.tril(torch.ones(n, n, dtype=torch.float64)) / torch.arange(1, n + 1, dtype=torch.float64)[:, None]


def softmax_walks(shape, causal=False, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    S = scale * torch.randn(*shape, generator=g, dtype=torch.float64)
    if causal:
        n = shape[-1]
        S = S.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), -torch.inf)
    return S.softmax(-1)


# ------------------------------------------------------------------------------------ sinks
def test_all_mass_on_the_first_token_is_sink_rate_one():
    A = torch.zeros(3, 4, 5, 5, dtype=torch.float64)      # 3 layers x 4 heads
    A[..., 0] = 1
    assert torch.equal(K.first_token_scores(A), torch.ones(3, 4, dtype=torch.float64))
    assert float(K.sink_rate(K.first_token_scores(A))) == 1.0


def test_causal_uniform_heads_score_the_harmonic_mean_and_are_no_sinks():
    n = 64
    A = causal_uniform(n).expand(2, 3, n, n)
    score = sum(1 / t for t in range(1, n + 1)) / n          # (1/n) sum_t 1/t, about 0.074 for n = 64
    assert torch.allclose(K.first_token_scores(A), torch.full((2, 3), score, dtype=torch.float64), atol=1e-14)
    assert float(K.sink_rate(K.first_token_scores(A))) == 0.0
    assert float(K.sink_rate(K.first_token_scores(A), eps=score - 1e-9)) == 1.0


def test_sink_rate_counts_heads_strictly_above_eps_and_keeps_leading_axes():
    scores = torch.tensor([[[0.9, 0.3], [0.31, 0.0]], [[0.0, 0.0], [0.0, 0.5]]])    # 2 passages, 2 layers x 2 heads
    assert torch.equal(K.sink_rate(scores), torch.tensor([0.5, 0.25], dtype=torch.float64))


def test_first_token_scores_of_token_k_average_only_the_queries_that_see_it():
    A = causal_uniform(4)[None]
    assert torch.allclose(K.first_token_scores(A, k=2), torch.tensor([(1 / 3 + 1 / 4) / 2], dtype=torch.float64))


class FakeTokenizer:
    all_special_ids = [0, 1, 2]
    vocab_size = 50


def test_random_tokens_keep_the_special_tokens_and_draw_ordinary_ones():
    ids = torch.tensor([[1, 10, 11, 12, 2], [1, 13, 14, 15, 2]])
    out = K.random_tokens(FakeTokenizer(), {"input_ids": ids, "attention_mask": torch.ones_like(ids)}, seed=3)
    assert torch.equal(out["input_ids"][:, [0, -1]], ids[:, [0, -1]])
    body = out["input_ids"][:, 1:-1]
    assert bool(((body >= 3) & (body < 50)).all())
    assert torch.equal(out["input_ids"], K.random_tokens(FakeTokenizer(), {"input_ids": ids}, seed=3)["input_ids"])
    assert torch.equal(K.ordinary_ids(FakeTokenizer()), torch.arange(3, 50))


def test_repeated_tokens_repeat_one_ordinary_token_per_passage():
    out = K.repeated_tokens(FakeTokenizer(), 6, 9, seed=1)["input_ids"]
    assert out.shape == (6, 9)
    assert bool((out == out[:, :1]).all()) and bool((out[:, 0] >= 3).all())


def test_position_spread():
    X = torch.ones(2, 5, 3)
    assert torch.equal(K.position_spread(X), torch.zeros(2, dtype=torch.float64))
    X[1, 3, 0] = 3.0                                          # one token differs by 2 in one coordinate
    assert torch.allclose(K.position_spread(X), torch.tensor([0.0, 2 / math.sqrt(3)], dtype=torch.float64))


# -------------------------------------------------------------------------------- transports
def test_transported_is_the_dense_head_transport_applied_to_every_token():
    g = torch.Generator().manual_seed(0)
    heads = HeadTransports(torch.randn(3, 6, 2, generator=g, dtype=torch.float64),
                           torch.randn(3, 2, 6, generator=g, dtype=torch.float64))
    X = torch.randn(2, 5, 6, generator=g, dtype=torch.float64)
    Y = K.transported(heads, X)
    assert Y.shape == (2, 3, 5, 6)
    assert torch.allclose(Y, torch.einsum("hab,njb->nhja", heads.dense(), X), atol=1e-12)


def brute_force_norm_walk(A, Y):
    msg = torch.einsum("hij,hjd->ijd", A, Y)                  # (n, n, d): the messages sum_h A^h_ij T_h x_j
    W = msg.norm(dim=-1)
    return W / W.sum(-1, keepdim=True)


def test_norm_weighted_walk_equals_the_norm_of_the_summed_messages():
    g = torch.Generator().manual_seed(1)
    A = softmax_walks((4, 7, 7), causal=True, seed=1)
    Y = torch.randn(4, 7, 5, generator=g, dtype=torch.float64)
    N = K.norm_weighted_walk(A, Y)
    assert torch.allclose(N, brute_force_norm_walk(A, Y), atol=1e-12)
    assert torch.allclose(N.sum(-1), torch.ones(7, dtype=torch.float64), atol=1e-12)
    batched = K.norm_weighted_walk(torch.stack([A, A]), torch.stack([Y, 2 * Y]))   # a scale does not matter
    assert torch.allclose(batched[0], N, atol=1e-12) and torch.allclose(batched[1], N, atol=1e-12)


def test_norm_weighted_walk_of_one_head_reweights_by_the_token_norms():
    A = softmax_walks((1, 5, 5), seed=2)
    X = torch.randn(1, 5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    W = A[0] * X[0].norm(dim=-1)[None, :]
    assert torch.allclose(K.norm_weighted_walk(A, X), W / W.sum(-1, keepdim=True), atol=1e-12)


def test_heads_that_cancel_carry_nothing_on_that_edge():
    A = torch.full((2, 3, 3), 1 / 3, dtype=torch.float64)    # two identical heads
    Y = torch.randn(1, 3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    Y = torch.cat([Y, -Y])                                    # opposite transports: every message is 0 ...
    Y[1, 2] = 0                                               # ... except to token 2, which head 1 does not carry
    N = K.norm_weighted_walk(A, Y)
    assert torch.allclose(N, torch.tensor([[0.0, 0.0, 1.0]] * 3, dtype=torch.float64), atol=1e-12)


# ----------------------------------------------------------------------------- rank collapse
def test_rank_one_residual_of_one_vector_repeated_is_zero():
    x = torch.randn(8, dtype=torch.float64)
    assert float(K.rank_one_residual(torch.ones(5, 1, dtype=torch.float64) * x)) < 1e-15
    X = torch.eye(4, dtype=torch.float64)                     # orthonormal tokens: ||I - 11^T/4|| / ||I|| = sqrt(3/4)
    assert abs(float(K.rank_one_residual(X)) - math.sqrt(0.75)) < 1e-14


def test_a_product_of_attention_walks_keeps_identical_tokens_identical_and_contracts_the_rest():
    x = torch.randn(6, dtype=torch.float64)
    same = torch.ones(10, 1, dtype=torch.float64) * x
    X = torch.randn(10, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    Z, spread = X, [float(K.token_spread(X))]
    for seed in range(12):
        P = softmax_walks((10, 10), seed=seed)
        same = P @ same
        Z = P @ Z
        spread.append(float(K.token_spread(Z)))
    assert float(K.rank_one_residual(same)) < 1e-14
    assert all(b <= a + 1e-12 for a, b in zip(spread, spread[1:]))       # a convex mix never widens a coordinate
    assert float(K.rank_one_residual(Z)) < 1e-3 * float(K.rank_one_residual(X))


# ------------------------------------------------------------------------- doubly stochastic
def test_column_sum_defect():
    n = 6
    perms = [torch.eye(n, dtype=torch.float64)[torch.randperm(n, generator=torch.Generator().manual_seed(s))]
             for s in range(3)]
    D = (perms[0] + 2 * perms[1] + 3 * perms[2]) / 6          # Birkhoff: a mix of permutations is doubly stochastic
    assert float(K.column_sum_defect(D)) < 1e-15
    sink = torch.zeros(n, n, dtype=torch.float64)
    sink[:, 0] = 1
    assert abs(float(K.column_sum_defect(sink)) - (n - 1) / n) < 1e-15
    assert float(K.column_sum_defect(causal_uniform(n))) > 0.1    # a causal walk other than I is never doubly stochastic
    P = softmax_walks((3, n, n), seed=5)
    assert bool(((K.column_sum_defect(P) >= 0) & (K.column_sum_defect(P) <= (n - 1) / n)).all())


# ------------------------------------------------------------------------ consecutive layers
def test_head_matched_distance():
    A = softmax_walks((2, 4, 6, 6), seed=6)                   # 2 passages x 4 heads
    assert torch.allclose(K.head_matched_distance(A, A), torch.zeros(2, dtype=torch.float64), atol=1e-15)
    assert torch.allclose(K.head_matched_distance(A, A[:, [2, 0, 3, 1]]), torch.zeros(2, dtype=torch.float64))
    B = softmax_walks((2, 4, 6, 6), seed=7)
    D = K.head_matched_distance(A, B)
    for b in range(2):
        by_hand = np.mean([min(float(M.walk_distance(A[b, g], B[b, h])) for g in range(4)) for h in range(4)])
        assert abs(float(D[b]) - by_hand) < 1e-12


def test_middle_layers_scale_bert_base_layers_6_to_10():
    assert K.middle_layers(12) == [5, 6, 7, 8, 9]
    assert K.middle_layers(6) == [3, 4] and K.middle_layers(24) == list(range(10, 19))


# ---------------------------------------------------------------------------------- verdicts
def test_verdicts_of_the_toy_report_follow_the_rule():
    rows = {r["key"]: r for r in K.verdicts(K.toy_report())}
    assert list(rows) == list(K.STATEMENTS)
    assert {k: r["verdict"] for k, r in rows.items()} == {
        "sink_order": "agree", "sink_repeated": "agree", "proposition": "agree", "clark_sep": "agree",
        "kobayashi_norm": "agree", "dong_walks": "agree", "dong_skip": "agree", "sinkformer": "disagree",
        "reuse": "agree"}
    for r in rows.values():
        for m, lo, hi in r["tested"]:
            assert lo - 1e-12 <= m <= hi + 1e-12


def test_each_verdict_turns_when_its_numbers_do():
    def flip(edit):
        rep = K.toy_report()
        edit(rep, rep["conditions"]["trained"], rep["conditions"]["random0"])
        return {r["key"]: r["verdict"] for r in K.verdicts(rep)}

    def around(x, b=0.01):                                    # 8 passages whose mean is x, spread +-b
        return [x + b * (-1) ** k for k in range(8)]

    def reverse(rep, t, z):
        t["random"]["rate"] = around(0.9)
    assert flip(reverse)["sink_order"] == "disagree"

    def tie(rep, t, z):                                       # ties everywhere: no reversal, and no drop either
        t["random"]["rate"] = t["repeated"]["rate"] = list(t["natural"]["rate"])
    assert flip(tie)["sink_order"] == "inconclusive"

    def one_tie(rep, t, z):                                   # >= allows a tie in one step
        t["random"]["rate"] = list(t["natural"]["rate"])
    assert flip(one_tie)["sink_order"] == "agree"

    def repeated_sink(rep, t, z):
        t["repeated"]["rate"] = [0.0, 0.1] + [0.0] * 6
        t["repeated"]["spread"][2] = [0.0, 1e-3] + [0.0] * 6
    v = flip(repeated_sink)
    assert v["sink_repeated"] == "disagree" and v["proposition"] == "disagree"

    def undefined(rep, t, z):                                 # the exact statements too: undefined, not disagree
        t["repeated"]["rate"][3] = t["repeated"]["spread"][1][3] = float("nan")
    with pytest.warns(UndefinedWarning):
        v = flip(undefined)
    assert v["sink_repeated"] == v["proposition"] == v["sink_order"] == "undefined"

    def absolute(rep, t, z):
        rep["absolute_positions"] = True
    v = flip(absolute)
    assert v["sink_repeated"] == v["proposition"] == "not comparable"

    def decoder(rep, t, z):
        rep["encoder"] = False
    v = flip(decoder)
    assert v["clark_sep"] == v["sinkformer"] == "not comparable"

    def no_collapse(rep, t, z):
        t["natural"]["walk_residual"][-1] = [0.5] * 8
        t["natural"]["state_residual"][-1] = around(0.015, 0.005)
    v = flip(no_collapse)
    assert v["dong_walks"] == v["dong_skip"] == "disagree"

    def weak_norm(rep, t, z):
        t["natural"]["norm_sinks"] = [[0.5] * 8] * 3
    assert flip(weak_norm)["kobayashi_norm"] == "disagree"

    def closer_to_ds(rep, t, z):
        t["natural"]["column_defect"] = [around(0.01, 0.001)] * 3
    assert flip(closer_to_ds)["sinkformer"] == "agree"

    def seeds_spread_wide(rep, t, z):                         # the seeds vary more than the gap: no verdict
        t["natural"]["column_defect"] = [around(0.03, 0.001)] * 3
        for k, level in enumerate((0.01, 0.09, 0.02, 0.08, 0.05)):
            rep["conditions"][f"random{k}"]["natural"]["column_defect"] = [around(level, 0.001)] * 3
    assert flip(seeds_spread_wide)["sinkformer"] == "inconclusive"

    def one_seed(rep, t, z):
        for k in range(1, 5):
            del rep["conditions"][f"random{k}"]
    assert flip(one_seed)["sinkformer"] == "insufficient data"

    def few_passages(rep, t, z):                              # below 8 passages: statistical statements only
        for cond in rep["conditions"].values():
            for group in cond.values():
                for key, v in group.items():
                    group[key] = v[:7] if not isinstance(v[0], list) else [x[:7] for x in v]
    v = flip(few_passages)
    assert {v[k] for k in ("sink_order", "clark_sep", "kobayashi_norm", "dong_walks", "dong_skip", "sinkformer",
                           "reuse")} == {"insufficient data"}
    assert v["sink_repeated"] == v["proposition"] == "agree"

    def adjacent_far(rep, t, z):
        t["natural"]["head_tv"] = [[0.3] * 8] * 2
    assert flip(adjacent_far)["reuse"] == "disagree"

    def like_another_passage(rep, t, z):                      # the own next layer no closer than another passage's
        t["natural"]["tv_norm_cross"] = [list(v) for v in t["natural"]["tv_norm"]]
        t["natural"]["tv_norm_cross"][0] = around(0.52)
    assert flip(like_another_passage)["reuse"] == "inconclusive"

    def another_passage_closer(rep, t, z):
        t["natural"]["tv_norm_cross"] = [around(0.2)] * 2
    assert flip(another_passage_closer)["reuse"] == "disagree"

    def untrained_far(rep, t, z):                             # the random-init null is shown, not tested
        z["natural"]["tv_norm"] = [[0.01] * 8] * 2
    assert flip(untrained_far)["reuse"] == "agree"


def test_reuse_was_against_random_init_and_is_now_against_another_passage():
    """The dated rule change: the old rule beat the near-uniform random-init null by construction; the new one
    says inconclusive when a passage's next layer is no closer than another passage's (and the rule in force is
    the change's new rule)."""
    rep = K.toy_report()
    nat = rep["conditions"]["trained"]["natural"]
    nat["tv_norm_cross"] = [list(v) for v in nat["tv_norm"]]        # another passage's next layer as close
    old = {r["key"]: r["verdict"] for r in K.verdicts_rule1(rep)}
    new = {r["key"]: r["verdict"] for r in K.verdicts(rep)}
    assert (old["reuse"], new["reuse"]) == ("agree", "inconclusive")
    (change,) = [c for c in K.rule_changes([rep]) if ("reuse", "toy") in c["verdicts"]]
    assert change["verdicts"][("reuse", "toy")] == ("agree", "inconclusive") and change["date"] == "2026-12-02"
    assert all(key in K.STATEMENTS for c in K.rule_changes([rep]) for part in c["parts"] for key in part["statements"])


def test_the_cross_passage_null_is_the_one_analysis_registers():
    """tv_norm_cross and analysis's cross_passage_tv_norm are one quantity: metrics.cross_passage_distance."""
    from connlap_lite.measure import analysis

    for causal in (False, True):
        P, Q = softmax_walks((3, 6, 6), causal, seed=3), softmax_walks((3, 6, 6), causal, seed=4)
        mine = M.cross_passage_distance(P, Q, M.uniform_scale(P, Q, causal))
        theirs = analysis._step_metrics(P, Q, [], causal)["cross_passage_tv_norm"]
        assert torch.equal(mine, theirs)
        by_hand = torch.stack([M.walk_distance(P[b], Q[(b + 1) % 3]) for b in range(3)])
        assert torch.allclose(mine, by_hand / M.uniform_scale(P, Q, causal), atol=1e-14)
    with pytest.raises(ValueError, match="at least two passages"):
        M.cross_passage_distance(P[:1], Q[:1], M.uniform_scale(P[:1], Q[:1], True))
    with pytest.raises(ValueError, match="n_passages must be at least 2"):
        K.known_results("minilm-l6", n_passages=1)


def test_verdict_table_and_counts():
    reports = [K.toy_report(), {**K.toy_report(), "model": "toy-decoder", "encoder": False}]
    table = K.verdict_table(reports).splitlines()
    assert len(table) == 2 + len(K.STATEMENTS)
    assert table[0] == "| published | `toy` | `toy-decoder` |"
    clark = next(line for line in table if "[SEP]" in line)
    assert clark.endswith("| **not comparable** |") and "{cite}`clark2019what`" in clark
    counts = K.verdict_counts(reports).splitlines()
    assert counts[-2] == ("- **all** (18): *agree* 15, *disagree* 1, *inconclusive* 0, *insufficient data* 0, "
                          "*not comparable* 2, *undefined* 0")
    assert counts[-1] == "- *disagree*: `toy` (training approaches doubly stochastic)"


# ------------------------------------------------------------------------ tiny random models
@pytest.fixture(scope="module")
def tiny_llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, intermediate_size=96,
                      num_hidden_layers=4, vocab_size=128, initializer_range=0.2)
    model = LlamaForCausalLM(cfg).eval()
    model.config._attn_implementation = "eager"
    return model


@pytest.fixture(scope="module")
def tiny_bert():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    cfg = BertConfig(hidden_size=48, num_attention_heads=4, intermediate_size=96, num_hidden_layers=3, vocab_size=128,
                     max_position_embeddings=32, initializer_range=0.2)
    model = BertModel(cfg).eval()
    model.config._attn_implementation = "eager"
    return model


def test_residual_stream_is_hugging_faces_hidden_states(tiny_llama, tiny_bert):
    ids = torch.randint(0, 128, (2, 10), generator=torch.Generator().manual_seed(0))
    def hooks(model):
        return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())

    for model in (tiny_llama, tiny_bert):
        with torch.no_grad():
            model(input_ids=ids, output_hidden_states=True)   # Hugging Face installs hooks of its own on first use
        before = hooks(model)
        with torch.no_grad(), K.residual_stream(model) as states:
            out = model(input_ids=ids, output_hidden_states=True)
        ref = out.hidden_states
        assert len(states) == len(ref) == model.config.num_hidden_layers + 1
        for k in range(len(ref) - 1):                         # Llama's last entry is after the final norm
            assert torch.allclose(states[k], ref[k], atol=1e-6), (type(model).__name__, k)
        assert hooks(model) == before                         # every hook of ours removed


def test_gu_proposition_exact_without_absolute_positions_and_not_with_them(tiny_llama, tiny_bert):
    ids = torch.full((2, 12), 7)
    ids[1] = 9
    llama = KR._sink_pass(tiny_llama, {"input_ids": ids}, spread=True)
    assert max(max(v) for v in llama["spread"]) < 1e-5        # every layer: all positions equal (float rounding)
    bert = KR._sink_pass(tiny_bert, {"input_ids": ids}, spread=True)
    assert min(max(v) for v in bert["spread"]) > 1e-2         # learned absolute positions break the symmetry
    assert not K.absolute_positions(tiny_llama) and K.absolute_positions(tiny_bert)


def test_natural_pass_on_a_tiny_decoder(tiny_llama):
    ids = torch.randint(0, 128, (3, 10), generator=torch.Generator().manual_seed(1))
    res = KR._natural_pass(tiny_llama, {"input_ids": ids}, encoder=False)
    L = tiny_llama.config.num_hidden_layers
    assert len(res["mass_first"]) == len(res["column_defect"]) == L and len(res["mass_first"][0]) == 3
    assert len(res["walk_residual"]) == len(res["state_residual"]) == L + 1
    assert len(res["tv"]) == len(res["head_tv"]) == len(res["tv_norm_cross"]) == L - 1 and len(res["head_tv2"]) == L - 2
    walks = [lw.attention.double().mean(1) for lw in attention_walks(tiny_llama, {"input_ids": ids}, progress=False)]
    for a in range(L - 1):                                    # passage b against passage b + 1's next layer
        scale = M.uniform_scale(walks[a], walks[a + 1], True)
        assert np.allclose(res["tv_norm_cross"][a], M.cross_passage_distance(walks[a], walks[a + 1], scale), atol=1e-12)
    spread = np.array(res["walk_spread"])
    assert (np.diff(spread, axis=0) <= 1e-9).all()            # composed walks never widen a coordinate
    assert res["walk_residual"][0] == res["state_residual"][0]
    for key in ("mass_first", "norm_first", "norm_sinks", "column_defect", "tv", "head_tv"):
        v = np.array(res[key])
        assert ((v >= -1e-12) & (v <= 1 + 1e-12)).all(), key


# ------------------------------------------------------------------------------ command line
@pytest.fixture(scope="module")
def cli_report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("known")
    out = folder / "out.json"
    env = {**os.environ, "CONNLAP_CACHE": str(folder / "cache")}
    r = subprocess.run([sys.executable, "-m", "connlap_lite", "analyze", "minilm-l6", "--passages", "2",
                        "--tokens", "16", "--json", str(out)], capture_output=True, text=True, timeout=900, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "known results (published statements" in r.stdout and "Attention sinks:" in r.stdout   # by plain name
    assert "sink_order" not in r.stdout
    return json.loads(out.read_text()), folder / "cache"


def test_cli_reports_the_known_results(cli_report, monkeypatch):
    report, cache = cli_report
    known = report["known_results"]
    assert set(known["sink_rate"]) == {"trained", "random0"}
    for cond in ("trained", "random0"):
        assert set(known["sink_rate"][cond]) == {"natural", "random", "repeated"}
        assert all(0 <= v <= 1 for v in known["sink_rate"][cond].values())
    assert [r["key"] for r in known["verdicts"]] == list(K.STATEMENTS)
    assert all(r["verdict"] in K.KNOWN_VERDICTS for r in known["verdicts"])
    assert known["passages"] == 2 and known["tokens"] == 16 and known["schema"] == K.KNOWN_SCHEMA
    nat = known["conditions"]["trained"]["natural"]
    assert len(nat["mass_last"]) == known["layers"] == report["layers"] and len(nat["mass_last"][0]) == 2
    # the cache the command line wrote is what the chapter reads
    monkeypatch.setenv("CONNLAP_CACHE", str(cache))
    again = K.known_results("minilm-l6", n_passages=2, n_tokens=16)
    assert again["sink_rate"] == known["sink_rate"] and again["verdicts"] == known["verdicts"]


# ----------------------------------------------------------------------------------- checkers
def test_chapter_checkers_accept_right_answers_and_catch_mistakes():
    def rate(A, eps):
        return (A[..., :, 0].mean(-1) > eps).mean()

    def norm_walk(A, T, X):
        W = np.linalg.norm(np.einsum("hij,hab,jb->ija", A, T, X), axis=-1)
        return W / W.sum(1, keepdims=True)

    assert E.check_sink_rate(rate) is None and E.check_norm_weighted_walk(norm_walk) is None   # passes, says nothing
    wrong = [(E.check_sink_rate, lambda A, eps: (A[..., :, 0].mean(-1) >= eps).mean()),            # >= for >
             (E.check_sink_rate, lambda A, eps: (A[..., :, -1].mean(-1) > eps).mean()),            # last column
             (E.check_norm_weighted_walk, lambda A, T, X: (lambda W: W / W.sum(1, keepdims=True))(  # per-head norms
                 np.einsum("hij,hj->ij", A, np.linalg.norm(np.einsum("hab,jb->hja", T, X), axis=-1)))),
             (E.check_norm_weighted_walk, lambda A, T, X: np.linalg.norm(np.einsum("hij,hab,jb->ija", A, T, X), axis=-1))]
    for checker, fn in wrong:
        with pytest.raises(E.ExerciseFailed, match=rf"{checker.__name__} failed on case \d+ of \d+"):
            checker(fn)


def test_a_torn_cache_file_is_measured_again_with_a_warning(tmp_path, monkeypatch):
    """A truncated or foreign JSON in the cache is not trusted: a warning, a fresh measurement, a sound file."""
    import warnings

    monkeypatch.setenv("CONNLAP_CACHE", str(tmp_path))
    path = tmp_path / "known" / "m.json"
    path.parent.mkdir(parents=True)
    for bad in ('{"schema": ', '[]', json.dumps({"schema": "old", "model": "m"})):
        path.write_text(bad)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert KR._cached(path, "m", random_init=False) is None
        assert any("recomputing" in str(w.message) for w in caught), bad
    good = {"schema": K.KNOWN_SCHEMA, "model": "m", "conditions": {"trained": {}, "random0": {}}, "sink_rate": {}}
    path.write_text(json.dumps(good))
    assert KR._cached(path, "m", random_init=False) == good


def test_every_name_the_chapter_reads_is_on_known():
    """The chapter reads ``K.<name>`` (or ``from connlap_lite.known import <name>``): each is a name of the package
    ``connlap_lite.known``, whichever of its modules defines it; a name it reads from one of those modules is that
    module's.  (The package's own modules read each name from its defining module: tests/contracts/test_layout.py.)"""
    import importlib
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    chapter = json.loads((root / "book" / "models" / "known_results.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in chapter["cells"] if c["cell_type"] == "code")
    used = set(re.findall(r"\bK\.(\w+)", code)) | {
        n.strip() for names in re.findall(r"from connlap_lite\.known import ([\w, ]+)", code) for n in names.split(",")}
    by_module = {(m, n.strip()) for m, names in re.findall(r"from connlap_lite\.known\.(\w+) import ([\w, ]+)", code)
                 for n in names.split(",")}
    assert len(used) + len(by_module) >= 3, "the chapter reads the package's measurements"
    assert not sorted(n for n in used if not hasattr(K, n)), "names read but not on connlap_lite.known"
    assert not sorted((m, n) for m, n in by_module
                      if not hasattr(importlib.import_module(f"connlap_lite.known.{m}"), n))
    assert set(K.__all__) <= set(dir(K)) and all(not n.startswith("_") for n in K.__all__)
