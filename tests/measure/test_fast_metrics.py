"""The fast paths of the metrics against dense references (the straightforward computations they replace).

Each reference here is the definition computed the slow way: a dense eigen-solve, the SVD of the dense
``d x d`` transport, projections from a full QR.  The fast paths must give the same numbers to the
tolerance their docstrings state, on small random cases, with and without grouped heads (GQA), and on
ill-conditioned factors where they fall back.
"""
import pytest
import torch

from connlap_lite import HeadTransports
from connlap_lite.measure import edges
from connlap_lite.measure import metrics as M
from connlap_lite.measure import nulls
from connlap_lite.testing import rel

F64 = torch.float64


def heads_of(H, G, d, r, seed, scale=None):
    """Random heads; ``G`` groups share their read maps ``V`` (as a model's GQA heads do)."""
    g = torch.Generator().manual_seed(seed)
    U = torch.randn(H, d, r, generator=g, dtype=F64)
    V = torch.randn(G, r, d, generator=g, dtype=F64)
    if scale is not None:
        U = U * scale
    groups = torch.arange(H) // (H // G)
    return HeadTransports(U, V[groups], groups=groups)


# ---------------------------------------------------------------- references
def data_defect_dense(heads, X):
    """The coefficient of variation of ``|T_h x| / |Q_v Q_v^T x|`` with the dense ``T_h`` and a full QR."""
    T = heads.dense().double()
    out = []
    for h in range(heads.n_heads):
        Qv, _ = torch.linalg.qr(heads.V[h].double().T)
        gain = (X @ T[h].T).norm(dim=-1) / (X @ Qv).norm(dim=-1)
        out.append(gain.std(-1) / gain.mean(-1))
    return torch.stack(out, -1)


def overlap_dense(heads):
    Qu, _ = torch.linalg.qr(heads.U.double())
    Qv, _ = torch.linalg.qr(heads.V.double().transpose(1, 2))
    return (Qu.transpose(1, 2) @ Qv).pow(2).sum((-2, -1)) / heads.U.shape[-1]


# ---------------------------------------------------------------- transports from their factors
def test_cores_and_distinct_reads():
    heads = heads_of(6, 2, 12, 3, seed=4)
    Ru, Rv = heads.cores(F64)
    assert rel(Ru.transpose(1, 2) @ Ru, heads.U.transpose(1, 2) @ heads.U) < 1e-13
    VVt = heads.V @ heads.V.transpose(1, 2)
    assert rel(Rv.transpose(1, 2) @ Rv, VVt) < 1e-13
    first, index = heads.distinct_reads()
    assert first.tolist() == [0, 3] and index.tolist() == [0, 0, 0, 1, 1, 1]
    # heads that claim a group but read differently are not merged
    odd = HeadTransports(heads.U, heads.V + torch.arange(6, dtype=F64)[:, None, None] * 1e-3, groups=heads.groups)
    assert odd.distinct_reads()[0].tolist() == list(range(6))
    assert rel(odd.cores(F64)[1].transpose(1, 2) @ odd.cores(F64)[1], odd.V @ odd.V.transpose(1, 2)) < 1e-13


@pytest.mark.parametrize("H,G,d,r", [(4, 2, 10, 2), (3, 3, 8, 3), (6, 1, 9, 2), (2, 2, 5, 4), (3, 3, 10, 2),
                                     (4, 4, 8, 2)])
def test_gated_singular_values_against_the_dense_svd(H, G, d, r):
    heads = heads_of(H, G, d, r, seed=H * 10 + G)
    w = torch.rand(5, H, generator=torch.Generator().manual_seed(5), dtype=F64) * H
    dense = torch.einsum("mh,hde->mde", w, heads.dense())
    k = min(d, G * r)
    expected = torch.linalg.svdvals(dense)[:, :k]
    got = edges.gated_singular_values(w, heads, heads.groups)
    assert got.shape == (5, k)
    assert rel(got, expected) < 1e-9
    assert bool((got[:, :-1] >= got[:, 1:]).all())                       # decreasing, as an SVD's
    # the same heads again: the cached Gram gives the same numbers
    assert torch.equal(edges.gated_singular_values(w, heads, heads.groups), got)


