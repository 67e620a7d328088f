"""Checkers of the empirical part: E1, E2, E3, the scorecard and beyond the claims."""
from __future__ import annotations

import numpy as np

from ...measure import metrics as M
from ._cases import factor_pair, random_orthogonal_matrix, case_rng, random_walk
from ._runner import Case, checker


# ------------------------------------------------------------------------ Chapter: E1
@checker(forbid=["connlap_lite.measure.metrics:normalised_walk_distance"])
def check_normalised_walk_distance():
    """Check ``fn(P, Q, causal)``: ``d(P, Q)`` over the mean of ``d(P, U)`` and ``d(Q, U)``, a number.

    Chapter: *E1*, exercise ``e1_stability_graded1``.
    """
    rng = case_rng(701)
    Pc = random_walk(rng, 8, True)
    cases = [Case("encoder, n=6", (random_walk(rng, 6), random_walk(rng, 6), False)),
             Case("decoder, n=6", (random_walk(rng, 6, True), random_walk(rng, 6, True), True)),
             Case("P equal to Q, n=5", (Pc[:5, :5] / Pc[:5, :5].sum(1, keepdims=True),) * 2 + (True,)),
             Case("decoder, n=2", (random_walk(rng, 2, True), random_walk(rng, 2, True), True)),
             Case("decoder, Q the causal-uniform walk, n=8", (Pc, M.uniform_walk(8, True).numpy(), True))]
    return cases


@checker(forbid=["connlap_lite.measure.metrics:sink_mass"])
def check_sink_mass():
    """Check ``fn(P, sinks)``: the mean attention that non-sink queries pay to the sink columns.

    Chapter: *E1*, exercise ``e1_stability_graded2``.
    """
    rng = case_rng(702)
    heavy = random_walk(rng, 5)
    heavy[:, 0] += 10
    cases = [Case("encoder, n=6, sinks [0, 5]", (random_walk(rng, 6), [0, 5])),
             Case("decoder, n=6, sinks [0]", (random_walk(rng, 6, True), [0])),
             Case("causal-uniform walk, n=4, sinks [0]", (M.uniform_walk(4, True).numpy(), [0])),
             Case("n=3, sinks [1]", (random_walk(rng, 3), [1])),
             Case("column 0 takes most of the mass, n=5", (heavy / heavy.sum(1, keepdims=True), [0]))]
    return cases


# ------------------------------------------------------------------------ Chapter: E2
@checker(forbid=["connlap_lite.measure.edges:rank_free_defect"], atol=1e-7)     # a zero defect: sqrt of rounding
def check_rank_free_defect():
    """Check ``fn(T)``: the distance of ``T`` to the nearest scaled partial isometry of any rank.

    Chapter: *E2*, exercise ``e2_isometry_graded1``.
    """
    rng = case_rng(801)
    Q = random_orthogonal_matrix(rng, 5)
    cases = [Case("3 times an orthogonal 4x4 matrix", (3 * random_orthogonal_matrix(rng, 4),)),
             Case("rank one, 5x5", (np.outer(rng.standard_normal(5), rng.standard_normal(5)),)),
             Case("Gaussian 6x6", (rng.standard_normal((6, 6)),)),
             Case("singular values 3, 1, 0.1 (the best rank is 1)", (Q[:, :3] @ np.diag([3, 1, 0.1]) @ Q[:, 2:].T,)),
             Case("2 times a rank-2 projection plus small noise", (2 * Q[:, :2] @ Q[:, :2].T
                                                                 + 0.01 * rng.standard_normal((5, 5)),)),
             Case("1x1", (np.array([[-2.0]]),))]
    return cases


@checker(forbid=["connlap_lite.measure.metrics:data_isometry_defect"])
def check_data_isometry_defect():
    """Check ``fn(U, V, X)``: the coefficient of variation of the gains ``|U V x| / |P_V x|``.

    Chapter: *E2*, exercise ``e2_isometry_graded2``.
    """
    rng = case_rng(802)
    Q, R = random_orthogonal_matrix(rng, 6), random_orthogonal_matrix(rng, 2)
    cases = [Case("a scaled isometry on its read space, d=6, d_h=2", (2 * Q[:, :2] @ R, Q[:, :2].T,
                                                                      rng.standard_normal((8, 6)))),
             Case("Gaussian factors, d=6, d_h=2, n=10", (*factor_pair(rng, 6, 2), rng.standard_normal((10, 6)))),
             Case("d_h=1 (one gain for every token)", (*factor_pair(rng, 5, 1), rng.standard_normal((6, 5)))),
             Case("full width, d=d_h=4, n=7", (*factor_pair(rng, 4, 4), rng.standard_normal((7, 4)))),
             Case("two tokens, d=5, d_h=3", (*factor_pair(rng, 5, 3), rng.standard_normal((2, 5))))]
    return cases


# ------------------------------------------------------------------------ Chapter: E3
def _boot_indices(seed: int, n_boot: int, m: int, k: int) -> np.ndarray:
    """The resampling indices that ``verdicts.history.scale_slope(..., seed=seed)`` draws, in its order."""
    rng = np.random.default_rng(seed)
    return np.array([[rng.integers(0, k, k) for _ in range(m)] for _ in range(n_boot)])


