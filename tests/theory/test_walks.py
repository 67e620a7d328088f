"""ConnectionWalk and transports: apply, dense, generator, gauges, holonomy (chapter *Connection walks*)."""
import numpy as np
import pytest
import torch

from connlap_lite import ConnectionWalk, EdgeTransport, HeadTransports, MixtureTransport
from connlap_lite.testing import random_orthogonal, rel


def random_walk(rng, n=5, d=3, kind="edge"):
    P = rng.random((n, n))
    P /= P.sum(1, keepdims=True)
    if kind == "constant":
        return ConnectionWalk(P, rng.standard_normal((d, d)))
    if kind == "mixture":
        heads = HeadTransports(rng.standard_normal((2, d, 2)), rng.standard_normal((2, 2, d)))
        return ConnectionWalk(P, MixtureTransport(rng.random((2, n, n)), heads))
    return ConnectionWalk(P, rng.standard_normal((n, n, d, d)))


@pytest.mark.parametrize("kind", ["constant", "mixture", "edge"])
def test_apply_matches_dense_block_matrix(rng, kind):
    walk = random_walk(rng, kind=kind)
    f = rng.standard_normal((walk.n, walk.d))
    T = walk.edge_transports()
    expected = np.einsum("ij,ijab,jb->ia", walk.P.numpy(), T, f)
    assert rel(walk.apply(f), expected) < 1e-12
    assert rel(walk.dense() @ f.reshape(-1), expected.reshape(-1)) < 1e-12
    assert walk.apply(f.reshape(-1)).shape == (walk.n * walk.d,)


def test_constant_transport_is_kronecker(rng):
    P, T = rng.random((4, 4)), rng.standard_normal((3, 3))
    walk = ConnectionWalk(P, T)
    assert walk.is_constant
    assert rel(walk.dense(), np.kron(P, T)) < 1e-14
    X = rng.standard_normal((4, 3))
    assert rel(walk.apply(X), P @ X @ T.T) < 1e-14


def test_generator_is_identity_minus_walk(rng):
    walk = random_walk(rng)
    assert rel(walk.generator(), np.eye(walk.n * walk.d) - walk.dense()) < 1e-14
    op = walk.operator(generator=True)
    v = rng.standard_normal(walk.n * walk.d)
    assert rel(op.matvec(v), walk.generator() @ v) < 1e-12


def test_same_type_out(rng):
    walk_np = random_walk(rng, kind="constant")
    assert isinstance(walk_np.dense(), np.ndarray)
    walk_t = ConnectionWalk(torch.rand(3, 3), torch.eye(2))
    assert isinstance(walk_t.dense(), torch.Tensor)
    assert isinstance(walk_t.apply(np.ones((3, 2))), np.ndarray)
    assert isinstance(walk_np.apply(torch.ones(5, 3, dtype=torch.float64)), torch.Tensor)


def test_float32_kept(rng):
    walk = ConnectionWalk(torch.rand(3, 3), torch.eye(2))
    assert walk.dense().dtype == torch.float32
    assert walk.to(dtype=torch.float64).dense().dtype == torch.float64


@pytest.mark.parametrize("kind", ["constant", "mixture", "edge"])
def test_edge_rescaling_leaves_operator_unchanged(rng, kind):
    walk = random_walk(rng, kind=kind)
    c = rng.random((walk.n, walk.n)) + 0.1
    g = walk.rescale(c)
    assert rel(g.dense(), walk.dense()) < 1e-12
    assert rel(g.P.numpy(), walk.P.numpy() * c) < 1e-14
    assert rel(g.transport_at(1, 2), walk.transport_at(1, 2) / c[1, 2]) < 1e-12


@pytest.mark.parametrize("kind", ["constant", "mixture", "edge"])
def test_frame_change_conjugates(rng, kind):
    walk = random_walk(rng, kind=kind)
    G = rng.standard_normal((walk.n, walk.d, walk.d)) + 3 * np.eye(walk.d)
    g = walk.change_frame(G)
    from scipy.linalg import block_diag
    B = block_diag(*G)
    assert rel(g.dense(), B @ walk.dense() @ np.linalg.inv(B)) < 1e-10
    f = rng.standard_normal((walk.n, walk.d))
    assert rel(g.apply(f), (B @ walk.dense() @ np.linalg.inv(B) @ f.reshape(-1)).reshape(walk.n, walk.d)) < 1e-10


def test_holonomy_on_cycle_of_rotations():
    n, theta = 6, 0.3
    P = np.zeros((n, n))
    R = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    T = np.zeros((n, n, 2, 2))
    for i in range(n):
        j = (i + 1) % n
        P[j, i] = P[i, j] = 0.5
        T[j, i], T[i, j] = R, R.T
    walk = ConnectionWalk(P, T)
    hol = walk.holonomy(list(range(n)))
    ang = n * theta
    assert rel(hol, [[np.cos(ang), -np.sin(ang)], [np.sin(ang), np.cos(ang)]]) < 1e-12
    back = walk.holonomy(list(range(n))[::-1])
    assert rel(back @ hol, np.eye(2)) < 1e-12


