"""Metrics for E1/E2 (connlap_lite.measure.metrics) and the analyze command line."""

import numpy as np
import pytest
import torch

from connlap_lite import HeadTransports, isometry_defect
from connlap_lite.measure import edges
from connlap_lite.measure import metrics as M
from connlap_lite.measure import nulls
from connlap_lite.verdicts import history as rules_history
from connlap_lite.measure import stats
from fake_reports import fake_report


def stochastic(n, seed, causal=False):
    g = torch.Generator().manual_seed(seed)
    P = torch.rand(n, n, generator=g, dtype=torch.float64)
    if causal:
        P = P.tril()
    return P / P.sum(1, keepdim=True)


def test_walk_distance_and_normalisation():
    P, Q = stochastic(6, 0), stochastic(6, 1)
    assert float(M.walk_distance(P, P)) == 0
    expected = np.mean([0.5 * (P[i] - Q[i]).abs().sum().item() for i in range(6)])
    assert abs(float(M.walk_distance(P, Q)) - expected) < 1e-15
    U = M.uniform_walk(6, causal=True)
    assert torch.allclose(U.sum(1), torch.ones(6, dtype=torch.float64)) and float(U.triu(1).abs().sum()) == 0
    scale = 0.5 * (M.walk_distance(P, M.uniform_walk(6, False)) + M.walk_distance(Q, M.uniform_walk(6, False)))
    assert abs(float(M.normalised_walk_distance(P, Q, False)) - expected / float(scale)) < 1e-12
    with pytest.raises(ValueError, match="same tokens"):
        M.walk_distance(P, stochastic(5, 0))


@pytest.mark.parametrize("encoder", [False, True])
def test_sink_free_normalisation_has_no_floor(encoder):
    """Sink-free walks are normalised by their distance from the sink-free uniform walk."""
    n = 12
    sinks = M.sink_columns(n, encoder)
    U = M.without_sinks(M.uniform_walk(n, causal=not encoder), sinks)
    P = M.without_sinks(stochastic(n, 7, causal=not encoder), sinks)
    near = 0.99 * U + 0.01 * P                           # a sink-free walk one step from uniform
    ratio = M.normalised_walk_distance(near, P, not encoder, sinks)
    scale = 0.5 * (M.walk_distance(near, U) + M.walk_distance(P, U))
    assert abs(float(ratio) - float(M.walk_distance(near, P) / scale)) < 1e-12
    assert float(M.walk_distance(U, U)) == 0            # no floor: the reference is itself sink-free
    # the old reference (uniform walk with its sinks) would put a floor under the scale
    floor = float(M.walk_distance(U, M.uniform_walk(n, causal=not encoder)))
    assert floor > 0.1 and float(M.normalised_walk_distance(near, P, not encoder)) < float(ratio)


def test_sym_spectrum_in_0_2_and_spectral_distance():
    for causal in (False, True):
        ev = M.sym_spectrum(stochastic(8, 2, causal))
        assert ev.min() > -1e-12 and ev.max() < 2 + 1e-12
    P = stochastic(8, 3)
    assert float(M.spectral_distance(P, P)) == 0
    assert float(M.spectral_distance(P, M.uniform_walk(8, False))) > 0


def test_sinks():
    P = stochastic(5, 4)
    assert abs(float(M.sink_mass(P, [0])) - float(P[1:, 0].mean())) < 1e-15
    Q = M.without_sinks(P, [0, 4])
    assert float(Q[:, [0, 4]].abs().sum()) == 0 and torch.allclose(Q.sum(1), torch.ones(5, dtype=torch.float64))
    causal = stochastic(4, 5, causal=True)
    R = M.without_sinks(causal, [0])
    assert float(R[0, 0]) == 1.0        # the first query had only the sink: keeps a self-loop
    assert M.sink_columns(10, encoder=True) == [0, 9] and M.sink_columns(10, encoder=False) == [0]


def test_teleport():
    P = stochastic(6, 7, causal=True)
    T = M.teleport(P, 0.2)
    assert bool((T > 0).all()) and torch.allclose(T.sum(1), torch.ones(6, dtype=torch.float64))
    with pytest.raises(ValueError, match="alpha must be in"):
        M.teleport(P, 1.5)


