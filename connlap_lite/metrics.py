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
``sym_spectrum(P)``               eigenvalues of the symmetrised normalised Laplacian
                                  ``I - D^{-1/2} S D^{-1/2}``, ``S = (P + P^T)/2``: real, in [0, 2],
                                  defined for causal walks too;
``spectral_distance(P, Q)``       mean absolute difference of the sorted ``sym_spectrum``
                                  (the 1-Wasserstein distance of the two spectra);
``teleport(P, alpha)``            PageRank chain ``(1 - alpha) P + alpha 11^T / n`` (irreducible);
``sink_mass(P, sinks)``           mean attention paid to the sink columns by the other queries;
``without_sinks(P, sinks)``       sink columns zeroed and rows renormalised.

E2, transports become scaled isometries:

``isometry_defect`` (laplacian)   rank-``k`` scaled partial isometry defect (P3);
``rank_free_defect(s)``           distance to the nearest scaled partial isometry of any rank;
``data_isometry_defect``          coefficient of variation of the gains ``|T x| / |P_V x|``
                                  on the actual token vectors ``x`` entering the layer;
``copy_score``                    ``tr T / (sqrt(d_h) ||T||_F)``: how much a head copies;
``read_write_overlap``            overlap of a head's write and read subspaces (P3).

Chapters: *E1*, *E2*, *E3*.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from ._backend import check_float_dtype, check_indices, check_int, harmonise, to_tensor
from .transports import HeadTransports


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


def _heads(heads, name: str = "heads") -> HeadTransports:
    if not isinstance(heads, HeadTransports):
        raise TypeError(f"{name} must be a HeadTransports (e.g. connlap_lite.head_transports(model, layer)), "
                        f"got {type(heads).__name__}")
    return heads


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
    """``walk_distance(P, Q)`` divided by the mean distance of ``P`` and ``Q`` from the uniform walk.

    For walks with their sink columns removed (:func:`without_sinks`) pass the same ``sinks``:
    the reference is then the uniform walk with those columns removed too, so that the ratio
    compares like with like and a walk equal to its reference is at distance 0 from it.

    >>> U = uniform_walk(6, causal=True)
    >>> float(normalised_walk_distance(without_sinks(U, [0]), without_sinks(U, [0]) * 1.0, True, [0]))
    0.0
    """
    P, Q = _pair(P, Q)
    sinks = check_indices(sinks, "sinks", P.shape[-1])
    U = uniform_walk(P.shape[-1], bool(causal), dtype=P.dtype, device=P.device)
    if len(sinks):
        U = without_sinks(U, list(sinks))
    scale = 0.5 * (walk_distance(P, U) + walk_distance(Q, U))
    return walk_distance(P, Q) / scale.clamp_min(1e-12)


def sym_spectrum(P: torch.Tensor) -> torch.Tensor:
    """Sorted eigenvalues of ``I - D^{-1/2} S D^{-1/2}`` with ``S = (P + P^T) / 2``, ``D = diag(S 1)``."""
    P = _walks(P).double()
    S = 0.5 * (P + P.transpose(-1, -2))
    deg = S.sum(-1).clamp_min(1e-300)
    N = S / torch.sqrt(deg[..., :, None] * deg[..., None, :])
    eye = torch.eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return torch.linalg.eigvalsh(eye - N)


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
    """The attention-sink tokens: the first token, and the last ([SEP]) for an encoder."""
    check_int(n, "n", low=2 if encoder else 1)
    return [0, n - 1] if encoder else [0]


def sink_mass(P: torch.Tensor, sinks: list[int]) -> torch.Tensor:
    """Mean total attention that non-sink queries pay to the sink columns."""
    P = _walks(P)
    sinks = check_indices(sinks, "sinks", P.shape[-1])
    rows = torch.ones(P.shape[-2], dtype=torch.bool, device=P.device)
    rows[sinks] = False
    return P[..., rows, :][..., sinks].sum(-1).mean(-1)


def without_sinks(P: torch.Tensor, sinks: list[int]) -> torch.Tensor:
    """Sink columns zeroed and rows renormalised; a row left empty keeps a self-loop."""
    P = _walks(P)
    sinks = check_indices(sinks, "sinks", P.shape[-1])
    Q = P.clone()
    Q[..., :, sinks] = 0
    mass = Q.sum(-1, keepdim=True)
    eye = torch.eye(P.shape[-1], dtype=P.dtype, device=P.device).expand_as(Q)
    return torch.where(mass > 1e-12, Q / mass.clamp_min(1e-300), eye)


