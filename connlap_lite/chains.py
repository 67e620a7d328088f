"""The walk matrix as a Markov chain: how far it is from stochastic, its stationary distribution, how far it is
from reversible.

One home for each: :attr:`ConnectionWalk.stationary`, the reduction to a connection Laplacian and the measurements
of the empirical chapters all call these.  Every function takes one walk ``(n, n)``; the stationary distribution
and the reversibility defect also take a stack ``(..., n, n)`` and answer per walk.

Chapters: *When the generator is a connection Laplacian* (conditions (S) and (R)) and *Reversibility, defects and
low-rank heads* (the defects).
"""
from __future__ import annotations

import math

import torch

from ._backend import check_shape, harmonise, is_numpy, out, to_tensor, tolerance


def _matrix(P, name: str = "P", *, stack: bool = False) -> tuple[torch.Tensor, bool]:
    """``P`` as a tensor of nonnegative square walks (``(n, n)``, or ``(..., n, n)`` with ``stack``), and whether it
    came as NumPy."""
    if hasattr(P, "compute_stationary"):
        raise TypeError(f"{name} must be a walk matrix, got a {type(P).__name__}: pass walk.P, or read "
                        "walk.stationary for its stationary distribution")
    numpy = is_numpy(P)
    P = to_tensor(P, name, ndim=None if stack else 2)
    if P.ndim < 2:
        raise ValueError(f"{name} must have 2 dimensions (one walk, n x n) or more (a stack of walks), got {P.ndim}")
    n = P.shape[-2]
    check_shape(P, name, (*P.shape[:-2], n, n))
    if n == 0:
        raise ValueError(f"{name} must be a walk on at least one token, got shape {tuple(P.shape)}")
    if bool((P < 0).any()):
        *at, i, j = (int(k) for k in torch.nonzero(P < 0)[0])
        where = f" of walk {tuple(at)}" if at else ""
        raise ValueError(f"{name} must be nonnegative (a walk matrix): P[{i}, {j}]{where} = {float(P[(*at, i, j)]):.3g}")
    return P, numpy


def _where(at: list[int]) -> str:
    return f" of walk {tuple(at)}" if at else ""


ROW_CAP = 1e-2   # the default tolerance's ceiling: a half-precision walk's 16 sqrt(n) rounding units reach 1 at n = 64


def _row_stochastic(P: torch.Tensor, atol: float | None) -> None:
    """Refuse ``P`` whose rows miss 1 by more than ``atol`` (default: 16 sqrt(n) rounding units of float32, or of
    ``P``'s dtype if coarser, at most :data:`ROW_CAP`: a walk computed in float32 passes, even stored in float64, and
    a zero row never does), naming the first row."""
    if atol is None:
        atol = min(tolerance(P.dtype, torch.float32, n=P.shape[-1]), ROW_CAP)
    sums = P.sum(-1)
    off = ~((sums - 1).abs() <= atol)
    if bool(off.any()):
        *at, row = (int(k) for k in torch.nonzero(off)[0])
        total = float(sums[(*at, row)])
        kind = "sums to 0 (a token that attends nowhere)" if total == 0 else f"sums to {total:.6g}"
        raise ValueError(f"P must be row-stochastic: row {row}{_where(at)} {kind}, off by more than atol={atol:.3g}; "
                         "normalise its rows (P / P.sum(-1, keepdims=True)) or give every token at least one key")


def _reach(P: torch.Tensor) -> torch.Tensor:
    """``R[..., i, j]``: token ``j`` can be reached from ``i`` along the walk's edges (``P_ij > 0``; ``i`` from
    itself), by repeated squaring of the boolean adjacency; a walk with every entry positive needs none."""
    eye = torch.eye(P.shape[-1], dtype=torch.bool, device=P.device)
    R = (P > 0) | eye
    if bool(R.all()):
        return R
    for _ in range(max(1, math.ceil(math.log2(P.shape[-1])))):
        R = (R.double() @ R.double()) > 0
    return R


