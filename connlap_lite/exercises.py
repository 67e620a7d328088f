"""Graded exercises: checkers for a reader's own functions, and the student edition of the book.

Every chapter ends with graded exercises. Each asks for one small function and ends with a
call such as ``check_apply_walk(apply_walk)``. The checker calls the function on a handful of
small float64 cases, each with a fixed seed and including edge cases (one token, causal masks,
grouped-query heads, ties, boundary values), and compares the result with the package's own
implementation. If every case agrees it prints one line, ``check_apply_walk: 6/6 cases passed``,
and returns True. Otherwise it raises :class:`ExerciseFailed`, an ``AssertionError``, and the
message says which case failed (with its parameters), what was expected and what came back
(the largest error and a small slice), and gives a hint.

``python -m connlap_lite.exercises student book _build/student`` (``make student``) writes the
*student edition*: a copy of every notebook in which each cell tagged ``solution`` keeps its
imports, ``def`` lines, docstrings and final checker call, and every function body becomes
``raise NotImplementedError("your code here")``. The solution dropdowns lose their content.

Examples
--------
>>> import numpy as np
>>> def holonomy(T, cycle):
...     H = np.eye(T.shape[-1])
...     for a, b in zip(cycle, cycle[1:] + cycle[:1]):
...         H = T[b, a] @ H
...     return H
>>> check_holonomy(holonomy)
check_holonomy: 5/5 cases passed
True
>>> def backwards(T, cycle):                  # multiplies in the wrong order
...     H = np.eye(T.shape[-1])
...     for a, b in zip(cycle, cycle[1:] + cycle[:1]):
...         H = H @ T[b, a]
...     return H
>>> try:
...     check_holonomy(backwards)
... except ExerciseFailed as failure:
...     print(str(failure).splitlines()[0])
check_holonomy failed on case 2 of 5 (cycle [0, 1], d=2)

Chapters: the ``## Exercises`` section of every chapter.
"""
from __future__ import annotations

import argparse
import ast
import copy
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

from . import metrics as M
from .attention import AttentionWeights, attention_patterns, mha_walk, multi_head_attention, walk_from_heads
from .laplacian import (connection_laplacian, dirichlet_energy, random_walk_connection,
                        reversibility_defect, stationary_distribution)
from .transports import EdgeTransport, HeadTransports
from .walks import ConnectionWalk

__all__ = ["ExerciseFailed", "Case", "grade", "stub_source", "student_edition", "CHECKERS"]


class ExerciseFailed(AssertionError):
    """A checker's verdict on a wrong or unfinished answer. The message says what to fix."""


@dataclass(frozen=True)
class Case:
    """One test case: a label naming its parameters, the positional arguments, and any extra
    arguments that only the reference takes (a seed, say)."""

    label: str
    args: tuple
    extra: tuple = ()


# ------------------------------------------------------------------------------ the runner
def _numeric(x, what: str) -> np.ndarray | str:
    """``x`` as a float (or complex) numpy array, or a sentence saying why it is not one."""
    if x is None:
        return f"{what} is None: did the function forget to `return` its result?"
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    try:
        a = np.asarray(x)
    except Exception:  # pragma: no cover - numpy accepts nearly anything
        a = np.asarray(None)
    if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        return f"{what} is a {type(x).__name__}, not a number or an array of numbers"
    return a if np.iscomplexobj(a) else a.astype(np.float64)


def _show(a: np.ndarray) -> str:
    return np.array2string(np.asarray(a), precision=5, suppress_small=True, max_line_width=110, threshold=12)


