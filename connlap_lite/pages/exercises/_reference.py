"""The teacher's key: a reference answer for every checker, and the common mistakes each checker names.

A reference computes the answer with the package's own implementation of the quantity (one implementation
per quantity); a mistake computes what a plausible wrong answer gives, so that a checker can say which mistake
a wrong result looks like. The student edition ships without this module (``tools/student_edition.py``
writes what it gives into ``answers.npz``; :mod:`connlap_lite.pages.exercises.answer_key` reads either).

Chapter: the ``## Exercises`` section of every chapter.
"""
from __future__ import annotations

import numpy as np
import torch

from ...measure import metrics as M
from ...attention import attention_patterns, mha_walk, multi_head_attention, walk_from_heads
from ...measure.edges import rank_free_defect
from ...known.sinks import first_token_scores, sink_rate
from ...known.stream import norm_weighted_walk
from ...chains import reversibility_defect, stationary_distribution
from ...laplacian import connection_laplacian, dirichlet_energy, random_walk_connection
from ...measure.stats import p_win, holm, spearman
from ..toys import conditions_report, holonomy_spectrum
from ...transports import EdgeTransport, HeadTransports
from ...walks import ConnectionWalk
from ._cases import layer_of, one_head

T_ = lambda a: np.swapaxes(a, -1, -2)                       # noqa: E731  transpose the last two axes


# ---------------------------------------------------------------------------------- theory
def apply_walk(P, T, f):
    return ConnectionWalk(P, EdgeTransport(T)).apply(f)


def holonomy(T, cycle):
    return ConnectionWalk(np.ones(T.shape[:2]), EdgeTransport(T)).holonomy(cycle)


def holonomy_open(T, cycle):
    H = np.eye(T.shape[-1])
    for a, b in zip(cycle, cycle[1:]):
        H = T[b, a] @ H
    return H


def head_transport(W_V, W_O):
    d, dh = W_V.shape
    return layer_of(np.zeros((1, d, dh)), np.zeros((1, d, dh)), W_V[None], W_O[None]).transports().dense()[0].numpy()


def sha_output(X, W_Q, W_K, W_V, W_O, causal, scale=1.0):
    return multi_head_attention(X, layer_of(scale * W_Q[None], W_K[None], W_V[None], W_O[None]), causal=causal)


def edge_transport(A, T_heads, i, j):
    eye = np.broadcast_to(np.eye(T_heads.shape[-1]), T_heads.shape).copy()
    return walk_from_heads(A, HeadTransports(T_heads, eye)).transport_at(i, j)


def mha_walk_pair(X, W_q, W_k, W_v, W_o, causal):
    walk = mha_walk(X, layer_of(W_q, W_k, W_v, W_o), causal=causal)
    return walk.P.numpy(), walk.edge_transports()


def gqa_by_modulo(X, W_q, W_k, W_v, W_o, causal):
    H, G, n = W_q.shape[0], W_k.shape[0], X.shape[0]
    g = np.arange(H) % G
    S = np.einsum("nd,hde->hne", X, W_q) @ np.einsum("nd,hde->hen", X, W_k[g]) / np.sqrt(W_q.shape[2])
    S = np.where(np.tril(np.ones((n, n), bool)) | (not causal), S, -np.inf)
    A = np.exp(S - S.max(-1, keepdims=True))
    A /= A.sum(-1, keepdims=True)
    T_h = T_(W_v[g] @ W_o)
    total = A.sum(0)
    return total / H, H * np.einsum("hij,hab->ijab", A / total, T_h)


def dirichlet(w, O, f):
    vol = w.sum()
    return vol * float(dirichlet_energy(random_walk_connection(w, O), f, pi=w.sum(1) / vol))


# ----------------------------------------------------------------------------- real models
def ov_transport(W_v, W_o, head, n_heads):
    d, dh = W_o.shape[0], W_o.shape[1] // n_heads
    G = W_v.shape[0] // dh
    W_v_rows = W_v.reshape(G, dh, d).transpose(0, 2, 1)           # (G, d, d_h): V = X W_v_rows[g]
    W_o_rows = W_o.T.reshape(n_heads, dh, d)                      # (H, d_h, d)
    zeros = np.zeros((n_heads, d, dh))
    return layer_of(zeros, zeros[:G], W_v_rows, W_o_rows).transports().dense()[head].numpy()