def _solve(P: torch.Tensor) -> torch.Tensor:
    """The stationary distributions of a stack of row-stochastic walks with one closed class each (unchecked).

    Solves ``(I - P^T + 1 1^T) pi = 1``: when the walk has a unique stationary distribution (one closed class: an
    irreducible walk, or a causal one, where the first token absorbs) the matrix is invertible and the solution is
    that ``pi`` (its ``1^T``-component forces ``sum pi = 1``, and then ``pi P = pi``).  Rounding below zero is
    clipped and ``pi`` renormalised.  Agrees with the left Perron eigenvector of a dense eigen-solve to rounding
    (``tests/theory/test_chains.py`` checks ``1e-10`` relative on random walks).
    """
    n = P.shape[-1]
    eye = torch.eye(n, dtype=P.dtype, device=P.device)
    A = eye - P.transpose(-1, -2) + 1.0
    pi = torch.linalg.solve(A, torch.ones(P.shape[:-1], dtype=P.dtype, device=P.device)).clamp_min(0)
    return pi / pi.sum(-1, keepdim=True)


def _stationary(P: torch.Tensor, atol: float | None) -> torch.Tensor:
    """:func:`stationary_distribution` of a checked tensor ``P``, as a tensor of ``P``'s dtype."""
    _row_stochastic(P, atol)
    P64 = P.detach().double()
    P64 = P64 / P64.sum(-1, keepdim=True)
    R = _reach(P64)
    one_class = R.all(-2).any(-1)                  # some token is reached from every token
    if not bool(one_class.all()):
        *at, = (int(k) for k in torch.nonzero(~one_class)[0])
        R = R[tuple(at)]
        closed = (~R | R.T).all(1)                   # tokens that reach only tokens reaching them
        classes = len({tuple(row.tolist()) for row in R[closed]})
        raise ValueError(f"P{_where(at)} has eigenvalue 1 with multiplicity {classes} ({classes} closed classes of "
                         "tokens): the walk is not connected and its stationary distribution is not unique: measure "
                         "each class alone, or apply connlap_lite.measure.metrics.teleport(P) first")
    pi = _solve(P64)
    if not bool(torch.isfinite(pi).all()):           # (a solve that failed; never seen on a checked walk)
        raise ValueError("the stationary distribution of P came out non-finite: the walk is too close to having two "
                         "closed classes for a float64 solve; apply connlap_lite.measure.metrics.teleport(P) first")
    return pi.to(P.dtype)


def stochasticity_defect(P):
    """``max_i |sum_j P_ij - 1|``: zero exactly for a row-stochastic walk ``P`` ``(n, n)``.

    Examples
    --------
    >>> import numpy as np
    >>> round(float(stochasticity_defect(np.array([[0.5, 0.5], [0.2, 0.6]]))), 12)
    0.2
    """
    P, numpy = _matrix(P)
    return out((P.sum(1) - 1).abs().max(), numpy)


def stationary_distribution(P, *, atol: float | None = None):
    """The stationary distribution ``pi`` of a row-stochastic ``P``: ``pi P = pi``, ``sum pi = 1``.

    ``P`` is one walk ``(n, n)`` or a stack ``(..., n, n)`` (one ``pi`` per walk).  The rows are renormalised in
    float64 and ``pi`` solved by one linear solve per walk, returned in ``P``'s dtype.  For a causal
    (lower-triangular) walk it is ``e_1``: the first token absorbs (causal attention is never reversible, chapter
    *Reversibility, defects and low-rank heads*).  A walk's own copy is :attr:`ConnectionWalk.stationary`.

    Tolerances.  *Stochastic*: the row sums may miss 1 by ``atol``, by default 16 sqrt(n) rounding units of float32
    (or of ``P``'s dtype if coarser, at most :data:`ROW_CAP`, 0.01): ``1.9e-6`` for 1 token, ``2.2e-5`` for 128 in
    float32 or float64, so a walk of float32 noise passes, even stored in float64.  *Connected*: ``pi`` is unique when some token is reached from
    every token along the walk's edges, an edge being any ``P_ij > 0`` (no threshold: a walk linked by ``1e-7`` is
    connected, and its ``pi`` unique though sensitive); otherwise (two closed classes of tokens) an error says so.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.9, 0.1], [0.5, 0.5]])
    >>> np.round(stationary_distribution(P), 6)
    array([0.833333, 0.166667])
    >>> np.round(stationary_distribution(np.stack([P, np.full((2, 2), 0.5)])), 6)    # a stack: one pi per walk
    array([[0.833333, 0.166667],
           [0.5     , 0.5     ]])
    >>> stationary_distribution(np.eye(2))
    Traceback (most recent call last):
    ...
    ValueError: P has eigenvalue 1 with multiplicity 2 (2 closed classes of tokens): the walk is not connected and its stationary distribution is not unique: measure each class alone, or apply connlap_lite.measure.metrics.teleport(P) first

    Chapter: *Reversibility and low rank*.
    """
    P, numpy = _matrix(P, stack=True)
    return out(_stationary(P, atol), numpy)


