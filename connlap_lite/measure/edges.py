"""Edge transports of a multi-head layer, read from their factors: singular values and defects.

On the edge ``j -> i`` a layer applies ``T_ij = H sum_h gamma^h_ij T_h`` with its heads' attention gates
``gamma^h_ij = A^h_ij / sum_k A^k_ij``.  These functions never form ``T_ij``: heads of one key/value group share
their read factor, so ``T_ij`` is a product of a ``d x G d_h`` and a ``G d_h x d`` factor, and its singular
values come from a small symmetric matrix built from the heads' cached cores.

``rank_free_defect(s)``                   distance to the nearest scaled partial isometry of any rank, from
                                          singular values ``s``;
``gated_singular_values(w, heads, g)``    singular values of ``sum_h w_h T_h`` for many weight vectors ``w``;
``edge_defects(attention, heads, r, c)``  ``rank_free_defect`` of the gated edge transports of edges ``(r, c)``.

Chapters: *E2*, *Interactive explorers*, *Beyond E1-E3*.
"""
from __future__ import annotations

import numpy as np
import torch

from .._backend import eigvalsh, to_tensor
from ..transports import HeadTransports, over
from ..transports import check_heads as _heads


def rank_free_defect(s: torch.Tensor) -> torch.Tensor:
    """Distance to the nearest scaled partial isometry of any rank, from singular values ``s``.

    ``min_k sqrt((sum_{i>k} s_i^2 + sum_{i<=k} (s_i - mean_k)^2) / sum s^2)`` over ``k``, with
    ``s`` sorted in decreasing order and ``mean_k`` the mean of the top ``k``: the best ``c Q``
    of rank ``k`` keeps the top ``k`` directions with one common scale.
    """
    s = to_tensor(s, "s")
    if s.ndim < 1 or s.shape[-1] == 0 or bool((s < 0).any()):
        raise ValueError(f"s must hold nonnegative singular values (..., k) with k >= 1, got shape {tuple(s.shape)}")
    s = s.double().sort(-1, descending=True).values
    k = torch.arange(1, s.shape[-1] + 1, dtype=s.dtype, device=s.device)
    c1, c2 = s.cumsum(-1), (s ** 2).cumsum(-1)
    total = c2[..., -1:]
    # sum_{i<=k}(s_i - m_k)^2 = c2_k - c1_k^2 / k ; plus the dropped tail total - c2_k
    err = (total - c1 ** 2 / k) / total
    defect = err.clamp_min(0).min(-1).values.sqrt()
    return torch.where(total[..., 0] > 0, defect, torch.full_like(defect, float("nan")))   # T = 0: undefined


