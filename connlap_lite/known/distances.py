"""Distances across the layers: from rank one (Dong et al.), from doubly stochastic (Sander et al.),
and between the heads of two layers (Bhojanapalli et al.).

Chapter: *Known results, reproduced*.
"""
from __future__ import annotations

import torch

from ..measure import metrics as M

TINY = 1e-300            # the floor under a norm the measurements divide by


def rank_one_residual(X: torch.Tensor) -> torch.Tensor:
    """``||X - 1 xbar^T||_F / ||X||_F`` with ``xbar`` the mean token: ``(..., n, d) -> (...)``.

    The mean token is the best ``1 x^T`` in the Frobenius norm, so this is the relative distance of the
    token states from rank one (of that form); 0 exactly when every token holds the same vector.

    Examples
    --------
    >>> x = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    >>> float(rank_one_residual(torch.ones(6, 1, dtype=torch.float64) * x))
    0.0

    Chapter: *Known results, reproduced*.
    """
    X = X.double()
    return (X - X.mean(-2, keepdim=True)).norm(dim=(-2, -1)) / X.norm(dim=(-2, -1)).clamp_min(TINY)


def token_spread(X: torch.Tensor) -> torch.Tensor:
    """The largest range ``max_i x_ia - min_i x_ia`` of a coordinate ``a`` over the tokens: ``(..., n, d) -> (...)``.

    A row-stochastic walk never increases it (each new token is a convex mix of the old ones).

    Examples
    --------
    >>> X = torch.tensor([[0.0, 1.0], [2.0, 1.5]])
    >>> P = torch.tensor([[0.5, 0.5], [0.25, 0.75]])
    >>> float(token_spread(X)), float(token_spread(P @ X))
    (2.0, 0.5)

    Chapter: *Known results, reproduced*.
    """
    return (X.amax(-2) - X.amin(-2)).amax(-1).double()


# ------------------------------------------------------------------------- doubly stochastic
def column_sum_defect(P: torch.Tensor) -> torch.Tensor:
    """``1/(2n) sum_j |sum_i P_ij - 1|`` of a row-stochastic walk: ``(..., n, n) -> (...)``.

    It is the total-variation distance between the uniform distribution and the distribution of the key
    that a uniformly drawn query picks: 0 for a doubly stochastic walk, ``(n - 1) / n`` when every query
    picks the same key.

    Examples
    --------
    >>> column_sum_defect(torch.full((4, 4), 0.25, dtype=torch.float64))
    tensor(0., dtype=torch.float64)
    >>> P = torch.zeros(4, 4, dtype=torch.float64); P[:, 0] = 1
    >>> column_sum_defect(P)
    tensor(0.7500, dtype=torch.float64)

    Chapter: *Known results, reproduced*.
    """
    n = P.shape[-1]
    return (P.sum(-2) - 1).abs().sum(-1) / (2 * n)


# --------------------------------------------------------------------- consecutive layers
def head_matched_distance(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """Mean over the heads of ``B`` of the walk distance to the closest head of ``A``.

    ``A``, ``B`` are ``(..., H, n, n)`` (two layers' heads on the same tokens); the walk distance is
    :func:`connlap_lite.measure.metrics.walk_distance`, the mean total-variation distance between rows.

    Examples
    --------
    >>> I, U = torch.eye(3), torch.full((3, 3), 1 / 3)
    >>> float(head_matched_distance(torch.stack([I, U]), torch.stack([U, U])))   # each head of B finds U in A
    0.0

    Chapter: *Known results, reproduced*.
    """
    closest = [M.walk_distance(A, B[..., h:h + 1, :, :]).amin(-1) for h in range(B.shape[-3])]   # one head of B
    return torch.stack(closest, -1).mean(-1)                                              # at a time: small memory