def _compare_arrays(got, expected, rtol: float, atol: float, what: str) -> str | None:
    e = np.asarray(expected)
    g = _numeric(got, what)
    if isinstance(g, str):
        return "  " + g
    if e.ndim == 0 and g.size == 1:
        g = g.reshape(())
    if g.shape != e.shape:
        return f"  {what} has shape {g.shape}, expected shape {e.shape}"
    bad_value = ~np.isfinite(g) & np.isfinite(e)
    if bad_value.any():
        idx = tuple(int(k) for k in np.argwhere(bad_value)[0])
        return f"  {what} holds {g[idx] if idx else g} at index {idx}, where {_show(e[idx] if idx else e)} was expected"
    err = np.abs(g - e)
    excess = err - (atol + rtol * np.abs(e))
    if not (excess > 0).any():
        return None
    if e.ndim == 0:
        return f"  expected {float(e):.10g}, got {float(g):.10g} (abs error {float(err):.2e})"
    idx = np.unravel_index(int(np.argmax(excess)), e.shape)
    row = idx[:-1]
    where = ", ".join(str(int(k)) for k in row) + (", :" if row else ":")
    return (f"  {what}: shape {e.shape} is right; max abs error {float(err.max()):.2e} "
            f"(tolerance {atol:.0e} + {rtol:.0e} * |expected|), worst at index {tuple(int(k) for k in idx)}\n"
            f"  expected[{where}] = {_show(e[row])}\n"
            f"  got[{where}]      = {_show(g[row])}")


def _compare(got, expected, rtol: float, atol: float, names: Sequence[str] | None) -> str | None:
    """None when ``got`` matches ``expected``, else a few lines saying how it differs."""
    if got is None:
        return "  your function returned None: did it forget to `return` its result?"
    if isinstance(expected, str):
        return None if got == expected else f"  expected {expected!r}, got {got!r}"
    if isinstance(expected, tuple):
        names = names or [f"item {k}" for k in range(len(expected))]
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return (f"  expected a tuple of {len(expected)} values ({', '.join(names)}), "
                    f"got {type(got).__name__}{'' if not isinstance(got, (tuple, list)) else f' of {len(got)}'}")
        for name, g, e in zip(names, got, expected):
            problem = _compare_arrays(g, e, rtol, atol, name)
            if problem:
                return problem
        return None
    return _compare_arrays(got, expected, rtol, atol, "your result")


def grade(name: str, fn: Callable, cases: Sequence[Case], reference: Callable, hint: str, *,
          rtol: float = 1e-7, atol: float = 1e-9, names: Sequence[str] | None = None) -> bool:
    """Run ``fn`` and ``reference`` on every case. Return True, or raise :class:`ExerciseFailed`.

    Both get a fresh copy of the arguments, so a function that writes into its inputs cannot
    spoil the reference. Results are compared with ``atol + rtol * |expected|`` (arrays, tensors
    and numbers), by equality (strings), or item by item (tuples, with ``names``).
    """
    if not callable(fn):
        raise TypeError(f"{name} takes your function as its argument, got {type(fn).__name__}; "
                        f"call it as {name}(my_function)")
    for k, case in enumerate(cases, 1):
        where = f"case {k} of {len(cases)} ({case.label})"
        expected = reference(*copy.deepcopy(case.args), *case.extra)
        try:
            got = fn(*copy.deepcopy(case.args))
        except NotImplementedError:
            raise ExerciseFailed(f"{name}: your function raised NotImplementedError on {where}: "
                                 "fill in the body") from None
        except Exception as exc:
            raise ExerciseFailed(f"{name}: your function raised {type(exc).__name__}: {exc}\n"
                                 f"  on {where}\nhint: {hint}") from exc
        problem = _compare(got, expected, rtol, atol, names)
        if problem:
            raise ExerciseFailed(f"{name} failed on {where}\n{problem}\nhint: {hint}")
    print(f"{name}: {len(cases)}/{len(cases)} cases passed")
    return True


# --------------------------------------------------------------------------- random cases
def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _stochastic(rng, n: int, causal: bool = False) -> np.ndarray:
    P = rng.uniform(0.05, 1.0, (n, n))
    P = np.tril(P) if causal else P
    return P / P.sum(1, keepdims=True)


def _orthogonal(rng, d: int) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def _patterns(rng, H: int, n: int, causal: bool = False) -> np.ndarray:
    S = rng.standard_normal((H, n, n))
    if causal:
        S = np.where(np.tril(np.ones((n, n), dtype=bool)), S, -np.inf)
    A = np.exp(S - S.max(-1, keepdims=True))
    return A / A.sum(-1, keepdims=True)


def _symmetric_orthogonal(rng, w: np.ndarray, d: int) -> np.ndarray:
    """Transports ``O_ij`` orthogonal with ``O_ji = O_ij^T`` on the edges of ``w`` (zero elsewhere)."""
    n = w.shape[0]
    O = np.zeros((n, n, d, d))
    for i in range(n):
        for j in range(i, n):
            if w[i, j] > 0:
                Q = np.diag(np.where(rng.uniform(size=d) < 0.5, -1.0, 1.0)) if i == j else _orthogonal(rng, d)
                O[i, j], O[j, i] = Q, Q.T
    return O


