"""The random inputs the checkers draw, each from a fixed seed, and the package objects built from them: shared by
the checkers (through :mod:`._runner`'s cases) and the teacher's references (:mod:`._reference`), so a leaf that
imports neither.

Chapter: the ``## Exercises`` section of every chapter.
"""
from __future__ import annotations

import contextlib
import contextvars

import numpy as np
import torch

from ...attention import AttentionWeights
from ...transports import HeadTransports


# the draw of a graded check (None: the practice cases); each case maker's seed is mixed with it
_DRAW: contextvars.ContextVar[int | None] = contextvars.ContextVar("draw", default=None)


def case_rng(seed: int) -> np.random.Generator:
    """The generator of a case maker's seed: the practice cases', or, inside :func:`drawn`, that seed mixed with
    the graded draw (cases of the same kinds and shapes, with other values).

    >>> float(case_rng(1).random()) == float(case_rng(1).random())
    True
    >>> with drawn(7):
    ...     graded = float(case_rng(1).random())
    >>> graded == float(case_rng(1).random())
    False
    """
    draw = _DRAW.get()
    return np.random.default_rng(seed if draw is None else [seed, draw])


def graded() -> bool:
    """Whether the cases being made are a graded draw's (for case makers whose practice cases use no seed)."""
    return _DRAW.get() is not None


@contextlib.contextmanager
def drawn(draw: int):
    """Inside this block the case makers draw the graded cases of ``draw`` (a nonnegative int)."""
    token = _DRAW.set(int(draw))
    try:
        yield
    finally:
        _DRAW.reset(token)


def random_walk(rng, n: int, causal: bool = False) -> np.ndarray:
    P = rng.uniform(0.05, 1.0, (n, n))
    P = np.tril(P) if causal else P
    return P / P.sum(1, keepdims=True)


def random_orthogonal_matrix(rng, d: int) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def random_patterns(rng, H: int, n: int, causal: bool = False) -> np.ndarray:
    """``H`` random attention patterns ``(H, n, n)``: positive rows summing to one, lower triangular if causal."""
    return np.stack([random_walk(rng, n, causal) for _ in range(H)])


def symmetric_orthogonal(rng, w: np.ndarray, d: int) -> np.ndarray:
    """Transports ``O_ij`` orthogonal with ``O_ji = O_ij^T`` on the edges of ``w`` (zero elsewhere)."""
    n = w.shape[0]
    O = np.zeros((n, n, d, d))
    for i in range(n):
        for j in range(i, n):
            if w[i, j] > 0:
                Q = np.diag(np.where(rng.uniform(size=d) < 0.5, -1.0, 1.0)) if i == j else random_orthogonal_matrix(rng, d)
                O[i, j], O[j, i] = Q, Q.T
    return O


def head_weights(rng, H: int, G: int, d: int, dh: int, scale: float = 1.0):
    """Row-convention weights ``W_q (H, d, dh), W_k, W_v (G, d, dh), W_o (H, dh, d)``."""
    r = lambda *s: scale * rng.standard_normal(s) / np.sqrt(s[-2])  # noqa: E731
    return r(H, d, dh), r(G, d, dh), r(G, d, dh), r(H, dh, d)


def factor_pair(rng, d: int, dh: int):
    return rng.standard_normal((d, dh)), rng.standard_normal((dh, d))


def one_head(U, V) -> HeadTransports:
    return HeadTransports(torch.as_tensor(U)[None], torch.as_tensor(V)[None])


def layer_of(W_q, W_k, W_v, W_o) -> AttentionWeights:
    return AttentionWeights(*(torch.as_tensor(W) for W in (W_q, W_k, W_v, W_o)))
