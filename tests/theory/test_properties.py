"""Property-based checks of the single-head, multi-head and reduction theorems over random shapes, groupings, masks
and biases."""

import numpy as np
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connlap_lite import (AttentionWeights, ConnectionWalk, attention_patterns, connection_laplacian,
                          dirichlet_energy, mha_walk, multi_head_attention, random_walk_connection,
                          sha_walk, stationary_distribution)
from connlap_lite.testing import rel

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def attention_case(draw, single=False):
    n = draw(st.integers(1, 9))
    G = 1 if single else draw(st.integers(1, 3))
    H = 1 if single else G * draw(st.integers(1, 3))
    dh = draw(st.integers(1, 4))
    d = draw(st.integers(1, 10))
    seed = draw(st.integers(0, 2**31 - 1))
    w = AttentionWeights.random(d, H, G, dh, bias=draw(st.booleans()), seed=seed)
    g = torch.Generator().manual_seed(seed + 1)
    X = torch.randn(n, d, generator=g, dtype=torch.float64) * draw(st.sampled_from([0.1, 1.0, 3.0]))
    masks = {"causal": draw(st.booleans())}
    if draw(st.booleans()):
        keep = torch.rand(n, generator=g) < 0.7
        keep[0] = True
        masks["padding"] = keep
    if draw(st.booleans()):
        m = torch.rand(n, n, generator=g) < 0.6
        m |= torch.eye(n, dtype=torch.bool)
        if "padding" in masks:
            m[:, 0] = True
        masks["mask"] = m
    if draw(st.booleans()):
        masks["bias"] = torch.randn(H, n, n, generator=g, dtype=torch.float64)
    return X, w, masks


@SETTINGS
@given(attention_case(single=True))
def test_t1_single_head_is_constant_transport_walk(case):
    X, w, masks = case
    walk = sha_walk(X, w, **masks)
    ref = multi_head_attention(X, w, **masks)
    assert walk.is_constant
    assert float(torch.linalg.norm(walk(X) - ref)) <= 1e-10 * max(1.0, float(torch.linalg.norm(ref)))
    assert float((walk.P.sum(1) - 1).abs().max()) < 1e-12
    # Kronecker spectrum: spec(W) = {lambda mu}
    if walk.n * walk.d <= 40:
        lam = np.linalg.eigvals(walk.P.numpy())
        mu = np.linalg.eigvals(walk.transport_at(0, 0).numpy() if walk.P[0, 0] > 0 else w.transports().dense()[0].numpy())
        prods = np.sort_complex(np.round((lam[:, None] * mu[None]).ravel(), 6))
        spec = np.linalg.eigvals(walk.dense().numpy())
        for z in spec:
            assert np.min(np.abs(prods - z)) < 1e-5 * max(1, abs(z))


@SETTINGS
@given(attention_case())
def test_t2_multi_head_is_one_walk(case):
    X, w, masks = case
    walk = mha_walk(X, w, **masks)
    ref = multi_head_attention(X, w, **masks)
    scale = max(1.0, float(torch.linalg.norm(ref)))
    assert float(torch.linalg.norm(walk(X) - ref)) <= 1e-10 * scale
    A = attention_patterns(X, w, **masks)
    H = w.n_heads
    assert rel(walk.P, A.sum(0) / H) < 1e-13
    if walk.n * walk.d <= 60:
        T_h = w.transports().dense()
        dense = torch.einsum("hij,hab->iajb", A, T_h).reshape(walk.n * walk.d, -1)
        assert float(torch.linalg.norm(walk.dense() - dense)) <= 1e-10 * max(1.0, float(torch.linalg.norm(dense)))
        gates = walk.transport.weights / H
        on = walk.P > 0
        assert torch.allclose(gates.sum(0)[on], torch.ones(int(on.sum()), dtype=torch.float64))
        assert bool((gates >= 0).all())


@st.composite
def vdm_case(draw):
    n = draw(st.integers(2, 7))
    d = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    w = rng.random((n, n)) * (rng.random((n, n)) < 0.7)
    path = np.diag(0.1 + rng.random(n - 1), k=1)  # keeps the graph connected
    w = w + w.T + path + path.T + np.diag(np.full(n, 0.05))
    O = np.zeros((n, n, d, d))
    for i in range(n):
        O[i, i] = np.eye(d)
        for j in range(i + 1, n):
            q, r = np.linalg.qr(rng.standard_normal((d, d)))
            q = q * np.sign(np.diag(r))
            O[i, j], O[j, i] = q, q.T
    return w, O, rng


@SETTINGS
@given(vdm_case())
def test_t3_stochastic_reversible_metric_walk_is_connection_laplacian(case):
    w, O, rng = case
    n, d = O.shape[0], O.shape[2]
    P = w / w.sum(1, keepdims=True)
    walk = ConnectionWalk(P, O)
    pi = stationary_distribution(P)
    # (<=): w' = pi_i P_ij is symmetric and rebuilds the same Laplacian
    wp = pi[:, None] * P
    assert np.abs(wp - wp.T).max() < 1e-12
    L_rw = connection_laplacian(wp, O)
    assert rel(walk.generator(), L_rw) < 1e-10
    # consequences: Pi L symmetric, real spectrum in [0, 2], Dirichlet identity
    PiL = np.kron(np.diag(pi), np.eye(d)) @ L_rw
    assert np.abs(PiL - PiL.T).max() < 1e-10 * np.abs(PiL).max()
    ev = np.linalg.eigvalsh((PiL + PiL.T) / 2)  # congruent: same inertia
    assert ev.min() > -1e-10
    spec = np.linalg.eigvals(L_rw)
    assert np.abs(spec.imag).max() < 1e-8 and spec.real.min() > -1e-9 and spec.real.max() < 2 + 1e-9
    f = rng.standard_normal((n, d))
    edge = 0.5 * np.einsum("ij,ija->", wp, (f[:, None, :] - np.einsum("ijab,jb->ija", O, f)) ** 2)
    assert abs(float(dirichlet_energy(walk, f)) - edge) <= 1e-10 * max(1.0, edge)
    # (=>): from L_rw recover P and T
    back = random_walk_connection(wp, O)
    assert rel(back.P.numpy(), P) < 1e-12


@SETTINGS
@given(vdm_case(), st.floats(0.2, 3.0))
def test_t3_constant_scale_potential(case, s):
    w, O, _ = case
    P = w / w.sum(1, keepdims=True)
    N = O.shape[0] * O.shape[2]
    L_rw = ConnectionWalk(P, O).generator()
    L_s = ConnectionWalk(s * P, O).generator()
    assert rel(L_s, (1 - s) * np.eye(N) + s * L_rw) < 1e-10