def gated_singular_values(weights: torch.Tensor, heads: HeadTransports, groups: torch.Tensor) -> torch.Tensor:
    """Singular values of edge transports ``T = sum_h weights[..., h] T_h``, from the factors, in decreasing order.

    Heads of one key/value group share ``V_g``, so ``T = sum_g (sum_{h in g} w_h U_h) V_g = U_w V_G``:
    a ``d x G d_h`` times a ``G d_h x d`` factor.  With ``V_G^T = Q_v R_v`` (thin QR),
    ``s(T)^2`` are the eigenvalues of the small symmetric ``R_v (U_w^T U_w) R_v^T``, and
    ``U_w^T U_w`` is a weighted sum of the blocks ``U_h^T U_k`` of one Gram matrix of all heads'
    ``U`` (block ``(h, k)`` scaled by ``w_h w_k``, then summed per group: elementwise work).  The Gram
    and ``R_v`` depend only on the heads and are cached on ``heads``, so each edge costs two products
    of ``G d_h``-sized matrices and one symmetric eigen-solve (``eigvalsh``), never a ``d x d`` matrix,
    and all ``m`` edges go through one batched call.  ``weights`` is ``(m, H)`` for ``m`` edges; the
    result ``(m, min(d, G d_h))``.

    Tolerance: squaring costs the small singular values their relative accuracy, each ``s_i`` is
    within about ``eps s_1^2 / s_i`` of an SVD's (``eps = 2.2e-16``), and a zero singular value comes
    out as at most about ``sqrt(eps) s_1 = 1.5e-8 s_1``.  ``tests/measure/test_fast_metrics.py`` checks
    ``1e-9`` relative against the SVD of the dense ``T`` on random heads with gates.
    """
    _heads(heads)
    weights = to_tensor(weights, "weights", ndim=2)
    if weights.shape[1] != heads.n_heads:
        raise ValueError(f"weights must have shape (m, {heads.n_heads}), one gate per head, got {tuple(weights.shape)}")
    groups = torch.as_tensor(groups)
    if groups.shape != (heads.n_heads,) or groups.is_floating_point() or int(groups.min()) < 0:
        raise ValueError(f"groups must hold {heads.n_heads} nonnegative int group indices, got {groups!r}")
    dt = torch.float64
    G = int(groups.max()) + 1
    missing = sorted(set(range(G)) - set(groups.tolist()))
    if missing:
        raise ValueError(f"groups must number the groups 0..{G - 1} without gaps; group {missing[0]} has no head")
    H, d, r = heads.U.shape
    w = weights.to(device=heads.U.device, dtype=dt)
    if groups.tolist() == list(range(H)) and H * r <= d and w.device.type == "cpu" and not w.requires_grad:
        return _gated_triangular(w, heads)
    mha = groups.tolist() == list(range(H))

    def gram_and_core():
        U, V = heads.U.to(dt), heads.V.to(dt)
        flat = U.permute(1, 0, 2).reshape(d, H * r)
        gram = flat.T @ flat                                                  # blocks U_h^T U_k
        if not mha:                                                           # kept as (H H, d_h d_h) blocks
            gram = gram.reshape(H, r, H, r).permute(0, 2, 1, 3).reshape(H * H, r * r)
        first = [int(torch.nonzero(groups == g)[0]) for g in range(G)]
        Vg = torch.cat([V[h] for h in first], 0)                              # (G d_h, d)
        return gram, torch.linalg.qr(Vg.T, mode="r")[1].contiguous()         # Rv: (min(d, G d_h), G d_h)

    gram, Rv = heads.cached(("gated-gram", dt, tuple(groups.tolist())), gram_and_core)
    m = w.shape[0]
    if mha:                                                                   # MHA: block (h, k) times w_h w_k
        wr = w.repeat_interleave(r, 1)
        X = (gram[None] * wr[:, :, None]).mul_(wr[:, None, :])
    else:                                                                     # summed into blocks (g(h), g(k)):
        Wg = torch.zeros(m, H, G, dtype=dt, device=gram.device)               # one product with the Gram's blocks
        Wg[:, torch.arange(H, device=gram.device), groups.to(gram.device)] = w
        pairs = torch.einsum("mhg,mkf->mgfhk", Wg, Wg).reshape(m, G * G, H * H)
        X = (pairs @ gram).reshape(m, G, G, r, r).permute(0, 1, 3, 2, 4)
    core = Rv @ X.reshape(m, G * r, G * r) @ Rv.T
    return eigvalsh(core).clamp_min(0).sqrt().flip(-1)


def _gated_triangular(w: torch.Tensor, heads: HeadTransports) -> torch.Tensor:
    """:func:`gated_singular_values` of MHA heads with ``H d_h <= d``, on the CPU, in half the flops.

    With the thin QRs ``[U_1 ... U_H] = Q_u R_u`` and ``[V_1; ...; V_H]^T = Q_v R_v`` (both ``R`` square and
    triangular here, cached on ``heads``), ``T = Q_u C Q_v^T`` with ``C = R_u diag(w (x) 1) R_v^T``: one
    triangular product (BLAS ``trmm``) and one symmetric rank-k update ``C^T C`` (``syrk``) per edge
    instead of two general products, then the same eigen-solve.
    """
    from scipy.linalg import blas

    H, d, r = heads.U.shape

    def triangular():
        U, V = heads.U.to(torch.float64), heads.V.to(torch.float64)
        Ru = torch.linalg.qr(U.permute(1, 0, 2).reshape(d, H * r), mode="r")[1]
        Rv = torch.linalg.qr(V.reshape(H * r, d).T, mode="r")[1]
        return np.asfortranarray(Ru.cpu().numpy()), Rv.T.cpu().numpy()

    Ru, RvT = heads.cached(("gated-tri", torch.float64), triangular)
    wr = w.repeat_interleave(r, 1).numpy()
    ev = np.empty((w.shape[0], H * r))
    for k in range(w.shape[0]):                          # one edge at a time: one d_h H-square core alive
        C = blas.dtrmm(1.0, Ru, np.asfortranarray(RvT * wr[k][:, None]), lower=0, overwrite_b=1)
        ev[k] = np.linalg.eigvalsh(blas.dsyrk(1.0, C, trans=1, lower=0), UPLO="U")   # upper triangle of C^T C
    return torch.from_numpy(ev).clamp_min(0).sqrt().flip(-1)


