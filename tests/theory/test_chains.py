"""The walk as a Markov chain (:mod:`connlap_lite.chains`): stochasticity, the stationary distribution and the
reversibility defect, one walk or a stack, against dense references; and the walk's own lazy copy
(:attr:`ConnectionWalk.stationary`).  Their bad inputs are in ``tests/contracts/test_bad_inputs.py``."""
import warnings

import numpy as np
import pytest
import torch

from connlap_lite import (AttentionWeights, ConnectionWalk, dirichlet_energy, reversibility_defect, sha_walk,
                          stationary_distribution, stochasticity_defect)
from connlap_lite.measure import metrics as M
from connlap_lite.testing import rel
from connlap_lite.walks import ComputedOnFirstUse

F64 = torch.float64


def walks(B, n, seed, causal=False):
    g = torch.Generator().manual_seed(seed)
    P = torch.rand(B, n, n, generator=g, dtype=F64) ** 3          # uneven rows: pi far from uniform
    if causal:
        P = P.tril()
    return P / P.sum(-1, keepdim=True)


def stationary_dense(P):
    """The left Perron vector of each walk from a dense general eigen-solve."""
    out = []
    for p in P.reshape(-1, *P.shape[-2:]).numpy():
        vals, vecs = np.linalg.eig(p.T)
        v = np.real(vecs[:, np.argmin(np.abs(vals - 1))])
        out.append(v / v.sum())
    return torch.tensor(np.array(out)).reshape(P.shape[:-1])


def test_stochasticity_defect():
    assert float(stochasticity_defect(np.full((3, 3), 1 / 3))) < 1e-15
    assert abs(float(stochasticity_defect(np.array([[0.5, 0.7], [1.0, 0.0]]))) - 0.2) < 1e-12


@pytest.mark.parametrize("causal", [False, True])
def test_stationary_is_the_dense_perron_vector(causal):
    P = walks(5, 9, seed=1, causal=causal)
    P = P if causal else M.teleport(P, 0.1)
    pi = stationary_distribution(P)
    assert pi.shape == (5, 9)
    assert rel(pi, stationary_dense(P)) < 1e-10
    assert rel(torch.einsum("bi,bij->bj", pi, P), pi) < 1e-12          # pi P = pi
    for b in range(5):                                                  # a stack: each walk as if alone
        assert rel(stationary_distribution(P[b]), pi[b]) < 1e-14
    if causal:
        assert rel(pi, torch.eye(9, dtype=F64)[0].expand(5, 9)) < 1e-12  # the first token absorbs


def test_stationary_of_a_causal_attention_walk_is_the_first_token():
    w = AttentionWeights.random(d=6, n_heads=1, seed=5)
    walk = sha_walk(torch.randn(5, 6, dtype=F64), w, causal=True)
    assert rel(stationary_distribution(walk.P), torch.eye(5, dtype=F64)[0]) < 1e-12


def test_stationary_of_a_symmetric_walk_is_its_degrees():
    w = torch.rand(6, 6, dtype=F64, generator=torch.Generator().manual_seed(6))
    w = w + w.T
    P = w / w.sum(1, keepdim=True)
    assert torch.allclose(stationary_distribution(P), w.sum(1) / w.sum())
    assert float(reversibility_defect(P)) < 1e-10
    swap = torch.tensor([[0.0, 1.0], [1.0, 0.0]], dtype=F64)             # periodic, and reversible
    assert float(reversibility_defect(swap)) == pytest.approx(0.0, abs=1e-12)


def test_reversibility_one_implementation():
    P = M.teleport(walks(4, 7, seed=2), 0.2)
    batched = reversibility_defect(P)
    each = torch.stack([torch.as_tensor(reversibility_defect(P[b])) for b in range(4)])
    assert rel(batched, each) < 1e-14
    pi = stationary_dense(P)
    F = pi[..., :, None] * P
    dense = torch.linalg.norm(F - F.transpose(-1, -2), dim=(-2, -1)) / torch.linalg.norm(F, dim=(-2, -1))
    assert rel(batched, dense) < 1e-10
    given = reversibility_defect(P, pi=stationary_distribution(P))     # pi given: the same number
    assert rel(given, batched) < 1e-14


def test_reversibility_defect_tied_qk_is_zero():
    w = AttentionWeights.random(d=6, n_heads=1, seed=6)
    tied = AttentionWeights(w.W_q, w.W_q, w.W_v, w.W_o)
    X = torch.randn(7, 6, dtype=F64)
    assert float(reversibility_defect(sha_walk(X, tied).P)) < 1e-12
    assert float(reversibility_defect(sha_walk(X, w).P)) > 1e-3


