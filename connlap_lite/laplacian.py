"""Connection Laplacians, the defect of condition (M), energies and spectra (the defects of (S) and (R) are the
chain's: :mod:`connlap_lite.chains`).

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
        pi = torch.as_tensor(walk.compute_stationary()).to(walk.P)
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
