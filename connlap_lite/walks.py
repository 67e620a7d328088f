"""Connection walks: a walk matrix and a transport on each of its edges, their gauges and holonomy.

Chapter: *Connection walks* (``book/theory/walks.ipynb``).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

import warnings

from ._backend import check_float_dtype, check_index, check_shape, is_numpy, out, to_tensor
from .chains import stationary_distribution
from .transports import ConstantTransport, EdgeTransport, FrameChange, MixtureTransport, Transport


class ComputedOnFirstUse(UserWarning):
    """A walk's property was computed on first use (once; it is kept): call the named method to compute it when you
    choose, or filter this warning."""


def _as_transport(transport, d_hint=None) -> Transport:
    if isinstance(transport, Transport):
        return transport
    T = to_tensor(transport, "transport", ndim=(2, 4))
    return ConstantTransport(T) if T.ndim == 2 else EdgeTransport(T)


class ConnectionWalk:
    """A connection walk ``(P, T)`` and its propagation operator ``W``.

    ``(W f)_i = sum_j P_ij T_ij f_j``: messages from token ``j`` are carried to
    token ``i`` by the transport ``T_ij`` and averaged with the walk weights.
    The generator is ``L = I - W``.

    Parameters
    ----------
    P : array, shape (n, n)
        Nonnegative walk matrix; its support ``P_ij > 0`` is the edge set ``E``.
    transport : array of shape (d, d) or (n, n, d, d), or a ``Transport``
        A ``d x d`` matrix means constant transport; an ``(n, n, d, d)``
        array gives one transport per edge; ``MixtureTransport`` keeps the
        multi-head mixture factored (the multi-head theorem, chapter
        *Multi-head attention is one edge-dependent connection walk*).
    offset : array, shape (d,) or (n, d), optional
        An affine part ``c`` added after the walk (attention biases, chapter
        *Single-head attention is a connection walk*):
        ``walk(X) = W X + 1 c^T`` (or ``+ c`` row by row for an ``(n, d)`` offset).

    Numpy in gives numpy out from every method; the attributes ``P``, ``transport``
    and ``offset`` hold torch tensors (``walk.P.numpy()`` reads them on the CPU).

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.5, 0.5], [0.25, 0.75]])
    >>> R = np.array([[0.0, -1.0], [1.0, 0.0]])          # a quarter turn
    >>> walk = ConnectionWalk(P, R)
    >>> f = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> walk.apply(f)                                    # P f R^T
    array([[-0.5 ,  0.5 ],
           [-0.75,  0.25]])
    >>> np.allclose(walk.dense(), np.kron(P, R))         # constant transport: W = P ⊗ T
    True
    >>> walk.holonomy([0, 1])                           # R @ R: a half turn
    array([[-1.,  0.],
           [ 0., -1.]])

    Chapter: *Connection walks*.
    """

    def __init__(self, P, transport, *, offset=None, numpy: bool | None = None):
        # what the walk's methods return: NumPy arrays if asked (``numpy``) or if ``P`` was one, else tensors
        self._numpy = is_numpy(P) if numpy is None else bool(numpy)
        self.P = to_tensor(P, "P", ndim=2)
        n = self.P.shape[0]
        check_shape(self.P, "P", (n, n))
        if bool((self.P < 0).any()):
            i, j = (int(k) for k in torch.nonzero(self.P < 0)[0])
            raise ValueError(f"P must be nonnegative (a walk matrix); P[{i}, {j}] = {float(self.P[i, j]):.3g}")
        self.transport = _as_transport(transport)
        # the precision its numbers carry (the least precise input): tolerances follow it
        self.precision = self.P.dtype
        if self.transport.dtype != self.P.dtype:      # mixed float32/float64: compute in the wider one
            dt = torch.promote_types(self.P.dtype, self.transport.dtype)
            if torch.finfo(self.transport.dtype).eps > torch.finfo(self.precision).eps:
                self.precision = self.transport.dtype
            self.P, self.transport = self.P.to(dt), self.transport.to(dtype=dt)
        if isinstance(self.transport, EdgeTransport) and self.transport.T.shape[0] != n:
            raise ValueError(f"transport has shape {tuple(self.transport.T.shape)} but P is {n} x {n}; "
                             f"pass an ({n}, {n}, d, d) array")
        if isinstance(self.transport, MixtureTransport) and self.transport.weights_shape[1:] != (n, n):
            raise ValueError(f"transport weights have shape {self.transport.weights_shape}, "
                             f"expected (H, {n}, {n}) to match P")
        self.offset = None if offset is None else to_tensor(offset, "offset", ndim=(1, 2)).to(self.P)
        if self.offset is not None:
            check_shape(self.offset, "offset", (self.d,) if self.offset.ndim == 1 else (n, self.d))

    # ------------------------------------------------------------------ shape

    @property
    def returns_numpy(self) -> bool:
        """Whether the walk's methods, and the functions that read it, return NumPy arrays (``P`` was one, or
        ``numpy=True``) rather than tensors."""
        return self._numpy

    @property
    def n(self) -> int:
        """Number of tokens (vertices)."""
        return self.P.shape[0]

    @property
    def d(self) -> int:
        """Fibre dimension."""
        return self.transport.d

    @property
    def is_constant(self) -> bool:
        """Whether the transport is a single matrix on every edge (constant transport)."""
        return isinstance(self.transport, ConstantTransport)

    def __repr__(self) -> str:
        kind = type(self.transport).__name__
        return f"ConnectionWalk(n={self.n}, d={self.d}, transport={kind}, dtype={self.P.dtype})"

    def _section(self, f, name="f") -> tuple[torch.Tensor, bool]:
        numpy = is_numpy(f)
        F = to_tensor(f, name, ndim=(1, 2)).to(self.P.dtype)
        flat = F.ndim == 1
        if flat:
            check_shape(F, name, (self.n * self.d,))
            F = F.reshape(self.n, self.d)
        else:
            check_shape(F, name, (self.n, self.d))
        return F.to(self.P.device), numpy, flat

    # --------------------------------------------------------------- operator
    def apply(self, f):
        """``W f`` for a section ``f`` of shape ``(n, d)`` or stacked ``(n*d,)``.

        Never forms the ``n*d x n*d`` matrix.
        """
        F, numpy, flat = self._section(f)
        Y = self.transport.apply(self.P, F)
        return out(Y.reshape(-1) if flat else Y, numpy)

    def __call__(self, X):
        """``W X + 1 c^T``: what an attention module outputs for input ``X``."""
        F, numpy, flat = self._section(X, "X")
        Y = self.transport.apply(self.P, F)
        if self.offset is not None:
            Y = Y + self.offset
        return out(Y.reshape(-1) if flat else Y, numpy)

    def edge_transports(self):
        """All ``T_ij`` as an ``(n, n, d, d)`` array (dense; small walks only)."""
        return out(self.transport.blocks(self.n), self._numpy)

    def transport_at(self, i: int, j: int):
        """The transport ``T_ij`` of edge ``(i, j)``; an error if the edge is not in ``E``."""
        self._check_edge(i, j)
        return out(self.transport.block(i, j), self._numpy)

    def dense(self):
        """The ``n*d x n*d`` block matrix with blocks ``P_ij T_ij`` (on request only)."""
        n, d = self.n, self.d
        B = self.P[:, :, None, None] * self.transport.blocks(n)
        return out(B.permute(0, 2, 1, 3).reshape(n * d, n * d), self._numpy)

    def generator(self):
        """The generator ``L = I - W`` as a dense ``n*d x n*d`` matrix."""
        W = self.dense()
        if self._numpy:
            return np.eye(W.shape[0], dtype=W.dtype) - W
        return torch.eye(W.shape[0], dtype=W.dtype, device=W.device) - W

    def operator(self, *, generator: bool = False):
        """``W`` (or ``L = I - W``) as a ``scipy.sparse.linalg.LinearOperator``.

        It acts on stacked float64 numpy vectors of length ``n*d`` through
        :meth:`apply`, so large walks can be handed to ``eigs`` without a dense matrix.  For a
        multi-head walk the product of ``P`` with the ``(H, n, n)`` gates is formed once, when the
        operator is made (one more array of that size), instead of at every product.
        """
        from scipy.sparse.linalg import LinearOperator

        N = self.n * self.d
        walk = self.to(dtype=torch.float64)
        step = walk.transport.applier(walk.P)

        def matvec(v):
            v = torch.as_tensor(np.asarray(v, dtype=np.float64).reshape(-1), device=walk.P.device)
            y = step(v.reshape(walk.n, walk.d)).reshape(-1).cpu().numpy()
            return v.cpu().numpy() - y if generator else y

        return LinearOperator((N, N), matvec=matvec, dtype=np.float64)

    def to(self, **kw) -> "ConnectionWalk":
        """A copy with every tensor moved by ``Tensor.to(**kw)`` (device, dtype)."""
        check_float_dtype(kw.get("dtype"))
        w = ConnectionWalk.__new__(ConnectionWalk)
        w._numpy = self._numpy
        w.P = self.P.to(**kw)
        w.precision = self.precision if torch.finfo(self.precision).eps > torch.finfo(w.P.dtype).eps else w.P.dtype
        w.transport = self.transport.to(**kw)
        w.offset = None if self.offset is None else self.offset.to(**kw)
        return w

    # ------------------------------------------------------------ as a chain
    def compute_stationary(self):
        """The stationary distribution of ``P`` (:func:`connlap_lite.stationary_distribution`, in the walk's
        precision), computed now (unless kept from an earlier call on this ``P``, unchanged) and kept for
        :attr:`stationary`; a copy is returned.  Raises if ``P`` is not row-stochastic or has no unique stationary
        distribution."""
        if not self._has_stationary():
            self._pi = (self.P, self.P._version, stationary_distribution(self.P.to(self.precision)))
        return out(self._pi[2].clone(), self._numpy)

    def _has_stationary(self) -> bool:
        """Whether the kept stationary distribution is of ``P`` as it is now (the same tensor, not changed in place)."""
        kept = getattr(self, "_pi", None)
        return kept is not None and kept[0] is self.P and kept[1] == self.P._version

    @property
    def stationary(self):
        """The stationary distribution ``pi`` of ``P`` (``pi P = pi``, ``sum pi = 1``), solved on first use, with a
        :class:`ComputedOnFirstUse` warning that names :meth:`compute_stationary`, and kept until ``P`` is replaced or
        changed in place (each read returns a copy).

        >>> import numpy as np, warnings
        >>> walk = ConnectionWalk(np.array([[0.9, 0.1], [0.5, 0.5]]), np.eye(1))
        >>> with warnings.catch_warnings(record=True) as said:
        ...     warnings.simplefilter("always")
        ...     first, again = walk.stationary, walk.stationary
        >>> np.round(first, 6), len(said)                    # solved once, said once
        (array([0.833333, 0.166667]), 1)
        >>> print(said[0].message)
        ConnectionWalk.stationary: solving for the stationary distribution of this 2-token walk now (once: it is kept); call walk.compute_stationary() to compute it when you choose
        """
        if not self._has_stationary():
            warnings.warn(f"ConnectionWalk.stationary: solving for the stationary distribution of this {self.n}-token "
                          "walk now (once: it is kept); call walk.compute_stationary() to compute it when you choose",
                          ComputedOnFirstUse, stacklevel=2)
        return self.compute_stationary()

    # ----------------------------------------------------------------- gauges
    def rescale(self, c) -> "ConnectionWalk":
        """Edge-rescaling gauge: ``(P_ij, T_ij) -> (c_ij P_ij, T_ij / c_ij)``.

        ``c`` must be positive on every edge; entries off the support are ignored.
        ``W`` and the offset are unchanged.
        """
        c = to_tensor(c, "c", ndim=2).to(self.P)
        check_shape(c, "c", (self.n, self.n))
        on = self.P > 0
        if bool((c[on] <= 0).any()):
            raise ValueError("c must be positive on every edge of the walk (where P > 0)")
        c = torch.where(on, c, torch.ones_like(c))
        return self._with(self.P * c, self.transport.rescaled(c), self.offset)

    def change_frame(self, G) -> "ConnectionWalk":
        """Frame-change gauge: ``f_i -> G_i f_i``, ``T_ij -> G_i T_ij G_j^{-1}``.

        ``G`` is an ``(n, d, d)`` stack of invertible matrices.  The new operator is
        ``diag(G) W diag(G)^{-1}``: similar to ``W``, with the same spectrum.  An offset
        ``c`` moves with the frames, to ``G_i c_i`` at token ``i``.
        """
        G = to_tensor(G, "G", ndim=3).to(self.P)
        check_shape(G, "G", (self.n, self.d, self.d))
        s = torch.linalg.svdvals(G)
        bad = s[:, -1] <= 1e-12 * s[:, 0].clamp_min(1e-300)
        if bool(bad.any()):
            raise ValueError(f"G[{int(torch.nonzero(bad)[0])}] is singular; each frame change must be invertible")
        offset = None
        if self.offset is not None:
            offset = torch.einsum("iab,ib->ia", G, self.offset.expand(self.n, self.d))
        return self._with(self.P, FrameChange(self.transport, G), offset)

    def _with(self, P, transport, offset) -> "ConnectionWalk":
        w = ConnectionWalk.__new__(ConnectionWalk)
        w._numpy, w.P, w.transport, w.offset = self._numpy, P, transport, offset
        w.precision = self.precision
        return w

    # --------------------------------------------------------------- holonomy
    def _check_edge(self, i, j):
        n = self.n
        for name, k in (("i", i), ("j", j)):
            if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
                raise TypeError(f"{name} must be an int vertex index, got {k!r} ({type(k).__name__})")
        if not (0 <= i < n and 0 <= j < n):
            raise ValueError(f"edge ({i}, {j}) is out of range for a walk on {n} tokens: give indices below {n}")
        if not bool(self.P[i, j] > 0):
            raise ValueError(f"({i}, {j}) is not an edge: P[{i}, {j}] = 0; give a cycle along edges with P > 0")

    def holonomy(self, cycle: Sequence[int]):
        """Ordered product of transports around ``cycle = [i1, i2, ..., ik]``.

        A vector at ``i1`` is carried to ``i2`` by ``T_{i2 i1}``, then on, and back to
        ``i1`` by ``T_{i1 ik}``; the holonomy is ``T_{i1 ik} ... T_{i3 i2} T_{i2 i1}``.
        Every step must be an edge (``P > 0``).
        """
        if isinstance(cycle, (str, bytes)) or not hasattr(cycle, "__iter__"):
            raise TypeError(f"cycle must be a list of vertex indices such as [0, 1, 2], got {cycle!r}")
        cycle = [check_index(k, "cycle entries", self.n) for k in cycle]
        if len(cycle) < 1:
            raise ValueError("cycle must list at least one vertex")
        Hol = torch.eye(self.d, dtype=self.P.dtype, device=self.P.device)
        for a, b in zip(cycle, cycle[1:] + cycle[:1]):
            self._check_edge(b, a)
            Hol = self.transport.block(b, a) @ Hol
        return out(Hol, self._numpy)
