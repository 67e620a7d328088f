"""Checkers of the interactive explorers (their references are the explorers' toy connections)."""
from __future__ import annotations

import numpy as np

from ..toys import KERNEL_TOL, conditions_walk
from ._cases import case_rng, graded
from ._runner import Case, checker


# ------------------------------------------------------------ Chapter: Interactive explorers
@checker(forbid=["connlap_lite.pages.toys:holonomy_spectrum"])
def check_kernel_dimension():
    """Check ``fn(n, angle, tol)``: the number of eigenvalues below ``tol`` of the connection
    Laplacian of the ``n``-cycle whose SO(2) holonomy is ``angle``, an int.

    Chapter: *Interactive explorers*, exercise ``explorers_graded1``.
    """

    tau = 2 * np.pi
    # a graded draw turns each angle by whole turns (the same holonomy, other inputs)
    rng = case_rng(1001)
    turns = (rng.integers(1, 4, 10) * rng.choice([-1, 1], 10)).tolist() if graded() else [0] * 10
    cases = [Case(f"n={n}, angle={label}{f' {k:+d} turns' if k else ''}, tol={tol:g}", (n, angle + k * tau, tol))
             for k, (n, angle, label, tol) in zip(turns, (
        (3, 0.0, "0", KERNEL_TOL), (8, np.pi / 3, "pi/3", KERNEL_TOL), (5, tau, "2 pi", KERNEL_TOL),
        (12, -2 * tau, "-4 pi", KERNEL_TOL), (7, np.pi, "pi", KERNEL_TOL), (12, 0.01, "0.01", KERNEL_TOL),
        (4, tau + 0.02, "2 pi + 0.02", KERNEL_TOL), (10, -0.05, "-0.05", KERNEL_TOL),
        (12, 0.05, "0.05", 1e-4), (9, 3 * tau, "6 pi", 1e-12)))]
    return cases


@checker(forbid=["connlap_lite.pages.toys:conditions_report"])
def check_min_dirichlet_energy():
    """Check ``fn(P, T)``: the least Dirichlet energy ``<f, L f>_pi`` over sections with
    ``<f, f>_pi = 1``, for a walk ``P (n, n)`` with transports ``T (n, n, 2, 2)``, a number.

    ``pi`` is the stationary distribution of ``P`` with its rows normalised. The cases are the
    conditions lab's walks.
    Chapter: *Interactive explorers*, exercise ``explorers_graded2``.
    """

    cases = []
    shift = int(case_rng(1002).integers(100, 10**6)) if graded() else 0         # a graded draw: other lab walks
    for (s, r, m), n, seed in (((True, True, True), 8, 0), ((True, True, True), 3, 5), ((False, True, True), 6, 1),
                               ((True, False, True), 8, 2), ((True, True, False), 5, 3), ((False, False, False), 7, 4),
                               ((True, False, False), 4, 6)):
        seed += shift
        walk = conditions_walk(s, r, m, n=n, seed=seed)
        switches = ", ".join(f"{c} {'on' if on else 'off'}" for c, on in zip("SRM", (s, r, m)))
        cases.append(Case(f"lab walk {switches}, n={n}, seed {seed}", (walk.P.numpy(), walk.edge_transports())))
    return cases