def ov_by_modulo(W_v, W_o, head, n_heads):
    dh = W_o.shape[1] // n_heads
    g = head % (W_v.shape[0] // dh)
    return W_o[:, head * dh:(head + 1) * dh] @ W_v[g * dh:(g + 1) * dh]


def attention_pattern(X, W_q, W_k, causal, scale=1.0):
    zeros = np.zeros((1, X.shape[1], W_q.shape[0]))
    return attention_patterns(X, layer_of(scale * W_q.T[None], W_k.T[None], zeros, zeros.transpose(0, 2, 1)),
                              causal=causal)[0]


def naive_pattern(X, W_q, W_k, causal):
    n = X.shape[0]
    S = (X @ W_q.T) @ (X @ W_k.T).T / np.sqrt(W_q.shape[0])
    A = np.exp(np.where(np.tril(np.ones((n, n), bool)) | (not causal), S, -np.inf))
    return A / A.sum(1, keepdims=True)


def norm_walk(A, T, X):
    return norm_weighted_walk(torch.as_tensor(A), torch.as_tensor(np.einsum("hab,jb->hja", T, X))).numpy()


# ------------------------------------------------------------------------------- empirical
def _walk_distance(P, Q, causal):
    return float(M.normalised_walk_distance(torch.as_tensor(P), torch.as_tensor(Q), causal))


def _rank_free(T):
    return float(rank_free_defect(torch.linalg.svdvals(torch.as_tensor(T))))


def _data_defect(U, V, X):
    return float(M.data_isometry_defect(one_head(U, V), torch.as_tensor(X))[0])


def slope_interval(params, values, boot_idx, seed, log=np.log10):
    x = log(np.asarray(params, dtype=float))
    slope = np.polyfit(x, values.mean(1), 1)[0]
    boots = [np.polyfit(x, values[np.arange(len(values))[:, None], b].mean(1), 1)[0] for b in boot_idx]
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return float(slope), float(lo), float(hi)


def _gains(U, V, X):
    return np.linalg.norm(X @ V.T @ U.T, axis=1) / np.linalg.norm(X @ np.linalg.qr(V.T)[0], axis=1)


def p_below_nulls(trained, nulls, boot_idx):
    t = trained[boot_idx].mean(1)
    return p_win(t - np.stack([n[boot_idx].mean(1) for n in nulls]).min(0))


def _copy(U, V):
    return float(M.copy_score(one_head(U, V))[0])


def _min_energy(P, T):
    return conditions_report(ConnectionWalk(P, EdgeTransport(T)), n_sections=0).min_energy


def _least_eig_L(P, T):
    n, d = T.shape[0], T.shape[-1]
    W = (P[:, :, None, None] * T).transpose(0, 2, 1, 3).reshape(n * d, n * d)
    return float(np.linalg.eigvals(np.eye(n * d) - W).real.min())


REFERENCES = {
    "check_apply_walk": apply_walk,
    "check_holonomy": holonomy,
    "check_head_transport": head_transport,
    "check_sha_output": sha_output,
    "check_edge_transport": edge_transport,
    "check_mha_walk": mha_walk_pair,
    "check_connection_laplacian": connection_laplacian,
    "check_dirichlet_energy": dirichlet,
    "check_stationary": stationary_distribution,
    "check_reversibility_defect": reversibility_defect,
    "check_ov_transport": ov_transport,
    "check_attention_pattern": attention_pattern,
    "check_sink_rate": lambda A, eps: float(sink_rate(first_token_scores(torch.as_tensor(A)), eps)),
    "check_norm_weighted_walk": norm_walk,
    "check_normalised_walk_distance": _walk_distance,
    "check_sink_mass": lambda P, sinks: float(M.sink_mass(torch.as_tensor(P), sinks)),
    "check_rank_free_defect": _rank_free,
    "check_data_isometry_defect": _data_defect,
    "check_slope_interval": slope_interval,
    "check_spearman_rho": lambda x, y: spearman(x, y)[0],
    "check_holm": lambda p: holm(p),
    "check_p_below_nulls": p_below_nulls,
    "check_read_write_overlap": lambda U, V: float(M.read_write_overlap(one_head(U, V))[0]),
    "check_copy_score": _copy,
    "check_kernel_dimension": lambda n, angle, tol: holonomy_spectrum(n, angle, tol=tol)[1],
    "check_min_dirichlet_energy": _min_energy,
}

# name -> {mistake: what it gives}; a mistake's name says what was done wrong, never how to do it right
MISTAKES = {
    "check_apply_walk": {
        "the transport of edge (j, i) used on edge (i, j)": lambda P, T, f: apply_walk(P, np.swapaxes(T, 0, 1), f),
        "each transport transposed (the vector multiplied from the left)": lambda P, T, f: apply_walk(P, T_(T), f),
        "the walk matrix transposed": lambda P, T, f: apply_walk(P.T, T, f),
        "the walk's weights left out": lambda P, T, f: apply_walk(np.ones_like(P), T, f),
    },
    "check_holonomy": {
        "the product taken in the reverse order": lambda T, c: T_(holonomy(T_(T), c)),
        "the transports of the reversed edges": lambda T, c: holonomy(np.swapaxes(T, 0, 1), c),
        "the closing step back to the first vertex left out": lambda T, c: holonomy_open(T, c),
    },
    "check_head_transport": {
        "the product not transposed": lambda W_V, W_O: W_V @ W_O,
    },
    "check_sha_output": {
        "the 1/sqrt(d_h) scaling of the scores left out": lambda X, Q, K, V, O, c: sha_output(
            X, Q, K, V, O, c, scale=np.sqrt(Q.shape[1])),
        "the causal mask left out": lambda X, Q, K, V, O, c: sha_output(X, Q, K, V, O, False),
        "the transport not transposed": lambda X, Q, K, V, O, c: (
            attention_pattern(X, Q.T, K.T, c) @ X @ (V @ O).T),
    },
    "check_edge_transport": {
        "the factor H left out (a factor 1/H too small)": lambda A, T, i, j: edge_transport(A, T, i, j) / len(A),
        "attention weights in place of the gates": lambda A, T, i, j: np.einsum("h,hab->ab", A[:, i, j], T),
        "a factor H too many (H^2 times the mixture)": lambda A, T, i, j: len(A) * edge_transport(A, T, i, j),
    },
    "check_mha_walk": {
        "head h reads group h % G": gqa_by_modulo,
        "P the sum of the heads' patterns (a factor H too large)": lambda X, q, k, v, o, c: (
            lambda P, T: (len(q) * P, T / len(q)))(*mha_walk_pair(X, q, k, v, o, c)),
        "the 1/sqrt(d_h) scaling of the scores left out": lambda X, q, k, v, o, c: mha_walk_pair(
            X, np.sqrt(q.shape[-1]) * q, k, v, o, c),
    },
    "check_connection_laplacian": {
        "D - S, the unnormalised Laplacian (the scaling by D^-1 missing)": lambda w, O: (
            np.kron(np.diag(w.sum(1)), np.eye(O.shape[-1])) @ connection_laplacian(w, O)),
        "the blocks of S transposed": lambda w, O: connection_laplacian(w, T_(O)),
        "I - S (the scaling by D^-1 missing)": lambda w, O: (
            np.eye(len(w) * O.shape[-1]) - np.kron(np.diag(w.sum(1)), np.eye(O.shape[-1]))
            @ (np.eye(len(w) * O.shape[-1]) - connection_laplacian(w, O))),
    },
    "check_dirichlet_energy": {
        "the factor 1/2 left out": lambda w, O, f: 2 * dirichlet(w, O, f),
        "each transport transposed": lambda w, O, f: dirichlet(w, T_(O), f),
        "each edge counted once, with the 1/2": lambda w, O, f: dirichlet(w, O, f) / 2,
    },
    "check_stationary": {
        "the right eigenvector (the constant vector)": lambda P: np.ones(len(P)) / len(P),
        "not rescaled to sum to 1 (unit length instead)": lambda P: (
            lambda pi: pi / np.linalg.norm(pi))(stationary_distribution(P)),
    },
    "check_reversibility_defect": {
        "the uniform distribution in place of the stationary one": lambda P: reversibility_defect(
            P, np.ones(len(P)) / len(P)),
        "P compared with its transpose, without pi": lambda P: float(
            np.linalg.norm(P - P.T) / np.linalg.norm(P)),
    },
    "check_ov_transport": {
        "head h reads group h % G": ov_by_modulo,
        "the transport transposed": lambda W_v, W_o, h, H: ov_transport(W_v, W_o, h, H).T,
    },
    "check_attention_pattern": {
        "the softmax without subtracting each row's maximum (it overflows)": naive_pattern,
        "the 1/sqrt(d_h) scaling of the scores left out": lambda X, q, k, c: attention_pattern(
            X, q, k, c, scale=np.sqrt(q.shape[0])),
        "the causal mask left out": lambda X, q, k, c: attention_pattern(X, q, k, False),
    },
    "check_sink_rate": {
        "a score equal to eps counted as above it": lambda A, eps: float(
            (A[..., :, 0].mean(-1) >= eps).mean()),
        "the largest attention to the first token, not the mean over queries": lambda A, eps: float(
            (A[..., :, 0].max(-1) > eps).mean()),
    },
    "check_norm_weighted_walk": {
        "the sum of the heads' norms (heads that cancel counted in full)": lambda A, T, X: (
            lambda Wn: Wn / Wn.sum(1, keepdims=True))(
            np.einsum("hij,hj->ij", A, np.linalg.norm(np.einsum("hab,jb->hja", T, X), axis=-1))),
        "the rows not normalised": lambda A, T, X: np.linalg.norm(
            np.einsum("hij,hab,jb->ija", A, T, X), axis=-1),
    },
    "check_normalised_walk_distance": {
        "the raw distance, not normalised by the distances to the uniform walk": lambda P, Q, c: float(
            0.5 * np.abs(P - Q).sum(1).mean()),
        "the uniform walk over every key, also for a causal walk": lambda P, Q, c: (
            0.5 * np.abs(P - Q).sum(1).mean()) / np.mean(
            [0.5 * np.abs(R - 1 / len(R)).sum(1).mean() for R in (P, Q)]),
    },
    "check_sink_mass": {
        "the sink rows themselves included": lambda P, sinks: float(P[:, sinks].sum(1).mean()),
        "the mean over the sink columns, not their sum": lambda P, sinks: float(
            M.sink_mass(torch.as_tensor(P), sinks)) / len(sinks),
    },
    "check_rank_free_defect": {
        "the defect at full rank only (no best rank chosen)": lambda T: (
            lambda s: float(np.sqrt(1 - s.sum() ** 2 / (len(s) * (s ** 2).sum()))))(np.linalg.svd(T, compute_uv=False)),
        "not divided by the sum of the squared singular values": lambda T: _rank_free(T) * float(np.linalg.norm(T)),
    },
    "check_data_isometry_defect": {
        "the population std (n, not n - 1)": lambda U, V, X: (lambda g: float(g.std() / g.mean()))(_gains(U, V, X)),
        "the gains measured against |x|, not its projection on the read space": lambda U, V, X: (
            lambda g: float(g.std(ddof=1) / g.mean()))(np.linalg.norm(X @ V.T @ U.T, axis=1) / np.linalg.norm(X, axis=1)),
    },
    "check_slope_interval": {
        "the slope against params, not log10(params)": lambda p, v, idx, s: slope_interval(p, v, idx, s, log=lambda x: x),
        "the natural log in place of log10": lambda p, v, idx, s: slope_interval(p, v, idx, s, log=np.log),
    },
    "check_spearman_rho": {
        "Pearson's correlation of the values, not of their ranks": lambda x, y: float(np.corrcoef(x, y)[0, 1]),
        "tied values given different ranks (in order of position)": lambda x, y: float(np.corrcoef(
            np.argsort(np.argsort(x, kind="stable")), np.argsort(np.argsort(y, kind="stable")))[0, 1]),
    },
    "check_holm": {
        "Bonferroni (every p-value times m)": lambda p: list(np.minimum(1, len(p) * np.asarray(p, dtype=float))),
        "the running maximum left out (the adjusted p-values not monotone)": lambda p: (
            lambda a, o: [min(1.0, (len(a) - list(o).index(i)) * a[i]) for i in range(len(a))])(
            np.asarray(p, dtype=float), np.argsort(p)),
        "the p-values not capped at 1": lambda p: (
            lambda a, o: list(np.maximum.accumulate((len(a) - np.arange(len(a))) * a[o])[np.argsort(o)]))(
            np.asarray(p, dtype=float), np.argsort(p)),
    },
    "check_p_below_nulls": {
        "the +1 in the numerator and the denominator left out": lambda t, n, idx: float(
            np.mean(t[idx].mean(1) - np.stack([x[idx].mean(1) for x in n]).min(0) >= 0)),
        "a tie counted as a win": lambda t, n, idx: float(
            (1 + np.sum(t[idx].mean(1) - np.stack([x[idx].mean(1) for x in n]).min(0) > 0)) / (len(idx) + 1)),
        "each null tested on its own and the largest p-value kept": lambda t, n, idx: max(
            p_win(t[idx].mean(1) - x[idx].mean(1)) for x in n),
        "the nulls compared at their means, not draw by draw": lambda t, n, idx: p_win(
            t[idx].mean(1) - min(x.mean() for x in n)),
    },
    "check_read_write_overlap": {
        "the factors used without orthonormal bases": lambda U, V: float(np.sum((U.T @ V.T) ** 2) / U.shape[1]),
        "divided by d, not d_h": lambda U, V: float(M.read_write_overlap(one_head(U, V))[0]) * U.shape[1] / U.shape[0],
    },
    "check_copy_score": {
        "sqrt(d) in place of sqrt(d_h)": lambda U, V: _copy(U, V) * np.sqrt(U.shape[1]) / np.sqrt(U.shape[0]),
        "d_h in place of sqrt(d_h)": lambda U, V: _copy(U, V) / np.sqrt(U.shape[1]),
    },
    "check_kernel_dimension": {
        "only angle 0 counted as flat (a full turn is flat too)": lambda n, a, tol: 2 if a == 0 else 0,
        "the tolerance ignored (only exact zeros counted)": lambda n, a, tol: holonomy_spectrum(n, a, tol=0.0)[1],
    },
    "check_min_dirichlet_energy": {
        "the least eigenvalue of L, not of the energy form": _least_eig_L,
    },
}
