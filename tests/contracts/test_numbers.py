"""Numbers that are right or refused: undefined statistics, non-finite layers, dtypes, interrupted streams."""
import threading

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, LlamaConfig

from connlap_lite import (AttentionWeights, ConnectionWalk, HeadTransports, attention_walks, connection_laplacian,
                          dirichlet_energy, mha_walk, multi_head_attention, reversibility_defect,
                          stationary_distribution, walk_from_heads)
from connlap_lite.measure import edges
from connlap_lite.models import extraction
from connlap_lite.measure import metrics as M
from connlap_lite.measure import stats
from connlap_lite.models.adapters import adapter_for


def tiny_llama(layers=2, dtype=torch.float32):
    torch.manual_seed(0)
    config = LlamaConfig(num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2, hidden_size=32,
                         intermediate_size=64, vocab_size=100)
    return AutoModelForCausalLM.from_config(config, attn_implementation="eager").to(dtype).eval()


def batch(n=8, B=2):
    ids = torch.randint(1, 100, (B, n), generator=torch.Generator().manual_seed(1))
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def no_hooks(model):
    return all(not m._forward_pre_hooks and not m._forward_hooks for m in adapter_for(model).layers(model))


# ------------------------------------------------------------------ item 6: undefined is never significant
@pytest.mark.parametrize("x, y", [
    (range(3), [2.0, 2.0, 2.0]),            # a constant curve
    (range(3), [1.0, float("nan"), 2.0]),   # a NaN
    (range(1), [1.0]),                      # one point
    ([], []),                               # none
    ([1, 1, 1, 1], [1, 2, 3, 4]),           # a constant x
    (range(12), [0.5] * 12),                # beyond the exact range
])
def test_undefined_spearman_is_nan_not_significant(x, y):
    rho, p = stats.spearman(x, y)
    assert np.isnan(rho) and np.isnan(p)


def test_spearman_still_right_where_defined():
    rho, p = stats.spearman(range(6), [3, 1, 2, 6, 5, 4])
    assert rho == pytest.approx(0.6) and p == pytest.approx(0.2417, abs=1e-4)
    with pytest.raises(ValueError, match="x and y must have the same length"):
        stats.spearman(range(3), [1, 2])
    with pytest.raises(TypeError, match="y must be a sequence of numbers"):
        stats.spearman(range(3), "abc")


def test_two_layer_depth_trend_is_nan():
    from connlap_lite.verdicts.record import depth_trend
    report = {"conditions": {"trained": {"tv": [[0.1, 0.2]]}}}          # one step: one point
    rho, p = depth_trend(report, "tv")
    assert np.isnan(rho) and np.isnan(p)


def test_zero_over_zero_defects_are_nan():
    assert torch.isnan(edges.rank_free_defect(torch.zeros(3)))
    U = torch.zeros(2, 4, 2, dtype=torch.float64)
    V = torch.randn(2, 2, 4, dtype=torch.float64)
    U[1] = torch.randn(4, 2, dtype=torch.float64)
    X = torch.randn(5, 4, dtype=torch.float64)
    d = M.data_isometry_defect(HeadTransports(U, V), X)
    assert torch.isnan(d[0]) and torch.isfinite(d[1])                      # a zero head has no gain
    one = M.data_isometry_defect(HeadTransports(U, V), X[:1])              # one token: no spread
    assert torch.isnan(one).all()
    X0 = torch.cat([X, torch.zeros(1, 4, dtype=torch.float64)])           # a zero token is left out
    assert torch.allclose(M.data_isometry_defect(HeadTransports(U, V), X0)[1], d[1])


def test_one_passage_has_no_cross_distance():
    from connlap_lite.measure.analysis import _walk_metrics
    P = M.uniform_walk(5, True)[None]
    assert torch.isnan(_walk_metrics(P, [0])["cross"]).all()