def _weights(rng, H: int, G: int, d: int, dh: int, scale: float = 1.0):
    """Row-convention weights ``W_q (H, d, dh), W_k, W_v (G, d, dh), W_o (H, dh, d)``."""
    r = lambda *s: scale * rng.standard_normal(s) / np.sqrt(s[-2])
    return r(H, d, dh), r(G, d, dh), r(G, d, dh), r(H, dh, d)


def _factors(rng, d: int, dh: int):
    return rng.standard_normal((d, dh)), rng.standard_normal((dh, d))


def _one_head(U, V) -> HeadTransports:
    return HeadTransports(torch.as_tensor(U)[None], torch.as_tensor(V)[None])


def _layer(W_q, W_k, W_v, W_o) -> AttentionWeights:
    return AttentionWeights(*(torch.as_tensor(W) for W in (W_q, W_k, W_v, W_o)))


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
        return _layer(np.zeros((1, d, dh)), np.zeros((1, d, dh)), W_V[None], W_O[None]).transports()[0].numpy()

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


# ------------------------------------------------------------- Chapter: Reading a real model
def check_ov_transport(fn) -> bool:
    """Check ``fn(W_v, W_o, head, n_heads)``: head ``head``'s transport from ``nn.Linear`` weights.

    ``W_v`` is the value projection's ``weight``, shape ``(G d_h, d)``; ``W_o`` the output
    projection's, ``(d, H d_h)`` (PyTorch stores ``(out, in)`` and computes ``y = W x``).
    Chapter: *Reading a real transformer*, exercise ``reading_graded1``.
    """
    rng = _rng(601)
    cases = []
    for H, G, d, dh, head, kind in ((2, 2, 4, 2, 1, "MHA"), (4, 2, 8, 2, 3, "GQA"), (3, 1, 6, 2, 2, "MQA"),
                                    (1, 1, 3, 3, 0, "one head"), (6, 3, 6, 1, 4, "GQA, d_h=1")):
        cases.append(Case(f"{kind}: H={H}, G={G}, d={d}, d_h={dh}, head {head}",
                          (rng.standard_normal((G * dh, d)), rng.standard_normal((d, H * dh)), head, H)))

    def reference(W_v, W_o, head, n_heads):
        d, dh = W_o.shape[0], W_o.shape[1] // n_heads
        G = W_v.shape[0] // dh
        W_v_rows = W_v.reshape(G, dh, d).transpose(0, 2, 1)           # (G, d, d_h): V = X W_v_rows[g]
        W_o_rows = W_o.T.reshape(n_heads, dh, d)                      # (H, d_h, d)
        zeros = np.zeros((n_heads, d, dh))
        return _layer(zeros, zeros[:G], W_v_rows, W_o_rows).transports()[head].numpy()

    return grade("check_ov_transport", fn, cases, reference,
                 "d_h = W_o.shape[1] // H and G = W_v.shape[0] // d_h. Head h writes through the columns "
                 "h*d_h:(h+1)*d_h of W_o and reads the value rows of its group g = h // (H // G), so "
                 "T_h = W_o[:, head slice] @ W_v[group slice, :].")


