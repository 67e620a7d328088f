"""Checkers of the theory part: connection walks, single- and multi-head attention, the connection
Laplacian, reversibility."""
from __future__ import annotations

import numpy as np
import torch

from .. import metrics as M
from ..attention import mha_walk, multi_head_attention, walk_from_heads
from ..laplacian import (connection_laplacian, dirichlet_energy, random_walk_connection, reversibility_defect,
                         stationary_distribution)
from ..transports import EdgeTransport, HeadTransports
from ..walks import ConnectionWalk
from ._runner import (Case, _layer, _orthogonal, _patterns, _rng, _stochastic, _symmetric_orthogonal, _weights,
                      grade)


# --------------------------------------------------------------- Chapter: Connection walks
def check_apply_walk(fn) -> bool:
    """Check ``fn(P, T, f)``: the section ``(W f)_i = sum_j P_ij T_ij f_j``, shape ``(n, d)``.

    ``P`` is ``(n, n)``, ``T`` is ``(n, n, d, d)`` with ``T[i, j]`` the transport of edge
    ``(i, j)``, ``f`` is ``(n, d)``. Chapter: *Connection walks*, exercise ``walks_graded1``.
    """
    rng = _rng(101)
    cases = []
    for n, d, kind in ((1, 1, "one token"), (4, 3, "dense walk"), (5, 2, "causal walk"),
                       (3, 4, "rows not summing to 1"), (6, 2, "rotations on every edge")):
        P = _stochastic(rng, n, causal=kind == "causal walk")
        P = 3 * P if kind.startswith("rows") else P
        T = (np.stack([[_orthogonal(rng, d) for _ in range(n)] for _ in range(n)]) if kind.startswith("rot")
             else rng.standard_normal((n, n, d, d)))
        cases.append(Case(f"n={n}, d={d}, {kind}", (P, T, rng.standard_normal((n, d)))))
    return grade("check_apply_walk", fn, cases, lambda P, T, f: ConnectionWalk(P, EdgeTransport(T)).apply(f),
                 "T[i, j] carries the vector at token j to token i: it multiplies f[j] from the left "
                 "(T[i, j] @ f[j], not f[j] @ T[i, j] and not T[j, i]); then weight by P[i, j] and sum over j.")


def check_holonomy(fn) -> bool:
    """Check ``fn(T, cycle)``: the holonomy ``T[i1, ik] ... T[i3, i2] T[i2, i1]``, shape ``(d, d)``.

    Chapter: *Connection walks*, exercise ``walks_graded2``.
    """
    rng = _rng(102)
    cases = []
    for cycle, d in (([2], 2), ([0, 1], 2), ([0, 3, 1, 4], 3), ([4, 2, 0], 1), ([1, 2, 3, 0], 2)):
        cases.append(Case(f"cycle {cycle}, d={d}", (rng.standard_normal((5, 5, d, d)), cycle)))
    return grade("check_holonomy", fn, cases,
                 lambda T, cycle: ConnectionWalk(np.ones(T.shape[:2]), EdgeTransport(T)).holonomy(cycle),
                 "start with the identity; the step from a to b (b follows a, and the last vertex returns to "
                 "the first) multiplies by T[b, a] on the LEFT. A cycle of one vertex is the self-loop T[i, i].")


# ---------------------------------------------------------- Chapter: Single-head attention
def check_head_transport(fn) -> bool:
    """Check ``fn(W_V, W_O)``: the transport ``T = (W_V W_O)^T`` of one head, shape ``(d, d)``.

    ``W_V`` is ``(d, d_h)`` and ``W_O`` is ``(d_h, d)`` (row convention, ``V = X W_V``).
    Chapter: *Single-head attention*, exercise ``single_head_graded1``.
    """
    rng = _rng(201)
    cases = [Case(f"d={d}, d_h={dh}", (rng.standard_normal((d, dh)), rng.standard_normal((dh, d))))
             for d, dh in ((4, 2), (3, 3), (5, 1), (1, 1), (6, 2))]

    def reference(W_V, W_O):
        d, dh = W_V.shape
        return _layer(np.zeros((1, d, dh)), np.zeros((1, d, dh)), W_V[None], W_O[None]).transports().dense()[0].numpy()

    return grade("check_head_transport", fn, cases, reference,
                 "token j's message is the row x_j W_V W_O; written as a matrix acting on the column x_j it is "
                 "(W_V W_O)^T = W_O^T W_V^T, a d x d matrix of rank at most d_h.")


