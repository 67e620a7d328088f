"""Connection Laplacians, the defects of the conditions (S), (R), (M), energies and spectra.

Chapters: *When the generator is a connection Laplacian* (the random-walk connection Laplacian, the reduction
theorem) and *Reversibility, defects and low-rank heads* (the defects).
"""
from __future__ import annotations

import math

import numpy as np
import torch

from ._backend import (check_int, check_shape, compute_dtype, harmonise, is_numpy, out, svdvals, to_tensor, tolerance,
                       undefined)
from .transports import EdgeTransport, HeadTransports
from .walks import ConnectionWalk

DENSE_LIMIT = 4096  # largest n*d solved densely by default


def _walk(walk) -> ConnectionWalk:
    if not isinstance(walk, ConnectionWalk):
        raise TypeError(f"walk must be a ConnectionWalk, got {type(walk).__name__}")
    return walk


def _walk_matrix(P, name="P"):
    numpy = is_numpy(P)
    P = P.P.to(P.precision) if isinstance(P, ConnectionWalk) else to_tensor(P, name, ndim=2)
    check_shape(P, name, (P.shape[0], P.shape[0]))
    if P.shape[0] == 0:
        raise ValueError(f"{name} must be a walk on at least one token, got shape {tuple(P.shape)}")
    if bool((P < 0).any()):
        raise ValueError(f"{name} must be nonnegative (a walk matrix)")
    return P, numpy


def random_walk_connection(w, O, *, atol: float | None = None) -> ConnectionWalk:
    """The connection walk ``(D^{-1} w, O)`` whose generator is ``L_rw``.

    Checks the hypotheses of the connection Laplacian's definition: ``w`` symmetric and nonnegative with positive
    degrees, each ``O_ij`` on an edge orthogonal with ``O_ji = O_ij^T``, to ``atol``
    (default: ``1e-8`` in float64, a few rounding units of a coarser dtype, see
    :func:`connlap_lite._backend.tolerance`).  Mixed dtypes compute in the wider one.
    """
    numpy = is_numpy(w)
    w = to_tensor(w, "w", ndim=2)
    n = w.shape[0]
    check_shape(w, "w", (n, n))
    O = to_tensor(O, "O", ndim=4)
    if atol is None:
        atol = tolerance(w.dtype, O.dtype, n=max(n, O.shape[-1]))
    w, O = harmonise(w, O)
    if bool((w < 0).any()):
        raise ValueError("w must be nonnegative")
    if not torch.allclose(w, w.T, atol=atol, rtol=0):
        raise ValueError("w must be symmetric (w_ij = w_ji); symmetrise with (w + w.T) / 2")
    deg = w.sum(1)
    if bool((deg <= 0).any()):
        raise ValueError(f"vertex {int(torch.nonzero(deg <= 0)[0])} has degree 0; every vertex needs an edge")
    O = O.to(w.device)
    check_shape(O, "O", (n, n, None, None))
    d = O.shape[2]
    check_shape(O, "O", (n, n, d, d))
    on = w > 0
    I = torch.eye(d, dtype=w.dtype, device=w.device)
    gram = O.transpose(-1, -2) @ O
    if not torch.allclose(gram[on], I.expand_as(gram[on]), atol=atol, rtol=0):
        raise ValueError("O must be orthogonal on every edge (O_ij^T O_ij = I where w_ij > 0)")
    if not torch.allclose(O.transpose(0, 1)[on], O.transpose(-1, -2)[on], atol=atol, rtol=0):
        raise ValueError("O must satisfy O_ji = O_ij^T on every edge")
    return ConnectionWalk(w / deg[:, None], EdgeTransport(O), numpy=numpy)


