"""Edge transports: the linear maps a connection walk applies along its edges.

A transport ``T_ij`` maps the fibre at token ``j`` to the fibre at token ``i``
(column convention of the chapter *Connection walks*).  Four shapes of transport cover the book:

``ConstantTransport``  one ``d x d`` matrix on every edge (constant transport, a single head);
``MixtureTransport``   ``T_ij = sum_h weights[h, i, j] T_h`` with the ``T_h``
                       kept as factors (multi-head attention);
``EdgeTransport``      an explicit ``(n, n, d, d)`` array (small examples, connection Laplacians);
``FrameChange``        another transport seen in new frames, ``G_i T_ij G_j^{-1}`` (the frame-change gauge).

Each one applies itself to a section without forming any ``n*d x n*d`` matrix;
``blocks`` builds the dense ``(n, n, d, d)`` array only when asked.
Chapter: *Connection walks* (``book/theory/walks.ipynb``).
"""
from __future__ import annotations

import numbers

import torch

from ._backend import check_shape, compute_dtype, harmonise, svdvals, to_tensor


class HeadTransports:
    """Per-head transports ``T_h = U_h V_h`` kept as their two factors.

    For attention head ``h`` in group ``g(h)``, ``U_h = W_O^h`` read as a ``d x d_h``
    map and ``V_h = W_V^{g(h)}`` as a ``d_h x d`` map, so ``T_h = (W_V W_O)^T``
    in the book's column convention; its rank is at most ``d_h`` (the low-rank proposition, chapter
    *Reversibility, defects and low-rank heads*).

    Parameters
    ----------
    U : array, shape (H, d, r)
        Left factors (write maps).
    V : array, shape (H, r, d)
        Right factors (read maps).
    groups : int array, shape (H,), optional
        The key/value group ``g(h)`` of each head (grouped-query attention); None when every
        head has its own.
    offset : array, shape (d,), optional
        The affine part ``c`` of the layer's update from the value and output biases.

    Examples
    --------
    >>> import torch
    >>> U, V = torch.randn(3, 8, 2, dtype=torch.float64), torch.randn(3, 2, 8, dtype=torch.float64)
    >>> heads = HeadTransports(U, V, groups=[0, 0, 1])
    >>> heads.dense().shape
    torch.Size([3, 8, 8])
    >>> heads.singular_values().shape      # from the factors, never an 8x8 SVD
    torch.Size([3, 2])
    >>> heads[2].n_heads, heads[2].groups.tolist()        # one head, still factored
    (1, [1])
    """

    def __init__(self, U, V, *, groups=None, offset=None):
        self.U, self._V = harmonise(to_tensor(U, "U", ndim=3), to_tensor(V, "V", ndim=3))
        H, d, r = self.U.shape
        check_shape(self.V, "V", (H, r, d))
        self.groups = None
        if groups is not None:
            self.groups = torch.as_tensor(groups, device=self.U.device)
            if self.groups.dtype.is_floating_point or self.groups.dtype == torch.bool:
                raise TypeError(f"groups must hold integer group indices, got dtype {self.groups.dtype}")
            check_shape(self.groups, "groups", (H,))
            self.groups = self.groups.long()
        self.offset = None if offset is None else to_tensor(offset, "offset", ndim=1).to(self.U)
        if self.offset is not None:
            check_shape(self.offset, "offset", (d,))
        self._cache: dict = {}        # derived factors (cores, singular values, Grams) per dtype; U, V never change

    @classmethod
    def unchecked(cls, U: torch.Tensor, V, *, groups=None, offset=None) -> "HeadTransports":
        """Factors of checked shapes and finite values (another :class:`HeadTransports`'s, or a model's weights
        checked as such), not checked again: ``U`` ``(H, d, r)`` and ``V`` ``(H, r, d)`` of one floating dtype, or
        a function of no argument that forms ``V`` when it is first read (a per-head copy of rows that key/value
        groups share); ``groups`` a long tensor or None, ``offset`` ``(d,)`` of their dtype or None."""
        t = cls.__new__(cls)
        t.U, t._V, t.groups, t.offset, t._cache = U, V, groups, offset, {}
        return t

    @property
    def V(self) -> torch.Tensor:
        """The read factors ``(H, r, d)``."""
        if not isinstance(self._V, torch.Tensor):
            self._V = self._V()
        return self._V

    @property
    def n_heads(self) -> int:
        return self.U.shape[0]

    @property
    def d(self) -> int:
        return self.U.shape[1]

    @property
    def rank_bound(self) -> int:
        return self.U.shape[2]

    def __len__(self) -> int:
        return self.n_heads

    def to(self, **kw) -> "HeadTransports":
        """A copy with both factors (and the offset) moved by ``Tensor.to(**kw)``; the groups follow the device."""
        U, V = self.U.to(**kw), self.V.to(**kw)
        return HeadTransports(U, V, groups=None if self.groups is None else self.groups.to(U.device),
                              offset=None if self.offset is None else self.offset.to(**kw))

    def __getitem__(self, h) -> "HeadTransports":
        """Head ``h`` (an int) or a selection of heads (a slice, a list, a boolean mask), still factored.

        The offset belongs to the layer, not to a head, so a selection carries none."""
        if isinstance(h, numbers.Integral) and not isinstance(h, bool):      # an int, a NumPy int
            if not -self.n_heads <= h < self.n_heads:
                raise IndexError(f"head {h} out of range for {self.n_heads} heads")
            h = [h]
        return HeadTransports(self.U[h], self.V[h], groups=None if self.groups is None else self.groups[h])

    def cached(self, key: tuple, make):
        """What ``make()`` returns, computed on first use and kept on these heads under ``key`` (a tuple naming the
        derivation and its dtype): how a measurement keeps what it derives from the factors (a Gram, triangular
        factors, condition numbers) with the heads it belongs to; the factors never change, so neither does it.

        >>> heads = HeadTransports(torch.ones(2, 3, 1), torch.ones(2, 1, 3))
        >>> heads.cached(("norms",), lambda: heads.U.norm()) is heads.cached(("norms",), lambda: None)
        True
        """
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def rotated(self, R: torch.Tensor) -> "HeadTransports":
        """The heads ``U_h R_h V_h`` for orthogonal ``R`` ``(H, r, r)``, in float64, their triangular factors
        (:meth:`cores`) derived from these heads' own (``U R = Q_u (R_u R)``, a ``d_h x d_h`` QR) and kept.

        >>> heads = HeadTransports(torch.randn(2, 4, 2, dtype=torch.float64), torch.randn(2, 2, 4, dtype=torch.float64))
        >>> R = torch.linalg.qr(torch.randn(2, 2, 2, dtype=torch.float64))[0]
        >>> bool(torch.allclose(heads.rotated(R).singular_values(), HeadTransports(heads.U @ R, heads.V).singular_values()))
        True
        """
        Ru, Rv = self.cores(torch.float64)
        out = HeadTransports(self.U.double() @ R, self.V.double())
        out._cache[("left", torch.float64)] = torch.linalg.qr(Ru @ R, mode="r")[1]
        out._cache[("right", torch.float64)] = Rv
        return out

    def scaled_reads(self, gain: torch.Tensor) -> "HeadTransports":
        """The heads ``T_h diag(gain)``: each read map's columns scaled, the write factors ``U_h`` and their
        triangular factors (:meth:`cores`, computed or not) carried over unchanged."""
        out = HeadTransports(self.U, self.V * gain.to(self.V)[None, None, :], groups=self.groups, offset=self.offset)
        out._cache.update({k: v for k, v in self._cache.items() if k[0] == "left"})
        return out

    def dense(self) -> torch.Tensor:
        """The ``(H, d, d)`` matrices ``T_h = U_h V_h``."""
        return self.U @ self.V

    def sum(self) -> torch.Tensor:
        """``sum_h T_h`` as one ``d x d`` matrix."""
        return torch.einsum("hdr,hre->de", self.U, self.V)

    def cores(self, dtype: torch.dtype | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Triangular factors ``(R_u, R_v)`` of thin QRs ``U_h = Q_u R_u`` and ``V_h^T = Q_v R_v``.

        Each is ``(H, min(d, r), r)``; ``T_h = Q_u (R_u R_v^T) Q_v^T`` with orthonormal ``Q``, so
        anything orthogonally invariant about ``T_h`` (singular values, norms, the angles between its
        read and write spaces) comes from these small factors.  Computed in ``dtype`` (default: the
        factors' own, half precision upcast to float32) and cached on the instance.  Heads of one group
        whose ``V_h`` are equal share one QR.
        """
        dt = compute_dtype(self.U) if dtype is None else dtype
        left, right = self._cache.get(("left", dt)), self._cache.get(("right", dt))
        if left is None:
            left = self._cache[("left", dt)] = torch.linalg.qr(self.U.to(dt), mode="r")[1]
        if right is None:
            first, index = self.distinct_reads()
            Rv = torch.linalg.qr(self.V[first].to(dt).transpose(1, 2), mode="r")[1]
            right = self._cache[("right", dt)] = Rv[index]
        return left, right

    def distinct_reads(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(first, index)``: the heads whose read maps ``V_h`` are distinct and, per head, which of
        them it reads (``V[first][index]`` equals ``V``).  With ``groups`` (GQA) and equal ``V_h``
        inside each group, one head per group; otherwise every head."""
        H = self.n_heads
        every = torch.arange(H, device=self.U.device)
        if self.groups is None:
            return every, every
        G = int(self.groups.max()) + 1
        if set(self.groups.tolist()) != set(range(G)):
            return every, every
        first = torch.stack([torch.nonzero(self.groups == g)[0, 0] for g in range(G)])
        if not torch.equal(self.V[first][self.groups], self.V):
            return every, every
        return first, self.groups

    def singular_values(self, dtype: torch.dtype | None = None) -> torch.Tensor:
        """Singular values of each ``T_h``, shape ``(H, min(d, r))``, computed from the factors.

        With ``U = Q_u R_u`` and ``V^T = Q_v R_v`` (thin QR, :meth:`cores`), ``T = Q_u (R_u R_v^T) Q_v^T``,
        so the singular values are those of the small ``r x r`` core.  Half precision is
        upcast to float32 first (or pass ``dtype``); the result is cached on the instance.
        """
        dt = compute_dtype(self.U) if dtype is None else dtype
        key = ("sv", dt)
        if key not in self._cache:
            Ru, Rv = self.cores(dt)
            self._cache[key] = svdvals(Ru @ Rv.transpose(1, 2))
        return self._cache[key]


def check_heads(heads, name: str = "heads") -> HeadTransports:
    """``heads`` itself if it is a :class:`HeadTransports`, else an error naming ``name`` and where to get one."""
    if not isinstance(heads, HeadTransports):
        raise TypeError(f"{name} must be a HeadTransports (e.g. connlap_lite.head_transports(model, layer)), "
                        f"got {type(heads).__name__}")
    return heads


class Transport:
    """Interface of an edge transport; see the module docstring."""

    d: int

    @property
    def dtype(self) -> torch.dtype:
        """The floating dtype the transport computes in."""
        raise NotImplementedError

    def apply(self, P: torch.Tensor, F: torch.Tensor) -> torch.Tensor:
        """``(W f)_i = sum_j P_ij T_ij f_j`` for a section ``F`` of shape ``(n, d)``."""
        raise NotImplementedError

    def applier(self, P: torch.Tensor):
        """``F -> apply(P, F)`` for one fixed ``P``, for many products (an eigen-solver's).

        A transport whose products share work that depends only on ``P`` does it here, once.
        """
        return lambda F: self.apply(P, F)

    def blocks(self, n: int) -> torch.Tensor:
        """All ``T_ij`` as an ``(n, n, d, d)`` array (dense; small ``n`` only)."""
        raise NotImplementedError

    def block(self, i: int, j: int) -> torch.Tensor:
        """The single ``d x d`` transport ``T_ij``."""
        raise NotImplementedError

    def rescaled(self, c: torch.Tensor) -> "Transport":
        """The transport ``T_ij / c_ij`` (edge-rescaling gauge)."""
        raise NotImplementedError

    def to(self, **kw) -> "Transport":
        raise NotImplementedError


class ConstantTransport(Transport):
    """The same ``d x d`` matrix ``T`` on every edge (constant transport): ``W = P ⊗ T``."""

    def __init__(self, T):
        self.T = to_tensor(T, "T", ndim=2)
        check_shape(self.T, "T", (self.T.shape[0], self.T.shape[0]))
        self.d = self.T.shape[0]

    @property
    def dtype(self):
        return self.T.dtype

    def apply(self, P, F):
        return P @ F @ self.T.T

    def blocks(self, n):
        return self.T.expand(n, n, self.d, self.d).clone()

    def block(self, i, j):
        return self.T

    def rescaled(self, c):
        U, V = self.T[None], torch.eye(self.d, dtype=self.T.dtype, device=self.T.device)[None]
        return MixtureTransport((1.0 / c)[None], HeadTransports(U, V))

    def to(self, **kw):
        return ConstantTransport(self.T.to(**kw))


def over(patterns: torch.Tensor, mean: torch.Tensor, *, inplace: bool = False) -> torch.Tensor:
    """``patterns / mean``, and ``patterns`` itself where ``mean`` is 0: the gate weights ``H gamma^h = A^h / P``
    of nonnegative patterns ``A`` (``(H, ...)``) over their head mean ``P`` (where ``P`` is 0 so is every
    ``A^h``, and so is its weight).  The one formula of the gates, whichever way a walk stores them;
    ``inplace`` overwrites ``patterns``."""
    denominator = torch.where(mean > 0, mean, torch.ones_like(mean))
    return patterns.div_(denominator) if inplace else patterns / denominator


class MixtureTransport(Transport):
    """``T_ij = sum_h weights[h, i, j] T_h`` with ``T_h`` factored (the multi-head theorem).

    For multi-head attention the weights are ``H * gamma^h_ij``: ``H`` times the
    attention gates.  Applying it costs ``O(H n^2 r + H n d r)``; no ``T_ij`` is formed.
    """

    def __init__(self, weights, heads: HeadTransports):
        weights = to_tensor(weights, "weights", ndim=3)
        check_heads(heads)
        if weights.shape[0] != heads.n_heads:
            raise ValueError(f"weights has {weights.shape[0]} heads but heads has {heads.n_heads}; "
                             "pass one weight matrix per head transport")
        if weights.dtype != heads.U.dtype:
            dt = torch.promote_types(weights.dtype, heads.U.dtype)
            weights, heads = weights.to(dt), heads.to(dtype=dt)
        self._weights, self._base, self._mean = weights, None, None
        self.heads = heads
        self.d = heads.d

    @property
    def weights(self) -> torch.Tensor:
        """The ``(H, n, n)`` weights; for a transport made by :meth:`gated`, formed on first access."""
        if self._weights is None:
            self._weights = self._rows(0, self._base.shape[1])
            self._base = self._mean = None
        return self._weights

    @property
    def weights_shape(self) -> tuple:
        """``(H, n, n)``, without forming the weights."""
        return tuple((self._base if self._weights is None else self._weights).shape)

    @property
    def dtype(self):
        return (self._base if self._weights is None else self._weights).dtype

    @classmethod
    def unchecked(cls, weights: torch.Tensor, heads: HeadTransports) -> "MixtureTransport":
        """Without the checks (a full pass over the ``(H, n, n)`` weights): for weights that this
        package computed itself (:func:`connlap_lite.mha_walk`'s gates), finite and of the heads' dtype."""
        if weights.dtype != heads.U.dtype or weights.ndim != 3 or weights.shape[0] != heads.n_heads:
            return cls(weights, heads)
        t = cls.__new__(cls)
        t._weights, t._base, t._mean, t.heads, t.d = weights, None, None, heads, heads.d
        return t

    @classmethod
    def gated(cls, base: torch.Tensor, mean: torch.Tensor, heads: HeadTransports) -> "MixtureTransport":
        """Weights ``base / mean`` (``(H, n, n)`` over their head mean ``(n, n)``, :func:`over`), never stored:
        each block of rows that :meth:`apply` uses is formed on the fly (the same numbers), and :attr:`weights`
        forms them all on first access.  For checked patterns of the heads' dtype
        (:meth:`connlap_lite.LayerWalks.walk`'s, ``mean`` its walk's own ``P``), so that a walk is built
        without a second ``(H, n, n)`` array, nor a second ``(n, n)`` one, beside its attention."""
        if base.dtype != heads.U.dtype or mean.dtype != base.dtype:
            return cls(over(base, mean), heads)
        t = cls.__new__(cls)
        t._weights, t._base, t._mean, t.heads, t.d = None, base, mean, heads, heads.d
        return t

    def keep_weights(self) -> None:
        """Form and keep the weights, letting go of the patterns they are read from."""
        self.weights

    def _rows(self, i: int, j: int) -> torch.Tensor:
        """``weights[:, i:j]``, formed from the patterns if the weights are not stored."""
        if self._weights is not None:
            return self._weights[:, i:j]
        return over(self._base[:, i:j], self._mean[i:j])

    def apply(self, P, F):
        """``sum_h (P * weights_h) @ (F V_h^T) U_h^T``, a block of rows at a time: the gated weights
        ``P * weights`` of one block stay in cache, and no ``(H, n, n)`` array is written."""
        read = torch.einsum("jd,hrd->hjr", F, self.heads.V)                     # (H, n, r)
        n = P.shape[0]
        rows = max(1, self.BLOCK // max(1, self.heads.n_heads * n))
        if rows >= n:
            return torch.einsum("hir,hdr->id", (P[None] * self._rows(0, n)) @ read, self.heads.U)
        mixed = torch.empty(read.shape[0], n, read.shape[2], dtype=read.dtype, device=read.device)
        for i in range(0, n, rows):
            torch.matmul(P[None, i:i + rows] * self._rows(i, i + rows), read, out=mixed[:, i:i + rows])
        return torch.einsum("hir,hdr->id", mixed, self.heads.U)

    BLOCK = 2 ** 18          # gated weights per block of rows in apply (2 MiB in float64)

    def applier(self, P):
        """``P`` times the ``(H, n, n)`` weights is formed once (one more array of that size)."""
        weighted = P[None] * self.weights
        return lambda F: self._apply_weighted(weighted, F)

    def _apply_weighted(self, weighted, F):
        read = torch.einsum("jd,hrd->hjr", F, self.heads.V)
        return torch.einsum("hir,hdr->id", weighted @ read, self.heads.U)

    def blocks(self, n):
        return torch.einsum("hij,hde->ijde", self.weights, self.heads.dense())

    def block(self, i, j):
        return torch.einsum("h,hde->de", self.weights[:, i, j], self.heads.dense())

    def rescaled(self, c):
        return MixtureTransport(self.weights / c[None], self.heads)

    def to(self, **kw):
        return MixtureTransport(self.weights.to(**kw), self.heads.to(**kw))


class EdgeTransport(Transport):
    """An explicit transport per edge, an ``(n, n, d, d)`` array."""

    def __init__(self, T):
        self.T = to_tensor(T, "T", ndim=4)
        n, n2, d, d2 = self.T.shape
        if n != n2 or d != d2:
            raise ValueError(f"T must have shape (n, n, d, d), got {tuple(self.T.shape)}")
        self.d = d

    @property
    def dtype(self):
        return self.T.dtype

    def apply(self, P, F):
        return torch.einsum("ij,ijab,jb->ia", P, self.T, F)

    def blocks(self, n):
        return self.T.clone()

    def block(self, i, j):
        return self.T[i, j]

    def rescaled(self, c):
        return EdgeTransport(self.T / c[:, :, None, None])

    def to(self, **kw):
        return EdgeTransport(self.T.to(**kw))


class FrameChange(Transport):
    """``base`` seen in new frames: ``T'_ij = G_i T_ij G_j^{-1}`` (the frame-change gauge)."""

    def __init__(self, base: Transport, G):
        self.base = base
        self.G = to_tensor(G, "G", ndim=3)
        if self.G.dtype != base.dtype:
            dt = torch.promote_types(self.G.dtype, base.dtype)
            self.G, self.base = self.G.to(dt), base.to(dtype=dt)
        self.G_inv = torch.linalg.inv(self.G)
        self.d = base.d

    @property
    def dtype(self):
        return self.G.dtype

    def apply(self, P, F):
        moved = self.base.apply(P, torch.einsum("jab,jb->ja", self.G_inv, F))
        return torch.einsum("iab,ib->ia", self.G, moved)

    def blocks(self, n):
        return torch.einsum("iab,ijbc,jce->ijae", self.G, self.base.blocks(n), self.G_inv)

    def block(self, i, j):
        return self.G[i] @ self.base.block(i, j) @ self.G_inv[j]

    def rescaled(self, c):
        return FrameChange(self.base.rescaled(c), self.G)

    def to(self, **kw):
        return FrameChange(self.base.to(**kw), self.G.to(**kw))
