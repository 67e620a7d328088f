"""What the chapters' checks, the exercises and the tests share: one yardstick for identities and one way to
draw random orthogonal matrices.

Chapter: the *Checks* of every theory chapter, first in *Connection walks* (``book/theory/walks.ipynb``).
"""
from __future__ import annotations

import numpy as np
import torch


def _float64(x) -> np.ndarray:
    """``x`` (a tensor on any device, an array or a list) as a float64 or complex128 NumPy array."""
    if torch.is_tensor(x):
        x = x.detach().cpu()
        return (x.to(torch.complex128) if x.is_complex() else x.double()).numpy()
    x = np.asarray(x)
    return x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)


def rel(a, b) -> float:
    """Relative Frobenius error ``||a - b|| / ||b||``, in float64 (complex128 for complex input) on the CPU.

    ``a`` and ``b`` may be NumPy arrays, tensors on any device, lists, or a mix; they must broadcast.

    Examples
    --------
    >>> rel([1.0, 2.0], [1.0, 2.0])
    0.0
    >>> round(rel(np.array([1.0, 0.0]), torch.tensor([0.0, 1.0])), 6)     # numpy against torch
    1.414214
    """
    a, b = _float64(a), _float64(b)
    try:
        diff = a - b
    except ValueError as exc:
        raise ValueError(f"rel: a of shape {a.shape} and b of shape {b.shape} do not broadcast") from exc
    return float(np.linalg.norm(diff) / np.linalg.norm(b))


def random_orthogonal(d: int, rng: np.random.Generator | int | None = None) -> np.ndarray:
    """A Haar-random ``d x d`` orthogonal matrix: the Q of a Gaussian matrix's QR, with the signs of R's
    diagonal moved into Q (without that fix Q is not uniformly distributed).

    Examples
    --------
    >>> Q = random_orthogonal(4, 0)
    >>> bool(np.allclose(Q.T @ Q, np.eye(4)))
    True
    """
    rng = np.random.default_rng(rng)
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def orthonormal(*shape: int, rng: np.random.Generator | int | None = None) -> np.ndarray:
    """Matrices with orthonormal columns, of shape ``(..., rows, cols)`` with ``cols <= rows``: the Q factors of
    Gaussian matrices of that shape (a stack when ``shape`` has more than two entries).

    Examples
    --------
    >>> V = orthonormal(6, 2, rng=0)
    >>> bool(np.allclose(V.T @ V, np.eye(2)))
    True
    >>> orthonormal(5, 6, 2, rng=0).shape
    (5, 6, 2)
    """
    if len(shape) < 2 or shape[-1] > shape[-2]:
        raise ValueError(f"orthonormal: shape {shape} must end in (rows, cols) with cols <= rows")
    return np.linalg.qr(np.random.default_rng(rng).standard_normal(shape))[0]