def reversibility_defect(P, pi=None, *, atol: float | None = None):
    """``||Pi P - P^T Pi||_F / ||Pi P||_F`` with ``Pi = diag(pi)``: zero exactly when detailed balance
    ``pi_i P_ij = pi_j P_ji`` holds.

    ``P`` is one walk ``(n, n)`` or a stack ``(..., n, n)`` (one defect per walk), row-stochastic to ``atol`` (the
    tolerance of :func:`stationary_distribution`).  ``pi`` defaults to the stationary distribution, and then ``P``
    must be irreducible (every token reaches every other): a causal walk's first token absorbs everything, its
    ``pi`` is ``e_1`` and ``Pi P`` is symmetric, so its defect would read 0, "perfectly reversible", although
    detailed balance with a positive ``pi`` fails.  Such a walk is refused; teleport it first
    (``connlap_lite.measure.metrics.teleport``), or pass ``pi=stationary_distribution(P)`` to compute that value on
    purpose (the chapter does, to show it).

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.5, 0.5, 0.0], [0.25, 0.5, 0.25], [0.0, 0.5, 0.5]])   # a reversible chain
    >>> round(float(reversibility_defect(P)), 12)
    0.0
    >>> causal = np.array([[1.0, 0.0], [0.5, 0.5]])
    >>> float(reversibility_defect(causal, pi=stationary_distribution(causal)))    # the defect with pi = e_1
    0.0
    >>> reversibility_defect(causal)
    Traceback (most recent call last):
    ...
    ValueError: P must be irreducible for its reversibility defect: token 0 cannot reach token 1 (a causal walk's first token absorbs everything, and with pi = e_1 the defect reads 0); apply connlap_lite.measure.metrics.teleport(P) first, or pass pi=stationary_distribution(P) to compute that value on purpose
    >>> reversibility_defect(2 * P, pi=np.ones(3) / 3)
    Traceback (most recent call last):
    ...
    ValueError: P must be row-stochastic: row 0 sums to 2, off by more than atol=3.3e-06; normalise its rows (P / P.sum(-1, keepdims=True)) or give every token at least one key
    """
    P, numpy = _matrix(P, stack=True)
    _row_stochastic(P, atol)
    if pi is None:
        pi = _stationary(P, atol)                  # (two closed classes: refused here, with that reason)
        R = _reach(P)
        if not bool(R.all()):
            *at, i, j = (int(k) for k in torch.nonzero(~R)[0])
            raise ValueError(f"P must be irreducible for its reversibility defect: token {i} cannot reach token {j}"
                             f"{_where(at)} (a causal walk's first token absorbs everything, and with pi = e_1 the "
                             "defect reads 0); apply connlap_lite.measure.metrics.teleport(P) first, or pass "
                             "pi=stationary_distribution(P) to compute that value on purpose")
    else:
        pi = to_tensor(pi, "pi")
        check_shape(pi, "pi", tuple(P.shape[:-1]))
        if bool((pi < 0).any()) or not bool((pi.sum(-1) > 0).all()):
            raise ValueError("pi must be a distribution: nonnegative with a positive sum")
    P, pi = harmonise(P, pi.to(P.device))
    F = pi[..., :, None] * P
    return out(torch.linalg.norm(F - F.transpose(-1, -2), dim=(-2, -1)) / torch.linalg.norm(F, dim=(-2, -1)), numpy)
