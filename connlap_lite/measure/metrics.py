"""Metrics for the empirical claims E1-E3, each defined by a formula (chapters *E1*, *E2*, *E3*).

Walk metrics take row-stochastic ``(n, n)`` walk matrices (one passage, one layer);
transport metrics take :class:`HeadTransports` or ``(d, d)`` matrices.  Every metric is
a plain function of tensors, so the chapters and ``python -m connlap_lite analyze``
compute exactly the same numbers.

E1, attention graphs settle into stable operators with depth:

``walk_distance(P, Q)``           mean total-variation distance between rows,
                                  ``1/n sum_i 1/2 sum_j |P_ij - Q_ij|``;
``uniform_walk(n, causal)``       the reference walk: rows uniform over allowed keys;
``normalised_walk_distance``      ``walk_distance(P, Q)`` over the mean distance of ``P``
                                  and ``Q`` from the uniform walk (chapter *E1*: near-uniform nulls);
``cross_passage_distance``        the cross-passage null: passage b's walk against passage b + 1's next
                                  walk, over the trained pair's own distance from uniform;
``sym_spectrum(P)``               eigenvalues of the symmetrised normalised Laplacian
                                  ``I - D^{-1/2} S D^{-1/2}``, ``S = (P + P^T)/2``: real, in [0, 2],
                                  defined for causal walks too;
``spectral_distance(P, Q)``       mean absolute difference of the sorted ``sym_spectrum``
                                  (the 1-Wasserstein distance of the two spectra);
``teleport(P, alpha)``            PageRank chain ``(1 - alpha) P + alpha 11^T / n`` (irreducible); E1's
                                  reversibility is ``connlap_lite.reversibility_defect`` of it;
``detect_sinks(P)``               the sink columns: those receiving over ``SINK_MULTIPLE / n`` of the attention;
``sink_mass(P, sinks)``           mean attention paid to the sink columns by the other queries;
``uniform_sink_mass(n, causal, sinks)`` the same for the uniform walk: a sink mass's reference;
``without_sinks(P, sinks)``       sink columns zeroed and rows renormalised.

One walk up close (chapter *Reading a real transformer*):

``first_column_share(P)``         the share of all the weight that the first column (token 0) receives;
``heaviest_edge(P, skip)``        the heaviest off-diagonal edge ``(i, j)``, not into the columns ``skip``.

E2, transports become scaled isometries:

``isometry_defect`` (laplacian)   rank-``k`` scaled partial isometry defect;
``rank_free_defect(s)``           distance to the nearest scaled partial isometry of any rank;
``edge_defects``                  ``rank_free_defect`` of gated edge transports ``H sum_h gamma^h_ij T_h``
                                  from the factors, many edges in one batched call
                                  (both in :mod:`connlap_lite.measure.edges`);
``data_isometry_defect``          coefficient of variation of the gains ``|T x| / |P_V x|``
                                  on the actual token vectors ``x`` entering the layer;
``copy_score``                    ``tr T / (sqrt(d_h) ||T||_F)``: how much a head copies;
``read_write_overlap``            overlap of a head's write and read subspaces.

Chapters: *Reading a real transformer*, *E1*, *E2*, *E3*.
"""
from __future__ import annotations

import math

import torch

from .._backend import check_float_dtype, check_indices, check_int, eigvalsh, harmonise, to_tensor, undefined
from .. import laplacian as _laplacian
from ..transports import HeadTransports
from ..transports import check_heads as _heads


def _walks(P, name: str = "P") -> torch.Tensor:
    """``P`` as a tensor of walks ``(..., n, n)``: square, nonnegative, finite; or an error naming ``name``."""
    P = to_tensor(P, name)
    if P.ndim < 2 or P.shape[-1] != P.shape[-2] or P.shape[-1] == 0:
        raise ValueError(f"{name} must be a walk matrix (n, n) or a stack (..., n, n), got shape {tuple(P.shape)}")
    if bool((P < 0).any()):
        raise ValueError(f"{name} must be nonnegative (a walk matrix)")
    return P


def _pair(P, Q) -> tuple[torch.Tensor, torch.Tensor]:
    P, Q = _walks(P, "P"), _walks(Q, "Q")
    if P.shape[-1] != Q.shape[-1]:
        raise ValueError(f"P and Q must be walks on the same tokens, got shapes {tuple(P.shape)} and {tuple(Q.shape)}")
    return harmonise(P, Q.to(P.device))