def connection_laplacian(w, O, *, dense: bool = True):
    """The random-walk connection Laplacian ``L_rw = I - D^{-1} S`` (Singer & Wu).

    Parameters
    ----------
    w : array, shape (n, n)
        Symmetric nonnegative weights with positive degrees.
    O : array, shape (n, n, d, d)
        Orthogonal ``O_ij`` with ``O_ji = O_ij^T`` on every edge.
    dense : bool
        True: the ``n*d x n*d`` matrix (same array type as ``w``).  False: a
        ``scipy.sparse.linalg.LinearOperator`` that never forms it.

    Examples
    --------
    >>> import numpy as np
    >>> w = np.array([[0., 1.], [1., 0.]])
    >>> O = np.zeros((2, 2, 2, 2)); O[0, 1] = [[0, -1], [1, 0]]; O[1, 0] = O[0, 1].T
    >>> L = connection_laplacian(w, O)
    >>> np.round(np.linalg.eigvalsh(L), 12)      # real, in [0, 2]; kernel = parallel sections
    array([0., 0., 2., 2.])

    Chapter: *The connection Laplacian*.
    """
    numpy = is_numpy(w)
    walk = random_walk_connection(w, O)
    if not dense:
        return walk.operator(generator=True)
    return out(to_tensor(walk.generator(), "L"), numpy)


def stochasticity_defect(P):
    """``max_i |sum_j P_ij - 1|``: zero exactly for a row-stochastic walk.

    Examples
    --------
    >>> import numpy as np
    >>> round(float(stochasticity_defect(np.array([[0.5, 0.5], [0.2, 0.6]]))), 12)
    0.2
    """
    P, numpy = _walk_matrix(P)
    return out((P.sum(1) - 1).abs().max(), numpy)


def stationary(P: torch.Tensor) -> torch.Tensor:
    """The stationary distributions of a stack ``(..., n, n)`` of row-stochastic walks, batched.

    The one implementation behind :func:`stationary_distribution` and ``metrics.stationary`` (which
    check their arguments; this does not).  It solves ``(I - P^T + 1 1^T) pi = 1``: when the walk has
    a unique stationary distribution (one closed class: an irreducible walk, or a causal one, where
    the first token absorbs) the matrix is invertible and the solution is that ``pi`` (its
    ``1^T``-component forces ``sum pi = 1``, and then ``pi P = pi``).  Rounding below zero is
    clipped and ``pi`` renormalised.  Agrees with the left Perron eigenvector of a dense
    eigen-solve to rounding (``tests/test_laplacian.py`` checks ``1e-10`` relative on random walks).

    >>> P = torch.tensor([[[0.9, 0.1], [0.5, 0.5]], [[0.5, 0.5], [0.5, 0.5]]], dtype=torch.float64)
    >>> stationary(P).numpy().round(6)
    array([[0.833333, 0.166667],
           [0.5     , 0.5     ]])
    """
    n = P.shape[-1]
    eye = torch.eye(n, dtype=P.dtype, device=P.device)
    A = eye - P.transpose(-1, -2) + 1.0
    pi = torch.linalg.solve(A, torch.ones(P.shape[:-1], dtype=P.dtype, device=P.device)).clamp_min(0)
    return pi / pi.sum(-1, keepdim=True)


def reversibility(P: torch.Tensor, pi: torch.Tensor) -> torch.Tensor:
    """``||Pi P - P^T Pi||_F / ||Pi P||_F`` for stacks ``P (..., n, n)`` and ``pi (..., n)``, batched.

    The one implementation behind :func:`reversibility_defect` and ``metrics.reversibility``
    (which check their arguments; this does not).
    """
    F = pi[..., :, None] * P
    return torch.linalg.norm(F - F.transpose(-1, -2), dim=(-2, -1)) / torch.linalg.norm(F, dim=(-2, -1))


def reach(P: torch.Tensor) -> torch.Tensor:
    """``R[..., i, j]``: token ``j`` can be reached from ``i`` along the walk's edges (``P_ij > 0``; ``i`` from
    itself), by repeated squaring of the boolean adjacency; a walk with every entry positive needs none."""
    eye = torch.eye(P.shape[-1], dtype=torch.bool, device=P.device)
    R = (P > 0) | eye
    if bool(R.all()):
        return R
    for _ in range(max(1, math.ceil(math.log2(P.shape[-1])))):
        R = (R.double() @ R.double()) > 0
    return R