def check_attention_pattern(fn) -> bool:
    """Check ``fn(X, W_q, W_k, causal)``: one head's pattern from ``nn.Linear`` weights ``(d_h, d)``.

    Chapter: *Reading a real transformer*, exercise ``reading_graded2``.
    """
    rng = _rng(602)
    cases = []
    for n, d, dh, causal, scale, kind in ((5, 4, 2, False, 1, "bidirectional"), (5, 4, 2, True, 1, "causal"),
                                          (1, 3, 2, True, 1, "one token"), (4, 4, 1, False, 1, "d_h=1"),
                                          (6, 4, 2, True, 60, "causal, scores in the thousands")):
        W_q, W_k = scale * rng.standard_normal((dh, d)), scale * rng.standard_normal((dh, d))
        cases.append(Case(f"n={n}, d={d}, d_h={dh}, {kind}", (rng.standard_normal((n, d)), W_q, W_k, causal)))

    def reference(X, W_q, W_k, causal):
        zeros = np.zeros((1, X.shape[1], W_q.shape[0]))
        return attention_patterns(X, _layer(W_q.T[None], W_k.T[None], zeros, zeros.transpose(0, 2, 1)),
                                  causal=causal)[0]

    return grade("check_attention_pattern", fn, cases, reference,
                 "Linear weights are (out, in): Q = X W_q^T and K = X W_k^T; scores Q K^T / sqrt(d_h), -inf above "
                 "the diagonal when causal; subtract each row's maximum before exp, which leaves the softmax "
                 "unchanged and keeps exp from overflowing.")


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
    """The resampling indices that ``scorecard.scale_slope(..., seed=seed)`` draws, in its order."""
    rng = np.random.default_rng(seed)
    return np.array([[rng.integers(0, k, k) for _ in range(m)] for _ in range(n_boot)])


def check_slope_interval(fn) -> bool:
    """Check ``fn(params, values, boot_idx)``: ``(slope, lo, hi)`` of values against log10(params).

    ``values`` is ``(m, k)``: ``k`` per-passage values for each of ``m`` models; ``boot_idx`` is
    ``(n_boot, m, k)``: the passages each bootstrap draw takes from each model. The reference is
    :func:`connlap_lite.scorecard.scale_slope`. Chapter: *E3*, exercise ``e3_scale_graded1``.
    """
    from .scorecard import scale_slope

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
    """Check ``fn(rho, p, late_trained, late_null)``: the E1 rule's verdict, a string.

    Chapter: *Scorecard*, exercise ``scorecard_graded1``.
    """
    from .scorecard import _verdict

    numbers = ((-0.9, 0.01, 0.3, 0.6), (-0.9, 0.2, 0.3, 0.6), (0.4, 0.01, 0.7, 0.6), (-0.5, 0.05, 0.3, 0.6),
               (-0.8, 0.001, 0.6, 0.6), (0.0, 0.0, 0.2, 0.9))
    cases = [Case(f"rho={r}, p={p}, late trained {t}, late null {u}", (r, p, t, u)) for r, p, t, u in numbers]
    return grade("check_e1_verdict", fn, cases, lambda rho, p, t, u: _verdict(rho < 0 and p < 0.05, t < u),
                 "(a) the curve falls: rho < 0 and p < 0.05, both strict; (b) the late trained mean is strictly "
                 "below the null's; 'holds' needs both, 'partly' exactly one, 'does not' neither.")


def check_e2_verdict(fn) -> bool:
    """Check ``fn(head, gaussian, random_head, data, random_data)``: the E2 rule's verdict, a string.

    Chapter: *Scorecard*, exercise ``scorecard_graded2``.
    """
    from .scorecard import e2

    numbers = ((0.2, 0.3, 0.35, 0.1, 0.2), (0.32, 0.3, 0.35, 0.1, 0.2), (0.2, 0.3, 0.25, 0.3, 0.2),
               (0.3, 0.3, 0.35, 0.1, 0.1), (0.2, 0.4, 0.3, 0.15, 0.2), (0.5, 0.3, 0.35, 0.4, 0.2))
    cases = [Case(f"head {h}, gaussian {g}, random head {r}, data {x}, random data {y}", (h, g, r, x, y))
             for h, g, r, x, y in numbers]

    def reference(head, gaussian, random_head, data, random_data):
        trained = {"head_defect": [[head]], "head_defect_gaussian": [[gaussian]], "data_defect": [[data]]}
        null = {"head_defect": [[random_head]], "data_defect": [[random_data]]}
        return e2({"model": "x", "conditions": {"trained": trained, "random0": null}})["verdict"]

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


