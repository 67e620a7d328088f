"""Toy connections that the explorers, their chapter and the graded exercises share: the rotation connection
on a cycle (holonomy) and a small walk with each condition (S), (R), (M) of the reduction theorem (chapter *When the
generator is a connection Laplacian*) switched on or off; and the random symmetric weights and metric transports
that the connection-Laplacian chapter builds its walks from. Plain functions of arrays, with no plotting and no
widgets, so that grading imports neither matplotlib nor ipywidgets.

Chapters: *Interactive explorers* (``book/interactive/explorers.ipynb``), *When the generator is a connection
Laplacian* (``book/theory/laplacian.ipynb``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..chains import reversibility_defect, stationary_distribution, stochasticity_defect
from ..laplacian import (connection_laplacian, dirichlet_energy, generator_spectrum, isometry_defect,
                         random_walk_connection, symmetry_defect)
from ..testing import random_orthogonal
from ..transports import EdgeTransport
from ..walks import ConnectionWalk

KERNEL_TOL = 1e-9        # an eigenvalue of L below this counts as a kernel direction
VERDICT_TOL = 1e-10      # slack for "real", "in [0, 2]" and "energy >= 0"


def _rotation(theta: float) -> np.ndarray:
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, -s], [s, c]])


def _cycle(n: int, angle: float) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 3:
        raise ValueError(f"n must be an int of at least 3 (a cycle needs three vertices), got {n!r}")
    w, O = np.zeros((n, n)), np.zeros((n, n, 2, 2))
    for k in range(n):
        nxt = (k + 1) % n
        w[nxt, k] = w[k, nxt] = 1.0
        O[nxt, k] = _rotation(angle / n)      # carries the fibre at k to k + 1
        O[k, nxt] = _rotation(-angle / n)     # and back: O_ji = O_ij^T
    return w, O


def cycle_connection(n: int, angle: float) -> ConnectionWalk:
    """The rotation connection on the ``n``-cycle whose holonomy is a rotation by ``angle``.

    Every step ``k -> k + 1`` rotates the fibre ``R^2`` by ``angle / n`` and every step back by
    ``-angle / n``; the weights are 1 on the cycle's edges.  The walk satisfies (S), (R) and
    (M), so its generator is a connection Laplacian and its kernel is the parallel
    sections: 2-dimensional at holonomy 0 and trivial otherwise (the reduction theorem, chapter
    *When the generator is a connection Laplacian*).

    Examples
    --------
    >>> walk = cycle_connection(5, np.pi / 2)
    >>> np.round(walk.holonomy(range(5)), 12) + 0.0        # a quarter turn around the cycle
    array([[ 0., -1.],
           [ 1.,  0.]])

    Chapter: *Interactive explorers*.
    """
    return random_walk_connection(*_cycle(n, angle))


def holonomy_spectrum(n: int, angle: float, *, tol: float = KERNEL_TOL) -> tuple[np.ndarray, int]:
    """The sorted spectrum of the cycle's connection Laplacian and its kernel dimension.

    Every vertex of the cycle has degree 2, so ``L_rw = I - S / 2`` is symmetric and its
    eigenvalues are real; the kernel dimension counts those below ``tol``.

    Examples
    --------
    >>> holonomy_spectrum(8, 0.0)[1], holonomy_spectrum(8, np.pi / 3)[1]
    (2, 0)

    Chapter: *Interactive explorers*.
    """
    L = connection_laplacian(*_cycle(n, angle))
    eig = np.linalg.eigvalsh((L + L.T) / 2)
    return eig, int((eig < tol).sum())


SCALE = 1.5      # (S) off: the walk amplifies, P -> 1.5 P (the reduction theorem's counterexample)
DRIFT = 2.0      # (R) off: a one-way current of this weight around the ring 0 -> 1 -> ... -> 0
NOISE = 0.8      # (M) off: Gaussian noise of this size added to every transport
TWIST = 0.3      # the connection is a frame change of small rotations: nearly flat


def conditions_walk(stochastic: bool = True, reversible: bool = True, isometric: bool = True,
                    *, n: int = 8, seed: int = 0) -> ConnectionWalk:
    """A connection walk on ``n`` vertices, ``d = 2``, with each condition of the reduction theorem on or off.

    All on: ``P = D^{-1} w`` for random symmetric weights ``w`` (so (S) and (R)), and
    ``T_ij = R(phi_i + eps_ij - phi_j)`` with ``eps`` antisymmetric and small (so (M), and the
    connection is nearly flat).  Switching a condition off changes only its own part, with
    the same random draws: ``stochastic=False`` multiplies ``P`` by ``SCALE``;
    ``reversible=False`` adds a one-way current ``DRIFT`` around a ring before normalising;
    ``isometric=False`` adds ``NOISE`` times Gaussian matrices to the transports.

    Examples
    --------
    >>> walk = conditions_walk(seed=1)
    >>> float(stochasticity_defect(walk.P)) < 1e-12, float(symmetry_defect(walk)) < 1e-12
    (True, True)

    Chapter: *Interactive explorers*.
    """
    if not isinstance(n, (int, np.integer)) or n < 3:
        raise ValueError(f"n must be an int of at least 3, got {n!r}")
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.2, 1.0, (n, n))          # every draw is made whatever the switches say
    phi = rng.uniform(0, 2 * np.pi, n)
    eps = rng.normal(0, TWIST, (n, n))
    noise = rng.standard_normal((n, n, 2, 2))
    w = (w + w.T) / 2
    np.fill_diagonal(w, 0)
    if not reversible:
        k = np.arange(n)
        w[k, (k + 1) % n] += DRIFT
    P = w / w.sum(1, keepdims=True)
    if not stochastic:
        P = SCALE * P
    eps = (eps - eps.T) / 2
    T = np.stack([np.stack([_rotation(phi[i] + eps[i, j] - phi[j]) for j in range(n)]) for i in range(n)])
    if not isometric:
        T = T + NOISE * noise
    return ConnectionWalk(P, EdgeTransport(T))


@dataclass
class ConditionsReport:
    """What :func:`conditions_report` finds: the spectrum, the energies and three verdicts."""

    spectrum: np.ndarray     # eigenvalues of L = I - W (complex)
    form: np.ndarray         # eigenvalues of the energy form, per unit <f, f>_pi (sorted)
    energies: np.ndarray     # <f, L f>_pi / <f, f>_pi for random sections f
    real: bool               # spectrum on the real line
    in_range: bool           # real parts in [0, 2]
    nonnegative: bool        # Dirichlet energy >= 0 for every section
    defects: dict            # the walk's defects (chapter *Reversibility, defects and low-rank heads*)

    @property
    def min_energy(self) -> float:
        """The least energy ``<f, L f>_pi`` over sections with ``<f, f>_pi = 1``."""
        return float(self.form[0])

    @property
    def holds(self) -> bool:
        """All three consequences of the reduction theorem hold."""
        return self.real and self.in_range and self.nonnegative


def conditions_report(walk: ConnectionWalk, *, n_sections: int = 200, seed: int = 0,
                      tol: float = VERDICT_TOL) -> ConditionsReport:
    """The spectrum of ``L`` and the Dirichlet energy ``<f, L f>_pi`` of a (small) walk.

    ``pi`` is the stationary distribution of ``P`` with its rows normalised (the same ``pi``
    whether (S) holds or not).  The least energy per unit ``<f, f>_pi`` is the smallest
    eigenvalue of ``Pi^{-1/2} sym(Pi L) Pi^{-1/2}``; the random sections show how typical
    sections fare.  Under (S, R, M) the spectrum is real, in ``[0, 2]``, and the energy is
    nonnegative (the reduction theorem).

    Examples
    --------
    >>> conditions_report(conditions_walk()).holds
    True
    >>> conditions_report(conditions_walk(reversible=False)).real
    False

    Chapter: *Interactive explorers*.
    """
    if not isinstance(walk, ConnectionWalk):
        raise TypeError(f"walk must be a ConnectionWalk, got {type(walk).__name__}")
    P = walk.P.double()
    pi = stationary_distribution(P / P.sum(1, keepdim=True)).numpy()
    spectrum = generator_spectrum(walk.to(dtype=torch.float64))
    L = np.asarray(walk.to(dtype=torch.float64).generator())
    root = np.repeat(np.sqrt(pi), walk.d)
    PiL = root[:, None] ** 2 * L
    form = (PiL + PiL.T) / 2 / root[:, None] / root[None, :]
    form = np.linalg.eigvalsh(form)
    rng = np.random.default_rng(seed)
    energies = []
    for _ in range(n_sections):
        f = rng.standard_normal((walk.n, walk.d))
        energies.append(float(dirichlet_energy(walk, torch.as_tensor(f), torch.as_tensor(pi)))
                        / float((pi[:, None] * f ** 2).sum()))
    defects = {"stochasticity": float(stochasticity_defect(P)),
               "reversibility": float(reversibility_defect(P / P.sum(1, keepdim=True))),
               "isometry": float(isometry_defect(walk.edge_transports())[walk.P > 0].max()),
               "symmetry": float(symmetry_defect(walk))}
    return ConditionsReport(spectrum=spectrum, form=form, energies=np.array(energies),
                            real=bool(np.abs(spectrum.imag).max() <= tol),
                            in_range=bool(spectrum.real.min() >= -tol and spectrum.real.max() <= 2 + tol),
                            nonnegative=bool(form[0] >= -tol), defects=defects)


def random_weights(n: int, p: float, rng=None, loops: bool = True) -> np.ndarray:
    """Symmetric positive weights on a connected graph of ``n`` vertices.

    The graph is a ring ``0 - 1 - ... - n-1 - 0`` with every other pair joined with
    probability ``p``; each edge weighs a uniform number in ``[0.5, 1.5]``, and each vertex
    has a self-loop of weight in ``[1.5, 3]`` unless ``loops`` is false.  ``rng``: a NumPy
    generator (drawn from in place) or a seed.

    Examples
    --------
    >>> w = random_weights(6, 0.3, np.random.default_rng(0))
    >>> bool(np.array_equal(w, w.T)), bool((np.diag(w) >= 1.5).all()), bool((w.sum(1) > 0).all())
    (True, True, True)

    Chapter: *When the generator is a connection Laplacian* (``book/theory/laplacian.ipynb``).
    """
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 2:
        raise ValueError(f"n must be an int of at least 2 (a ring needs two vertices), got {n!r}")
    rng = np.random.default_rng(rng)
    A = np.triu(rng.random((n, n)) < p, 1)
    i = np.arange(n)
    A[i, (i + 1) % n] = True
    A = np.triu(A | A.T, 1)
    w = A * rng.uniform(0.5, 1.5, (n, n))
    w = w + w.T
    return w + np.diag(rng.uniform(1.5, 3.0, n)) if loops else w


def metric_transports(w, d: int, rng=None) -> np.ndarray:
    """Random orthogonal ``O_ij`` with ``O_ji = O_ij^T`` on the edges of the weights ``w``.

    One Haar-random ``d x d`` orthogonal matrix per edge ``i < j`` with ``w_ij != 0``, its
    transpose on ``(j, i)``, and the identity everywhere else (self-loops included: the
    identity is symmetric and orthogonal, as (M) asks of a self-loop).  Returns an array of
    shape ``(n, n, d, d)``; ``rng``: a NumPy generator (drawn from in place) or a seed.

    Examples
    --------
    >>> O = metric_transports(random_weights(5, 0.5, 0), 3, 1)
    >>> bool(np.allclose(O[0, 1] @ O[0, 1].T, np.eye(3))), bool(np.allclose(O[1, 0], O[0, 1].T))
    (True, True)

    Chapter: *When the generator is a connection Laplacian* (``book/theory/laplacian.ipynb``).
    """
    w = np.asarray(w)
    if w.ndim != 2 or w.shape[0] != w.shape[1]:
        raise ValueError(f"w must be a square (n, n) array of weights, got shape {w.shape}")
    rng = np.random.default_rng(rng)
    n = w.shape[0]
    O = np.tile(np.eye(d), (n, n, 1, 1))
    for i, j in zip(*np.nonzero(np.triu(w, 1))):
        O[i, j] = random_orthogonal(d, rng)
        O[j, i] = O[i, j].T
    return O