def _row_stochastic(P: torch.Tensor, atol: float | None) -> None:
    """Refuse ``P`` whose rows miss 1 by more than ``atol`` (default: 16 sqrt(n) rounding units of float32, or of
    ``P``'s dtype if coarser: a walk computed in float32 passes, even stored in float64)."""
    if atol is None:
        atol = tolerance(P.dtype, torch.float32, n=P.shape[0])
    dev = float(stochasticity_defect(P))
    if not dev <= atol:
        raise ValueError(f"P must be row-stochastic (row sums off by {dev:.3g}, more than atol={atol:.3g}); "
                         "normalise with P / P.sum(1, keepdims=True)")


def stationary_distribution(P, *, atol: float | None = None):
    """The stationary distribution ``pi`` of a row-stochastic ``P``: ``pi P = pi``, ``sum pi = 1``.

    The rows are renormalised in float64 and ``pi`` solved by :func:`stationary` (a linear solve).
    For a causal (lower-triangular) walk it is ``e_1``: the first token absorbs (causal
    attention is never reversible, chapter *Reversibility, defects and low-rank heads*).

    Tolerances.  *Stochastic*: the row sums may miss 1 by ``atol``, by default 16 sqrt(n) rounding units of float32
    (or of ``P``'s dtype if coarser): ``1.9e-6`` for 1 token, ``2.2e-5`` for 128 in float32 or float64, so a walk of
    float32 noise passes, even stored in float64.  *Connected*: ``pi`` is unique when some token is reached from
    every token along the walk's edges, an edge being any ``P_ij > 0`` (no threshold: a walk linked by ``1e-7`` is
    connected, and its ``pi`` unique though sensitive); otherwise (two closed classes of tokens) an error says so.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.9, 0.1], [0.5, 0.5]])
    >>> np.round(stationary_distribution(P), 6)
    array([0.833333, 0.166667])

    Chapter: *Reversibility and low rank*.
    """
    P, numpy = _walk_matrix(P)
    _row_stochastic(P, atol)
    P64 = P.detach().double()
    P64 = P64 / P64.sum(1, keepdim=True)
    R = reach(P64)
    if not bool(R.all(0).any()):                    # closed classes: tokens that reach only tokens reaching them
        closed = (~R | R.T).all(1)
        classes = len({tuple(row.tolist()) for row in R[closed]})
        raise ValueError(f"P has eigenvalue 1 with multiplicity {classes} ({classes} closed classes of tokens): the "
                         "walk is not connected and its stationary distribution is not unique: measure each class alone, or "
                         "apply metrics.teleport(P) first")
    return out(stationary(P64).to(P.dtype), numpy)


def reversibility_defect(P, pi=None):
    """``||Pi P - P^T Pi||_F / ||Pi P||_F`` with ``Pi = diag(pi)``.

    Zero exactly when detailed balance ``pi_i P_ij = pi_j P_ji`` holds.  ``pi``
    defaults to :func:`stationary_distribution`.  ``P`` must be a row-stochastic walk whether or not ``pi`` is
    given (the tolerance of :func:`stationary_distribution`).  Beware: for a causal walk
    ``pi = e_1`` and ``Pi P`` is symmetric, so the defect is 0 although (R) with
    ``pi > 0`` fails; report ``min(pi)`` beside it.  Computed by :func:`reversibility`.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.5, 0.5, 0.0], [0.25, 0.5, 0.25], [0.0, 0.5, 0.5]])   # a reversible chain
    >>> round(float(reversibility_defect(P)), 12)
    0.0
    >>> reversibility_defect(2 * P, pi=np.ones(3) / 3)
    Traceback (most recent call last):
    ...
    ValueError: P must be row-stochastic (row sums off by 1, more than atol=3.3e-06); normalise with P / P.sum(1, keepdims=True)
    """
    P, numpy = _walk_matrix(P)
    if pi is None:
        pi = stationary_distribution(P)
    else:
        _row_stochastic(P, None)
        pi = to_tensor(pi, "pi", ndim=1)
    check_shape(pi, "pi", (P.shape[0],))
    if bool((pi < 0).any()) or not float(pi.sum()) > 0:
        raise ValueError("pi must be a distribution: nonnegative with a positive sum")
    P, pi = harmonise(P, pi.to(P.device))
    return out(reversibility(P, pi), numpy)