# ------------------------------------------------------------------ item 7: non-finite values caught
def test_overflow_is_caught_at_its_layer_and_named():
    model = tiny_llama(layers=3, dtype=torch.float16)
    with torch.no_grad():
        for proj in (model.model.layers[0].mlp.up_proj, model.model.layers[0].mlp.gate_proj):
            proj.weight.fill_(30.0)                                # layer 0's MLP overflows float16
    seen = []
    with pytest.raises(ValueError, match=r"layer 1 of LlamaForCausalLM: its inputs hold \d+ NaN or inf entries "
                                         r"in torch.float16; the activations overflow.*dtype=torch.bfloat16.*or dtype=torch.float32"):
        for lw in attention_walks(model, batch(), progress=False):
            seen.append(lw.layer)
    assert seen == [0] and no_hooks(model)


def test_nan_attention_is_caught(monkeypatch):
    model = tiny_llama()
    layer = model.model.layers[1].self_attn

    def poison(module, args, kwargs, output):
        return (output[0], output[1] * float("nan"))
    handle = layer.register_forward_hook(poison, with_kwargs=True)
    try:
        with pytest.raises(ValueError, match=r"layer 1 .*attention hold 512 NaN or inf entries in torch.float32; its weights"):
            list(attention_walks(model, batch(), progress=False))
    finally:
        handle.remove()


def test_measure_stops_before_eigh_on_overflow():
    from connlap_lite.measure.analysis import measure
    model = tiny_llama(layers=2, dtype=torch.float16)
    with torch.no_grad():
        for proj in (model.model.layers[0].mlp.up_proj, model.model.layers[0].mlp.gate_proj):
            proj.weight.fill_(30.0)
    with pytest.raises(ValueError, match="layer 1 .*float16"):
        measure(model, batch(), encoder=False)


# ------------------------------------------------------------------ item 8: dtypes
def test_float32_walks_are_accepted_with_the_right_answer():
    P = torch.softmax(torch.randn(7, 7, generator=torch.Generator().manual_seed(0)), -1)    # float32
    pi = stationary_distribution(P)
    pi64 = stationary_distribution(P.double() / P.double().sum(1, keepdim=True))
    assert pi.dtype == torch.float32 and torch.allclose(pi.double(), pi64, atol=1e-6)
    assert torch.allclose(pi @ P, pi, atol=1e-6)
    renormalised = P / P.sum(1, keepdim=True)                   # the fix the error message suggests
    assert torch.allclose(stationary_distribution(renormalised).double(), pi64, atol=1e-6)
    r = reversibility_defect(P)
    assert float(r) == pytest.approx(float(reversibility_defect(P.double() / P.double().sum(1, keepdim=True))),
                                     abs=1e-5)
    with pytest.raises(ValueError, match="row-stochastic"):   # a real defect is still refused
        stationary_distribution(P * 1.01)


def test_a_real_models_own_attention_float32():
    model = tiny_llama()
    lw = next(iter(attention_walks(model, batch(n=12), progress=False)))
    walk = lw.walk(0)
    assert walk.P.dtype == torch.float32
    pi = torch.as_tensor(stationary_distribution(walk.P))
    assert torch.allclose(pi @ walk.P, pi, atol=1e-5) and abs(float(pi.sum()) - 1) < 1e-6
    with pytest.raises(ValueError, match="P must be irreducible"):      # causal: pi = e_1 would read "reversible"
        reversibility_defect(walk.P)
    assert float(reversibility_defect(M.teleport(walk.P))) > 0
    f = torch.randn(12, 32)
    assert torch.isfinite(torch.as_tensor(dirichlet_energy(walk, f)))


def test_float32_orthogonal_transports():
    th = 0.7
    R = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
    w = np.array([[0.0, 1.0], [1.0, 0.0]])
    O = np.zeros((2, 2, 2, 2)); O[0, 1] = R; O[1, 0] = R.T
    L64 = connection_laplacian(w, O)
    L32 = connection_laplacian(w.astype(np.float32), O.astype(np.float32))
    assert L32.dtype == np.float32 and np.allclose(L32, L64, atol=1e-6)
    mixed = connection_laplacian(w, O.astype(np.float32))          # float64 weights, float32 transports
    assert mixed.dtype == np.float64 and np.allclose(mixed, L64, atol=1e-6)
    bad = O.astype(np.float32); bad[0, 1] *= 1.01
    bad[1, 0] = bad[0, 1].T
    with pytest.raises(ValueError, match="O must be orthogonal"):
        connection_laplacian(w, bad)