# ------------------------------------------------------------ Chapter: Interactive explorers
def check_kernel_dimension(fn) -> bool:
    """Check ``fn(n, angle, tol)``: the number of eigenvalues below ``tol`` of the connection
    Laplacian of the ``n``-cycle whose SO(2) holonomy is ``angle``, an int.

    The reference is :func:`connlap_lite.widgets.holonomy_spectrum`.
    Chapter: *Interactive explorers*, exercise ``explorers_graded1``.
    """
    from .widgets import KERNEL_TOL, holonomy_spectrum

    tau = 2 * np.pi
    cases = [Case(f"n={n}, angle={label}, tol={tol:g}", (n, angle, tol)) for n, angle, label, tol in (
        (3, 0.0, "0", KERNEL_TOL), (8, np.pi / 3, "pi/3", KERNEL_TOL), (5, tau, "2 pi", KERNEL_TOL),
        (12, -2 * tau, "-4 pi", KERNEL_TOL), (7, np.pi, "pi", KERNEL_TOL), (12, 0.01, "0.01", KERNEL_TOL),
        (4, tau + 0.02, "2 pi + 0.02", KERNEL_TOL), (10, -0.05, "-0.05", KERNEL_TOL),
        (12, 0.05, "0.05", 1e-4), (9, 3 * tau, "6 pi", 1e-12))]
    return grade("check_kernel_dimension", fn, cases, lambda n, angle, tol: holonomy_spectrum(n, angle, tol=tol)[1],
                 "each step k -> k+1 rotates by angle / n and each step back by -angle / n; with weight 1 on every "
                 "edge every degree is 2, so L = I - S / 2 is symmetric: count its eigenvalues (np.linalg.eigvalsh) "
                 "below tol. A full turn (angle a multiple of 2 pi) is as flat as no turn at all.")


def check_min_dirichlet_energy(fn) -> bool:
    """Check ``fn(P, T)``: the least Dirichlet energy ``<f, L f>_pi`` over sections with
    ``<f, f>_pi = 1``, for a walk ``P (n, n)`` with transports ``T (n, n, 2, 2)``, a number.

    ``pi`` is the stationary distribution of ``P`` with its rows normalised. The cases are the
    conditions lab's walks; the reference is :func:`connlap_lite.widgets.conditions_report`.
    Chapter: *Interactive explorers*, exercise ``explorers_graded2``.
    """
    from .widgets import conditions_report, conditions_walk

    cases = []
    for (s, r, m), n, seed in (((True, True, True), 8, 0), ((True, True, True), 3, 5), ((False, True, True), 6, 1),
                               ((True, False, True), 8, 2), ((True, True, False), 5, 3), ((False, False, False), 7, 4),
                               ((True, False, False), 4, 6)):
        walk = conditions_walk(s, r, m, n=n, seed=seed)
        switches = ", ".join(f"{c} {'on' if on else 'off'}" for c, on in zip("SRM", (s, r, m)))
        cases.append(Case(f"lab walk {switches}, n={n}, seed {seed}", (walk.P.numpy(), walk.edge_transports())))

    def reference(P, T):
        return conditions_report(ConnectionWalk(P, EdgeTransport(T)), n_sections=0).min_energy

    return grade("check_min_dirichlet_energy", fn, cases, reference,
                 "pi: the left eigenvector for eigenvalue 1 of P / P.sum(1) (rows normalised), summing to 1. "
                 "L = I - W, block (i, j) of W being P[i, j] T[i, j]. The energy form is B = sym(Pi L) with "
                 "Pi = diag(pi) repeated d times; the answer is the least eigenvalue of Pi^-1/2 B Pi^-1/2. "
                 "Not an eigenvalue of L: without (R) or (M), L is not symmetric for <., .>_pi.")


# ------------------------------------------------------------ Chapter: Known results, reproduced
def check_sink_rate(fn) -> bool:
    """Check ``fn(A, eps)``: Gu et al.'s sink rate of one passage, the share of heads (over all layers)
    whose mean attention to the first token exceeds ``eps``, a number.

    ``A`` is ``(L, H, n, n)``: every layer's heads, rows the queries. The reference is
    :func:`connlap_lite.known.sink_rate` of :func:`connlap_lite.known.first_token_scores`.
    Chapter: *Known results, reproduced*, exercise ``known_results_graded1``.
    """
    from .known import first_token_scores, sink_rate

    rng = _rng(1101)
    causal = np.stack([_patterns(rng, 4, 8, causal=True) for _ in range(3)])
    causal[1, :2, :, :] = np.tril(np.ones((8, 8))) / np.arange(1, 9)[:, None]      # causal-uniform heads
    full = np.stack([_patterns(rng, 3, 6) for _ in range(2)])
    full[0, 0] = 0.0
    full[0, 0, :, 0] = 1.0                                                      # one head on the first token only
    half = np.full((1, 2, 4, 4), 0.125)
    half[..., 0] = 0.625                                                        # every score exactly 0.625
    cases = [Case("decoder, 3 layers x 4 heads, n=8, eps=0.3", (causal, 0.3)),
             Case("encoder, 2 layers x 3 heads, n=6, eps=0.3", (full, 0.3)),
             Case("same encoder, eps=0.1", (full, 0.1)),
             Case("every score equal to eps (not above it)", (half, 0.625)),
             Case("one layer, one head, one token", (np.ones((1, 1, 1, 1)), 0.3))]
    return grade("check_sink_rate", fn, cases,
                 lambda A, eps: float(sink_rate(first_token_scores(torch.as_tensor(A)), eps)),
                 "a head's score is the mean over all queries of the attention to token 0, A[l, h, :, 0].mean(); "
                 "count the heads whose score is strictly above eps and divide by L * H.")


