"""Connection Laplacian, defects, stationary distribution, energy and spectra (chapters *When the generator is a
connection Laplacian*, *Reversibility, defects and low-rank heads*)."""
import numpy as np
import torch

from connlap_lite import (ConnectionWalk, HeadTransports, connection_laplacian,
                          dirichlet_energy, generator_spectrum, isometry_defect, random_walk_connection,
                          stationary_distribution, symmetry_defect)
from connlap_lite.testing import random_orthogonal, rel


def vdm(rng, n=6, d=3):
    w = rng.random((n, n)); w = w + w.T
    O = np.zeros((n, n, d, d))
    for i in range(n):
        O[i, i] = np.eye(d)
        for j in range(i + 1, n):
            q = random_orthogonal(d, rng)
            O[i, j], O[j, i] = q, q.T
    return w, O


def test_connection_laplacian_definition(rng):
    w, O = vdm(rng)
    n, d = O.shape[0], O.shape[2]
    S = np.einsum("ij,ijab->iajb", w, O).reshape(n * d, n * d)
    D = np.kron(np.diag(w.sum(1)), np.eye(d))
    L = connection_laplacian(w, O)
    assert rel(L, np.eye(n * d) - np.linalg.solve(D, S)) < 1e-13
    op = connection_laplacian(w, O, dense=False)
    v = rng.standard_normal(n * d)
    assert rel(op.matvec(v), L @ v) < 1e-12
    assert isinstance(connection_laplacian(torch.as_tensor(w), O), torch.Tensor)


def test_t3_consequences(rng):
    w, O = vdm(rng)
    walk = random_walk_connection(w, O)
    pi = stationary_distribution(walk.P)
    assert rel(pi, w.sum(1) / w.sum()) < 1e-10
    L = walk.generator()                    # numpy in, numpy out
    PiL = np.kron(np.diag(pi.numpy()), np.eye(3)) @ L
    assert rel(PiL, PiL.T) < 1e-12
    ev = generator_spectrum(walk)
    assert np.abs(ev.imag).max() < 1e-10 and ev.real.min() > -1e-10 and ev.real.max() < 2 + 1e-10
    f = rng.standard_normal((6, 3))
    ww = pi.numpy()[:, None] * walk.P.numpy()
    edge = 0.5 * sum(ww[i, j] * np.sum((f[i] - O[i, j] @ f[j]) ** 2) for i in range(6) for j in range(6))
    assert abs(float(dirichlet_energy(walk, f)) - edge) < 1e-12 * edge
    assert float(symmetry_defect(walk)) < 1e-12


def test_isometry_defect_formula(rng):
    s = np.array([3.0, 1.0, 0.5])
    U, V = random_orthogonal(5, rng)[:, :3], random_orthogonal(5, rng)[:, :3]
    T = U @ np.diag(s) @ V.T
    expected = np.sqrt(1 - s.sum() ** 2 / (3 * (s ** 2).sum()))
    assert abs(float(isometry_defect(T)) - expected) < 1e-12
    Q = U @ V.T
    assert abs(np.linalg.norm(T - s.mean() * Q) / np.linalg.norm(T) - expected) < 1e-12
    assert float(isometry_defect(2.5 * Q)) < 1e-14          # stable near zero
    batch = isometry_defect(np.stack([T, 2 * Q]))
    assert batch.shape == (2,)
    heads = HeadTransports(torch.as_tensor(U @ np.diag(s))[None], torch.as_tensor(V.T)[None])
    assert abs(float(isometry_defect(heads)[0]) - expected) < 1e-12


def test_dirichlet_energy_can_be_negative_without_metric_compatibility():
    P = np.array([[0.0, 1.0], [1.0, 0.0]])
    walk = ConnectionWalk(P, 3 * np.eye(1))
    assert float(dirichlet_energy(walk, np.ones((2, 1)))) < 0


def test_generator_spectrum_sparse_matches_dense(rng):
    w, O = vdm(rng, n=30, d=3)
    walk = random_walk_connection(w, O)
    dense = generator_spectrum(walk)
    top = generator_spectrum(walk, k=4, which="LM")
    near = [np.min(np.abs(dense - t)) for t in top]
    assert max(near) < 1e-8
