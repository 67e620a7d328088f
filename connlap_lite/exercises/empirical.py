"""Checkers of the empirical part: E1, E2, E3, the scorecard and beyond the claims."""
from __future__ import annotations

import numpy as np
import torch

from .. import metrics as M
from ._runner import Case, _factors, _one_head, _orthogonal, _rng, _stochastic, grade


# ------------------------------------------------------------------------ Chapter: E1
def check_normalised_walk_distance(fn) -> bool:
    """Check ``fn(P, Q, causal)``: ``d(P, Q)`` over the mean of ``d(P, U)`` and ``d(Q, U)``, a number.

    Chapter: *E1*, exercise ``e1_stability_graded1``.
    """
    rng = _rng(701)
    Pc = _stochastic(rng, 8, True)
    cases = [Case("encoder, n=6", (_stochastic(rng, 6), _stochastic(rng, 6), False)),
             Case("decoder, n=6", (_stochastic(rng, 6, True), _stochastic(rng, 6, True), True)),
             Case("P equal to Q, n=5", (Pc[:5, :5] / Pc[:5, :5].sum(1, keepdims=True),) * 2 + (True,)),
             Case("decoder, n=2", (_stochastic(rng, 2, True), _stochastic(rng, 2, True), True)),
             Case("decoder, Q the causal-uniform walk, n=8", (Pc, M.uniform_walk(8, True).numpy(), True))]
    return grade("check_normalised_walk_distance", fn, cases,
                 lambda P, Q, causal: float(M.normalised_walk_distance(torch.as_tensor(P), torch.as_tensor(Q), causal)),
                 "d(P, Q) = mean over rows i of (1/2) sum_j |P_ij - Q_ij|; divide by the mean of d(P, U) and "
                 "d(Q, U), with U uniform over the allowed keys: 1/n everywhere, or 1/(i+1) on j <= i when causal.")


def check_sink_mass(fn) -> bool:
    """Check ``fn(P, sinks)``: the mean attention that non-sink queries pay to the sink columns.

    Chapter: *E1*, exercise ``e1_stability_graded2``.
    """
    rng = _rng(702)
    heavy = _stochastic(rng, 5)
    heavy[:, 0] += 10
    cases = [Case("encoder, n=6, sinks [0, 5]", (_stochastic(rng, 6), [0, 5])),
             Case("decoder, n=6, sinks [0]", (_stochastic(rng, 6, True), [0])),
             Case("causal-uniform walk, n=4, sinks [0]", (M.uniform_walk(4, True).numpy(), [0])),
             Case("n=3, sinks [1]", (_stochastic(rng, 3), [1])),
             Case("column 0 takes most of the mass, n=5", (heavy / heavy.sum(1, keepdims=True), [0]))]
    return grade("check_sink_mass", fn, cases, lambda P, sinks: float(M.sink_mass(torch.as_tensor(P), sinks)),
                 "leave out the sink rows themselves, sum each remaining row over the sink columns, and average "
                 "those sums over the remaining rows.")


# ------------------------------------------------------------------------ Chapter: E2
def check_rank_free_defect(fn) -> bool:
    """Check ``fn(T)``: the distance of ``T`` to the nearest scaled partial isometry of any rank.

    Chapter: *E2*, exercise ``e2_isometry_graded1``.
    """
    rng = _rng(801)
    Q = _orthogonal(rng, 5)
    cases = [Case("3 times an orthogonal 4x4 matrix", (3 * _orthogonal(rng, 4),)),
             Case("rank one, 5x5", (np.outer(rng.standard_normal(5), rng.standard_normal(5)),)),
             Case("Gaussian 6x6", (rng.standard_normal((6, 6)),)),
             Case("singular values 3, 1, 0.1 (the best rank is 1)", (Q[:, :3] @ np.diag([3, 1, 0.1]) @ Q[:, 2:].T,)),
             Case("2 times a rank-2 projection plus small noise", (2 * Q[:, :2] @ Q[:, :2].T
                                                                 + 0.01 * rng.standard_normal((5, 5)),)),
             Case("1x1", (np.array([[-2.0]]),))]
    return grade("check_rank_free_defect", fn, cases,
                 lambda T: float(M.rank_free_defect(torch.linalg.svdvals(torch.as_tensor(T)))),
                 "sort the singular values in decreasing order; keeping the top k with their mean m_k as the common "
                 "scale leaves the error sum_{i<=k} (s_i - m_k)^2 + sum_{i>k} s_i^2; take the smallest over k, "
                 "divide by sum_i s_i^2, and take the square root.")