def check_sha_output(fn) -> bool:
    """Check ``fn(X, W_Q, W_K, W_V, W_O, causal)``: one head's output computed as its walk, ``(n, d)``.

    Chapter: *Single-head attention*, exercise ``single_head_graded2``.
    """
    rng = _rng(202)
    cases = []
    for n, d, dh, causal in ((5, 4, 2, False), (5, 4, 2, True), (1, 3, 2, True), (4, 3, 3, True), (6, 6, 1, False)):
        W = [W[0] for W in _weights(rng, 1, 1, d, dh)]
        cases.append(Case(f"n={n}, d={d}, d_h={dh}, causal={causal}", (rng.standard_normal((n, d)), *W, causal)))

    def reference(X, W_Q, W_K, W_V, W_O, causal):
        return multi_head_attention(X, _layer(W_Q[None], W_K[None], W_V[None], W_O[None]), causal=causal)

    return grade("check_sha_output", fn, cases, reference,
                 "A = softmax(Q K^T / sqrt(d_h) + M) row by row, with Q = X W_Q, K = X W_K and M = -inf above the "
                 "diagonal when causal; the walk moves x_j by T = (W_V W_O)^T, so the output is A X T^T.")


# ----------------------------------------------------------- Chapter: Multi-head attention
def check_edge_transport(fn) -> bool:
    """Check ``fn(A, T_heads, i, j)``: the mixed transport ``T_ij = H sum_h gamma^h_ij T_h``, ``(d, d)``.

    ``A`` is ``(H, n, n)`` (one pattern per head), ``T_heads`` is ``(H, d, d)``.
    Chapter: *Multi-head attention*, exercise ``multi_head_graded1``.
    """
    rng = _rng(301)
    cases = []
    for H, n, d, (i, j), kind in ((1, 4, 3, (2, 1), "one head"), (3, 5, 2, (4, 0), "three heads"),
                                  (4, 5, 2, (3, 1), "only head 2 attends the edge"),
                                  (2, 6, 3, (5, 2), "causal heads"), (3, 4, 1, (0, 3), "d=1")):
        A = _patterns(rng, H, n, causal=kind == "causal heads")
        if kind.startswith("only"):
            A[[0, 1, 3], i, j] = 0.0
            A /= A.sum(-1, keepdims=True)
        cases.append(Case(f"H={H}, n={n}, d={d}, edge ({i}, {j}), {kind}", (A, rng.standard_normal((H, d, d)), i, j)))

    def reference(A, T_heads, i, j):
        eye = np.broadcast_to(np.eye(T_heads.shape[-1]), T_heads.shape).copy()
        return walk_from_heads(A, HeadTransports(T_heads, eye)).transport_at(i, j)

    return grade("check_edge_transport", fn, cases, reference,
                 "the gates gamma_h = A[h, i, j] / sum_k A[k, i, j] sum to 1 on the edge, and T_ij is H times their "
                 "mixture of the T_h (so that P_ij T_ij = sum_h A[h, i, j] T_h with P = A.mean(0)).")


def check_mha_walk(fn) -> bool:
    """Check ``fn(X, W_q, W_k, W_v, W_o, causal)``: the walk ``(P, T)`` of a multi-head layer (T2).

    Weights in the row convention of :mod:`connlap_lite.attention`: ``W_q (H, d, d_h)``,
    ``W_k, W_v (G, d, d_h)``, ``W_o (H, d_h, d)``. Returns ``P (n, n)`` and ``T (n, n, d, d)``
    with ``T[i, j] = 0`` where ``P[i, j] = 0``. Chapter: *Multi-head attention*, ``multi_head_graded2``.
    """
    rng = _rng(302)
    cases = []
    for H, G, n, d, dh, causal, kind in ((2, 2, 4, 4, 2, False, "MHA"), (4, 2, 5, 8, 2, True, "GQA"),
                                        (3, 1, 4, 6, 2, True, "MQA"), (2, 2, 1, 4, 2, True, "one token"),
                                        (1, 1, 3, 3, 2, False, "one head")):
        cases.append(Case(f"{kind}: H={H}, G={G}, n={n}, d={d}, d_h={dh}, causal={causal}",
                          (rng.standard_normal((n, d)), *_weights(rng, H, G, d, dh), causal)))

    def reference(X, W_q, W_k, W_v, W_o, causal):
        walk = mha_walk(X, _layer(W_q, W_k, W_v, W_o), causal=causal)
        return walk.P.numpy(), walk.edge_transports()

    return grade("check_mha_walk", fn, cases, reference,
                 "head h reads group g = h // (H // G); A[h] = softmax(X W_q[h] (X W_k[g])^T / sqrt(d_h) + mask); "
                 "T_h = (W_v[g] W_o[h])^T; P = A.mean(0) and T[i, j] = H sum_h (A[h, i, j] / sum_k A[k, i, j]) T_h "
                 "on the support, 0 off it.", names=("P", "T"))