def singular_value_defect(s: torch.Tensor, rtol: float) -> torch.Tensor:
    """The scaled-isometry defect from singular values ``s`` (``(..., k)``): ``sqrt(1 - (sum s)^2 / (k sum s^2))``
    over the values above ``rtol`` times the largest, in the stable form; what :func:`isometry_defect` and
    ``connlap_lite.measure.metrics.scaled_isometry_defect`` (from a head's factors) both compute.

    >>> float(singular_value_defect(torch.tensor([2.0, 2.0, 1e-20]), 1e-12))
    0.0
    """
    top = s.max(-1, keepdim=True).values
    if bool((top == 0).any()):
        raise ValueError("T is zero: the scaled-isometry defect is undefined for the zero map; leave that map out")
    keep = s > rtol * top
    s = torch.where(keep, s, torch.zeros_like(s))
    k = keep.sum(-1, keepdim=True).to(s.dtype)
    mean = s.sum(-1, keepdim=True) / k
    # 1 - (sum s)^2 / (k sum s^2) = sum (s - mean)^2 / sum s^2, written in the stable form
    spread = torch.where(keep, s - mean, torch.zeros_like(s))
    return ((spread ** 2).sum(-1) / (s ** 2).sum(-1)).sqrt()


def isometry_defect(T, *, rtol: float | None = None):
    """Scaled-isometry defect ``min_{c, Q} ||T - cQ||_F / ||T||_F``.

    ``Q`` ranges over partial isometries of the rank of ``T`` (its nonzero singular
    values ``s_1..s_k``): ``eps = sqrt(1 - (sum s)^2 / (k sum s^2))``, computed as
    ``sqrt(sum (s - mean s)^2 / sum s^2)`` (the same number, without cancellation), zero exactly
    for ``c`` times a (partial) isometry.  ``T`` is a ``(..., d, d)`` array (batched
    over leading dimensions) or a :class:`HeadTransports` (singular values from
    the factors).  Singular values below ``rtol * s_max`` count as zero
    (default: ``max(d) * eps`` of the dtype).

    Examples
    --------
    >>> import numpy as np
    >>> float(isometry_defect(3.0 * np.eye(4)))                  # a scaled rotation
    0.0
    >>> round(float(isometry_defect(np.diag([1.0, 1.0, 0.0]))), 12)   # a partial isometry
    0.0
    >>> round(float(isometry_defect(np.diag([2.0, 1.0]))), 4)
    0.3162

    Chapters: *The connection Laplacian*, *Reversibility and low rank*.
    """
    if isinstance(T, HeadTransports):
        numpy, s = False, T.singular_values()
        d = T.d
    else:
        numpy = is_numpy(T)
        T = to_tensor(T, "T")
        if T.ndim < 2 or T.numel() == 0:
            raise ValueError(f"T must be a matrix or a stack of matrices, got shape {tuple(T.shape)}")
        s = svdvals(T.to(compute_dtype(T)))
        d = max(T.shape[-2:])
    if rtol is None:
        rtol = d * torch.finfo(s.dtype).eps
    return out(singular_value_defect(s, rtol), numpy)


