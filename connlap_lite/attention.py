"""Attention as connection walks: reference attention and its exact decompositions.

Weights use the row convention of the chapter *Single-head attention*, ``Q = X W_Q``:

=====  ================  =========================================
name   shape             meaning
=====  ================  =========================================
W_q    (H, d, d_h)       query map of each head
W_k    (G, d, d_h)       key map of each key/value group
W_v    (G, d, d_h)       value map of each group
W_o    (H, d_h, d)       output map of each head
b_q    (H, d_h)          optional biases, likewise b_k, b_v (G, d_h)
b_o    (d,)              optional output bias
=====  ================  =========================================

Head ``h`` reads group ``g(h) = h // (H / G)`` (GQA; ``G = H`` is plain MHA,
``G = 1`` is MQA).  Its transport is ``T_h = (W_v[g(h)] W_o[h])^T``.

Chapters: *Single-head attention* and *Multi-head attention*.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ._backend import check_shape, harmonise, is_numpy, out, to_tensor
from .transports import ConstantTransport, HeadTransports, MixtureTransport, over, check_heads
from .walks import ConnectionWalk


@dataclass
class AttentionWeights:
    """Checked weights of one attention layer; see the module docstring for shapes.

    Examples
    --------
    >>> import torch
    >>> w = AttentionWeights.random(d=16, n_heads=4, n_groups=2, d_head=4, seed=0)
    >>> w.n_heads, w.n_groups, w.d, w.d_head
    (4, 2, 16, 4)
    >>> w.group_of(3)
    1
    """

    W_q: torch.Tensor
    W_k: torch.Tensor
    W_v: torch.Tensor
    W_o: torch.Tensor
    b_q: torch.Tensor | None = None
    b_k: torch.Tensor | None = None
    b_v: torch.Tensor | None = None
    b_o: torch.Tensor | None = None

    def __post_init__(self):
        self.W_q = to_tensor(self.W_q, "W_q", ndim=3)
        H, d, dh = self.W_q.shape
        self.W_k = to_tensor(self.W_k, "W_k", ndim=3)
        G = self.W_k.shape[0]
        check_shape(self.W_k, "W_k", (G, d, dh))
        self.W_v = to_tensor(self.W_v, "W_v", ndim=3)
        if self.W_v.shape[0] != G:
            raise ValueError(f"W_v has {self.W_v.shape[0]} groups but W_k has {G}; keys and values "
                             "must share their groups")
        check_shape(self.W_v, "W_v", (G, d, None))
        dv = self.W_v.shape[2]
        self.W_o = to_tensor(self.W_o, "W_o", ndim=3)
        if self.W_o.shape[0] != H:
            raise ValueError(f"W_o has {self.W_o.shape[0]} heads but W_q has {H}; pass one output map per query head")
        check_shape(self.W_o, "W_o", (H, dv, d))
        if H % G:
            raise ValueError(f"the number of query heads ({H}) must be a multiple of the number of "
                             f"key/value groups ({G})")
        for name, shape in (("b_q", (H, dh)), ("b_k", (G, dh)), ("b_v", (G, dv)), ("b_o", (d,))):
            b = getattr(self, name)
            if b is not None:
                b = to_tensor(b, name)
                check_shape(b, name, shape)
                setattr(self, name, b)
        names = ("W_q", "W_k", "W_v", "W_o", "b_q", "b_k", "b_v", "b_o")
        # one float32 weight among float64 ones: all compute in float64
        for name, t in zip(names, harmonise(*(getattr(self, k) for k in names))):
            setattr(self, name, t)

    @classmethod
    def random(cls, d: int, n_heads: int, n_groups: int | None = None, d_head: int | None = None, *,
               bias: bool = False, seed: int = 0, dtype=torch.float64) -> "AttentionWeights":
        """Gaussian weights of a given shape (variance ``1/d``), for examples and tests."""
        G = n_heads if n_groups is None else n_groups
        dh = d // n_heads if d_head is None else d_head
        g = torch.Generator().manual_seed(seed)

        def r(*s):
            return torch.randn(*s, generator=g, dtype=dtype) / math.sqrt(s[-2] if len(s) > 1 else 1)

        b = (lambda *s: 0.1 * torch.randn(*s, generator=g, dtype=dtype)) if bias else (lambda *s: None)
        return cls(r(n_heads, d, dh), r(G, d, dh), r(G, d, dh), r(n_heads, dh, d),
                   b(n_heads, dh), b(G, dh), b(G, dh), b(d))

    @property
    def n_heads(self) -> int:
        return self.W_q.shape[0]

    @property
    def n_groups(self) -> int:
        return self.W_k.shape[0]

    @property
    def d(self) -> int:
        return self.W_q.shape[1]

    @property
    def d_head(self) -> int:
        return self.W_q.shape[2]

    def group_of(self, h: int) -> int:
        """The key/value group ``g(h)`` that head ``h`` reads."""
        return h // (self.n_heads // self.n_groups)

    def groups(self) -> torch.Tensor:
        return torch.arange(self.n_heads) // (self.n_heads // self.n_groups)

    def transports(self) -> HeadTransports:
        """The head transports ``T_h = (W_v[g(h)] W_o[h])^T``, factored."""
        g = self.groups()
        return HeadTransports(self.W_o.transpose(1, 2), self.W_v[g].transpose(1, 2))

    def offset(self) -> torch.Tensor | None:
        """The affine part ``c = sum_h b_v[g(h)] W_o[h] + b_o``, or None without biases."""
        if self.b_v is None and self.b_o is None:
            return None
        c = torch.zeros(self.d, dtype=self.W_o.dtype, device=self.W_o.device)
        if self.b_v is not None:
            c = c + torch.einsum("hv,hvd->d", self.b_v[self.groups()], self.W_o)
        if self.b_o is not None:
            c = c + self.b_o
        return c


def _weights(weights) -> AttentionWeights:
    if not isinstance(weights, AttentionWeights):
        raise TypeError(f"weights must be an AttentionWeights (e.g. AttentionWeights.random(d=8, n_heads=2)), "
                        f"got {type(weights).__name__}")
    return weights


def _mask(n: int, mask, causal: bool, padding, bias, H: int, like: torch.Tensor) -> torch.Tensor:
    """The additive score mask ``M`` (0 or -inf) plus positional biases, shape (H, n, n)."""
    M = torch.zeros(H, n, n, dtype=like.dtype, device=like.device)
    allowed = torch.ones(n, n, dtype=torch.bool, device=like.device)
    if causal:
        allowed &= torch.ones(n, n, dtype=torch.bool, device=like.device).tril()
    if mask is not None:
        m = torch.as_tensor(mask, device=like.device)
        if m.dtype != torch.bool:
            raise TypeError(f"mask must be boolean (True where a query may attend a key), got dtype {m.dtype}")
        check_shape(m, "mask", (n, n))
        allowed &= m
    if padding is not None:
        p = torch.as_tensor(padding, device=like.device)
        if p.dtype != torch.bool:
            raise TypeError(f"padding must be boolean (True for real tokens), got dtype {p.dtype}")
        check_shape(p, "padding", (n,))
        allowed &= p[None, :]
    empty = ~allowed.any(1)
    if bool(empty.any()):
        i = int(torch.nonzero(empty)[0])
        raise ValueError(f"query {i} may attend no key under the given mask/causal/padding; "
                         "every row needs at least one allowed key")
    M = M.masked_fill(~allowed, float("-inf"))
    if bias is not None:
        b = to_tensor(bias, "bias", ndim=(2, 3)).to(like)
        if b.ndim == 2:
            check_shape(b, "bias", (n, n))
        else:
            check_shape(b, "bias", (H, n, n))
        M = M + b
    return M


def attention_patterns(X, weights: AttentionWeights, *, causal: bool = False, mask=None,
                       padding=None, bias=None):
    """Per-head attention matrices ``A^h = softmax(Q_h K_g^T / sqrt(d_h) + M)``, shape (H, n, n).

    ``mask`` (n, n) boolean is True where query ``i`` may attend key ``j``; ``causal``
    adds ``j <= i``; ``padding`` (n,) boolean is True for real tokens (padded keys are
    masked); ``bias`` (n, n) or (H, n, n) is an additive positional bias (ALiBi, relative).
    """
    if not isinstance(causal, (bool, np.bool_)):         # "no" or 0 would read as a choice
        raise TypeError(f"causal must be True or False, got {causal!r}")
    numpy = is_numpy(X)
    X = to_tensor(X, "X", ndim=2)
    w = _weights(weights)
    check_shape(X, "X", (None, w.d))
    X = X.to(w.W_q)
    g = w.groups()
    Q = torch.einsum("nd,hde->hne", X, w.W_q)
    K = torch.einsum("nd,gde->gne", X, w.W_k)
    if w.b_q is not None:
        Q = Q + w.b_q[:, None]
    if w.b_k is not None:
        K = K + w.b_k[:, None]
    scores = (Q / math.sqrt(w.d_head)) @ K[g].transpose(1, 2)
    if mask is not None or causal or padding is not None or bias is not None:
        scores = scores + _mask(X.shape[0], mask, causal, padding, bias, w.n_heads, X)
    A = torch.softmax(scores, dim=-1)
    return out(A, numpy)


def multi_head_attention(X, weights: AttentionWeights, **masks):
    """Reference multi-head attention, computed the usual way (no walks).

    Each head's output ``A^h (X W_v[g(h)] + b_v)`` is concatenated and mapped by
    the stacked ``W_o`` plus ``b_o``.  Keyword arguments as in :func:`attention_patterns`.

    Examples
    --------
    >>> import torch
    >>> w = AttentionWeights.random(d=8, n_heads=2, seed=1)
    >>> X = torch.randn(5, 8, dtype=torch.float64)
    >>> multi_head_attention(X, w, causal=True).shape
    torch.Size([5, 8])
    """
    numpy = is_numpy(X)
    X = to_tensor(X, "X", ndim=2)
    w = _weights(weights)
    check_shape(X, "X", (None, w.d))
    X = X.to(w.W_q)
    A = attention_patterns(X, w, **masks)
    Vg = torch.einsum("nd,gde->gne", X, w.W_v)
    if w.b_v is not None:
        Vg = Vg + w.b_v[:, None]
    heads = A @ Vg[w.groups()]                                   # (H, n, d_v)
    concat = heads.transpose(0, 1).reshape(X.shape[0], -1)       # (n, H*d_v)
    Y = concat @ w.W_o.reshape(-1, w.d)
    if w.b_o is not None:
        Y = Y + w.b_o
    return out(Y, numpy)


def walk_from_heads(A, heads: HeadTransports, *, offset=None) -> ConnectionWalk:
    """The single connection walk of the multi-head theorem (chapter *Multi-head attention is one edge-dependent
    connection walk*), built from head patterns and head transports.

    ``P = S / H`` with ``S = sum_h A^h``; gates ``gamma^h = A^h / S`` on the support;
    ``T_ij = H sum_h gamma^h_ij T_h``.  The gates are stored as ``H * gamma``, the
    weights of a :class:`MixtureTransport`; ``.transport.weights / H`` reads them back.
    """
    numpy = is_numpy(A)
    A = to_tensor(A, "A", ndim=3)
    check_heads(heads)
    H = A.shape[0]
    if heads.n_heads != H:
        raise ValueError(f"A has {H} heads but heads has {heads.n_heads}; pass one transport per head")
    if A.numel() and float(A.amin()) < 0:              # one reduction: no (H, n, n) mask
        raise ValueError("A must be nonnegative (attention probabilities)")
    return gated_walk(A, heads, offset, numpy)


def gated_walk(A: torch.Tensor, heads: HeadTransports, offset, numpy: bool, *, own: bool = False,
                lazy: bool = False) -> ConnectionWalk:
    """The multi-head walk from checked patterns ``A``; with ``own`` the gates are written into ``A`` itself
    (patterns that the caller computed and no one else holds) and their weights are not checked again;
    with ``lazy`` they are read from ``A`` and the walk's ``P`` as they are needed (``MixtureTransport.gated``),
    never stored beside them (``A`` must then stay unchanged while the walk uses it)."""
    P = A.sum(0).div_(A.shape[0])
    if lazy and A.dtype == heads.U.dtype:          # read from A and P as they are needed, nothing stored
        return ConnectionWalk(P, MixtureTransport.gated(A, P, heads), offset=offset, numpy=numpy)
    if own:                                        # H * gamma^h = A^h / P, written into A
        return ConnectionWalk(P, MixtureTransport.unchecked(over(A, P, inplace=True), heads), offset=offset,
                              numpy=numpy)
    return ConnectionWalk(P, MixtureTransport(over(A, P), heads), offset=offset, numpy=numpy)


def sha_walk(X, weights: AttentionWeights, **masks) -> ConnectionWalk:
    """Single-head attention as a connection walk with constant transport (the single-head theorem).

    Returns the walk ``(A, T)`` with ``T = (W_v W_o)^T`` and, with biases, the offset
    ``c = b_v W_o + b_o``; ``walk(X)`` equals :func:`multi_head_attention` for ``H = 1``.

    Examples
    --------
    >>> import torch
    >>> w = AttentionWeights.random(d=6, n_heads=1, d_head=3, bias=True, seed=2)
    >>> X = torch.randn(4, 6, dtype=torch.float64)
    >>> walk = sha_walk(X, w, causal=True)
    >>> walk.is_constant
    True
    >>> bool(torch.allclose(walk(X), multi_head_attention(X, w, causal=True)))
    True

    Chapter: *Single-head attention*.
    """
    if _weights(weights).n_heads != 1:
        raise ValueError(f"sha_walk needs one head, got weights with {weights.n_heads}; use mha_walk")
    numpy = is_numpy(X)
    A = attention_patterns(to_tensor(X, "X", ndim=2), weights, **masks)
    T = weights.transports().dense()[0]
    return ConnectionWalk(A[0], ConstantTransport(T), offset=weights.offset(), numpy=numpy)


def mha_walk(X, weights: AttentionWeights, **masks) -> ConnectionWalk:
    """Multi-head (and GQA/MQA) attention as one edge-dependent connection walk (the multi-head theorem).

    ``P = (1/H) sum_h A^h``, gates ``gamma^h_ij = A^h_ij / sum_k A^k_ij`` and
    ``T_ij = H sum_h gamma^h_ij T_h`` with ``T_h = (W_v[g(h)] W_o[h])^T`` kept as factors.

    Examples
    --------
    >>> import torch
    >>> w = AttentionWeights.random(d=8, n_heads=4, n_groups=2, bias=True, seed=3)
    >>> X = torch.randn(6, 8, dtype=torch.float64)
    >>> walk = mha_walk(X, w, causal=True)
    >>> bool(torch.allclose(walk(X), multi_head_attention(X, w, causal=True)))
    True
    >>> bool(torch.allclose(walk.P.sum(1), torch.ones(6, dtype=torch.float64)))
    True

    Chapter: *Multi-head attention*.
    """
    numpy = is_numpy(X)                                  # X's kind decides what the walk returns, not A's
    A = attention_patterns(to_tensor(X, "X", ndim=2), _weights(weights), **masks)
    return gated_walk(A, weights.transports(), weights.offset(), numpy, own=True)   # A: softmax's, ours alone