def stationary(P: torch.Tensor) -> torch.Tensor:
    """Stationary distribution of an irreducible row-stochastic ``P`` (batched).

    Solves ``(I - P^T + 1 1^T) pi = 1``: for an irreducible chain the matrix is invertible
    and its solution is the unique ``pi`` with ``pi P = pi`` and ``sum pi = 1``.
    """
    P = _walks(P).double()
    n = P.shape[-1]
    eye = torch.eye(n, dtype=P.dtype, device=P.device)
    A = eye - P.transpose(-1, -2) + 1.0
    return torch.linalg.solve(A, torch.ones(P.shape[:-1], dtype=P.dtype, device=P.device))


def reversibility(P: torch.Tensor) -> torch.Tensor:
    """``||Pi P - P^T Pi||_F / ||Pi P||_F`` of an irreducible walk (use :func:`teleport` first)."""
    P = _walks(P)
    pi = stationary(P)
    F = pi[..., :, None] * P.double()
    return torch.linalg.norm(F - F.transpose(-1, -2), dim=(-2, -1)) / torch.linalg.norm(F, dim=(-2, -1))


# ------------------------------------------------------------------- E2: transports
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
    """Singular values of edge transports ``T = sum_h weights[..., h] T_h``, from the factors.

    Heads of one key/value group share ``V_g``, so ``T = sum_g (sum_{h in g} w_h U_h) V_g``:
    a product of a ``d x G d_h`` and a ``G d_h x d`` factor; its singular values come from
    two thin QRs and a small SVD.  ``weights`` is ``(m, H)`` for ``m`` edges.
    """
    _heads(heads)
    weights = to_tensor(weights, "weights", ndim=2)
    if weights.shape[1] != heads.n_heads:
        raise ValueError(f"weights must have shape (m, {heads.n_heads}), one gate per head, got {tuple(weights.shape)}")
    groups = torch.as_tensor(groups)
    if groups.shape != (heads.n_heads,) or groups.is_floating_point() or int(groups.min()) < 0:
        raise ValueError(f"groups must hold {heads.n_heads} nonnegative int group indices, got {groups!r}")
    dt = torch.float64
    U, V = heads.U.to(dt), heads.V.to(dt)
    G = int(groups.max()) + 1
    missing = sorted(set(range(G)) - set(groups.tolist()))
    if missing:
        raise ValueError(f"groups must number the groups 0..{G - 1} without gaps; group {missing[0]} has no head")
    first = [int(torch.nonzero(groups == g)[0]) for g in range(G)]
    Vg = torch.cat([V[h] for h in first], 0)                                 # (G d_h, d)
    scaled = weights.to(dt)[:, :, None, None] * U[None]                      # (m, H, d, d_h)
    Ug = torch.zeros(scaled.shape[0], G, *U.shape[1:], dtype=dt, device=U.device)
    Ug = Ug.index_add_(1, groups.to(U.device), scaled).permute(0, 2, 1, 3).flatten(-2)   # (m, d, G d_h)
    _, Ru = torch.linalg.qr(Ug, mode="r")
    _, Rv = torch.linalg.qr(Vg.T, mode="r")
    return torch.linalg.svdvals(Ru @ Rv.T)


def fold_gain(heads: HeadTransports, gain: torch.Tensor | None) -> HeadTransports:
    """Head transports with the pre-attention norm's gain folded in: ``T_h diag(g)``."""
    _heads(heads)
    if gain is None:
        return heads
    gain = to_tensor(gain, "gain", ndim=1)
    if gain.shape[0] != heads.d:
        raise ValueError(f"gain must have shape ({heads.d},), one entry per model dimension, got {tuple(gain.shape)}")
    return HeadTransports(heads.U, heads.V * gain.to(heads.V)[None, None, :], groups=heads.groups, offset=heads.offset)


