"""Checkers of the theory part: connection walks, single- and multi-head attention, the connection
Laplacian, reversibility."""
from __future__ import annotations

import numpy as np
import torch

from ...measure import metrics as M
from ._cases import random_orthogonal_matrix, random_patterns, case_rng, random_walk, symmetric_orthogonal, head_weights
from ._runner import Case, checker


# --------------------------------------------------------------- Chapter: Connection walks
@checker(forbid=["connlap_lite.walks:ConnectionWalk.apply", "connlap_lite.walks:ConnectionWalk.dense"])
def check_apply_walk():
    """Check ``fn(P, T, f)``: the walk applied to a section, shape ``(n, d)``.

    ``P`` is ``(n, n)``, ``T`` is ``(n, n, d, d)`` with ``T[i, j]`` the transport of edge
    ``(i, j)``, ``f`` is ``(n, d)``. Chapter: *Connection walks*, exercise ``walks_graded1``.
    """
    rng = case_rng(101)
    cases = []
    for n, d, kind in ((1, 1, "one token"), (4, 3, "dense walk"), (5, 2, "causal walk"),
                       (3, 4, "rows not summing to 1"), (6, 2, "rotations on every edge")):
        P = random_walk(rng, n, causal=kind == "causal walk")
        P = 3 * P if kind.startswith("rows") else P
        T = (np.stack([[random_orthogonal_matrix(rng, d) for _ in range(n)] for _ in range(n)]) if kind.startswith("rot")
             else rng.standard_normal((n, n, d, d)))
        cases.append(Case(f"n={n}, d={d}, {kind}", (P, T, rng.standard_normal((n, d)))))
    return cases


@checker(forbid=["connlap_lite.walks:ConnectionWalk.holonomy"])
def check_holonomy():
    """Check ``fn(T, cycle)``: the holonomy of ``cycle`` for transports ``T (n, n, d, d)``, shape ``(d, d)``.

    Chapter: *Connection walks*, exercise ``walks_graded2``.
    """
    rng = case_rng(102)
    return [Case(f"cycle {cycle}, d={d}", (rng.standard_normal((5, 5, d, d)), cycle))
            for cycle, d in (([2], 2), ([0, 1], 2), ([0, 3, 1, 4], 3), ([4, 2, 0], 1), ([1, 2, 3, 0], 2))]


# ---------------------------------------------------------- Chapter: Single-head attention
@checker(forbid=["connlap_lite.attention:AttentionWeights.transports"])
def check_head_transport():
    """Check ``fn(W_V, W_O)``: the transport of one head, shape ``(d, d)``.

    ``W_V`` is ``(d, d_h)`` and ``W_O`` is ``(d_h, d)`` (row convention, ``V = X W_V``).
    Chapter: *Single-head attention*, exercise ``single_head_graded1``.
    """
    rng = case_rng(201)
    return [Case(f"d={d}, d_h={dh}", (rng.standard_normal((d, dh)), rng.standard_normal((dh, d))))
            for d, dh in ((4, 2), (3, 3), (5, 1), (1, 1), (6, 2))]


@checker(forbid=["connlap_lite.attention:multi_head_attention", "connlap_lite.attention:sha_walk",
                 "connlap_lite.attention:attention_patterns"])
def check_sha_output():
    """Check ``fn(X, W_Q, W_K, W_V, W_O, causal)``: one head's output computed as its walk, ``(n, d)``.

    Chapter: *Single-head attention*, exercise ``single_head_graded2``.
    """
    rng = case_rng(202)
    cases = []
    for n, d, dh, causal in ((5, 4, 2, False), (5, 4, 2, True), (1, 3, 2, True), (4, 3, 3, True), (6, 6, 1, False)):
        W = [W[0] for W in head_weights(rng, 1, 1, d, dh)]
        cases.append(Case(f"n={n}, d={d}, d_h={dh}, causal={causal}", (rng.standard_normal((n, d)), *W, causal)))
    return cases


# ----------------------------------------------------------- Chapter: Multi-head attention
@checker(forbid=["connlap_lite.attention:walk_from_heads"])
def check_edge_transport():
    """Check ``fn(A, T_heads, i, j)``: the transport of edge ``(i, j)`` of a multi-head walk, ``(d, d)``.

    ``A`` is ``(H, n, n)`` (one pattern per head), ``T_heads`` is ``(H, d, d)``.
    Chapter: *Multi-head attention*, exercise ``multi_head_graded1``.
    """
    rng = case_rng(301)
    cases = []
    for H, n, d, (i, j), kind in ((1, 4, 3, (2, 1), "one head"), (3, 5, 2, (4, 0), "three heads"),
                                  (4, 5, 2, (3, 1), "only head 2 attends the edge"),
                                  (2, 6, 3, (5, 2), "causal heads"), (3, 4, 1, (0, 3), "d=1")):
        A = random_patterns(rng, H, n, causal=kind == "causal heads")
        if kind.startswith("only"):
            A[[0, 1, 3], i, j] = 0.0
            A = A / A.sum(-1, keepdims=True)
        cases.append(Case(f"H={H}, n={n}, d={d}, edge ({i}, {j}), {kind}", (A, rng.standard_normal((H, d, d)), i, j)))
    return cases