def test_mixed_dtypes_compute_in_the_wider_one():
    g = torch.Generator().manual_seed(0)
    P = torch.softmax(torch.randn(5, 5, generator=g, dtype=torch.float64), -1)
    T = torch.randn(3, 3, generator=g, dtype=torch.float64)
    f = torch.randn(5, 3, generator=g, dtype=torch.float64)
    want = P @ f @ T.T
    for walk in (ConnectionWalk(P.float(), T), ConnectionWalk(P, T.float()), ConnectionWalk(P.numpy(), T.float())):
        got = torch.as_tensor(walk.apply(f.numpy() if walk.returns_numpy else f))
        assert got.dtype == torch.float64 and torch.allclose(got, want, atol=1e-5)
    w = AttentionWeights.random(d=8, n_heads=4, n_groups=2, seed=1)
    X = torch.randn(6, 8, generator=g, dtype=torch.float64)
    one32 = AttentionWeights(w.W_q.float(), w.W_k, w.W_v, w.W_o)       # one float32 weight among float64 ones
    assert torch.allclose(mha_walk(X, one32)(X), multi_head_attention(X, w), atol=1e-5)
    A = torch.softmax(torch.randn(4, 6, 6, generator=g), -1)           # float32 patterns, float64 heads
    heads = w.transports()
    walk = walk_from_heads(A, heads)
    ref = walk_from_heads(A.double() / A.double().sum(-1, keepdim=True), heads)
    assert torch.allclose(walk(X), ref(X), atol=1e-6)
    assert walk.precision == torch.float32                              # the walk's tolerance is float32's
    assert torch.allclose(walk.compute_stationary().double(), ref.compute_stationary().double(), atol=1e-5)
    mixed = HeadTransports(heads.U.float(), heads.V)
    assert mixed.dense().dtype == torch.float64


def test_n_equals_one():
    assert np.allclose(stationary_distribution(np.ones((1, 1))), [1.0])
    assert float(reversibility_defect(np.ones((1, 1)))) == 0.0
    L = connection_laplacian(np.ones((1, 1)), np.eye(2)[None, None])
    assert np.allclose(L, 0)
    w = AttentionWeights.random(d=8, n_heads=2)
    walk = mha_walk(np.ones((1, 8)), w, causal=True)
    assert np.allclose(walk.P, 1)


# ------------------------------------------------------------------ item 11: a second Ctrl-C
def test_interrupt_during_join_leaves_no_hook(monkeypatch):
    model = tiny_llama()
    interrupted = []

    class Thread(threading.Thread):
        def join(self, timeout=None):
            if not interrupted:                     # the second Ctrl-C, while the clean-up waits
                interrupted.append(True)
                raise KeyboardInterrupt
            return super().join(timeout)

    monkeypatch.setattr(extraction.threading, "Thread", Thread)
    stream = attention_walks(model, batch(), progress=False)
    next(stream)
    with pytest.raises(KeyboardInterrupt):
        stream.close()
    assert interrupted and no_hooks(model)
    for t in threading.enumerate():
        if t.name == "connlap-forward":
            t.join(timeout=30)                      # it was told to stop: it ends
            assert not t.is_alive()


def test_forward_failure_mid_stream_leaves_no_hook():
    model = tiny_llama()

    def boom(module, args):
        raise RuntimeError("mlp failed")
    handle = model.model.layers[1].mlp.register_forward_pre_hook(boom)
    try:
        with pytest.raises(RuntimeError, match="mlp failed"):
            list(attention_walks(model, batch(), progress=False))
    finally:
        handle.remove()
    assert no_hooks(model)
    assert not [t for t in threading.enumerate() if t.name == "connlap-forward" and t.is_alive()]