def data_isometry_defect(heads: HeadTransports, X: torch.Tensor) -> torch.Tensor:
    """Per head, the coefficient of variation of ``|T_h x| / |P_h x|`` over the rows ``x`` of ``X``.

    ``P_h`` projects onto the head's read subspace (the row space of ``V_h``), so a scaled
    partial isometry gives the same gain to every token: 0.  Measured on the token vectors
    that actually enter the layer, not on all of ``R^d``.  ``X`` is ``(n, d)`` or a batch
    ``(B, n, d)`` of passages; the result is ``(H,)`` or ``(B, H)``.
    """
    _heads(heads)
    X = to_tensor(X, "X", ndim=(2, 3))
    if X.shape[-1] != heads.d:
        raise ValueError(f"X must have shape (n, {heads.d}) or (B, n, {heads.d}), rows in the heads' dimension; "
                         f"got {tuple(X.shape)}")
    dt = torch.float64
    U, V, X = heads.U.to(dt), heads.V.to(dt), X.to(dt)
    Qv, _ = torch.linalg.qr(V.transpose(1, 2))                 # (H, d, d_h) basis of the read space
    read = torch.einsum("...nd,hdr->...hnr", X, Qv).norm(dim=-1)     # |P_h x|
    out = torch.einsum("hdr,...hnr->...hnd", U, torch.einsum("hre,...ne->...hnr", V, X)).norm(dim=-1)
    # a token with no component in the read space has no gain (0/0): left out, not counted as 0
    seen = read > 0
    gain = torch.where(seen, out / read.clamp_min(1e-300), torch.zeros_like(out))
    count = seen.sum(-1)
    mean = gain.sum(-1) / count
    var = torch.where(seen, gain - mean[..., None], torch.zeros_like(gain)).pow(2).sum(-1) / (count - 1)
    cv = var.sqrt() / mean
    # fewer than two tokens, or a head that maps everything to 0: the spread of gains is undefined
    return torch.where((count > 1) & (mean > 0), cv, torch.full_like(cv, float("nan")))


def copy_score(heads: HeadTransports) -> torch.Tensor:
    """``tr T_h / (sqrt(d_h) ||T_h||_F)``: 1 for ``T = c`` times a projection onto ``d_h`` dims."""
    _heads(heads)
    dt = torch.float64
    U, V = heads.U.to(dt), heads.V.to(dt)
    tr = torch.einsum("hdr,hrd->h", U, V)
    fro = torch.linalg.norm(U @ V, dim=(-2, -1))
    return tr / (math.sqrt(U.shape[-1]) * fro)


def read_write_overlap(heads: HeadTransports) -> torch.Tensor:
    """Per head, ``||Q_U^T Q_V||_F^2 / d_h`` in [0, 1]: how much the write space ``span U_h``
    overlaps the read space ``span V_h^T`` (1: the head maps its value sub-bundle to itself, P3)."""
    _heads(heads)
    dt = torch.float64
    Qu, _ = torch.linalg.qr(heads.U.to(dt))
    Qv, _ = torch.linalg.qr(heads.V.to(dt).transpose(1, 2))
    return (Qu.transpose(1, 2) @ Qv).pow(2).sum((-2, -1)) / heads.U.shape[-1]


def q4_roundtrip(W: torch.Tensor, block: int = 32) -> torch.Tensor:
    """Symmetric 4-bit block quantisation and back (like GGUF's Q4_0): per block of ``block``
    input weights, ``scale = max|w| / 7``, ``q = clip(round(w / scale), -8, 7)``, ``w' = q scale``."""
    if not isinstance(W, torch.Tensor) or W.ndim != 2 or not W.is_floating_point():
        raise ValueError(f"W must be a floating (out, in) weight matrix tensor, got "
                         f"{tuple(W.shape) if isinstance(W, torch.Tensor) else type(W).__name__}")
    check_int(block, "block", low=1)
    out, inp = W.shape
    pad = (-inp) % block
    Wp = torch.nn.functional.pad(W.float(), (0, pad)).reshape(out, -1, block)
    scale = Wp.abs().amax(-1, keepdim=True) / 7
    q = torch.where(scale > 0, Wp / scale.clamp_min(1e-30), torch.zeros_like(Wp)).round().clamp(-8, 7)
    return (q * scale).reshape(out, -1)[:, :inp].to(W.dtype)


def rotation_null(heads: HeadTransports, seed: int = 0) -> HeadTransports:
    """The factor-rotation null: ``W_O R W_V`` with ``R`` uniform on ``O(d_h)`` per head.

    Keeps each factor's own spectrum and breaks only their co-adaptation.
    """
    _heads(heads)
    check_int(seed, "seed", low=0)
    g = torch.Generator().manual_seed(seed)
    H, d, r = heads.U.shape
    A = torch.randn(H, r, r, generator=g, dtype=torch.float64)
    Q, R = torch.linalg.qr(A)
    Q = Q * torch.sign(torch.diagonal(R, dim1=-2, dim2=-1))[:, None, :]
    return HeadTransports(heads.U.double() @ Q, heads.V.double())