def check_norm_weighted_walk(fn) -> bool:
    """Check ``fn(A, T, X)``: the walk whose edge ``(i, j)`` has weight ``||sum_h A[h, i, j] T[h] x_j||``,
    each row divided by its sum, an ``(n, n)`` array.

    ``A`` is ``(H, n, n)``, ``T`` is ``(H, d, d)`` (head transports in the column convention: ``T[h] @ x``),
    ``X`` is ``(n, d)``. The reference is :func:`connlap_lite.known.norm_weighted_walk`.
    Chapter: *Known results, reproduced*, exercise ``known_results_graded2``.
    """
    from .known import norm_weighted_walk

    rng = _rng(1102)
    Q = _orthogonal(rng, 3)
    T2 = rng.standard_normal((2, 4, 4))
    cases = [Case("one head, identity transport, n=4, d=3", (_patterns(rng, 1, 4), np.eye(3)[None],
                                                             rng.standard_normal((4, 3)))),
             Case("two heads, opposite transports, n=5, d=4", (_patterns(rng, 2, 5), np.stack([T2[0], -T2[0]]),
                                                                rng.standard_normal((5, 4)))),
             Case("three heads, causal, n=6, d=3", (_patterns(rng, 3, 6, causal=True),
                                                    rng.standard_normal((3, 3, 3)), rng.standard_normal((6, 3)))),
             Case("two heads sharing a rotation, n=4, d=3", (_patterns(rng, 2, 4), np.stack([Q, Q]),
                                                             rng.standard_normal((4, 3)))),
             Case("a token whose vector is 100 times longer, n=5, d=4",
                  (_patterns(rng, 2, 5), T2, rng.standard_normal((5, 4)) * np.array([100, 1, 1, 1, 1])[:, None]))]

    def reference(A, T, X):
        Y = np.einsum("hab,jb->hja", T, X)
        return norm_weighted_walk(torch.as_tensor(A), torch.as_tensor(Y)).numpy()

    return grade("check_norm_weighted_walk", fn, cases, reference,
                 "first sum the heads' messages on each edge, m_ij = sum_h A[h, i, j] T[h] @ X[j], then take its norm "
                 "(the heads can cancel: the sum of the heads' norms is a different number); divide each row by its sum.")


CHECKERS = {name: obj for name, obj in globals().items() if name.startswith("check_") and callable(obj)}
__all__ += sorted(CHECKERS)


# ----------------------------------------------------------------------- student edition
NOTES = {False: "*Student edition: the worked solution is left out.*",
         True: "*Student edition: fill in the function in the next cell; its last line checks your answer.*"}
_DIRECTIVE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{solution-(?P<kind>start|end)\}.*?^(?P=fence)[ \t]*$",
                        re.M | re.S)
STUB = 'raise NotImplementedError("your code here")'