@checker(forbid=["connlap_lite.verdicts.history:scale_slope"], names=("slope", "lo", "hi"))
def check_slope_interval():
    """Check ``fn(params, values, boot_idx)``: ``(slope, lo, hi)`` of values against log10(params).

    ``values`` is ``(m, k)``: ``k`` per-passage values for each of ``m`` models; ``boot_idx`` is
    ``(n_boot, m, k)``: the passages each bootstrap draw takes from each model. Chapter: *E3*, exercise ``e3_scale_graded1``.
    """
    rng = case_rng(901)
    cases = []
    for m, k, kind in ((2, 4, "two models"), (3, 5, "three models"), (4, 8, "four models, falling"),
                       (3, 4, "constant values"), (4, 1, "one passage per model")):
        params = 10 ** np.sort(rng.uniform(7, 10, m).round(2))
        values = rng.uniform(0.2, 0.6, (m, k)) - (0.05 * np.log10(params)[:, None] if "falling" in kind else 0)
        values = np.full((m, k), 0.3) if kind == "constant values" else values
        seed = 10 + len(cases)
        cases.append(Case(f"{kind}: m={m}, k={k}, bootstrap seed {seed}",
                          (params, values, _boot_indices(seed, 200, m, k)), extra=(seed,)))

    return cases


@checker(forbid=["connlap_lite.measure.stats:spearman", "connlap_lite.measure.stats:_rank_corr"])
def check_spearman_rho():
    """Check ``fn(x, y)``: Spearman's rank correlation, ties ranked by their average rank.

    Chapter: *E3*, exercise ``e3_scale_graded2``.
    """
    rng = case_rng(902)
    x = rng.standard_normal(12)
    cases = [Case("monotone but not linear, n=5", ([1, 2, 3, 4, 5], [1, 8, 27, 64, 1000])),
             Case("reversed, n=6", (list(range(6)), [5.5, 4, 3, 2, 1, -7])),
             Case("ties in both, n=7", ([1, 2, 2, 3, 4, 4, 5], [2, 1, 3, 3, 5, 4, 4])),
             Case("random, n=12", (list(x), list(x + rng.standard_normal(12)))),
             Case("n=3", ([0.1, 0.3, 0.2], [3, 1, 2]))]
    return cases


# ------------------------------------------------------------------ Chapter: Scorecard
@checker(forbid=["connlap_lite.measure.stats:holm"])
def check_holm():
    """Check ``fn(pvalues)``: Holm's adjusted p-values of a family, in the order given (a list or an array).

    Chapter: *Scorecard*, exercise ``scorecard_graded1``.
    """
    rng = case_rng(951)
    return [Case("three p-values", ([0.01, 0.04, 0.03],)),
            Case("one p-value", ([0.02],)),
            Case("ties, and an adjusted value above 1", ([0.4, 0.01, 0.4, 0.6],)),
            Case("already sorted, m=5", ([0.001, 0.01, 0.02, 0.03, 0.04],)),
            Case("a small p-value after a larger one", ([0.04, 0.045, 0.01, 0.2],)),
            Case("random, m=12", (list(rng.uniform(0, 0.2, 12).round(4)),))]


@checker(forbid=["connlap_lite.measure.stats:p_win"])
def check_p_below_nulls():
    """Check ``fn(trained, nulls, boot_idx)``: the bootstrap p-value that the trained mean lies below every
    null's, a number.

    ``trained`` is ``(B,)`` (one value per passage), ``nulls`` is ``(k, B)`` (the same passages under ``k``
    nulls), ``boot_idx`` is ``(n_boot, B)``: the passages each bootstrap draw takes.
    Chapter: *Scorecard*, exercise ``scorecard_graded2``.
    """
    rng = case_rng(952)
    cases = []
    for B, k, n_boot, shift, kind in ((8, 1, 200, 0.2, "one null, clearly above"), (8, 3, 200, 0.05, "three nulls"),
                                      (6, 2, 100, 0.0, "trained equal to a null"), (10, 2, 300, -0.1, "a null below"),
                                      (5, 4, 150, 0.02, "four close nulls")):
        trained = rng.uniform(0.2, 0.6, B)
        nulls = trained + shift + 0.1 * rng.standard_normal((k, B))
        if kind == "trained equal to a null":
            nulls[0] = trained
        cases.append(Case(f"{kind}: B={B}, k={k}, n_boot={n_boot}",
                          (trained, nulls, rng.integers(0, B, (n_boot, B)))))
    return cases


# --------------------------------------------------------------------- Chapter: Beyond
def _head_cases(seed: int) -> list[Case]:
    rng = case_rng(seed)
    Q = random_orthogonal_matrix(rng, 8)
    plane = np.kron(np.eye(2), [[0.0, -1.0], [1.0, 0.0]])                 # quarter turns in two planes
    mix = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    return [Case("a projection onto 4 dimensions, d=8", (Q[:, :4], Q[:, :4].T)),
            Case("-2 times that projection", (-2 * Q[:, :4], Q[:, :4].T)),
            Case("quarter turns inside the read space", (Q[:, :4] @ plane, Q[:, :4].T)),
            Case("Gaussian factors, d=8, d_h=2", factor_pair(rng, 8, 2)),
            Case("d_h=1", factor_pair(rng, 6, 1)),
            Case("write space = read space, skewed factors, d=8, d_h=3", (10 * Q[:, 2:5] @ mix, mix.T @ Q[:, 2:5].T)),
            Case("write space orthogonal to read space", (Q[:, :3] @ mix, Q[:, 3:6].T))]


@checker(forbid=["connlap_lite.measure.metrics:read_write_overlap"])
def check_read_write_overlap():
    """Check ``fn(U, V)``: the overlap ``||Q_U^T Q_V||_F^2 / d_h`` of write and read spaces.

    Chapter: *Beyond the three claims*, exercise ``beyond_graded1``.
    """
    return _head_cases(1001)


@checker(forbid=["connlap_lite.measure.metrics:copy_score"])
def check_copy_score():
    """Check ``fn(U, V)``: the copy score ``tr T / (sqrt(d_h) ||T||_F)`` of ``T = U V``.

    Chapter: *Beyond the three claims*, exercise ``beyond_graded2``.
    """
    return _head_cases(1002)