def gaussian_null(heads: HeadTransports, seed: int = 0) -> HeadTransports:
    """Gaussian factors of the same shapes as ``heads`` (rank ``d_h``)."""
    _heads(heads)
    check_int(seed, "seed", low=0)
    g = torch.Generator().manual_seed(seed)
    return HeadTransports(torch.randn(heads.U.shape, generator=g, dtype=torch.float64),
                          torch.randn(heads.V.shape, generator=g, dtype=torch.float64))


def scaled_isometry_defect(heads: HeadTransports) -> torch.Tensor:
    """Per head, the rank-``d_h`` scaled partial isometry defect (D5), from the factors."""
    from .laplacian import isometry_defect

    _heads(heads)
    return isometry_defect(HeadTransports(heads.U.double(), heads.V.double()))


# ------------------------------------------------------------------------ statistics
def bootstrap_ci(values: torch.Tensor, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0):
    """Percentile bootstrap interval of the mean over the first axis (passages)."""
    values = to_tensor(values, "values", finite=False).double()
    if values.ndim < 1 or values.shape[0] == 0:
        raise ValueError(f"values must hold at least one value along the first axis, got shape {tuple(values.shape)}")
    check_int(n_boot, "n_boot", low=1)
    check_int(seed, "seed", low=0)
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"level must be a number in (0, 1) such as 0.95, got {level!r}")
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, values.shape[0], (n_boot, values.shape[0]), generator=g)
    means = values[idx].mean(1)
    lo, hi = (1 - level) / 2, 1 - (1 - level) / 2
    return values.mean(0), torch.quantile(means, lo, dim=0), torch.quantile(means, hi, dim=0)


def spearman(x, y) -> tuple[float, float]:
    """Spearman's rho and its two-sided p-value.

    Up to 8 points the p-value is exact, from all ``n!`` orderings of ``y`` (scipy's
    large-sample approximation is anti-conservative there); beyond, scipy's t approximation.
    An undefined rho (fewer than two points, a constant ``x`` or ``y``, a NaN in either) gives
    ``(nan, nan)``: undefined is never significant.

    >>> rho, p = spearman(range(5), [1, 2, 3, 4, 5])
    >>> round(rho, 6), round(p, 4)           # 2 of the 120 orderings are as extreme: p = 1/60
    (1.0, 0.0167)
    >>> spearman(range(3), [2.0, 2.0, 2.0])  # a constant curve has no trend, significant or not
    (nan, nan)
    """
    from itertools import permutations

    from scipy.stats import spearmanr

    x, y = _sample(x, "x"), _sample(y, "y")
    if len(x) != len(y):
        raise ValueError(f"x and y must have the same length, got {len(x)} and {len(y)}")
    nan = float("nan")
    if len(x) < 2 or not (np.isfinite(x).all() and np.isfinite(y).all()) or np.ptp(x) == 0 or np.ptp(y) == 0:
        return nan, nan
    result = spearmanr(x, y)
    rho = float(result.statistic)
    if not math.isfinite(rho):
        return nan, nan
    if len(x) > 8:
        return rho, float(result.pvalue)
    orders = np.array(list(permutations(range(len(y)))))
    rhos = _rank_corr(x, y[orders])
    return rho, float(np.mean(np.abs(rhos) >= abs(rho) - 1e-12))


def _sample(v, name: str) -> np.ndarray:
    """A one-dimensional float sample, or an error naming the argument."""
    if isinstance(v, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of numbers, got a string")
    try:
        if isinstance(v, torch.Tensor):
            v = v.detach().cpu()
        a = np.asarray(v if isinstance(v, (np.ndarray, torch.Tensor)) else list(v), dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a sequence of numbers, got {type(v).__name__}") from exc
    if a.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {a.shape}")
    return a


def _rank_corr(x, Y):
    """Spearman's rho of ``x`` with each row of ``Y`` (ties get average ranks)."""
    from scipy.stats import rankdata

    rx = rankdata(x) - (len(x) + 1) / 2
    rY = rankdata(Y, axis=1) - (len(x) + 1) / 2
    den = (rx ** 2).sum() ** 0.5 * ((rY ** 2).sum(1) ** 0.5)
    return (rY @ rx) / np.where(den > 0, den, np.inf)
