"""Bad input gets an error that names the argument and what was expected."""
import numpy as np
import pytest
import torch

from connlap_lite import (AttentionWeights, ConnectionWalk, HeadTransports, connection_laplacian,
                          dirichlet_energy, generator_spectrum, isometry_defect, mha_walk,
                          reversibility_defect, sha_walk, stationary_distribution, walk_from_heads)


def test_walk_matrix_checks():
    with pytest.raises(ValueError, match=r"P must have shape \(3, 3\)"):
        ConnectionWalk(np.ones((3, 4)), np.eye(2))
    with pytest.raises(ValueError, match=r"P must be nonnegative.*P\[0, 1\]"):
        ConnectionWalk(np.array([[1.0, -0.5], [0.0, 1.0]]), np.eye(2))
    with pytest.raises(ValueError, match="P contains NaN"):
        ConnectionWalk(np.array([[np.nan, 0.0], [0.0, 1.0]]), np.eye(2))
    with pytest.raises(ValueError, match="transport contains inf"):
        ConnectionWalk(np.eye(2), np.array([[np.inf, 0], [0, 1.0]]))
    with pytest.raises(ValueError, match=r"P must have 2 dimensions"):
        ConnectionWalk(np.ones(3), np.eye(2))
    with pytest.raises(TypeError, match="P must be a numeric array"):
        ConnectionWalk("abc", np.eye(2))
    with pytest.raises(TypeError, match="transport must be real"):
        ConnectionWalk(np.eye(2), np.eye(2) * 1j)


def test_transport_shape_checks():
    with pytest.raises(ValueError, match=r"transport has shape \(3, 3, 2, 2\) but P is 2 x 2"):
        ConnectionWalk(np.eye(2), np.zeros((3, 3, 2, 2)))
    with pytest.raises(ValueError, match=r"T must have shape \(2, 2\)"):
        ConnectionWalk(np.eye(2), np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"T must have shape \(n, n, d, d\)"):
        ConnectionWalk(np.eye(2), np.zeros((2, 2, 2, 3)))
    with pytest.raises(ValueError, match=r"V must have shape \(2, 3, 4\)"):
        HeadTransports(np.zeros((2, 4, 3)), np.zeros((2, 3, 5)))
    with pytest.raises(ValueError, match=r"offset must have shape \(2\)"):
        ConnectionWalk(np.eye(2), np.eye(2), offset=np.zeros(3))


def test_section_and_gauge_checks():
    walk = ConnectionWalk(np.full((2, 2), 0.5), np.eye(3))
    with pytest.raises(ValueError, match=r"f must have shape \(2, 3\)"):
        walk.apply(np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"f must have shape \(6\)"):
        walk.apply(np.zeros(5))
    with pytest.raises(ValueError, match="c must be positive on every edge"):
        walk.rescale(np.array([[1.0, 0.0], [1.0, 1.0]]))
    with pytest.raises(ValueError, match="G\\[1\\] is singular"):
        walk.change_frame(np.stack([np.eye(3), np.zeros((3, 3))]))
    with pytest.raises(ValueError, match=r"\(0, 1\) is not an edge"):
        ConnectionWalk(np.eye(2), np.eye(3)).holonomy([1, 0])
    with pytest.raises(ValueError, match="out of range"):
        walk.holonomy([0, 5])


def test_attention_weight_checks():
    w = AttentionWeights.random(d=8, n_heads=4, n_groups=2)
    with pytest.raises(ValueError, match="W_o has 3 heads but W_q has 4"):
        AttentionWeights(w.W_q, w.W_k, w.W_v, w.W_o[:3])
    with pytest.raises(ValueError, match=r"must be a multiple of the number of key/value groups \(3\)"):
        AttentionWeights(w.W_q, torch.zeros(3, 8, 2), torch.zeros(3, 8, 2), w.W_o)
    with pytest.raises(ValueError, match="W_v has 1 groups but W_k has 2"):
        AttentionWeights(w.W_q, w.W_k, w.W_v[:1], w.W_o)
    with pytest.raises(ValueError, match=r"b_o must have shape \(8\)"):
        AttentionWeights(w.W_q, w.W_k, w.W_v, w.W_o, b_o=torch.zeros(7))
    X = torch.randn(5, 8, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"X must have shape \(\*, 8\)"):
        mha_walk(torch.randn(5, 7), w)
    with pytest.raises(ValueError, match="sha_walk needs one head"):
        sha_walk(X, w)
    with pytest.raises(ValueError, match="query 0 may attend no key"):
        mha_walk(X, w, padding=torch.tensor([False, False, True, True, True]), causal=True)
    with pytest.raises(TypeError, match="mask must be boolean"):
        mha_walk(X, w, mask=torch.ones(5, 5))
    with pytest.raises(ValueError, match=r"mask must have shape \(5, 5\)"):
        mha_walk(X, w, mask=torch.ones(4, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="X contains NaN"):
        mha_walk(torch.full((5, 8), float("nan")), w)


def test_walk_from_heads_checks():
    heads = HeadTransports(np.zeros((2, 3, 1)), np.zeros((2, 1, 3)))
    with pytest.raises(ValueError, match="A has 3 heads but heads has 2"):
        walk_from_heads(np.ones((3, 4, 4)) / 4, heads)
    with pytest.raises(ValueError, match="A must be nonnegative"):
        walk_from_heads(-np.ones((2, 4, 4)), heads)


def test_laplacian_checks():
    O = np.zeros((2, 2, 2, 2)); O[0, 1] = O[1, 0] = np.eye(2)
    with pytest.raises(ValueError, match="w must be symmetric"):
        connection_laplacian(np.array([[0.0, 1.0], [0.5, 0.0]]), O)
    with pytest.raises(ValueError, match="vertex 2 has degree 0"):
        connection_laplacian(np.array([[0, 1.0, 0], [1, 0, 0], [0, 0, 0]]), np.zeros((3, 3, 2, 2)) + np.eye(2))
    bad = O.copy(); bad[0, 1] = 2 * np.eye(2)
    with pytest.raises(ValueError, match="O must be orthogonal"):
        connection_laplacian(np.array([[0.0, 1.0], [1.0, 0.0]]), bad)
    rot = O.copy(); rot[0, 1] = [[0, -1], [1, 0]]
    with pytest.raises(ValueError, match="O_ji = O_ij"):
        connection_laplacian(np.array([[0.0, 1.0], [1.0, 0.0]]), rot)
    with pytest.raises(ValueError, match=r"row-stochastic.*P / P.sum\(-1, keepdims=True\)"):
        stationary_distribution(np.array([[0.5, 0.2], [0.5, 0.5]]))
    with pytest.raises(ValueError, match="multiplicity 2"):
        stationary_distribution(np.eye(2))
    with pytest.raises(ValueError, match=r"pi must have shape \(2\)"):
        reversibility_defect(np.full((2, 2), 0.5), pi=np.ones(3))
    with pytest.raises(ValueError, match="zero map"):
        isometry_defect(np.zeros((3, 3)))
    with pytest.raises(TypeError, match="walk must be a ConnectionWalk"):
        dirichlet_energy(np.eye(2), np.ones((2, 1)))
    big = ConnectionWalk(np.full((100, 100), 0.01), np.eye(50))
    with pytest.raises(ValueError, match="pass k"):
        generator_spectrum(big)
    with pytest.raises(ValueError, match="k must be between"):
        generator_spectrum(ConnectionWalk(np.full((2, 2), 0.5), np.eye(1)), k=3)