def test_rank_free_defect_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(20):
        s = np.sort(rng.random(6) * 3)[::-1].copy()
        brute = min(np.sqrt(((s[:k] - s[:k].mean()) ** 2).sum() + (s[k:] ** 2).sum()) / np.linalg.norm(s)
                    for k in range(1, 7))
        assert abs(float(edges.rank_free_defect(torch.tensor(s))) - brute) < 1e-12
    assert float(edges.rank_free_defect(torch.tensor([2.0, 2.0, 0.0]))) < 1e-12


def test_gated_singular_values_match_dense():
    g = torch.Generator().manual_seed(8)
    H, G, d, r = 4, 2, 10, 2
    U, V = torch.randn(G * 2, d, r, generator=g, dtype=torch.float64), torch.randn(G, r, d, generator=g, dtype=torch.float64)
    groups = torch.arange(H) // (H // G)
    heads = HeadTransports(U, V[groups])
    w = torch.rand(3, H, generator=g, dtype=torch.float64)
    dense = torch.einsum("mh,hde->mde", w, heads.dense())
    expected = torch.linalg.svdvals(dense)[:, :G * r]
    assert torch.allclose(edges.gated_singular_values(w, heads, groups), expected, atol=1e-12)


def test_data_isometry_defect_zero_for_scaled_partial_isometry():
    q, _ = torch.linalg.qr(torch.randn(8, 8, dtype=torch.float64))
    U, V = (3 * q[:, :3])[None], q[:, 3:6].T[None]
    heads = HeadTransports(U, V)
    X = torch.randn(50, 8, dtype=torch.float64)
    assert float(M.data_isometry_defect(heads, X)[0]) < 1e-12
    stretched = HeadTransports(U * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64), V)
    assert float(M.data_isometry_defect(stretched, X)[0]) > 0.1


def test_copy_score_and_nulls():
    q, _ = torch.linalg.qr(torch.randn(8, 8, dtype=torch.float64))
    proj = HeadTransports((2 * q[:, :4])[None], q[:, :4].T[None])
    assert abs(float(M.copy_score(proj)[0]) - 1) < 1e-12
    heads = HeadTransports(torch.randn(3, 8, 4, dtype=torch.float64), torch.randn(3, 4, 8, dtype=torch.float64))
    rot = nulls.rotation_null(heads, seed=1)
    # rotating the factors keeps each factor's singular values
    assert torch.allclose(torch.linalg.svdvals(rot.U), torch.linalg.svdvals(heads.U))
    gauss = nulls.gaussian_null(heads, seed=1)
    assert gauss.U.shape == heads.U.shape
    assert torch.allclose(M.scaled_isometry_defect(heads), torch.as_tensor(isometry_defect(heads.dense().numpy())))
    gain = torch.rand(8, dtype=torch.float64) + 0.5
    folded = M.fold_gain(heads, gain)
    assert torch.allclose(folded.dense(), heads.dense() * gain)


def test_bootstrap_and_spearman():
    v = torch.arange(10, dtype=torch.float64)
    m, lo, hi = stats.bootstrap_ci(v, n_boot=500)
    assert float(m) == 4.5 and float(lo) < 4.5 < float(hi)
    rho, p = stats.spearman(range(6), [1, 2, 3, 4, 5, 6])
    assert rho == pytest.approx(1.0) and p == pytest.approx(2 / 720)     # exact: 2 of 6! orderings
    rho, p = stats.spearman(range(6), [3, 1, 2, 6, 5, 4])
    assert rho == pytest.approx(0.6) and p == pytest.approx(174 / 720)    # scipy's approximation: 0.208
    rho, p = stats.spearman(range(20), list(range(20)))
    assert rho == pytest.approx(1.0) and p < 1e-10


def test_read_write_overlap_and_q4():
    q, _ = torch.linalg.qr(torch.randn(8, 8, dtype=torch.float64))
    same = HeadTransports(q[:, :3][None], q[:, :3].T[None])
    apart = HeadTransports(q[:, :3][None], q[:, 3:6].T[None])
    assert abs(float(M.read_write_overlap(same)[0]) - 1) < 1e-12
    assert float(M.read_write_overlap(apart)[0]) < 1e-12
    W = torch.randn(6, 70)
    Wq = nulls.q4_roundtrip(W)
    assert Wq.shape == W.shape and 0 < float((Wq - W).norm() / W.norm()) < 0.2
    blocks = Wq[:, :32] / (W[:, :32].abs().amax(1, keepdim=True) / 7)
    assert torch.allclose(blocks, blocks.round(), atol=1e-4)     # 16 levels per block