def check_data_isometry_defect(fn) -> bool:
    """Check ``fn(U, V, X)``: the coefficient of variation of the gains ``|U V x| / |P_V x|``.

    Chapter: *E2*, exercise ``e2_isometry_graded2``.
    """
    rng = _rng(802)
    Q, R = _orthogonal(rng, 6), _orthogonal(rng, 2)
    cases = [Case("a scaled isometry on its read space, d=6, d_h=2", (2 * Q[:, :2] @ R, Q[:, :2].T,
                                                                      rng.standard_normal((8, 6)))),
             Case("Gaussian factors, d=6, d_h=2, n=10", (*_factors(rng, 6, 2), rng.standard_normal((10, 6)))),
             Case("d_h=1 (one gain for every token)", (*_factors(rng, 5, 1), rng.standard_normal((6, 5)))),
             Case("full width, d=d_h=4, n=7", (*_factors(rng, 4, 4), rng.standard_normal((7, 4)))),
             Case("two tokens, d=5, d_h=3", (*_factors(rng, 5, 3), rng.standard_normal((2, 5))))]
    return grade("check_data_isometry_defect", fn, cases,
                 lambda U, V, X: float(M.data_isometry_defect(_one_head(U, V), torch.as_tensor(X))[0]),
                 "P_V x is the projection of x on the row space of V (orthonormalise V^T by a QR first); the "
                 "defect is std/mean of the gains over the rows of X, with the n-1 (unbiased) std, as torch.std.")


# ------------------------------------------------------------------------ Chapter: E3
def _boot_indices(seed: int, n_boot: int, m: int, k: int) -> np.ndarray:
    """The resampling indices that ``report.scale_slope(..., seed=seed)`` draws, in its order."""
    rng = np.random.default_rng(seed)
    return np.array([[rng.integers(0, k, k) for _ in range(m)] for _ in range(n_boot)])


def check_slope_interval(fn) -> bool:
    """Check ``fn(params, values, boot_idx)``: ``(slope, lo, hi)`` of values against log10(params).

    ``values`` is ``(m, k)``: ``k`` per-passage values for each of ``m`` models; ``boot_idx`` is
    ``(n_boot, m, k)``: the passages each bootstrap draw takes from each model. The reference is
    :func:`connlap_lite.report.scale_slope`. Chapter: *E3*, exercise ``e3_scale_graded1``.
    """
    from ..report import scale_slope

    rng = _rng(901)
    cases = []
    for m, k, kind in ((2, 4, "two models"), (3, 5, "three models"), (4, 8, "four models, falling"),
                       (3, 4, "constant values"), (4, 1, "one passage per model")):
        params = 10 ** np.sort(rng.uniform(7, 10, m).round(2))
        values = rng.uniform(0.2, 0.6, (m, k)) - (0.05 * np.log10(params)[:, None] if "falling" in kind else 0)
        values = np.full((m, k), 0.3) if kind == "constant values" else values
        seed = 10 + len(cases)
        cases.append(Case(f"{kind}: m={m}, k={k}, bootstrap seed {seed}",
                          (params, values, _boot_indices(seed, 200, m, k)), extra=(seed,)))

    def reference(params, values, boot_idx, seed):
        reports = [{"parameters": p, "conditions": {"trained": {"x": [list(v)]}}} for p, v in zip(params, values)]
        fit = scale_slope(reports, "x", n_boot=boot_idx.shape[0], seed=seed)
        return fit["slope"], fit["lo"], fit["hi"]

    return grade("check_slope_interval", fn, cases, reference,
                 "x = log10(params); the slope is np.polyfit(x, values.mean(1), 1)[0]; in draw b model j's value "
                 "is values[j, boot_idx[b, j]].mean(); lo and hi are the 2.5th and 97.5th percentiles of the "
                 "n_boot slopes (np.percentile, linear interpolation).", names=("slope", "lo", "hi"))


def check_spearman_rho(fn) -> bool:
    """Check ``fn(x, y)``: Spearman's rank correlation, ties ranked by their average rank.

    Chapter: *E3*, exercise ``e3_scale_graded2``.
    """
    rng = _rng(902)
    x = rng.standard_normal(12)
    cases = [Case("monotone but not linear, n=5", ([1, 2, 3, 4, 5], [1, 8, 27, 64, 1000])),
             Case("reversed, n=6", (list(range(6)), [5.5, 4, 3, 2, 1, -7])),
             Case("ties in both, n=7", ([1, 2, 2, 3, 4, 4, 5], [2, 1, 3, 3, 5, 4, 4])),
             Case("random, n=12", (list(x), list(x + rng.standard_normal(12)))),
             Case("n=3", ([0.1, 0.3, 0.2], [3, 1, 2]))]
    return grade("check_spearman_rho", fn, cases, lambda x, y: M.spearman(x, y)[0],
                 "rank each sample (ties share the mean of the ranks they span, like scipy.stats.rankdata) and take "
                 "Pearson's correlation of the two rank vectors.")


