"""Checkers of the real-models part: reading a real transformer, and known results reproduced."""
from __future__ import annotations

import numpy as np
import torch

from ..attention import attention_patterns
from ._runner import Case, _layer, _orthogonal, _patterns, _rng, grade


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
        return _layer(zeros, zeros[:G], W_v_rows, W_o_rows).transports().dense()[head].numpy()

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

# ------------------------------------------------------------ Chapter: Known results, reproduced
def check_sink_rate(fn) -> bool:
    """Check ``fn(A, eps)``: Gu et al.'s sink rate of one passage, the share of heads (over all layers)
    whose mean attention to the first token exceeds ``eps``, a number.

    ``A`` is ``(L, H, n, n)``: every layer's heads, rows the queries. The reference is
    :func:`connlap_lite.known.sink_rate` of :func:`connlap_lite.known.first_token_scores`.
    Chapter: *Known results, reproduced*, exercise ``known_results_graded1``.
    """
    from ..known import first_token_scores, sink_rate

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
    from ..known import norm_weighted_walk

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