# ------------------------------------------------------------------------- E1: walks
def uniform_walk(n: int, causal: bool, *, dtype=torch.float64, device=None) -> torch.Tensor:
    """Rows uniform over the allowed keys: all ``n`` tokens, or ``j <= i`` when causal."""
    check_int(n, "n", low=1)
    check_float_dtype(dtype)
    U = torch.ones(n, n, dtype=dtype, device=device)
    if causal:
        U = U.tril()
    return U / U.sum(1, keepdim=True)


def walk_distance(P: torch.Tensor, Q: torch.Tensor) -> torch.Tensor:
    """Mean total-variation distance between corresponding rows, in [0, 1]."""
    P, Q = _pair(P, Q)
    return 0.5 * (P - Q).abs().sum(-1).mean(-1)


def normalised_walk_distance(P: torch.Tensor, Q: torch.Tensor, causal: bool, sinks: list[int] = ()) -> torch.Tensor:
    """``walk_distance(P, Q)`` divided by the mean distance of ``P`` and ``Q`` from the uniform walk
    (:func:`uniform_scale`).

    For walks with their sink columns removed (:func:`without_sinks`) pass the same ``sinks``:
    the reference is then the uniform walk with those columns removed too, so that the ratio
    compares like with like and a walk equal to its reference is at distance 0 from it.  A null
    measured against ``P`` (another passage's walk in place of ``Q``) is divided by the same pair's
    ``uniform_scale(P, Q)``, not by its own: one yardstick for the trained pair and its nulls.
    Two walks that both equal the reference give 0/0: NaN, with an :class:`UndefinedWarning`.

    >>> U = uniform_walk(6, causal=True)
    >>> P = 0.5 * U + 0.5 * torch.eye(6, dtype=torch.float64)
    >>> float(normalised_walk_distance(without_sinks(P, [0]), without_sinks(U, [0]), True, [0]))   # P's own scale
    2.0
    >>> float(normalised_walk_distance(without_sinks(P, [0]), without_sinks(P, [0]), True, [0]))
    0.0
    """
    P, Q = _pair(P, Q)
    return over_scale(walk_distance(P, Q), uniform_scale(P, Q, causal, sinks))


def uniform_scale(P: torch.Tensor, Q: torch.Tensor, causal: bool, sinks: list[int] = ()) -> torch.Tensor:
    """The mean distance of ``P`` and ``Q`` from the uniform walk (without ``sinks``): the denominator of
    :func:`normalised_walk_distance` (0 where both are uniform; :func:`over_scale` divides by it)."""
    P, Q = _pair(P, Q)
    sinks = check_indices(sinks, "sinks", P.shape[-1])
    U = uniform_walk(P.shape[-1], bool(causal), dtype=P.dtype, device=P.device)
    if len(sinks):
        U = without_sinks(U, list(sinks))
    return 0.5 * (walk_distance(P, U) + walk_distance(Q, U))