def test_first_rules_kept_for_the_record():
    """The first rules (replaced 2026-11-30), which the scorecard shows beside the rules in force."""
    good = fake_report("a", 1e8, False)
    assert rules_history.e1_rule1(good)["verdict"] == "holds" and rules_history.e2_rule1(good)["verdict"] == "holds"
    bad = fake_report("b", 1e9, False, falls=False)
    assert rules_history.e1_rule1(bad)["verdict"] == "partly"          # rises with depth but stays below the null
    between = fake_report("c", 1e8, False)           # below one random-init twin but not the other
    late_trained = rules_history.e1_rule1(between)["late_trained"]
    L = len(between["conditions"]["random0"]["tv_norm_nosink"])
    between["conditions"]["random1"] = {**between["conditions"]["random1"],
                                        "tv_norm_nosink": [[late_trained / 2] * 4 for _ in range(L)]}
    assert not rules_history.e1_rule1(between)["below_null"] and rules_history.e1_rule1(between)["verdict"] == "partly"
    reps = [fake_report(f"m{k}", 10 ** (8 + k), False, seed=k) for k in range(3)]
    for k, r in enumerate(reps):                    # the defect shrinks with size
        r["conditions"]["trained"]["head_defect"] = [[0.3 - 0.1 * k] * 3 for _ in range(6)]
    row = rules_history.e3_rule1(reps, "head_defect")
    assert row["verdict"] == "holds" and row["hi"] < 0 and abs(row["slope"] + 0.1) < 1e-9
    assert rules_history.e3_rule1(reps[:2], "head_defect")["verdict"] == "not testable"


# ------------------------------------------------------------------ undefined values: NaN and one warning
def _zero_head(which):
    g = torch.Generator().manual_seed(0)
    U = torch.randn(3, 8, 2, generator=g, dtype=torch.float64)
    V = torch.randn(3, 2, 8, generator=g, dtype=torch.float64)
    (U if which == "write" else V)[1] = 0
    return HeadTransports(U, V)


UNDEFINED = [
    ("copy_score", lambda: M.copy_score(_zero_head("write")), "a head's transport is zero"),
    ("read_write_overlap", lambda: M.read_write_overlap(_zero_head("write")), "write or read map is zero"),
    ("read_write_overlap", lambda: M.read_write_overlap(_zero_head("read")), "write or read map is zero"),
    ("data_isometry_defect", lambda: M.data_isometry_defect(_zero_head("read"), torch.randn(5, 8, dtype=torch.float64)),
     "fewer than two tokens in its read space or maps them all to 0"),
    ("normalised_walk_distance", lambda: M.normalised_walk_distance(M.uniform_walk(5, True), M.uniform_walk(5, True),
                                                                    True), "both walks equal the uniform walk"),
]


@pytest.mark.parametrize("quantity, fn, why", UNDEFINED)
def test_an_undefined_value_is_nan_and_said_once(quantity, fn, why):
    from connlap_lite._backend import UndefinedWarning
    with pytest.warns(UndefinedWarning) as caught:
        value = fn()
    assert len(caught) == 1
    assert str(caught[0].message).startswith(f"{quantity} is undefined (NaN) where ") and why in str(caught[0].message)
    assert bool(torch.isnan(value).any()) and bool(torch.isfinite(value[~torch.isnan(value)]).all())


def test_defined_values_are_silent_and_unchanged():
    import warnings
    P, Q = stochastic(6, 0, causal=True), stochastic(6, 1, causal=True)
    g = torch.Generator().manual_seed(0)
    heads = HeadTransports(torch.randn(3, 8, 2, generator=g, dtype=torch.float64),
                           torch.randn(3, 2, 8, generator=g, dtype=torch.float64))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = M.normalised_walk_distance(P, Q, True)
        M.copy_score(heads), M.read_write_overlap(heads), M.data_isometry_defect(heads, torch.randn(5, 8, generator=g))
    U = M.uniform_walk(6, True)
    assert float(d) == pytest.approx(float(M.walk_distance(P, Q) / (0.5 * (M.walk_distance(P, U) +
                                                                            M.walk_distance(Q, U)))), rel=1e-15)