def test_holonomy_gauge_behaviour(rng):
    walk = random_walk(rng, n=4, d=3)
    cyc = [0, 2, 1, 3]
    G = np.stack([random_orthogonal(3, rng) * (1 + i) for i in range(4)])
    hol = walk.holonomy(cyc)
    assert rel(walk.change_frame(G).holonomy(cyc), G[0] @ hol @ np.linalg.inv(G[0])) < 1e-10
    c = rng.random((4, 4)) + 0.5
    scale = np.prod([1 / c[b, a] for a, b in zip(cyc, cyc[1:] + cyc[:1])])
    assert rel(walk.rescale(c).holonomy(cyc), scale * hol) < 1e-10


def test_offset_is_added_by_call_only(rng):
    walk = ConnectionWalk(np.eye(2), np.eye(2), offset=np.array([1.0, 2.0]))
    f = np.ones((2, 2))
    assert np.allclose(walk.apply(f), f)
    assert np.allclose(walk(f), f + [1.0, 2.0])


def test_head_transports_singular_values_from_factors(rng):
    U, V = rng.standard_normal((3, 7, 2)), rng.standard_normal((3, 2, 7))
    heads = HeadTransports(U, V)
    dense = np.linalg.svd(U @ V, compute_uv=False)[:, :2]
    assert rel(heads.singular_values().numpy(), dense) < 1e-12
    assert rel(heads.sum().numpy(), (U @ V).sum(0)) < 1e-14
    assert len(heads) == 3 and heads.rank_bound == 2
    assert rel(heads[1].dense()[0].numpy(), U[1] @ V[1]) < 1e-14
    assert heads[1:3].n_heads == 2 and heads[[0, 2]].rank_bound == heads.rank_bound


def test_edge_transport_class(rng):
    T = rng.standard_normal((3, 3, 2, 2))
    assert EdgeTransport(T).d == 2


def test_gauges_carry_the_offset(rng):
    P = rng.random((4, 4)); P /= P.sum(1, keepdims=True)
    walk = ConnectionWalk(P, rng.standard_normal((3, 3)), offset=rng.standard_normal(3))
    X = rng.standard_normal((4, 3))
    assert rel(walk.rescale(rng.random((4, 4)) + 0.2)(X), walk(X)) < 1e-12
    G = rng.standard_normal((4, 3, 3)) + 3 * np.eye(3)
    moved = walk.change_frame(G)(np.einsum("iab,ib->ia", G, X))
    assert rel(moved, np.einsum("iab,ib->ia", G, walk(X))) < 1e-12


def test_head_transports_carry_groups_and_offset_through_to_and_indexing():
    U, V = torch.randn(4, 6, 2, dtype=torch.float64), torch.randn(4, 2, 6, dtype=torch.float64)
    heads = HeadTransports(U, V, groups=[0, 0, 1, 1], offset=torch.ones(6))
    assert heads.groups.dtype == torch.long and heads.offset.dtype == torch.float64
    moved = heads.to(dtype=torch.float32)
    assert moved.U.dtype == moved.offset.dtype == torch.float32 and moved.groups.tolist() == [0, 0, 1, 1]
    one = heads[3]
    assert one.n_heads == 1 and one.groups.tolist() == [1] and one.offset is None
    assert rel(one.dense()[0], U[3] @ V[3]) < 1e-14 and rel(one.singular_values(), heads.singular_values()[3:]) < 1e-12
    assert heads[-1].groups.tolist() == [1] and heads[np.int64(2)].n_heads == 1
    for bad, error, text in [(dict(groups=[0, 1]), ValueError, "groups"), (dict(groups=[0.0] * 4), TypeError, "groups"),
                             (dict(offset=torch.ones(5)), ValueError, "offset")]:
        with pytest.raises(error, match=text):
            HeadTransports(U, V, **bad)
    with pytest.raises(IndexError, match="out of range"):
        heads[4]


@pytest.mark.parametrize("block", [1, 7, 10 ** 9])
def test_mixture_apply_by_blocks_of_rows_matches_dense(block, monkeypatch):
    """The multi-head apply, a block of rows at a time (down to one row), is the dense block matrix's product."""
    g = torch.Generator().manual_seed(12)
    H, n, d, r = 3, 9, 5, 2
    heads = HeadTransports(torch.randn(H, d, r, generator=g, dtype=torch.float64),
                           torch.randn(H, r, d, generator=g, dtype=torch.float64))
    P = torch.rand(n, n, generator=g, dtype=torch.float64)
    walk = ConnectionWalk(P / P.sum(1, keepdim=True), MixtureTransport(torch.rand(H, n, n, generator=g,
                                                                                    dtype=torch.float64), heads))
    F = torch.randn(n, d, generator=g, dtype=torch.float64)
    monkeypatch.setattr(MixtureTransport, "BLOCK", block)
    assert rel(walk.apply(F).reshape(-1), walk.dense() @ F.reshape(-1)) < 1e-13