def symmetry_defect(walk: ConnectionWalk):
    """Largest ``||T_ji - T_ij^T||_F / ||T_ij||_F`` over the edges (metric compatibility).

    Builds every ``T_ij`` (dense); for small walks.  Undefined (NaN, with an
    :class:`~connlap_lite._backend.UndefinedWarning`), never infinite, where an edge's transport is the zero map.

    >>> import numpy as np
    >>> float(symmetry_defect(ConnectionWalk(np.full((2, 2), 0.5), np.eye(2))))
    0.0
    """
    _walk(walk)
    T = to_tensor(walk.edge_transports(), "T")
    on = walk.P > 0
    num = torch.linalg.norm(T.transpose(0, 1) - T.transpose(-1, -2), dim=(-2, -1))[on]
    den = torch.linalg.norm(T, dim=(-2, -1))[on]
    ratio = torch.where(den > 0, num / den.clamp_min(torch.finfo(den.dtype).tiny), torch.full_like(den, math.nan))
    undefined(ratio, "symmetry_defect", "an edge's transport T_ij is the zero map (a relative defect of 0)")
    return out(ratio.max(), walk.returns_numpy)


def dirichlet_energy(walk: ConnectionWalk, f, pi=None):
    """``<f, L f>_pi = sum_i pi_i f_i^T (f - W f)_i`` for a section ``f``.

    Under (S, R, M) it equals ``1/2 sum_ij w_ij ||f_i - T_ij f_j||^2 >= 0`` with
    ``w_ij = pi_i P_ij``; without (M) it can be negative.  ``pi`` defaults to the
    stationary distribution of ``walk.P``.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> walk = ConnectionWalk(P, -np.eye(1))           # a sign flip on each edge
    >>> float(dirichlet_energy(walk, np.array([[1.0], [1.0]])))    # 1/2 (w ||1 + 1||^2) * 2 edges
    2.0

    Chapter: *The connection Laplacian*.
    """
    _walk(walk)
    numpy = is_numpy(f)
    F = to_tensor(f, "f", ndim=2).to(walk.P)
    check_shape(F, "f", (walk.n, walk.d))
    if pi is None:
        pi = torch.as_tensor(stationary_distribution(walk)).to(walk.P)
    else:
        pi = to_tensor(pi, "pi", ndim=1).to(walk.P)
    check_shape(pi, "pi", (walk.n,))
    LF = F - walk.transport.apply(walk.P, F)
    return out((pi[:, None] * F * LF).sum(), numpy)


def generator_spectrum(walk: ConnectionWalk, k: int | None = None, *, which: str = "LM"):
    """Eigenvalues of the generator ``L = I - W``.

    ``k=None``: all ``n*d`` eigenvalues by a dense solve (refused above
    ``DENSE_LIMIT``); otherwise ``k`` eigenvalues of ``W`` picked by ``which``
    (ARPACK's ``"LM"``, ``"LR"``, ...) through a ``LinearOperator``, returned as
    ``1 - lambda``: ``which="LM"`` gives the slowest-decaying modes of the walk.
    Always a complex numpy array.

    Examples
    --------
    >>> import numpy as np
    >>> walk = ConnectionWalk(np.array([[0.5, 0.5], [0.5, 0.5]]), np.eye(2))
    >>> np.sort(generator_spectrum(walk).real).round(12)
    array([0., 0., 1., 1.])

    Chapter: *The connection Laplacian*.
    """
    _walk(walk)
    N = walk.n * walk.d
    if k is not None:
        check_int(k, "k")
    if isinstance(which, bool) or which not in ("LM", "SM", "LR", "SR", "LI", "SI"):
        raise ValueError(f"which must be one of 'LM', 'SM', 'LR', 'SR', 'LI', 'SI' (ARPACK's), got {which!r}")
    if k is None:
        if N > DENSE_LIMIT:
            raise ValueError(f"n*d = {N} is too large for a dense eigen-solve (limit {DENSE_LIMIT}); "
                             "pass k to get k eigenvalues through a LinearOperator")
        L = to_tensor(walk.generator(), "L").double().cpu().numpy()
        return np.linalg.eigvals(L)
    from scipy.sparse.linalg import eigs

    if not 0 < k < N - 1:
        raise ValueError(f"k must be between 1 and n*d - 2 = {N - 2}, got {k}")
    vals = eigs(walk.operator(), k=k, which=which, return_eigenvectors=False)
    return 1 - vals