def test_a_causal_walk_is_refused_unless_pi_is_given():
    """Its defect with pi = e_1 reads 0 ("perfectly reversible"): asked for on purpose it is computed, else refused;
    teleported, the walk is irreducible and far from reversible."""
    causal = walks(1, 5, seed=2, causal=True)[0]
    with pytest.raises(ValueError, match="P must be irreducible for its reversibility defect"):
        reversibility_defect(causal)
    assert float(reversibility_defect(causal, pi=stationary_distribution(causal))) < 1e-12
    assert float(reversibility_defect(M.teleport(causal))) > 0.01


def test_float32_rows_and_measurement_tolerance():
    """A float32 walk stored in float64 passes the default tolerance; half-precision rows (off by 1e-3) need the
    measurement's ``atol`` and are renormalised before the solve."""
    f32 = torch.softmax(torch.randn(4, 64, 64, generator=torch.Generator().manual_seed(0)), -1)
    assert reversibility_defect(M.teleport(f32.double())).shape == (4,)
    half = M.teleport(f32.double()) * (1 + 1e-3)
    with pytest.raises(ValueError, match=r"P must be row-stochastic: row 0 of walk \(0,\) sums to 1.001"):
        stationary_distribution(half)
    pi = stationary_distribution(half, atol=M.ROW_TOL)
    assert rel(pi, stationary_distribution(M.teleport(f32.double()))) < 1e-12


# ---------------------------------------------------------------- the walk's own copy: lazy, loud, kept
def test_walk_stationary_is_lazy_loud_and_kept():
    P = walks(1, 6, seed=4)[0]
    walk = ConnectionWalk(P, np.eye(2))
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        first, again = walk.stationary, walk.stationary
    assert len(said) == 1 and issubclass(said[0].category, ComputedOnFirstUse)
    assert "walk.compute_stationary()" in str(said[0].message)
    assert torch.equal(first, again) and rel(first, stationary_distribution(P)) < 1e-15
    first /= 2                                                          # a copy: the kept one is untouched
    assert torch.equal(walk.compute_stationary(), again)
    walk.P = M.teleport(walks(1, 6, seed=5)[0])                        # a new walk matrix: solved again
    with pytest.warns(ComputedOnFirstUse):
        assert rel(walk.stationary, stationary_distribution(walk.P)) < 1e-15
    walk.P.copy_(torch.full((6, 6), 1 / 6, dtype=F64))                 # changed in place: solved again
    with pytest.warns(ComputedOnFirstUse):
        assert rel(walk.stationary, torch.full((6,), 1 / 6, dtype=F64)) < 1e-14


def test_walk_compute_stationary_is_silent_and_dirichlet_energy_uses_it():
    walk = ConnectionWalk(walks(1, 5, seed=7)[0].numpy(), np.eye(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pi = walk.compute_stationary()
        f = np.ones((5, 3))
        assert abs(float(dirichlet_energy(walk, f))) < 1e-12           # a parallel section: no energy
        assert walk.stationary is not None
    assert isinstance(pi, np.ndarray)                                  # numpy in, numpy out


def test_half_precision_walks_are_checked_too():
    """A bfloat16 walk's default tolerance stops at ROW_CAP: a zero row or rows summing to 1.9 are refused, not
    answered with NaN or a defect of 0."""
    good = torch.softmax(torch.randn(64, 64, generator=torch.Generator().manual_seed(1)), -1).to(torch.bfloat16)
    assert torch.isfinite(stationary_distribution(good).float()).all()
    zero = good.clone()
    zero[3] = 0
    with pytest.raises(ValueError, match="row 3 sums to 0"):
        stationary_distribution(zero)
    with pytest.raises(ValueError, match=r"row 0 sums to 1\.89"):               # (1.9 in bfloat16)
        reversibility_defect(good * 1.9)


def test_a_walk_of_two_closed_classes_is_refused_with_that_reason():
    with pytest.raises(ValueError, match="multiplicity 2"):
        reversibility_defect(np.eye(2))


def test_walk_stationary_refuses_a_walk_without_one():
    with pytest.raises(ValueError, match="multiplicity 2"):
        ConnectionWalk(np.eye(2), np.eye(1)).compute_stationary()
    with pytest.raises(ValueError, match="row 1 sums to 0"):
        ConnectionWalk(np.array([[1.0, 0.0], [0.0, 0.0]]), np.eye(1)).compute_stationary()