def test_gated_singular_values_with_groups_out_of_order():
    """Heads numbered against their groups' order (and G = H with a permutation): the blocks still land right."""
    g = torch.Generator().manual_seed(11)
    for groups in ([1, 0, 1, 0], [2, 0, 1]):
        H, G, d, r = len(groups), max(groups) + 1, 9, 2
        V = torch.randn(G, r, d, generator=g, dtype=F64)
        heads = HeadTransports(torch.randn(H, d, r, generator=g, dtype=F64), V[groups], groups=groups)
        w = torch.rand(4, H, generator=g, dtype=F64) * H
        expected = torch.linalg.svdvals(torch.einsum("mh,hde->mde", w, heads.dense()))[:, :min(d, G * r)]
        assert rel(edges.gated_singular_values(w, heads, heads.groups), expected) < 1e-9


def dense_edge_defect(A, heads, i, j):
    """The definition: the SVD of the dense ``T_ij = H sum_h gamma^h_ij T_h``, then the rank-free defect."""
    a = A[:, i, j]
    T = A.shape[0] * torch.einsum("h,hde->de", a / a.sum(), heads.dense())
    return float(edges.rank_free_defect(torch.linalg.svdvals(T)))


@pytest.mark.parametrize("H,G,d,r", [(4, 2, 10, 2), (3, 3, 8, 3), (6, 1, 9, 2), (4, 4, 8, 2), (3, 3, 10, 2)])
def test_edge_defects_against_the_dense_svd(H, G, d, r):
    heads = heads_of(H, G, d, r, seed=H + 7 * G)
    g = torch.Generator().manual_seed(H * G)
    A = torch.softmax(3 * torch.randn(3, H, 7, 7, generator=g, dtype=F64), -1)   # three passages
    rows = torch.randint(0, 7, (3, 5), generator=g)
    cols = torch.randint(0, 7, (3, 5), generator=g)
    got = edges.edge_defects(A, heads, rows, cols)
    assert got.shape == (3, 5)
    expected = torch.tensor([[dense_edge_defect(A[b], heads, int(i), int(j)) for i, j in zip(rows[b], cols[b])]
                             for b in range(3)], dtype=F64)
    # the defect is a smooth function of the singular values: it inherits their 1e-9
    assert float((got - expected).abs().max()) < 1e-9
    # one passage at a time, (H, n, n) with (m,) edges: the same numbers as the batched call
    for b in range(3):
        assert float((edges.edge_defects(A[b], heads, rows[b], cols[b]) - got[b]).abs().max()) < 1e-13
    # float32 attention (as a model's): the gates are taken in float64 from the float32 values
    A32 = A.float()
    diff = edges.edge_defects(A32, heads, rows, cols) - edges.edge_defects(A32.double(), heads, rows, cols)
    assert float(diff.abs().max()) < 1e-13


def test_edge_defects_of_an_edge_no_head_attends_is_nan_and_bad_edges_are_named():
    heads = heads_of(2, 2, 6, 2, seed=1)
    A = torch.full((2, 4, 4), 0.25, dtype=F64)
    A[:, 1, 2] = 0
    out = edges.edge_defects(A, heads, torch.tensor([1, 0]), torch.tensor([2, 3]))
    assert bool(torch.isnan(out[0])) and bool(torch.isfinite(out[1]))
    assert edges.edge_defects(A, heads, torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.long)).shape == (0,)
    with pytest.raises(ValueError, match="rows must be token indices in"):
        edges.edge_defects(A, heads, torch.tensor([4]), torch.tensor([0]))
    with pytest.raises(ValueError, match="cols must be int token indices of shape"):
        edges.edge_defects(A, heads, torch.tensor([1]), torch.tensor([0.0]))
    with pytest.raises(ValueError, match="attention must have shape"):
        edges.edge_defects(A[:1], heads, torch.tensor([1]), torch.tensor([0]))