@checker(forbid=["connlap_lite.attention:mha_walk", "connlap_lite.attention:walk_from_heads"], names=("P", "T"))
def check_mha_walk():
    """Check ``fn(X, W_q, W_k, W_v, W_o, causal)``: the walk ``(P, T)`` of a multi-head layer.

    Weights in the row convention of :mod:`connlap_lite.attention`: ``W_q (H, d, d_h)``,
    ``W_k, W_v (G, d, d_h)``, ``W_o (H, d_h, d)``. Returns ``P (n, n)`` and ``T (n, n, d, d)``
    with ``T[i, j] = 0`` where ``P[i, j] = 0``. Chapter: *Multi-head attention*, ``multi_head_graded2``.
    """
    rng = case_rng(302)
    cases = []
    for H, G, n, d, dh, causal, kind in ((2, 2, 4, 4, 2, False, "MHA"), (4, 2, 5, 8, 2, True, "GQA"),
                                        (3, 1, 4, 6, 2, True, "MQA"), (2, 2, 1, 4, 2, True, "one token"),
                                        (1, 1, 3, 3, 2, False, "one head")):
        cases.append(Case(f"{kind}: H={H}, G={G}, n={n}, d={d}, d_h={dh}, causal={causal}",
                          (rng.standard_normal((n, d)), *head_weights(rng, H, G, d, dh), causal)))
    return cases


# ------------------------------------------------------------ Chapter: Connection Laplacian
def _laplacian_cases(seed: int, with_section: bool) -> list[Case]:
    rng = case_rng(seed)
    cases = []
    for n, d, kind in ((1, 2, "one token with a self-loop"), (2, 2, "one edge"), (4, 3, "all pairs"),
                       (5, 1, "ring, d=1"), (4, 2, "path with a self-loop at 0")):
        if kind.startswith("ring"):
            w = np.zeros((n, n))
            w[np.arange(n), (np.arange(n) + 1) % n] = rng.uniform(0.5, 2.0, n)
        elif kind.startswith("path"):
            w = np.diag(rng.uniform(0.5, 2.0, n - 1), 1)
            w[0, 0] = 1.0
        else:
            w = rng.uniform(0.2, 2.0, (n, n))
        w = np.maximum(w, w.T)
        args = (w, symmetric_orthogonal(rng, w, d)) + ((rng.standard_normal((n, d)),) if with_section else ())
        cases.append(Case(f"n={n}, d={d}, {kind}", args))
    return cases


@checker(forbid=["connlap_lite.laplacian:connection_laplacian", "connlap_lite.laplacian:random_walk_connection"])
def check_connection_laplacian():
    """Check ``fn(w, O)``: the dense random-walk connection Laplacian, ``(n d, n d)``.

    Chapter: *The connection Laplacian*, exercise ``laplacian_graded1``.
    """
    return _laplacian_cases(401, False)


@checker(forbid=["connlap_lite.laplacian:dirichlet_energy"])
def check_dirichlet_energy():
    """Check ``fn(w, O, f)``: the Dirichlet energy of the section ``f``, a number.

    Chapter: *The connection Laplacian*, exercise ``laplacian_graded2``.
    """
    return _laplacian_cases(402, True)


# ------------------------------------------------------------------ Chapter: Reversibility
def _chain_cases(seed: int) -> list[Case]:
    rng = case_rng(seed)
    birth = np.diag(rng.uniform(0.2, 0.5, 4), 1) + np.diag(rng.uniform(0.2, 0.5, 4), -1)
    birth += np.diag(1 - birth.sum(1))
    drift = np.roll(np.eye(3), 1, axis=1) * 0.6 + np.roll(np.eye(3), -1, axis=1) * 0.3 + 0.1 * np.eye(3)
    return [Case("two states", (np.array([[0.9, 0.1], [0.5, 0.5]]),)),
            Case("one state", (np.ones((1, 1)),)),
            Case("random positive walk, n=6", (random_walk(rng, 6),)),
            Case("birth-death chain, n=5 (reversible)", (birth,)),
            Case("teleported causal walk, n=5", (M.teleport(torch.as_tensor(random_walk(rng, 5, True))).numpy(),)),
            Case("drifting 3-cycle", (drift,))]


@checker(forbid=["connlap_lite.chains:stationary_distribution", "connlap_lite.chains:_solve"])
def check_stationary():
    """Check ``fn(P)``: the stationary distribution of ``P``, shape ``(n,)``.

    Chapter: *Reversibility and low rank*, exercise ``reversibility_graded1``.
    """
    return _chain_cases(501)


@checker(forbid=["connlap_lite.chains:reversibility_defect", "connlap_lite.chains:_solve"])
def check_reversibility_defect():
    """Check ``fn(P)``: the reversibility defect of ``P``, a number.

    Chapter: *Reversibility and low rank*, exercise ``reversibility_graded2``.
    """
    return _chain_cases(502)