def edge_defects(attention, heads: HeadTransports, rows, cols) -> torch.Tensor:
    """Rank-free defect (:func:`rank_free_defect`) of the gated edge transports ``T_ij = H sum_h gamma^h_ij T_h``.

    ``gamma^h_ij = A^h_ij / sum_k A^k_ij`` are the heads' gates on edge ``i <- j`` (the multi-head theorem, as
    :func:`connlap_lite.walk_from_heads` builds them; an edge no head attends has ``T_ij = 0`` and a NaN
    defect).  ``attention`` is one passage's ``(H, n, n)`` with ``rows``, ``cols`` of shape ``(m,)``, or
    a batch ``(B, H, n, n)`` with ``(B, m)`` edges per passage; the result has the shape of ``rows``.
    Every edge of every passage goes through one batched :func:`gated_singular_values` call, in float64
    (:func:`edge_singular_values`).

    >>> import torch
    >>> heads = HeadTransports(torch.eye(4, dtype=torch.float64)[None, :, :2].repeat(2, 1, 1),
    ...                        torch.eye(4, dtype=torch.float64)[None, :2].repeat(2, 1, 1))
    >>> A = torch.full((2, 3, 3), 1 / 3, dtype=torch.float64)
    >>> edge_defects(A, heads, torch.tensor([0, 2]), torch.tensor([1, 0])).tolist()   # 2 x a projection
    [0.0, 0.0]
    """
    s = edge_singular_values(attention, heads, rows, cols)
    return s.sum(-1) if s.shape[-1] == 0 else rank_free_defect(s)          # no edge: an empty result


def edge_singular_values(attention, heads: HeadTransports, rows, cols) -> torch.Tensor:
    """The singular values of the gated edge transports ``T_ij = H sum_h gamma^h_ij T_h``, descending (the shape
    of ``rows``, then one axis of singular values), as :func:`edge_defects` reads them; arguments as there.

    >>> import torch
    >>> heads = HeadTransports(torch.eye(4, dtype=torch.float64)[None, :, :2].repeat(2, 1, 1),
    ...                        torch.eye(4, dtype=torch.float64)[None, :2].repeat(2, 1, 1))
    >>> A = torch.full((2, 3, 3), 1 / 3, dtype=torch.float64)
    >>> edge_singular_values(A, heads, torch.tensor([0]), torch.tensor([1]))[0, :2].tolist()
    [2.0, 2.0]
    """
    _heads(heads)
    A = to_tensor(attention, "attention", ndim=(3, 4), finite=False)     # the edges' gates are checked, not all of A
    single = A.ndim == 3
    A = A[None] if single else A
    B, H, n, n2 = A.shape
    if n != n2 or H != heads.n_heads:
        raise ValueError(f"attention must have shape (H, n, n) or (B, H, n, n) with H = {heads.n_heads} heads, "
                         f"got {tuple(A.shape)}")
    rows, cols = (torch.as_tensor(x, device=A.device) for x in (rows, cols))
    for name, x in (("rows", rows), ("cols", cols)):
        if x.is_floating_point() or x.dtype == torch.bool or x.shape != rows.shape or \
                x.ndim != (1 if single else 2) or (not single and x.shape[0] != B):
            raise ValueError(f"{name} must be int token indices of shape {'(m,)' if single else f'({B}, m)'}, the "
                             f"same for rows and cols, got {tuple(x.shape)} {x.dtype}")
        if x.numel() and not (0 <= int(x.min()) and int(x.max()) < n):
            raise ValueError(f"{name} must be token indices in [0, {n}), got values from {int(x.min())} "
                             f"to {int(x.max())}")
    rows, cols = (x.reshape(B, -1) for x in (rows, cols))
    a = A[torch.arange(B, device=A.device)[:, None], :, rows, cols].double()   # (B, m, H): the heads on each edge
    weights = over(a, a.sum(-1, keepdim=True) / H)                          # H gamma^h, 0 where no head attends
    groups = torch.arange(H) if heads.groups is None else heads.groups
    if weights.shape[1] == 0:
        out = torch.zeros(B, 0, 0, dtype=torch.float64, device=A.device)
    else:
        s = gated_singular_values(weights.reshape(-1, H), heads, groups)
        out = s.reshape(B, weights.shape[1], s.shape[-1])
    return out[0] if single else out