def stub_source(source: str) -> str:
    """``source`` with the body of every top-level function replaced by ``raise NotImplementedError``.

    Imports, other statements, the ``def`` lines and docstrings are kept.

    >>> print(stub_source('import math\\n\\ndef f(x):\\n    \"\"\"Twice x.\"\"\"\\n    return 2 * x\\n\\nf(1)\\n'))
    import math
    <BLANKLINE>
    def f(x):
        \"\"\"Twice x.\"\"\"
        raise NotImplementedError("your code here")
    <BLANKLINE>
    f(1)
    <BLANKLINE>
    """
    lines = source.splitlines(keepends=True)
    tree = ast.parse(source)
    for node in sorted((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))),
                       key=lambda n: n.lineno, reverse=True):
        body = node.body
        doc = body[0] if (isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                          and isinstance(body[0].value.value, str)) else None
        rest = body[1:] if doc else body
        if not rest:                                          # a docstring and nothing else
            indent = " " * doc.col_offset
            lines[doc.end_lineno:doc.end_lineno] = [f"{indent}{STUB}\n"]
            continue
        head = lines[rest[0].lineno - 1][:rest[0].col_offset]   # the indent, or "def f(x): " on one line
        start = doc.end_lineno if doc and not head.strip() else rest[0].lineno - 1   # drops comments after a docstring
        lines[start:node.end_lineno] = [f"{head}{STUB}\n"]
    return "".join(lines)


def _strip_solutions(text: str, inside: bool, graded: list[bool]) -> tuple[str, bool]:
    """Markdown ``text`` without what lies between ``{solution-start}`` and ``{solution-end}``.

    Each solution is replaced by a note, which ``graded`` (one flag per solution still to come)
    chooses: whether a stubbed code cell follows.
    """
    pieces, pos = [], 0
    for m in _DIRECTIVE.finditer(text):
        if not inside:
            pieces.append(text[pos:m.start()])
        if m["kind"] == "start":
            pieces.append(NOTES[graded.pop(0)])
        inside = m["kind"] == "start"
        pos = m.end()
    if not inside:
        pieces.append(text[pos:])
    return re.sub(r"\n{3,}", "\n\n", "".join(pieces)).strip("\n"), inside


def student_notebook(nb: dict) -> dict:
    """A student copy of a notebook (a dict in nbformat 4): solutions out, graded functions stubbed."""
    nb = copy.deepcopy(nb)
    graded, inside = [], False                    # per solution: does it hold a graded code cell?
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            for m in _DIRECTIVE.finditer("".join(cell["source"])):
                inside = m["kind"] == "start"
                graded += [False] if inside else []
        elif inside and "solution" in cell.get("metadata", {}).get("tags", []):
            graded[-1] = True
    cells, inside = [], False
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        tags = cell.get("metadata", {}).get("tags", [])
        if cell["cell_type"] == "markdown":
            src, inside = _strip_solutions(src, inside, graded)
            if not src.strip():
                continue
        elif cell["cell_type"] == "code":
            if "solution" in tags:
                src = stub_source(src)
                cell["metadata"]["tags"] = [t for t in tags if t != "hide-input"]
            elif inside:
                continue
            cell["outputs"], cell["execution_count"] = [], None
        cell["source"] = src.splitlines(keepends=True)
        cells.append(cell)
    nb["cells"] = cells
    return nb


def student_edition(src="book", dest="_build/student") -> list[Path]:
    """Write the student edition of every notebook under ``src`` to ``dest``, mirroring the tree.

    Never touches ``src``, and refuses a ``dest`` inside it. Returns the written paths.
    """
    src, dest = Path(src).resolve(), Path(dest).resolve()
    if not src.is_dir():
        raise FileNotFoundError(f"src must be the book's folder of notebooks; {src} is not a folder")
    if dest == src or src in dest.parents:
        raise ValueError(f"dest ({dest}) lies inside the source folder {src}; the student edition must not be "
                         "written into the book. Pass another folder, e.g. _build/student")
    written = []
    for path in sorted(p for p in src.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts):
        nb = student_notebook(json.loads(path.read_text(encoding="utf-8")))
        target = dest / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(target)
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m connlap_lite.exercises",
                                 description="Write the student edition of the book's notebooks.")
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("student", help="copy every notebook with its graded solutions emptied")
    s.add_argument("src", nargs="?", default="book", help="the book's folder (default: book)")
    s.add_argument("dest", nargs="?", default="_build/student", help="output folder (default: _build/student)")
    args = ap.parse_args(argv)
    try:
        written = student_edition(args.src, args.dest)
    except (ValueError, FileNotFoundError) as exc:
        ap.error(str(exc))
    print(f"student edition: {len(written)} notebooks in {Path(args.dest)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