def over_scale(distance: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """``distance / scale``, the normalised distance; NaN with one :class:`UndefinedWarning` where ``scale`` is 0
    (both walks equal the uniform walk: 0/0, never a small number over a clamp)."""
    ratio = torch.where(scale > 0, distance / scale.clamp_min(1e-300), torch.full_like(scale, float("nan")))
    return undefined(ratio, "normalised_walk_distance", "both walks equal the uniform walk (0/0)")


def cross_passage_distance(P: torch.Tensor, Q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """The cross-passage null of a step from walks ``P`` to ``Q`` ``(B, n, n)``: passage ``b``'s walk ``P[b]``
    against the next walk of passage ``b + 1``, ``Q[b + 1]`` (the last passage against the first), over
    ``scale``, the trained pair's own :func:`uniform_scale`: one yardstick for the step and its null.  ``(B,)``;
    needs two passages.

    >>> U = uniform_walk(4, causal=False)
    >>> I = torch.eye(4, dtype=torch.float64)
    >>> P = torch.stack([0.5 * U + 0.5 * I, I])
    >>> [round(float(v), 3) for v in cross_passage_distance(P, P, uniform_scale(P, P, False))]
    [1.0, 0.5]
    """
    P, Q = _pair(P, Q)
    if P.ndim < 3 or P.shape[0] < 2:
        raise ValueError(f"P and Q must hold the walks of at least two passages, shape (B, n, n) with B >= 2, got "
                         f"shape {tuple(P.shape)}: a cross-passage null pairs each passage with another")
    return over_scale(walk_distance(P, Q.roll(-1, 0)), scale)


def sym_spectrum(P: torch.Tensor) -> torch.Tensor:
    """Sorted eigenvalues of ``I - D^{-1/2} S D^{-1/2}`` with ``S = (P + P^T) / 2``, ``D = diag(S 1)``."""
    P = _walks(P).double()
    S = 0.5 * (P + P.transpose(-1, -2))
    deg = S.sum(-1).clamp_min(1e-300)
    N = S / torch.sqrt(deg[..., :, None] * deg[..., None, :])
    eye = torch.eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return eigvalsh(eye - N)


def spectral_distance(P: torch.Tensor, Q: torch.Tensor) -> torch.Tensor:
    """Mean absolute difference of the sorted symmetrised spectra (a 1-Wasserstein distance)."""
    P, Q = _pair(P, Q)
    return (sym_spectrum(P) - sym_spectrum(Q)).abs().mean(-1)


def teleport(P: torch.Tensor, alpha: float = 0.15) -> torch.Tensor:
    """The teleporting (PageRank) chain ``(1 - alpha) P + alpha / n``: irreducible, ``pi > 0``."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), a number, got {alpha!r}")
    P = _walks(P)
    return (1 - alpha) * P + alpha / P.shape[-1]


def sink_columns(n: int, encoder: bool) -> list[int]:
    """The usual places of attention sinks: the first token, and the last ([SEP]) for an encoder.

    A guess from position; the measurements use :func:`detect_sinks`, which reads them from the walks."""
    check_int(n, "n", low=2 if encoder else 1)
    return [0, n - 1] if encoder else [0]


SINK_MULTIPLE = 8.0   # a sink column receives more than 8 times the uniform share 1/n


def detect_sinks(P: torch.Tensor, multiple: float = SINK_MULTIPLE) -> list[int]:
    """The sink columns of walks ``P`` ``(..., n, n)``: those receiving more than ``multiple / n`` of the
    attention, averaged over the queries (and over the leading axes, e.g. passages).

    ``1/n`` is each column's share were attention spread evenly over the columns; the causal uniform walk
    gives column 0 a share ``H_n / n`` (``H_n`` the harmonic number, below 8 up to n = 1673), so it has no sink.

    >>> P = uniform_walk(16, causal=True)
    >>> detect_sinks(P)
    []
    >>> P[4:, 1] += 3.0; P = P / P.sum(-1, keepdim=True)       # rows from 4 on give column 1 most of their mass
    >>> detect_sinks(P)
    [1]
    """
    P = _walks(P)
    if isinstance(multiple, bool) or not isinstance(multiple, (int, float)) or not multiple > 0:
        raise ValueError(f"multiple must be a positive number, got {multiple!r}")
    n = P.shape[-1]
    share = P.reshape(-1, n, n).mean((0, 1))
    return torch.nonzero(share > multiple / n).flatten().tolist()


def first_column_share(P: torch.Tensor) -> float:
    """The share of all the weight of one walk ``P`` ``(n, n)`` that its first column receives (the mean over the
    queries of ``P[i, 0]``): token 0's weight, an attention sink's when large.

    >>> first_column_share(uniform_walk(4, causal=True))          # (1 + 1/2 + 1/3 + 1/4) / 4
    0.5208333333333333
    """
    P = _one_walk(P)
    return float(P[:, 0].mean())


def heaviest_edge(P: torch.Tensor, skip: list[int] = ()) -> tuple[int, int]:
    """The heaviest off-diagonal edge ``(i, j)`` of one walk ``P`` ``(n, n)`` whose key ``j`` is not in ``skip``
    (the first in row-major order on a tie).

    >>> P = torch.tensor([[1.0, 0, 0], [0.6, 0.4, 0], [0.5, 0.3, 0.2]])
    >>> heaviest_edge(P), heaviest_edge(P, skip=[0])
    ((1, 0), (2, 1))
    """
    P = _one_walk(P)
    n = P.shape[-1]
    skip = check_indices(skip, "skip", n)
    off = P.clone()
    off.fill_diagonal_(float("-inf"))
    off[:, skip] = float("-inf")
    if not bool(torch.isfinite(off).any()):
        raise ValueError(f"P has no off-diagonal edge outside the columns skip={skip}: nothing to choose from")
    i, j = divmod(int(off.argmax()), n)
    return i, j


def _one_walk(P) -> torch.Tensor:
    P = _walks(P)
    if P.ndim != 2:
        raise ValueError(f"P must be one walk matrix (n, n), got shape {tuple(P.shape)}: pick one passage and layer")
    return P


def sink_mass(P: torch.Tensor, sinks: list[int]) -> torch.Tensor:
    """Mean total attention that non-sink queries pay to the sink columns."""
    P = _walks(P)
    sinks = check_indices(sinks, "sinks", P.shape[-1])
    rows = torch.ones(P.shape[-2], dtype=torch.bool, device=P.device)
    rows[sinks] = False
    return P[..., rows, :][..., sinks].sum(-1).mean(-1)


def uniform_sink_mass(n: int, causal: bool, sinks: list[int]) -> float:
    """The sink mass that the uniform walk on ``n`` tokens gives the columns ``sinks``: the reference of a sink
    mass measured on those columns (0 for no columns).

    >>> round(uniform_sink_mass(64, True, [0]), 6) == round((sum(1 / k for k in range(1, 65)) - 1) / 63, 6)
    True
    >>> uniform_sink_mass(64, False, [0, 63]), uniform_sink_mass(64, False, [])
    (0.03125, 0.0)
    """
    return float(sink_mass(uniform_walk(n, causal), sinks))


def without_sinks(P: torch.Tensor, sinks: list[int]) -> torch.Tensor:
    """Sink columns zeroed and rows renormalised; a row left empty keeps a self-loop."""
    P = _walks(P)
    sinks = check_indices(sinks, "sinks", P.shape[-1])
    Q = P.clone()
    Q[..., :, sinks] = 0
    mass = Q.sum(-1, keepdim=True)
    eye = torch.eye(P.shape[-1], dtype=P.dtype, device=P.device).expand_as(Q)
    return torch.where(mass > 1e-12, Q / mass.clamp_min(1e-300), eye)


ROW_TOL = 1e-2   # a walk's row sum may miss 1 by this much in a measurement: half-precision attention rounds each
                 # entry by 2^-9 or 2^-12 (the ``atol`` that ``analyze`` gives ``reversibility_defect``)



# ------------------------------------------------------------------- E2: transports
def _well_conditioned(heads: HeadTransports, sides: str, limit: float = 1e6) -> bool:
    """Whether ``heads``' float64 triangular factors (:meth:`HeadTransports.cores`; ``sides`` "u", "v"
    or "uv") are square and invertible with the product of their condition numbers below ``limit``,
    so that solving with them loses at most ``limit * eps`` (``2e-10``) relative.  The condition
    number is bounded above by ``||R||_F ||R^{-1}||_F`` (cheap for a triangular ``R``); cached on ``heads``."""

    def conditions():
        conds = []
        for R in heads.cores(torch.float64):
            if R.shape[-1] != R.shape[-2] or bool((torch.diagonal(R, dim1=-2, dim2=-1) == 0).any()):
                conds.append(torch.full(R.shape[:1], float("inf"), dtype=R.dtype, device=R.device))
                continue
            eye = torch.eye(R.shape[-1], dtype=R.dtype, device=R.device)
            inv = torch.linalg.solve_triangular(R, eye, upper=True)
            conds.append(torch.linalg.norm(R, dim=(-2, -1)) * torch.linalg.norm(inv, dim=(-2, -1)))
        return tuple(conds)

    cu, cv = heads.cached(("cond", torch.float64), conditions)
    cond = {"u": cu, "v": cv, "uv": cu * cv}[sides]
    return bool((cond < limit).all())


def fold_gain(heads: HeadTransports, gain: torch.Tensor | None) -> HeadTransports:
    """Head transports with the pre-attention norm's gain folded in: ``T_h diag(g)``.

    The write factors ``U_h`` are unchanged, and so are their cached QR factors
    (:meth:`connlap_lite.HeadTransports.scaled_reads`)."""
    _heads(heads)
    if gain is None:
        return heads
    gain = to_tensor(gain, "gain", ndim=1)
    if gain.shape[0] != heads.d:
        raise ValueError(f"gain must have shape ({heads.d},), one entry per model dimension, got {tuple(gain.shape)}")
    return heads.scaled_reads(gain)


def data_isometry_defect(heads: HeadTransports, X: torch.Tensor) -> torch.Tensor:
    """Per head, the coefficient of variation of ``|T_h x| / |P_h x|`` over the rows ``x`` of ``X``.

    ``P_h`` projects onto the head's read subspace (the row space of ``V_h``), so a scaled
    partial isometry gives the same gain to every token: 0.  Measured on the token vectors
    that actually enter the layer, not on all of ``R^d``.  ``X`` is ``(n, d)`` or a batch
    ``(B, n, d)`` of passages; the result is ``(H,)`` or ``(B, H)``.

    Computed from ``y = V_h x`` alone (one product per key/value group): with ``U_h = Q_u R_u`` and
    ``V_h^T = Q_v R_v`` (:meth:`HeadTransports.cores`), ``|T_h x| = |R_u y|`` and
    ``|P_h x| = |R_v^{-T} y|``, ``d_h``-sized work per token.  The triangular solve loses at most
    ``cond(V_h) eps``; where ``cond(V_h) > 1e6`` (or ``d < d_h``) the projection is formed from the
    thin QR's ``Q_v`` instead.  ``tests/measure/test_fast_metrics.py`` checks ``1e-10`` relative against the
    dense ``T_h x`` and ``Q_v Q_v^T x``.
    """
    _heads(heads)
    X = to_tensor(X, "X", ndim=(2, 3))
    if X.shape[-1] != heads.d:
        raise ValueError(f"X must have shape (n, {heads.d}) or (B, n, {heads.d}), rows in the heads' dimension; "
                         f"got {tuple(X.shape)}")
    dt = torch.float64
    U, V, X = heads.U.to(dt), heads.V.to(dt), X.to(dt).to(heads.U.device)
    Ru, Rv = heads.cores(dt)
    first, index = heads.distinct_reads()
    if _well_conditioned(heads, "v"):
        Y = torch.einsum("...nd,grd->...gnr", X, V[first])                  # V_g x, once per group
        Z = torch.linalg.solve_triangular(Rv[first].transpose(-1, -2), Y.transpose(-1, -2), upper=False)
        read = Z.norm(dim=-2)[..., index, :]                                 # |Q_v^T x| = |P_h x|
        out = torch.einsum("hsr,...hnr->...hns", Ru, Y[..., index, :, :]).norm(dim=-1)   # |R_u V_h x|
    else:
        Qv, _ = torch.linalg.qr(V.transpose(1, 2))                           # (H, d, d_h) basis of the read space
        read = torch.einsum("...nd,hdr->...hnr", X, Qv).norm(dim=-1)
        out = torch.einsum("hdr,...hnr->...hnd", U, torch.einsum("hre,...ne->...hnr", V, X)).norm(dim=-1)
    # a token with no component in the read space has no gain (0/0): left out, not counted as 0
    seen = read > 0
    gain = torch.where(seen, out / read.clamp_min(1e-300), torch.zeros_like(out))
    count = seen.sum(-1)
    mean = gain.sum(-1) / count
    var = torch.where(seen, gain - mean[..., None], torch.zeros_like(gain)).pow(2).sum(-1) / (count - 1)
    cv = var.sqrt() / mean
    # fewer than two tokens, or a head that maps everything to 0: the spread of gains is undefined
    cv = torch.where((count > 1) & (mean > 0), cv, torch.full_like(cv, float("nan")))
    return undefined(cv, "data_isometry_defect", "a head sees fewer than two tokens in its read space or maps "
                     "them all to 0")


def copy_score(heads: HeadTransports) -> torch.Tensor:
    """``tr T_h / (sqrt(d_h) ||T_h||_F)``: 1 for ``T = c`` times a projection onto ``d_h`` dims.

    ``||T_h||_F^2`` is the sum of the squared singular values (from the factors, cached on
    ``heads``), the trace ``sum U_h * V_h^T``: no ``d x d`` matrix (agrees with the dense
    ``T_h`` to ``1e-12`` relative in ``tests/measure/test_fast_metrics.py``).
    """
    _heads(heads)
    dt = torch.float64
    U, V = heads.U.to(dt), heads.V.to(dt)
    tr = torch.einsum("hdr,hrd->h", U, V)
    fro = heads.singular_values(dt).pow(2).sum(-1).sqrt()
    score = torch.where(fro > 0, tr / (math.sqrt(U.shape[-1]) * fro.clamp_min(1e-300)),
                        torch.full_like(fro, float("nan")))
    return undefined(score, "copy_score", "a head's transport is zero (0/0)")


def read_write_overlap(heads: HeadTransports) -> torch.Tensor:
    """Per head, ``||Q_U^T Q_V||_F^2 / d_h`` in [0, 1]: how much the write space ``span U_h``
    overlaps the read space ``span V_h^T`` (1: the head maps its value sub-bundle to itself;
    the low-rank proposition, chapter *Reversibility, defects and low-rank heads*).

    With ``U_h = Q_U R_u`` and ``V_h^T = Q_V R_v``, ``Q_U^T Q_V = R_u^{-T} (U_h^T V_h^T) R_v^{-1}``: a
    ``d_h x d_h`` product and two triangular solves, losing at most ``cond(U_h) cond(V_h) eps``;
    above ``1e6`` for that product the ``Q`` are formed by QR instead (``1e-10`` against the QR
    route in ``tests/measure/test_fast_metrics.py``).
    """
    _heads(heads)
    dt = torch.float64
    U, V = heads.U.to(dt), heads.V.to(dt)
    Ru, Rv = heads.cores(dt)
    if _well_conditioned(heads, "uv"):
        C = torch.einsum("hdr,hsd->hrs", U, V)                               # U_h^T V_h^T
        Z = torch.linalg.solve_triangular(Ru.transpose(1, 2), C, upper=False)
        Z = torch.linalg.solve_triangular(Rv, Z, upper=True, left=False)
    else:
        Qu, _ = torch.linalg.qr(U)
        Qv, _ = torch.linalg.qr(V.transpose(1, 2))
        Z = Qu.transpose(1, 2) @ Qv
    overlap = Z.pow(2).sum((-2, -1)) / heads.U.shape[-1]
    # a zero write or read map has no subspace to overlap: QR would invent one
    empty = (U.flatten(1).abs().amax(1) == 0) | (V.flatten(1).abs().amax(1) == 0)
    overlap = torch.where(empty, torch.full_like(overlap, float("nan")), overlap)
    return undefined(overlap, "read_write_overlap", "a head's write or read map is zero (no subspace)")


def scaled_isometry_defect(heads: HeadTransports) -> torch.Tensor:
    """Per head, the rank-``d_h`` scaled partial isometry defect, from the factors.

    The same number as :func:`connlap_lite.isometry_defect` of the float64 heads; the singular
    values are cached on ``heads`` (float64), so the other head metrics reuse them.
    """
    _heads(heads)
    s = heads.singular_values(torch.float64)
    return _laplacian.singular_value_defect(s, heads.d * torch.finfo(torch.float64).eps)



# ----------------------------------------------------------------------- the rival readings (what attention does
# instead of a stable isometric walk): a layer that writes little, a dominant direction, the self-loop
def update_ratio(update: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    """Per passage, the attention update ratio ``1/n sum_i ||a_i|| / ||r_i||``: the norm of the attention's
    output ``a_i`` (``update``, ``(B, n, d)``) over the norm of the residual stream ``r_i`` it is added to.

    A layer with a small ratio writes little into the stream (the rival reading of a "stable" layer).

    >>> r = torch.tensor([[[3.0, 4.0], [0.0, 2.0]]])
    >>> update_ratio(torch.tensor([[[0.0, 1.0], [1.0, 0.0]]]), r).tolist()      # (1/5 + 1/2) / 2
    [0.35]
    """
    a = to_tensor(update, "update", ndim=3).double()
    r = to_tensor(residual, "residual", ndim=3).double()
    if a.shape != r.shape:
        raise ValueError(f"update and residual must have one shape (B, n, d), got {tuple(a.shape)} and "
                         f"{tuple(r.shape)}")
    ratio = a.norm(dim=-1) / r.norm(dim=-1)
    return undefined(ratio.mean(-1), "update_ratio", "a residual vector is zero (x/0)")


def next_token_loss(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """Per passage, the mean next-token cross-entropy ``-1/(n-1) sum_i log softmax(z_i)[t_{i+1}]`` in nats
    (``logits`` ``(B, n, V)``, ``ids`` ``(B, n)``): what a decoder's ablation cost is measured on.

    >>> z = torch.zeros(1, 3, 4)                       # uniform over 4 tokens: log 4 per prediction
    >>> round(next_token_loss(z, torch.tensor([[0, 1, 2]])).item(), 6) == round(math.log(4), 6)
    True
    """
    z = to_tensor(logits, "logits", ndim=3)
    ids = torch.as_tensor(ids, device=z.device)
    if ids.shape != z.shape[:2] or ids.shape[1] < 2:
        raise ValueError(f"ids must have shape (B, n) = {tuple(z.shape[:2])} with n >= 2, got {tuple(ids.shape)}")
    loss = torch.nn.functional.cross_entropy(z[:, :-1].float().transpose(1, 2), ids[:, 1:].long(), reduction="none")
    return loss.double().mean(-1)                     # (float32 per prediction: the logits' own precision at most)


def representation_change(states: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """Per passage, ``1/n sum_i ||h_i - h0_i|| / ||h0_i||``: how far the final representations ``states`` moved
    from the intact model's ``reference`` (``(B, n, d)``): an encoder's ablation cost (it has no next-token loss).

    >>> h0 = torch.tensor([[[1.0, 0.0], [0.0, 2.0]]])
    >>> representation_change(torch.tensor([[[1.0, 1.0], [0.0, 2.0]]]), h0).tolist()
    [0.5]
    """
    h = to_tensor(states, "states", ndim=3).double()
    h0 = to_tensor(reference, "reference", ndim=3).double()
    if h.shape != h0.shape:
        raise ValueError(f"states and reference must have one shape, got {tuple(h.shape)} and {tuple(h0.shape)}")
    change = (h - h0).norm(dim=-1) / h0.norm(dim=-1)
    return undefined(change.mean(-1), "representation_change", "a reference vector is zero (x/0)")


def self_loop_share(P: torch.Tensor, sinks: list[int] = ()) -> torch.Tensor:
    """Per walk, the self-loop share ``1/|R| sum_{i in R} P'_ii``, sinks set aside: ``P' = without_sinks(P,
    sinks)`` and ``R`` the rows that are not sinks (a sink row has only itself left).

    >>> P = torch.tensor([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.5, 0.25, 0.25]])
    >>> self_loop_share(P).item(), self_loop_share(P, [0]).item()   # ((1 + .5 + .25)/3, (1 + 1/2)/2)
    (0.5833333333333334, 0.75)
    """
    W = _walks(P).double()
    n = W.shape[-1]
    sinks = check_indices(sinks, "sinks", n)
    rows = [i for i in range(n) if i not in set(sinks)]
    if not rows:
        raise ValueError(f"sinks must leave at least one row, got every one of the {n} columns")
    W = without_sinks(W, sinks) if sinks else W
    return torch.diagonal(W, dim1=-2, dim2=-1)[..., rows].mean(-1)


def uniform_self_loop(n: int, causal: bool, sinks: list[int] = ()) -> float:
    """:func:`self_loop_share` of the uniform walk (:func:`uniform_walk`): a self-loop share's reference.

    >>> uniform_self_loop(4, causal=False), round(uniform_self_loop(3, causal=True), 4)   # 1/4; (1 + 1/2 + 1/3)/3
    (0.25, 0.6111)
    """
    return float(self_loop_share(uniform_walk(n, causal), sinks))


def self_alignment(output: torch.Tensor, values: torch.Tensor, rows: list[int] | None = None) -> torch.Tensor:
    """Per passage, ``1/|R| sum_{i in R} cos(o_i, v_i)``: how much each token's attention output ``o_i`` points
    along its own value ``v_i = sum_h T_h x_i`` (both ``(B, n, d)``, without the bias offset); ``rows`` the
    tokens ``R`` (default all).

    >>> o = torch.tensor([[[1.0, 0.0], [1.0, 1.0]]])
    >>> v = torch.tensor([[[2.0, 0.0], [1.0, -1.0]]])
    >>> self_alignment(o, v).tolist()                # (1 + 0) / 2
    [0.5]
    """
    o = to_tensor(output, "output", ndim=3).double()
    v = to_tensor(values, "values", ndim=3).double()
    if o.shape != v.shape:
        raise ValueError(f"output and values must have one shape, got {tuple(o.shape)} and {tuple(v.shape)}")
    if rows is not None:
        o, v = o[:, rows], v[:, rows]
    cos = torch.nn.functional.cosine_similarity(o, v, dim=-1, eps=1e-300)
    return cos.mean(-1)


def uniform_outputs(values: torch.Tensor, causal: bool) -> torch.Tensor:
    """The outputs uniform attention would give: each token's mean of the values it may attend to (its prefix
    for a causal model); their :func:`self_alignment` is the self-alignment's reference.

    >>> uniform_outputs(torch.tensor([[[2.0], [4.0]]]), causal=True).tolist()
    [[[2.0], [3.0]]]
    """
    v = to_tensor(values, "values", ndim=3).double()
    if not causal:
        return v.mean(1, keepdim=True).expand_as(v)
    counts = torch.arange(1, v.shape[1] + 1, dtype=v.dtype, device=v.device)[None, :, None]
    return v.cumsum(1) / counts


def spectral_dominance(s: torch.Tensor) -> torch.Tensor:
    """``sigma_1^2 / sum_k sigma_k^2`` of singular values ``s`` (last axis): the share of a transport's energy in
    its top direction; ``1/r`` for a scaled isometry of rank ``r``, 1 for a rank-one map (the power-method tilt).

    >>> spectral_dominance(torch.tensor([[1.0, 1.0], [3.0, 1.0]])).tolist()
    [0.5, 0.9]
    """
    s = to_tensor(s, "s", finite=False).double()
    energy = s.pow(2).sum(-1)
    top = s.abs().amax(-1).pow(2)
    out = torch.where(energy > 0, top / energy.clamp_min(1e-300), torch.full_like(energy, float("nan")))
    return undefined(out, "spectral_dominance", "a transport is zero (0/0)")


def head_dominance(heads: HeadTransports) -> torch.Tensor:
    """Per head, :func:`spectral_dominance` of ``T_h = W_O^h W_V^h`` from the factors (singular values cached on
    ``heads``).

    >>> U = torch.eye(3, dtype=torch.float64)[None, :, :2]
    >>> head_dominance(HeadTransports(U * torch.tensor([2.0, 1.0], dtype=torch.float64), U.transpose(1, 2))).tolist()
    [0.8]
    """
    _heads(heads)
    return spectral_dominance(heads.singular_values(torch.float64))


def top_direction(heads: HeadTransports) -> torch.Tensor:
    """The unit top left singular vector of the layer's ``sum_h T_h`` (``(d,)``, float64, sign fixed so that its
    largest entry is positive): the direction a power iteration of the layer would tilt the states to.

    >>> U = torch.eye(3, dtype=torch.float64)[None, :, :2] * torch.tensor([1.0, 3.0], dtype=torch.float64)
    >>> top_direction(HeadTransports(U, torch.eye(3, dtype=torch.float64)[None, :2])).tolist()
    [0.0, 1.0, 0.0]
    """
    _heads(heads)
    U, V = heads.U.double(), heads.V.double()
    H, d, r = U.shape
    Uc = U.permute(1, 0, 2).reshape(d, H * r)                   # sum_h U_h V_h = [U_1 ... U_H] [V_1; ...; V_H]
    Vc = V.reshape(H * r, d)
    Qu, Ru = torch.linalg.qr(Uc)
    Rv = torch.linalg.qr(Vc.T, mode="r")[1]
    C = Ru @ Rv.T                                               # sum_h T_h = Qu C Qv^T
    u = Qu @ torch.linalg.eigh(C @ C.T)[1][:, -1]               # C's top left singular vector: C C^T's top eigenvector
    return u * torch.sign(u[u.abs().argmax()])


def direction_alignment(states: torch.Tensor, direction: torch.Tensor, rows: list[int] | None = None) -> torch.Tensor:
    """Per passage, ``1/|R| sum_{i in R} |cos(x_i, u)|``: how far the token states ``x_i`` (``(B, n, d)``) are
    tilted towards the direction ``u``; ``rows`` the tokens ``R`` (default all).  A random direction in ``d``
    dimensions gives about ``sqrt(2 / (pi d))``.

    >>> x = torch.tensor([[[1.0, 0.0], [1.0, 1.0]]])
    >>> round(direction_alignment(x, torch.tensor([1.0, 0.0])).item(), 4)      # (1 + 0.7071) / 2
    0.8536
    """
    x = to_tensor(states, "states", ndim=3).double()
    u = to_tensor(direction, "direction", ndim=1).double().to(x.device)
    if u.shape[0] != x.shape[-1]:
        raise ValueError(f"direction must have the states' width {x.shape[-1]}, got {u.shape[0]}")
    if rows is not None:
        x = x[:, rows]
    cos = (x @ u) / (x.norm(dim=-1) * u.norm()).clamp_min(1e-300)
    return cos.abs().mean(-1)
