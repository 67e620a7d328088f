"""Reference attention and its exact walk decompositions: the single-head and the multi-head theorems (chapters
*Single-head attention is a connection walk*, *Multi-head attention is one edge-dependent connection walk*)."""
import math

import numpy as np
import pytest
import torch

from connlap_lite import (AttentionWeights, attention_patterns, mha_walk, multi_head_attention,
                          sha_walk, walk_from_heads)
from connlap_lite.testing import rel


def naive_mha(X, w, allowed, bias=None):
    """Loop-over-heads attention written from the textbook formula."""
    H, G = w.n_heads, w.n_groups
    out = torch.zeros_like(X)
    for h in range(H):
        g = h // (H // G)
        q = X @ w.W_q[h] + (0 if w.b_q is None else w.b_q[h])
        k = X @ w.W_k[g] + (0 if w.b_k is None else w.b_k[g])
        v = X @ w.W_v[g] + (0 if w.b_v is None else w.b_v[g])
        s = q @ k.T / math.sqrt(w.d_head)
        if bias is not None:
            s = s + bias
        s = s.masked_fill(~allowed, float("-inf"))
        out = out + torch.softmax(s, -1) @ v @ w.W_o[h]
    return out + (0 if w.b_o is None else w.b_o)


@pytest.mark.parametrize("H,G", [(1, 1), (4, 4), (4, 2), (6, 1)])
@pytest.mark.parametrize("bias", [False, True])
def test_reference_matches_naive(H, G, bias):
    w = AttentionWeights.random(d=12, n_heads=H, n_groups=G, d_head=3, bias=bias, seed=H + G)
    X = torch.randn(7, 12, dtype=torch.float64)
    allowed = torch.ones(7, 7, dtype=torch.bool).tril()
    assert rel(multi_head_attention(X, w, causal=True), naive_mha(X, w, allowed)) < 1e-12


def test_patterns_are_stochastic_with_masked_support():
    w = AttentionWeights.random(d=8, n_heads=2, seed=0)
    X = torch.randn(6, 8, dtype=torch.float64)
    pad = torch.tensor([True, True, True, True, False, False])
    A = attention_patterns(X, w, causal=True, padding=pad)
    assert torch.allclose(A.sum(-1), torch.ones(2, 6, dtype=torch.float64))
    allowed = torch.ones(6, 6, dtype=torch.bool).tril() & pad[None]
    assert bool((A[:, ~allowed] == 0).all()) and bool((A[:, allowed] > 0).all())


def test_sha_walk_is_constant_transport_t1():
    w = AttentionWeights.random(d=6, n_heads=1, d_head=2, bias=True, seed=1)
    X = torch.randn(5, 6, dtype=torch.float64)
    walk = sha_walk(X, w, causal=True)
    T = (w.W_v[0] @ w.W_o[0]).T
    assert walk.is_constant and rel(walk.transport_at(0, 0), T) < 1e-15
    assert rel(walk(X), multi_head_attention(X, w, causal=True)) < 1e-12
    c = w.b_v[0] @ w.W_o[0] + w.b_o
    assert rel(walk.offset, c) < 1e-15


def test_positional_bias_changes_A_not_T():
    w = AttentionWeights.random(d=6, n_heads=1, d_head=2, seed=2)
    X = torch.randn(5, 6, dtype=torch.float64)
    alibi = -0.5 * (torch.arange(5)[:, None] - torch.arange(5)[None]).abs().double()
    a, b = sha_walk(X, w), sha_walk(X, w, bias=alibi)
    assert not torch.allclose(a.P, b.P)
    assert torch.equal(a.transport_at(0, 1), b.transport_at(0, 1))
    assert rel(b(X), multi_head_attention(X, w, bias=alibi)) < 1e-12


@pytest.mark.parametrize("H,G", [(3, 3), (4, 2), (4, 1)])
def test_mha_walk_t2(H, G):
    w = AttentionWeights.random(d=8, n_heads=H, n_groups=G, d_head=2, bias=True, seed=3)
    X = torch.randn(6, 8, dtype=torch.float64)
    pad = torch.tensor([True] * 5 + [False])
    walk = mha_walk(X, w, padding=pad)
    assert rel(walk(X), multi_head_attention(X, w, padding=pad)) < 1e-12
    A = attention_patterns(X, w, padding=pad)
    assert rel(walk.P, A.sum(0) / H) < 1e-14
    gates = walk.transport.weights / H
    on = walk.P > 0
    assert torch.allclose(gates.sum(0)[on], torch.ones(int(on.sum()), dtype=torch.float64))
    T_h = torch.stack([(w.W_v[h // (H // G)] @ w.W_o[h]).T for h in range(H)])
    T01 = H * torch.einsum("h,hab->ab", gates[:, 0, 1], T_h)
    assert rel(walk.transport_at(0, 1), T01) < 1e-13
    dense = torch.einsum("hij,hab->iajb", A, T_h).reshape(6 * 8, 6 * 8)
    assert rel(walk.dense(), dense) < 1e-12


def test_shared_pattern_gives_constant_mixture():
    w = AttentionWeights.random(d=8, n_heads=4, d_head=2, seed=4)
    w = AttentionWeights(w.W_q[:1].repeat(4, 1, 1), w.W_k[:1].repeat(4, 1, 1), w.W_v, w.W_o)
    X = torch.randn(5, 8, dtype=torch.float64)
    walk = mha_walk(X, w)
    T = walk.edge_transports()
    assert rel(T, T[0, 0].expand_as(T)) < 1e-13
    assert rel(T[0, 0], w.transports().sum()) < 1e-13


def test_walk_from_heads_numpy_roundtrip():
    rng = np.random.default_rng(0)
    A = rng.random((2, 4, 4)); A /= A.sum(-1, keepdims=True)
    from connlap_lite import HeadTransports
    heads = HeadTransports(rng.standard_normal((2, 3, 1)), rng.standard_normal((2, 1, 3)))
    walk = walk_from_heads(A, heads)
    assert isinstance(walk.dense(), np.ndarray)
    f = rng.standard_normal((4, 3))
    expected = sum(A[h] @ f @ (heads.U[h] @ heads.V[h]).numpy().T for h in range(2))
    assert rel(walk.apply(f), expected) < 1e-12


def test_mha_walk_gates_written_over_its_own_patterns_only():
    """mha_walk writes the gates over the patterns it computed; walk_from_heads leaves the caller's A alone."""
    w = AttentionWeights.random(d=8, n_heads=4, n_groups=2, seed=5)
    X = torch.randn(6, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    A = attention_patterns(X, w, causal=True)
    kept = A.clone()
    built = walk_from_heads(A, w.transports())
    assert torch.equal(A, kept)
    walk = mha_walk(X, w, causal=True)
    assert rel(walk.transport.weights, built.transport.weights) < 1e-15 and torch.equal(walk.P, built.P)
    assert rel(walk(X), multi_head_attention(X, w, causal=True)) < 1e-13