# ------------------------------------------------------------ Chapter: Connection Laplacian
def _laplacian_cases(seed: int, with_section: bool) -> list[Case]:
    rng = _rng(seed)
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
        args = (w, _symmetric_orthogonal(rng, w, d)) + ((rng.standard_normal((n, d)),) if with_section else ())
        cases.append(Case(f"n={n}, d={d}, {kind}", args))
    return cases


def check_connection_laplacian(fn) -> bool:
    """Check ``fn(w, O)``: the dense random-walk connection Laplacian ``I - D^{-1} S``, ``(n d, n d)``.

    Chapter: *The connection Laplacian*, exercise ``laplacian_graded1``.
    """
    return grade("check_connection_laplacian", fn, _laplacian_cases(401, False), connection_laplacian,
                 "S has the blocks w_ij O_ij and D = diag(deg_i I_d) with deg_i = sum_j w_ij; block (i, j) of "
                 "L = I - D^{-1} S sits at rows i*d:(i+1)*d and columns j*d:(j+1)*d.")


def check_dirichlet_energy(fn) -> bool:
    """Check ``fn(w, O, f)``: ``1/2 sum_ij w_ij ||f_i - O_ij f_j||^2``, a number.

    Chapter: *The connection Laplacian*, exercise ``laplacian_graded2``.
    """
    def reference(w, O, f):
        vol = w.sum()
        walk = random_walk_connection(w, O)
        return vol * float(dirichlet_energy(walk, f, pi=w.sum(1) / vol))

    return grade("check_dirichlet_energy", fn, _laplacian_cases(402, True), reference,
                 "sum over ordered pairs (i, j): each edge counts once in each direction, and the 1/2 undoes "
                 "that; O_ij acts on f_j (O[i, j] @ f[j]) before the difference is taken.")


# ------------------------------------------------------------------ Chapter: Reversibility
def _chain_cases(seed: int) -> list[Case]:
    rng = _rng(seed)
    birth = np.diag(rng.uniform(0.2, 0.5, 4), 1) + np.diag(rng.uniform(0.2, 0.5, 4), -1)
    birth += np.diag(1 - birth.sum(1))
    drift = np.roll(np.eye(3), 1, axis=1) * 0.6 + np.roll(np.eye(3), -1, axis=1) * 0.3 + 0.1 * np.eye(3)
    return [Case("two states", (np.array([[0.9, 0.1], [0.5, 0.5]]),)),
            Case("one state", (np.ones((1, 1)),)),
            Case("random positive walk, n=6", (_stochastic(rng, 6),)),
            Case("birth-death chain, n=5 (reversible)", (birth,)),
            Case("teleported causal walk, n=5", (M.teleport(torch.as_tensor(_stochastic(rng, 5, True))).numpy(),)),
            Case("drifting 3-cycle", (drift,))]


def check_stationary(fn) -> bool:
    """Check ``fn(P)``: the stationary distribution ``pi`` (``pi P = pi``, ``sum pi = 1``), shape ``(n,)``.

    Chapter: *Reversibility and low rank*, exercise ``reversibility_graded1``.
    """
    return grade("check_stationary", fn, _chain_cases(501), stationary_distribution,
                 "pi is a LEFT eigenvector, pi P = pi: an eigenvector of P.T for the eigenvalue 1 (the right "
                 "eigenvector of P is the constant vector), taken real and rescaled to sum to 1.")


def check_reversibility_defect(fn) -> bool:
    """Check ``fn(P)``: ``||Pi P - P^T Pi||_F / ||Pi P||_F`` with ``Pi = diag(pi)``, a number.

    Chapter: *Reversibility and low rank*, exercise ``reversibility_graded2``.
    """
    return grade("check_reversibility_defect", fn, _chain_cases(502), reversibility_defect,
                 "F = diag(pi) P with pi the stationary distribution; the defect is ||F - F^T||_F / ||F||_F, and "
                 "it is 0 exactly when detailed balance pi_i P_ij = pi_j P_ji holds.")