# ------------------------------------------------------------------ Chapter: Scorecard
def check_e1_verdict(fn) -> bool:
    """Check ``fn(rho, p, late_trained, late_null)``: the verdict of E1's first rule (rule 1), a string.

    Chapter: *Scorecard*, exercise ``scorecard_graded1``.
    """
    from ..report import _verdict

    numbers = ((-0.9, 0.01, 0.3, 0.6), (-0.9, 0.2, 0.3, 0.6), (0.4, 0.01, 0.7, 0.6), (-0.5, 0.05, 0.3, 0.6),
               (-0.8, 0.001, 0.6, 0.6), (0.0, 0.0, 0.2, 0.9))
    cases = [Case(f"rho={r}, p={p}, late trained {t}, late null {u}", (r, p, t, u)) for r, p, t, u in numbers]
    return grade("check_e1_verdict", fn, cases, lambda rho, p, t, u: _verdict(rho < 0 and p < 0.05, t < u),
                 "(a) the curve falls: rho < 0 and p < 0.05, both strict; (b) the late trained mean is strictly "
                 "below the null's; 'holds' needs both, 'partly' exactly one, 'does not hold' neither.")


def check_e2_verdict(fn) -> bool:
    """Check ``fn(head, gaussian, random_head, data, random_data)``: the verdict of E2's first rule, a string.

    Chapter: *Scorecard*, exercise ``scorecard_graded2``.
    """
    from ..report import e2_rule1

    numbers = ((0.2, 0.3, 0.35, 0.1, 0.2), (0.32, 0.3, 0.35, 0.1, 0.2), (0.2, 0.3, 0.25, 0.3, 0.2),
               (0.3, 0.3, 0.35, 0.1, 0.1), (0.2, 0.4, 0.3, 0.15, 0.2), (0.5, 0.3, 0.35, 0.4, 0.2))
    cases = [Case(f"head {h}, gaussian {g}, random head {r}, data {x}, random data {y}", (h, g, r, x, y))
             for h, g, r, x, y in numbers]

    def reference(head, gaussian, random_head, data, random_data):
        trained = {"head_defect": [[head]], "head_defect_gaussian": [[gaussian]], "data_defect": [[data]]}
        null = {"head_defect": [[random_head]], "data_defect": [[random_data]]}
        return e2_rule1({"model": "x", "conditions": {"trained": trained, "random0": null}})["verdict"]

    return grade("check_e2_verdict", fn, cases, reference,
                 "(a) the head defect is strictly below BOTH the Gaussian null and the random-init head defect; "
                 "(b) the data defect is strictly below the random-init one; 'holds' needs both, 'partly' one.")


# --------------------------------------------------------------------- Chapter: Beyond
def _head_cases(seed: int) -> list[Case]:
    rng = _rng(seed)
    Q = _orthogonal(rng, 8)
    plane = np.kron(np.eye(2), [[0.0, -1.0], [1.0, 0.0]])                 # quarter turns in two planes
    mix = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    return [Case("a projection onto 4 dimensions, d=8", (Q[:, :4], Q[:, :4].T)),
            Case("-2 times that projection", (-2 * Q[:, :4], Q[:, :4].T)),
            Case("quarter turns inside the read space", (Q[:, :4] @ plane, Q[:, :4].T)),
            Case("Gaussian factors, d=8, d_h=2", _factors(rng, 8, 2)),
            Case("d_h=1", _factors(rng, 6, 1)),
            Case("write space = read space, skewed factors, d=8, d_h=3", (10 * Q[:, 2:5] @ mix, mix.T @ Q[:, 2:5].T)),
            Case("write space orthogonal to read space", (Q[:, :3] @ mix, Q[:, 3:6].T))]


def check_read_write_overlap(fn) -> bool:
    """Check ``fn(U, V)``: the overlap ``||Q_U^T Q_V||_F^2 / d_h`` of write and read spaces.

    Chapter: *Beyond the three claims*, exercise ``beyond_graded1``.
    """
    return grade("check_read_write_overlap", fn, _head_cases(1001),
                 lambda U, V: float(M.read_write_overlap(_one_head(U, V))[0]),
                 "orthonormal bases first (a QR of U and one of V^T, since the factors are not orthonormal); the "
                 "overlap is ||Q_U^T Q_V||_F^2 / d_h, the mean squared cosine of the principal angles.")


def check_copy_score(fn) -> bool:
    """Check ``fn(U, V)``: the copy score ``tr T / (sqrt(d_h) ||T||_F)`` of ``T = U V``.

    Chapter: *Beyond the three claims*, exercise ``beyond_graded2``.
    """
    return grade("check_copy_score", fn, _head_cases(1002),
                 lambda U, V: float(M.copy_score(_one_head(U, V))[0]),
                 "T = U V; divide its trace by sqrt(d_h) times its Frobenius norm, with d_h = U.shape[1], the "
                 "head width (not d).")