@pytest.mark.parametrize("H,G,d,r", [(4, 2, 10, 2), (3, 3, 8, 3)])
def test_data_isometry_defect_against_the_dense_reference(H, G, d, r):
    heads = heads_of(H, G, d, r, seed=6)
    X = torch.randn(3, 20, d, dtype=F64, generator=torch.Generator().manual_seed(7))
    got = M.data_isometry_defect(heads, X)
    assert got.shape == (3, H)
    assert rel(got, data_defect_dense(heads, X)) < 1e-10
    assert rel(M.data_isometry_defect(heads, X[0]), data_defect_dense(heads, X[0])) < 1e-10


def ill_conditioned(H=2, d=9, r=3):
    """Heads whose read and write maps have nearly dependent rows (condition numbers about 1e9)."""
    heads = heads_of(H, H, d, r, seed=8)
    U, V = heads.U.clone(), heads.V.clone()
    U[:, :, 2] = U[:, :, 1] + 1e-9 * U[:, :, 2]
    V[:, 2] = V[:, 1] + 1e-9 * V[:, 2]
    return HeadTransports(U, V, groups=heads.groups)


def test_fallbacks_on_ill_conditioned_factors():
    heads = ill_conditioned()
    assert not M._well_conditioned(heads, "v") and not M._well_conditioned(heads, "uv")
    X = torch.randn(30, 9, dtype=F64, generator=torch.Generator().manual_seed(9))
    assert rel(M.data_isometry_defect(heads, X), data_defect_dense(heads, X)) < 1e-6
    assert rel(M.read_write_overlap(heads), overlap_dense(heads)) < 1e-8


def test_head_metrics_against_dense_references():
    heads = heads_of(6, 3, 16, 4, seed=10)
    assert M._well_conditioned(heads, "uv")
    T = heads.dense()
    tr = torch.diagonal(T, dim1=-2, dim2=-1).sum(-1)
    assert rel(M.copy_score(heads), tr / (2 * torch.linalg.norm(T, dim=(-2, -1)))) < 1e-12
    assert rel(M.read_write_overlap(heads), overlap_dense(heads)) < 1e-10
    s = torch.linalg.svdvals(T)[:, :4]
    eps = torch.sqrt(((s - s.mean(-1, keepdim=True)) ** 2).sum(-1) / (s ** 2).sum(-1))
    assert rel(M.scaled_isometry_defect(heads), eps) < 1e-10
    # the nulls inherit factors from heads: their defects still match their own dense transports
    for null in (nulls.rotation_null(heads, 3), M.fold_gain(heads, torch.rand(16, dtype=F64) + 0.5)):
        s = torch.linalg.svdvals(null.dense())[:, :4]
        eps = torch.sqrt(((s - s.mean(-1, keepdim=True)) ** 2).sum(-1) / (s ** 2).sum(-1))
        assert rel(M.scaled_isometry_defect(null), eps) < 1e-10
        assert rel(null.cores(F64)[0].transpose(1, 2) @ null.cores(F64)[0],
                   null.U.transpose(1, 2) @ null.U) < 1e-12


def test_rank_deficient_heads_keep_the_rank_threshold():
    """A head of rank below d_h: its zero singular values still count as zero (no squared route)."""
    heads = heads_of(2, 2, 10, 3, seed=11)
    U = heads.U.clone()
    U[0, :, 2] = 0
    deficient = HeadTransports(U, heads.V)
    s = torch.linalg.svdvals(deficient.dense()[0])[:2]
    expected = torch.sqrt(((s - s.mean()) ** 2).sum() / (s ** 2).sum())
    assert abs(float(M.scaled_isometry_defect(deficient)[0]) - float(expected)) < 1e-12
