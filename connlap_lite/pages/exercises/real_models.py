"""Checkers of the real-models part: reading a real transformer, and known results reproduced."""
from __future__ import annotations

import numpy as np

from ._cases import random_orthogonal_matrix, random_patterns, case_rng
from ._runner import Case, checker


# ------------------------------------------------------------- Chapter: Reading a real model
@checker(forbid=["connlap_lite.attention:AttentionWeights.transports"])
def check_ov_transport():
    """Check ``fn(W_v, W_o, head, n_heads)``: head ``head``'s transport from ``nn.Linear`` weights.

    ``W_v`` is the value projection's ``weight``, shape ``(G d_h, d)``; ``W_o`` the output
    projection's, ``(d, H d_h)`` (PyTorch stores ``(out, in)`` and computes ``y = W x``).
    Chapter: *Reading a real transformer*, exercise ``reading_graded1``.
    """
    rng = case_rng(601)
    cases = []
    for H, G, d, dh, head, kind in ((2, 2, 4, 2, 1, "MHA"), (4, 2, 8, 2, 3, "GQA"), (3, 1, 6, 2, 2, "MQA"),
                                    (1, 1, 3, 3, 0, "one head"), (6, 3, 6, 1, 4, "GQA, d_h=1")):
        cases.append(Case(f"{kind}: H={H}, G={G}, d={d}, d_h={dh}, head {head}",
                          (rng.standard_normal((G * dh, d)), rng.standard_normal((d, H * dh)), head, H)))
    return cases


@checker(forbid=["connlap_lite.attention:attention_patterns"])
def check_attention_pattern():
    """Check ``fn(X, W_q, W_k, causal)``: one head's pattern from ``nn.Linear`` weights ``(d_h, d)``.

    Chapter: *Reading a real transformer*, exercise ``reading_graded2``.
    """
    rng = case_rng(602)
    cases = []
    for n, d, dh, causal, scale, kind in ((5, 4, 2, False, 1, "bidirectional"), (5, 4, 2, True, 1, "causal"),
                                          (1, 3, 2, True, 1, "one token"), (4, 4, 1, False, 1, "d_h=1"),
                                          (6, 4, 2, True, 60, "causal, scores in the thousands")):
        W_q, W_k = scale * rng.standard_normal((dh, d)), scale * rng.standard_normal((dh, d))
        cases.append(Case(f"n={n}, d={d}, d_h={dh}, {kind}", (rng.standard_normal((n, d)), W_q, W_k, causal)))
    return cases

# ------------------------------------------------------------ Chapter: Known results, reproduced
@checker(forbid=["connlap_lite.known.sinks:sink_rate", "connlap_lite.known.sinks:first_token_scores"])
def check_sink_rate():
    """Check ``fn(A, eps)``: Gu et al.'s sink rate of one passage, the share of heads (over all layers)
    whose mean attention to the first token exceeds ``eps``, a number.

    ``A`` is ``(L, H, n, n)``: every layer's heads, rows the queries.
    Chapter: *Known results, reproduced*, exercise ``known_results_graded1``.
    """
    rng = case_rng(1101)
    causal = np.stack([random_patterns(rng, 4, 8, causal=True) for _ in range(3)])
    causal[1, :2, :, :] = np.tril(np.ones((8, 8))) / np.arange(1, 9)[:, None]      # causal-uniform heads
    full = np.stack([random_patterns(rng, 3, 6) for _ in range(2)])
    full[0, 0] = 0.0
    full[0, 0, :, 0] = 1.0                                                      # one head on the first token only
    half = np.full((1, 2, 4, 4), 0.125)
    half[..., 0] = 0.625                                                        # every score exactly 0.625
    cases = [Case("decoder, 3 layers x 4 heads, n=8, eps=0.3", (causal, 0.3)),
             Case("encoder, 2 layers x 3 heads, n=6, eps=0.3", (full, 0.3)),
             Case("same encoder, eps=0.1", (full, 0.1)),
             Case("every score equal to eps (not above it)", (half, 0.625)),
             Case("one layer, one head, one token", (np.ones((1, 1, 1, 1)), 0.3))]
    return cases


@checker(forbid=["connlap_lite.known.stream:norm_weighted_walk"])
def check_norm_weighted_walk():
    """Check ``fn(A, T, X)``: the norm-weighted walk of a layer, an ``(n, n)`` array.

    ``A`` is ``(H, n, n)``, ``T`` is ``(H, d, d)`` (head transports in the column convention: ``T[h] @ x``),
    ``X`` is ``(n, d)``.
    Chapter: *Known results, reproduced*, exercise ``known_results_graded2``.
    """
    rng = case_rng(1102)
    Q = random_orthogonal_matrix(rng, 3)
    T2 = rng.standard_normal((2, 4, 4))
    cases = [Case("one head, identity transport, n=4, d=3", (random_patterns(rng, 1, 4), np.eye(3)[None],
                                                             rng.standard_normal((4, 3)))),
             Case("two heads, opposite transports, n=5, d=4", (random_patterns(rng, 2, 5), np.stack([T2[0], -T2[0]]),
                                                                rng.standard_normal((5, 4)))),
             Case("three heads, causal, n=6, d=3", (random_patterns(rng, 3, 6, causal=True),
                                                    rng.standard_normal((3, 3, 3)), rng.standard_normal((6, 3)))),
             Case("two heads sharing a rotation, n=4, d=3", (random_patterns(rng, 2, 4), np.stack([Q, Q]),
                                                             rng.standard_normal((4, 3)))),
             Case("a token whose vector is 100 times longer, n=5, d=4",
                  (random_patterns(rng, 2, 5), T2, rng.standard_normal((5, 4)) * np.array([100, 1, 1, 1, 1])[:, None]))]
    return cases
