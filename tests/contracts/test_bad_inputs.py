"""The bad-input suite: one table per public module and one for the command line.

Each row is a bad input, the error type it must raise from the function the user called, and a
pattern that names the argument (and, where there is one, the fix).  A last table holds valid edge
cases (float32 walks, mixed dtypes, n = 1) with their correct answers.
"""
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import connlap_lite as C
from connlap_lite.measure import analysis as A
from connlap_lite.measure import edges
from connlap_lite.measure import metrics as M
from connlap_lite.models import load as models
from connlap_lite.measure import nulls
from connlap_lite.verdicts import record
from connlap_lite.verdicts import rules as RP
from connlap_lite.verdicts import history as rules_history
from connlap_lite.verdicts import scorecard as S
from connlap_lite.measure import stats
from connlap_lite.models import text as T
from connlap_lite.verdicts import words as verdicts
from connlap_lite.transports import ConstantTransport, EdgeTransport, MixtureTransport

sys.path.insert(0, str(Path(__file__).parents[1]))
from fake_reports import fake_report

f32, f64 = torch.float32, torch.float64
P2 = np.array([[0.5, 0.5], [0.25, 0.75]])
P3 = np.full((3, 3), 1 / 3)
R = np.array([[0.0, -1.0], [1.0, 0.0]])
W = C.AttentionWeights.random(d=8, n_heads=4, n_groups=2, seed=0)
X = torch.randn(5, 8, dtype=f64, generator=torch.Generator().manual_seed(0))
HEADS = W.transports()
WALK = C.ConnectionWalk(P3, np.eye(2))
A3 = np.full((4, 3, 3), 1 / 3)


def run(fn):
    return fn()


def table(rows):
    """pytest parameters from ``(id, fn, error, pattern)`` rows (or ready ``pytest.param`` rows)."""
    return [row if hasattr(row, "marks") else pytest.param(*row[1:], id=row[0]) for row in rows]


def check(fn, err, pattern):
    with pytest.raises(err, match=pattern) as info:
        fn()
    # the message comes from us, not from deep inside torch, numpy or transformers
    text = str(info.value)
    for raw in ("index out of range in self", "expected scalar type", "einsum()", "mat1 and mat2",
                "must have the same dtype", "object has no attribute", "not subscriptable", "unsupported operand"):
        assert raw not in text, text


# ------------------------------------------------------------------ walks
WALKS = [
    ("P not square", lambda: C.ConnectionWalk(np.ones((2, 3)), R), ValueError, r"P must have shape \(2, 2\)"),
    ("P 1-d", lambda: C.ConnectionWalk(np.ones(3), R), ValueError, "P must have 2 dimensions"),
    ("P 3-d", lambda: C.ConnectionWalk(np.ones((2, 2, 2)), R), ValueError, "P must have 2 dimensions"),
    ("P negative", lambda: C.ConnectionWalk(-P2, R), ValueError, "P must be nonnegative"),
    ("P NaN", lambda: C.ConnectionWalk(P2 * np.nan, R), ValueError, "P contains NaN"),
    ("P inf", lambda: C.ConnectionWalk(P2 * np.inf, R), ValueError, "P contains inf"),
    ("P string", lambda: C.ConnectionWalk("P", R), TypeError, "P must be a numeric array"),
    ("P None", lambda: C.ConnectionWalk(None, R), TypeError, "P must be a numeric array"),
    ("P complex", lambda: C.ConnectionWalk(P2 * 1j, R), TypeError, "P must be real"),
    ("P list of str", lambda: C.ConnectionWalk([["a", "b"]], R), TypeError, "P must be a numeric"),
    ("transport 1-d", lambda: C.ConnectionWalk(P2, np.ones(2)), ValueError, "transport must have 2 or 4 dim"),
    ("transport 3-d", lambda: C.ConnectionWalk(P2, np.ones((2, 2, 2))), ValueError, "transport must have 2 or 4"),
    ("transport not square", lambda: C.ConnectionWalk(P2, np.ones((2, 3))), ValueError, r"T must have shape"),
    ("edge transport wrong n", lambda: C.ConnectionWalk(P2, np.zeros((3, 3, 2, 2))), ValueError,
     r"transport has shape \(3, 3, 2, 2\) but P is 2 x 2"),
    ("transport NaN", lambda: C.ConnectionWalk(P2, R * np.nan), ValueError, "transport contains NaN"),
    ("transport string", lambda: C.ConnectionWalk(P2, "R"), TypeError, "transport must be a numeric"),
    ("offset wrong length", lambda: C.ConnectionWalk(P2, R, offset=np.ones(3)), ValueError,
     r"offset must have shape \(2\)"),
    ("offset wrong rows", lambda: C.ConnectionWalk(P2, R, offset=np.ones((3, 2))), ValueError,
     r"offset must have shape \(2, 2\)"),
    ("apply wrong shape", lambda: WALK.apply(np.ones((2, 2))), ValueError, r"f must have shape \(3, 2\)"),
    ("apply wrong length", lambda: WALK.apply(np.ones(5)), ValueError, r"f must have shape \(6\)"),
    ("apply 3-d", lambda: WALK.apply(np.ones((3, 2, 1))), ValueError, "f must have 1 or 2 dimensions"),
    ("apply NaN", lambda: WALK.apply(np.full((3, 2), np.nan)), ValueError, "f contains NaN"),
    ("call wrong shape", lambda: WALK(np.ones((3, 5))), ValueError, r"X must have shape \(3, 2\)"),
    ("rescale wrong shape", lambda: WALK.rescale(np.ones((2, 2))), ValueError, r"c must have shape \(3, 3\)"),
    ("rescale nonpositive", lambda: WALK.rescale(np.zeros((3, 3))), ValueError, "c must be positive on every edge"),
    ("frame singular", lambda: WALK.change_frame(np.zeros((3, 2, 2))), ValueError, r"G\[0\] is singular"),
    ("frame wrong shape", lambda: WALK.change_frame(np.ones((2, 2, 2))), ValueError, r"G must have shape \(3, 2, 2\)"),
    ("holonomy float index", lambda: WALK.holonomy([0, 1.5]), TypeError, "cycle entries must be an int index"),
    ("holonomy out of range", lambda: WALK.holonomy([0, 7]), ValueError, "cycle entries .* out of range"),
    ("holonomy negative", lambda: WALK.holonomy([0, -1]), ValueError, "cycle entries .* out of range"),
    ("holonomy empty", lambda: WALK.holonomy([]), ValueError, "cycle must list at least one vertex"),
    ("holonomy string", lambda: WALK.holonomy("01"), TypeError, "cycle must be a list of vertex indices"),
    ("holonomy int", lambda: WALK.holonomy(3), TypeError, "cycle must be a list of vertex indices"),
    ("holonomy non-edge", lambda: C.ConnectionWalk(np.eye(3), np.eye(2)).holonomy([0, 1]), ValueError,
     r"is not an edge"),
    ("transport_at float", lambda: WALK.transport_at(0.5, 1), TypeError, "i must be an int vertex index"),
    ("transport_at out of range", lambda: WALK.transport_at(0, 9), ValueError, "out of range for a walk on 3"),
]

# ------------------------------------------------------------------ transports
TRANSPORTS = [
    ("heads U 2-d", lambda: C.HeadTransports(np.ones((3, 2)), np.ones((1, 2, 3))), ValueError,
     "U must have 3 dimensions"),
    ("heads V mismatch", lambda: C.HeadTransports(np.ones((2, 4, 3)), np.ones((2, 3, 5))), ValueError,
     r"V must have shape \(2, 3, 4\)"),
    ("heads V other count", lambda: C.HeadTransports(np.ones((2, 4, 3)), np.ones((3, 3, 4))), ValueError,
     r"V must have shape \(2, 3, 4\)"),
    ("heads NaN", lambda: C.HeadTransports(np.full((1, 2, 1), np.nan), np.ones((1, 1, 2))), ValueError,
     "U contains NaN"),
    ("heads string", lambda: C.HeadTransports("U", np.ones((1, 1, 2))), TypeError, "U must be a numeric"),
    ("constant 3-d", lambda: ConstantTransport(np.ones((2, 2, 2))), ValueError, "T must have 2 dimensions"),
    ("constant not square", lambda: ConstantTransport(np.ones((2, 3))), ValueError, r"T must have shape \(2, 2\)"),
    ("edge not square", lambda: EdgeTransport(np.ones((2, 3, 2, 2))), ValueError, r"T must have shape \(n, n, d, d\)"),
    ("edge 2-d", lambda: EdgeTransport(np.ones((2, 2))), ValueError, "T must have 4 dimensions"),
    ("mixture not heads", lambda: MixtureTransport(np.ones((2, 3, 3)), "heads"), TypeError,
     "heads must be a HeadTransports"),
    ("mixture head count", lambda: MixtureTransport(np.ones((2, 3, 3)), HEADS), ValueError,
     "weights has 2 heads but heads has 4"),
    ("mixture weights 2-d", lambda: MixtureTransport(np.ones((3, 3)), HEADS), ValueError,
     "weights must have 3 dimensions"),
]

# ------------------------------------------------------------------ attention
ATTENTION = [
    ("W_o heads", lambda: C.AttentionWeights(W.W_q, W.W_k, W.W_v, W.W_o[:3]), ValueError,
     "W_o has 3 heads but W_q has 4"),
    ("W_v groups", lambda: C.AttentionWeights(W.W_q, W.W_k, W.W_v[:1], W.W_o), ValueError,
     "W_v has 1 groups but W_k has 2"),
    ("groups not dividing", lambda: C.AttentionWeights(W.W_q, torch.zeros(3, 8, 2), torch.zeros(3, 8, 2), W.W_o),
     ValueError, r"multiple of the number of key/value groups \(3\)"),
    ("W_k width", lambda: C.AttentionWeights(W.W_q, torch.zeros(2, 8, 3), W.W_v, W.W_o), ValueError,
     r"W_k must have shape \(2, 8, 2\)"),
    ("W_q 2-d", lambda: C.AttentionWeights(W.W_q[0], W.W_k, W.W_v, W.W_o), ValueError, "W_q must have 3 dim"),
    ("W_q NaN", lambda: C.AttentionWeights(W.W_q * np.nan, W.W_k, W.W_v, W.W_o), ValueError, "W_q contains NaN"),
    ("b_o shape", lambda: C.AttentionWeights(W.W_q, W.W_k, W.W_v, W.W_o, b_o=torch.zeros(7)), ValueError,
     r"b_o must have shape \(8\)"),
    ("b_q shape", lambda: C.AttentionWeights(W.W_q, W.W_k, W.W_v, W.W_o, b_q=torch.zeros(4)), ValueError,
     r"b_q must have shape \(4, 2\)"),
    ("X width", lambda: C.mha_walk(torch.randn(5, 7), W), ValueError, r"X must have shape \(\*, 8\)"),
    ("X 1-d", lambda: C.mha_walk(torch.randn(8), W), ValueError, "X must have 2 dimensions"),
    ("X NaN", lambda: C.mha_walk(torch.full((5, 8), float("nan")), W), ValueError, "X contains NaN"),
    ("X string", lambda: C.mha_walk("X", W), TypeError, "X must be a numeric"),
    ("weights not weights", lambda: C.mha_walk(X, "W"), TypeError, "weights must be an AttentionWeights"),
    ("weights dict", lambda: C.attention_patterns(X, {"W_q": 1}), TypeError, "weights must be an AttentionWeights"),
    ("mha weights None", lambda: C.multi_head_attention(X, None), TypeError, "weights must be an AttentionWeights"),
    ("sha many heads", lambda: C.sha_walk(X, W), ValueError, "sha_walk needs one head"),
    ("mask float", lambda: C.mha_walk(X, W, mask=torch.ones(5, 5)), TypeError, "mask must be boolean"),
    ("mask shape", lambda: C.mha_walk(X, W, mask=torch.ones(4, 4, dtype=torch.bool)), ValueError,
     r"mask must have shape \(5, 5\)"),
    ("padding float", lambda: C.mha_walk(X, W, padding=torch.ones(5)), TypeError, "padding must be boolean"),
    ("padding ints", lambda: C.mha_walk(X, W, padding=[1, 1, 1, 0, 0]), TypeError,
     r"padding must be boolean \(True for real tokens\)"),
    ("causal a string", lambda: C.mha_walk(X, W, causal="no"), TypeError, "causal must be True or False, got 'no'"),
    ("causal an int", lambda: C.attention_patterns(X, W, causal=1), TypeError, "causal must be True or False, got 1"),
    ("causal None", lambda: C.multi_head_attention(X, W, causal=None), TypeError, "causal must be True or False"),
    ("no key to attend", lambda: C.mha_walk(X, W, padding=torch.tensor([False] * 2 + [True] * 3), causal=True),
     ValueError, "query 0 may attend no key"),
    ("bias shape", lambda: C.mha_walk(X, W, bias=torch.zeros(4, 4)), ValueError, "bias must have shape"),
    ("A heads", lambda: C.walk_from_heads(A3, C.HeadTransports(np.ones((2, 3, 1)), np.ones((2, 1, 3)))), ValueError,
     "A has 4 heads but heads has 2"),
    ("A negative", lambda: C.walk_from_heads(-A3, HEADS), ValueError, "A must be nonnegative"),
    ("A 2-d", lambda: C.walk_from_heads(A3[0], HEADS), ValueError, "A must have 3 dimensions"),
    ("A not square", lambda: C.walk_from_heads(np.ones((4, 3, 2)), HEADS), ValueError, r"P must have shape"),
    ("heads not heads", lambda: C.walk_from_heads(A3, "heads"), TypeError, "heads must be a HeadTransports"),
    ("walk to int dtype", lambda: WALK.to(dtype=torch.int64), TypeError, "dtype must be a floating torch dtype"),
]

# ------------------------------------------------------------------ laplacian
O2 = np.zeros((2, 2, 2, 2)); O2[0, 1] = R; O2[1, 0] = R.T
W2 = np.array([[0.0, 1.0], [1.0, 0.0]])
LAPLACIAN = [
    ("w asymmetric", lambda: C.connection_laplacian(np.array([[0.0, 1.0], [0.5, 0.0]]), O2), ValueError,
     "w must be symmetric"),
    ("w negative", lambda: C.connection_laplacian(-W2, O2), ValueError, "w must be nonnegative"),
    ("w not square", lambda: C.connection_laplacian(np.ones((2, 3)), O2), ValueError, r"w must have shape \(2, 2\)"),
    ("w isolated vertex", lambda: C.connection_laplacian(np.zeros((2, 2)), O2), ValueError, "vertex 0 has degree 0"),
    ("w NaN", lambda: C.connection_laplacian(W2 * np.nan, O2), ValueError, "w contains NaN"),
    ("O 2-d", lambda: C.connection_laplacian(W2, np.eye(2)), ValueError, "O must have 4 dimensions"),
    ("O wrong n", lambda: C.connection_laplacian(W2, np.zeros((3, 3, 2, 2))), ValueError,
     r"O must have shape \(2, 2, \*, \*\)"),
    ("O not square blocks", lambda: C.connection_laplacian(W2, np.zeros((2, 2, 2, 3))), ValueError,
     r"O must have shape \(2, 2, 2, 2\)"),
    ("O not orthogonal", lambda: C.connection_laplacian(W2, 2 * O2), ValueError, "O must be orthogonal"),
    ("O not transposed", lambda: C.connection_laplacian(W2, np.stack([np.stack([R, R])] * 2)), ValueError,
     "O_ji = O_ij"),
    ("stationary not stochastic", lambda: C.stationary_distribution(np.array([[0.5, 0.2], [0.5, 0.5]])),
     ValueError, r"row-stochastic.*P / P.sum\(-1, keepdims=True\)"),
    ("stationary disconnected", lambda: C.stationary_distribution(np.eye(2)), ValueError, "multiplicity 2"),
    ("stationary negative", lambda: C.stationary_distribution(np.array([[1.5, -0.5], [0.5, 0.5]])), ValueError,
     "P must be nonnegative"),
    ("stationary not square", lambda: C.stationary_distribution(np.ones((2, 3)) / 3), ValueError,
     r"P must have shape \(2, 2\)"),
    ("stationary 1-d", lambda: C.stationary_distribution(np.ones(3)), ValueError, "P must have 2 dimensions"),
    ("stationary of a walk object", lambda: C.stationary_distribution(C.ConnectionWalk(np.eye(2), np.eye(1))),
     TypeError, "P must be a walk matrix, got a ConnectionWalk: pass walk.P, or read walk.stationary"),
    ("stationary string", lambda: C.stationary_distribution("P"), TypeError, "P must be a numeric"),
    ("stationary empty", lambda: C.stationary_distribution(np.ones((0, 0))), ValueError,
     "P must be a walk on at least one token"),
    ("stochasticity empty", lambda: C.stochasticity_defect(np.ones((0, 0))), ValueError,
     "P must be a walk on at least one token"),
    ("isometry empty", lambda: C.isometry_defect(np.ones((0, 0))), ValueError, "T must be a matrix"),
    ("reversibility pi length", lambda: C.reversibility_defect(P3, pi=np.ones(2)), ValueError,
     r"pi must have shape \(3\)"),
    ("reversibility pi negative", lambda: C.reversibility_defect(P3, pi=-np.ones(3)), ValueError,
     "pi must be a distribution"),
    ("reversibility pi zero", lambda: C.reversibility_defect(P3, pi=np.zeros(3)), ValueError,
     "pi must be a distribution"),
    ("reversibility P not stochastic, pi given", lambda: C.reversibility_defect(2 * P3, pi=np.ones(3) / 3),
     ValueError, r"P must be row-stochastic: row 0 sums to 2, off by more than atol=.*normalise its rows"),
    ("stochasticity 3-d", lambda: C.stochasticity_defect(np.ones((2, 2, 2))), ValueError, "P must have 2 dim"),
    ("isometry zero", lambda: C.isometry_defect(np.zeros((3, 3))), ValueError, "zero map"),
    ("isometry vector", lambda: C.isometry_defect(np.ones(3)), ValueError, "T must be a matrix"),
    ("isometry NaN", lambda: C.isometry_defect(np.full((2, 2), np.nan)), ValueError, "T contains NaN"),
    ("dirichlet not walk", lambda: C.dirichlet_energy(np.eye(2), np.ones((2, 1))), TypeError,
     "walk must be a ConnectionWalk"),
    ("dirichlet f shape", lambda: C.dirichlet_energy(WALK, np.ones((2, 2))), ValueError, r"f must have shape \(3, 2\)"),
    ("dirichlet pi shape", lambda: C.dirichlet_energy(WALK, np.ones((3, 2)), pi=np.ones(2)), ValueError,
     r"pi must have shape \(3\)"),
    ("spectrum too big", lambda: C.generator_spectrum(C.ConnectionWalk(np.full((100, 100), 0.01), np.eye(50))),
     ValueError, "pass k"),
    ("spectrum k too big", lambda: C.generator_spectrum(C.ConnectionWalk(P2, np.eye(1)), k=3), ValueError,
     "k must be between"),
    ("spectrum k float", lambda: C.generator_spectrum(WALK, k=2.5), TypeError, "k must be an int"),
    ("spectrum not walk", lambda: C.generator_spectrum(P3), TypeError, "walk must be a ConnectionWalk"),
    ("symmetry not walk", lambda: C.symmetry_defect(P3), TypeError, "walk must be a ConnectionWalk"),
    ("random walk O string", lambda: C.random_walk_connection(W2, "O"), TypeError, "O must be a numeric"),
]

# ------------------------------------------------------------------ metrics
U5 = M.uniform_walk(5, True)
METRICS = [
    ("uniform n zero", lambda: M.uniform_walk(0, True), ValueError, "n must be at least 1"),
    ("uniform n float", lambda: M.uniform_walk(2.5, True), TypeError, "n must be an int"),
    ("uniform int dtype", lambda: M.uniform_walk(3, True, dtype=torch.int64), TypeError,
     "dtype must be a floating torch dtype"),
    ("distance shapes", lambda: M.walk_distance(U5, M.uniform_walk(4, True)), ValueError,
     "P and Q must be walks on the same tokens"),
    ("distance not square", lambda: M.walk_distance(torch.ones(3, 4), torch.ones(3, 4)), ValueError,
     "P must be a walk matrix"),
    ("distance vector", lambda: M.walk_distance(torch.ones(3), torch.ones(3)), ValueError, "P must be a walk matrix"),
    ("distance negative", lambda: M.walk_distance(-U5, U5), ValueError, "P must be nonnegative"),
    ("distance NaN", lambda: M.walk_distance(U5, U5 * np.nan), ValueError, "Q contains NaN"),
    ("distance string", lambda: M.walk_distance("P", U5), TypeError, "P must be a numeric"),
    ("normalised sinks range", lambda: M.normalised_walk_distance(U5, U5, True, [9]), ValueError,
     "sinks entries .* out of range"),
    ("normalised sinks float", lambda: M.normalised_walk_distance(U5, U5, True, [0.5]), TypeError,
     "sinks entries must be an int index"),
    ("spectrum not square", lambda: M.sym_spectrum(torch.ones(2, 3)), ValueError, "P must be a walk matrix"),
    ("spectral distance shapes", lambda: M.spectral_distance(U5, M.uniform_walk(3, True)), ValueError,
     "same tokens"),
    ("teleport alpha 0", lambda: M.teleport(U5, 0.0), ValueError, r"alpha must be in \(0, 1\)"),
    ("teleport alpha 1", lambda: M.teleport(U5, 1.0), ValueError, r"alpha must be in \(0, 1\)"),
    ("teleport alpha str", lambda: M.teleport(U5, "0.1"), ValueError, r"alpha must be in \(0, 1\)"),
    ("teleport not walk", lambda: M.teleport(torch.ones(3), 0.1), ValueError, "P must be a walk matrix"),
    ("sink columns n zero", lambda: M.sink_columns(0, False), ValueError, "n must be at least 1"),
    ("sink columns encoder one", lambda: M.sink_columns(1, True), ValueError, "n must be at least 2"),
    ("sink columns float", lambda: M.sink_columns(3.0, False), TypeError, "n must be an int"),
    ("sink mass out of range", lambda: M.sink_mass(U5, [5]), ValueError, "sinks entries .* out of range"),
    ("sink mass negative index", lambda: M.sink_mass(U5, [-1]), ValueError, "sinks entries .* out of range"),
    ("sink mass float index", lambda: M.sink_mass(U5, [1.0]), TypeError, "sinks entries must be an int index"),
    ("sink mass int", lambda: M.sink_mass(U5, 0), TypeError, "sinks must be a list of int indices"),
    ("first column of a stack", lambda: M.first_column_share(torch.stack([U5, U5])), ValueError,
     "P must be one walk matrix .*pick one passage and layer"),
    ("first column negative", lambda: M.first_column_share(-U5), ValueError, "P must be nonnegative"),
    ("heaviest edge skip out of range", lambda: M.heaviest_edge(U5, [5]), ValueError, "skip entries .* out of range"),
    ("heaviest edge skip int", lambda: M.heaviest_edge(U5, 0), TypeError, "skip must be a list of int indices"),
    ("heaviest edge nothing left", lambda: M.heaviest_edge(torch.eye(2, dtype=torch.float64), [0, 1]), ValueError,
     "no off-diagonal edge outside the columns skip"),
    ("without sinks range", lambda: M.without_sinks(U5, [7]), ValueError, "sinks entries .* out of range"),
    ("stationary stack not square", lambda: C.stationary_distribution(torch.ones(2, 2, 3)), ValueError,
     r"P must have shape \(2, 2, 2\), got \(2, 2, 3\)"),
    ("reversibility negative", lambda: C.reversibility_defect(-U5), ValueError, r"P must be nonnegative .*P\[0, 0\]"),
    ("reversibility numpy not square", lambda: C.reversibility_defect(np.ones((2, 3))), ValueError,
     r"P must have shape \(2, 2\)"),
    ("rank free empty", lambda: edges.rank_free_defect(torch.zeros(0)), ValueError, "s must hold nonnegative singular"),
    ("rank free negative", lambda: edges.rank_free_defect(torch.tensor([1.0, -1.0])), ValueError,
     "s must hold nonnegative singular"),
    ("gated weights shape", lambda: edges.gated_singular_values(torch.ones(3, 2), HEADS, W.groups()), ValueError,
     r"weights must have shape \(m, 4\)"),
    ("gated groups float", lambda: edges.gated_singular_values(torch.ones(3, 4), HEADS, torch.zeros(4)), ValueError,
     "groups must hold 4 nonnegative int"),
    ("gated groups gap", lambda: edges.gated_singular_values(torch.ones(3, 4), HEADS, torch.tensor([0, 0, 2, 2])),
     ValueError, "group 1 has no head"),
    ("gated heads", lambda: edges.gated_singular_values(torch.ones(3, 4), "h", W.groups()), TypeError,
     "heads must be a HeadTransports"),
    ("fold gain length", lambda: M.fold_gain(HEADS, torch.ones(7)), ValueError, r"gain must have shape \(8,\)"),
    ("fold gain heads", lambda: M.fold_gain(np.ones((2, 2)), None), TypeError, "heads must be a HeadTransports"),
    ("data defect width", lambda: M.data_isometry_defect(HEADS, torch.ones(5, 7)), ValueError,
     r"X must have shape \(n, 8\)"),
    ("data defect 1-d", lambda: M.data_isometry_defect(HEADS, torch.ones(8)), ValueError, "X must have 2 or 3"),
    ("data defect NaN", lambda: M.data_isometry_defect(HEADS, torch.full((3, 8), float("nan"))), ValueError,
     "X contains NaN"),
    ("copy score dense", lambda: M.copy_score(torch.eye(3)[None]), TypeError, "heads must be a HeadTransports"),
    ("overlap list", lambda: M.read_write_overlap([1, 2]), TypeError, "heads must be a HeadTransports"),
    ("q4 vector", lambda: nulls.q4_roundtrip(torch.ones(5)), ValueError, r"W must be a floating \(out, in\)"),
    ("q4 numpy", lambda: nulls.q4_roundtrip(np.ones((2, 2))), ValueError, r"W must be a floating \(out, in\)"),
    ("q4 block zero", lambda: nulls.q4_roundtrip(torch.ones(2, 4), block=0), ValueError, "block must be at least 1"),
    ("rotation seed", lambda: nulls.rotation_null(HEADS, -1), ValueError, "seed must be at least 0"),
    ("gaussian seed float", lambda: nulls.gaussian_null(HEADS, 0.5), TypeError, "seed must be an int"),
    ("scaled defect dense", lambda: M.scaled_isometry_defect(torch.eye(3)), TypeError,
     "heads must be a HeadTransports"),
    ("bootstrap empty", lambda: stats.bootstrap_ci(torch.zeros(0)), ValueError, "values must hold at least one value"),
    ("bootstrap level", lambda: stats.bootstrap_ci(torch.ones(3), level=95), ValueError, r"level must be a number in"),
    ("bootstrap n_boot", lambda: stats.bootstrap_ci(torch.ones(3), n_boot=0), ValueError, "n_boot must be at least 1"),
    ("bootstrap strings", lambda: stats.bootstrap_ci(["a", "b"]), TypeError, "values must be a numeric"),
    ("spearman lengths", lambda: stats.spearman(range(3), [1, 2]), ValueError, "x and y must have the same length"),
    ("spearman string", lambda: stats.spearman("abc", [1, 2, 3]), TypeError, "x must be a sequence of numbers"),
    ("spearman 2-d", lambda: stats.spearman(range(2), [[1, 2], [3, 4]]), ValueError, "y must be one-dimensional"),
    ("spearman None", lambda: stats.spearman(None, [1]), TypeError, "x must be a sequence of numbers"),
    ("stationary zero row", lambda: C.stationary_distribution(np.array([[1.0, 0.0], [0.0, 0.0]])), ValueError,
     r"P must be row-stochastic: row 1 sums to 0 \(a token that attends nowhere\), off by more than atol=.*; "
     "normalise its rows"),
    ("stationary rows off", lambda: C.stationary_distribution(np.full((3, 3), 0.5)), ValueError,
     "P must be row-stochastic: row 0 sums to 1.5"),
    ("stationary stack, zero row", lambda: C.stationary_distribution(np.stack([np.full((2, 2), 0.5), np.eye(2) * [1, 0]])),
     ValueError, r"row 1 of walk \(1,\) sums to 0"),
    ("stationary two classes", lambda: C.stationary_distribution(np.kron(np.eye(2), np.full((2, 2), 0.5))),
     ValueError, "P has eigenvalue 1 with multiplicity 2 .* apply connlap_lite.measure.metrics.teleport"),
    ("stationary stack, two classes", lambda: C.stationary_distribution(np.stack([np.full((2, 2), 0.5), np.eye(2)])),
     ValueError, r"P of walk \(1,\) has eigenvalue 1 with multiplicity 2"),
    ("reversibility causal without teleport", lambda: C.reversibility_defect(M.uniform_walk(5, causal=True)),
     ValueError, r"P must be irreducible for its reversibility defect: token 0 cannot reach token 1 .*"
     r"teleport\(P\) first, or pass pi=stationary_distribution\(P\)"),
    ("reversibility stack, one causal", lambda: C.reversibility_defect(np.stack([np.full((2, 2), 0.5),
                                                                                 [[1.0, 0.0], [0.5, 0.5]]])),
     ValueError, r"token 0 cannot reach token 1 of walk \(1,\)"),
    ("reversibility zero row", lambda: C.reversibility_defect(np.array([[0.5, 0.5], [0.0, 0.0]])),
     ValueError, "P must be row-stochastic: row 1 sums to 0"),
    ("reversibility pi of a stack", lambda: C.reversibility_defect(np.stack([P3, P3]), pi=np.ones(3) / 3),
     ValueError, r"pi must have shape \(2, 3\)"),
    ("bootstrap_ci inf", lambda: stats.bootstrap_ci([1.0, np.inf, 2.0]), ValueError,
     r"values must be finite: 1 of its 3 samples is inf or NaN \(the first at index \(1,\)\); drop the undefined"),
    ("bootstrap_ci NaN", lambda: stats.bootstrap_ci(np.array([[1.0, np.nan], [2.0, 3.0]])), ValueError,
     r"values must be finite: .* index \(0, 1\)"),
]


# ------------------------------------------------------------------ models
MODELS = [
    ("name empty", lambda: models.load_model(""), TypeError, "name must be a model short name"),
    ("name None", lambda: models.load_model(None), TypeError, "name must be a model short name"),
    ("name int", lambda: models.load_model(3), TypeError, "name must be a model short name"),
    ("name spaces", lambda: models.load_model("   "), TypeError, "name must be a model short name"),
    ("name bad id", lambda: models.load_model("not a model!"), FileNotFoundError,
     "is not an offline short name .* an existing folder or a Hugging Face id"),
    ("name missing path", lambda: models.load_model("./no/such/folder"), FileNotFoundError,
     "is not an offline short name"),
    ("name too many slashes", lambda: models.load_model("a/b/c"), FileNotFoundError, "is not an offline short name"),
    ("name unknown id offline", lambda: models.load_model("surely-not/a-model"), OSError,
     "Offline short names: minilm-l6"),
    ("folder without config", lambda: models.load_model(str(Path(__file__).parent)), FileNotFoundError,
     "is a folder without a config.json"),
    ("file as name", lambda: models.load_model(__file__), FileNotFoundError, "is not an offline short name"),
    ("dtype int", lambda: models.load_model("minilm-l6", dtype=torch.int8), TypeError,
     "dtype must be a floating torch dtype"),
    ("dtype unknown string", lambda: models.load_model("minilm-l6", dtype="float17"), TypeError,
     r"dtype must be a floating torch dtype .* one of their names \(float32, float16, .*'auto' or None, got 'float17'"),
    ("dtype integer string", lambda: models.load_model("minilm-l6", dtype="int8"), TypeError,
     "dtype must be a floating torch dtype"),
    ("device meta", lambda: models.load_model("minilm-l6", device="meta"), ValueError,
     "device='meta' holds no weights .* load on 'cpu' or 'cuda'"),
    pytest.param(lambda: models.load_model("minilm-l6", device="cuda"), ValueError,
                 "device='cuda' but CUDA is not available here .* use device='cpu'", id="device cuda without CUDA",
                 marks=pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")),
    ("device cuda index", lambda: models.load_model("minilm-l6", device=f"cuda:{torch.cuda.device_count()}"),
     ValueError, "device='cuda:.*' but (CUDA is not available here|this machine has .* CUDA devices)"),
    ("device bogus", lambda: models.load_model("minilm-l6", device="gpu0"), ValueError,
     "device must be a torch device"),
    ("seed negative", lambda: models.load_model("minilm-l6", random_init=True, seed=-1), ValueError,
     "seed must be a nonnegative int"),
    ("seed float", lambda: models.load_model("minilm-l6", random_init=True, seed=1.5), ValueError,
     "seed must be a nonnegative int"),
]


# ------------------------------------------------------------------ widgets: a slider never shows another value
def _widgets():
    from connlap_lite.pages import widgets
    return widgets


WIDGETS = [
    ("cycle n below the slider", lambda: _widgets().holonomy_explorer(n=2), ValueError,
     r"n must be in \[3, 16\] \(the slider's range\), got 2"),
    ("cycle n above the slider", lambda: _widgets().holonomy_explorer(n=40), ValueError, r"n must be in \[3, 16\]"),
    ("cycle n float", lambda: _widgets().holonomy_explorer(n=4.5), TypeError, "n must be an int, got 4.5"),
    ("holonomy off the step", lambda: _widgets().holonomy_explorer(degrees=7), ValueError,
     r"degrees must be a multiple of 5 \(the slider's step\)"),
    ("lab seed beyond the slider", lambda: _widgets().conditions_lab(seed=12), ValueError,
     r"seed must be in \[0, 9\] \(the slider's range\)"),
]


# ------------------------------------------------------------------ model folders the package cannot measure
@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Folders saved as users save models, each with one fault; the tokenizer is the offline BERT one."""
    import json
    import shutil

    from transformers import LlamaConfig, MambaConfig

    root = tmp_path_factory.mktemp("folders")
    source = Path(models.offline_source("minilm-l6")[0])

    def folder(name, config: dict, tokenizer=True):
        f = root / name
        f.mkdir()
        (f / "config.json").write_text(json.dumps(config))
        for t in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
            if tokenizer and (source / t).is_file():
                shutil.copy(source / t, f / t)
        return f

    llama = LlamaConfig(num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2, hidden_size=32,
                        intermediate_size=64, vocab_size=30522).to_dict()
    out = {"mamba": folder("mamba", MambaConfig(hidden_size=16, num_hidden_layers=1, vocab_size=100).to_dict()),
           "no tokenizer": folder("no-tokenizer", llama, tokenizer=False),
           "gqa": folder("gqa", {**llama, "num_attention_heads": 6, "num_key_value_heads": 4}),
           "zero heads": folder("zero-heads", {**llama, "num_attention_heads": 0, "num_key_value_heads": 0})}
    import tiny_models
    empty = tiny_models.make_folder(root / "tokenizer-config-only")          # a tokenizer without its vocabulary
    for f in empty.iterdir():
        if f.name not in ("config.json", "model.safetensors", "generation_config.json", "tokenizer_config.json"):
            f.unlink()
    out["no vocabulary"] = empty
    nan = tiny_models.make_folder(root / "nan-weight")
    from safetensors.torch import load_file, save_file
    weights = load_file(str(nan / "model.safetensors"))
    weights["model.layers.1.self_attn.q_proj.weight"][3, 5] = float("nan")
    save_file(weights, str(nan / "model.safetensors"), metadata={"format": "pt"})
    out["nan weight"] = nan
    out["code in tokenizer"] = tiny_models.with_code(tiny_models.make_folder(root / "code-tok"),
                                                     "tokenizer_config.json")
    out["code in config"] = tiny_models.with_code(tiny_models.make_folder(root / "code-cfg"), "config.json")
    gpt2 = tiny_models.save_family("gpt2", root / "gpt2")
    out["other family"] = tiny_models.with_weights_of(tiny_models.make_folder(root / "llama-over-gpt2"), gpt2)
    out["lost attention"] = tiny_models.without_weight(tiny_models.make_folder(root / "lost-key"),
                                                       "model.layers.1.self_attn.k_proj.weight")
    other = tiny_models.make_folder(root / "other-shape")
    config = json.loads((other / "config.json").read_text())
    (other / "config.json").write_text(json.dumps({**config, "intermediate_size": 48}))
    out["other shape"] = other
    out["zero layers"] = folder("zero-layers", {**llama, "num_hidden_layers": 0})
    return out


FOLDERS = [
    ("mamba folder", lambda f: models.load_model(f["mamba"]), ValueError,
     r"unsupported architecture 'mamba'; supported families: bert/.*llama/mistral/qwen2"),
    ("folder without tokenizer", lambda f: models.load_model(f["no tokenizer"]), FileNotFoundError,
     r"is a folder without tokenizer files .*\(tokenizer.save_pretrained\(folder\)\)"),
    ("tokenizer without vocabulary", lambda f: models.load_model(f["no vocabulary"]), ValueError,
     r"its tokenizer encodes text to (no tokens|unknown tokens only) .* save the model's own tokenizer"),
    ("query heads not a multiple", lambda f: models.load_model(f["gqa"]), ValueError,
     "num_attention_heads=6 is not a multiple of num_key_value_heads=4 .* fix one of them in its config.json"),
    ("zero heads", lambda f: models.load_model(f["zero heads"]), ValueError,
     "num_attention_heads=0; attention needs at least one head: fix num_attention_heads"),
    ("NaN weight", lambda f: models.load_model(f["nan weight"]), ValueError,
     r"the weight model.layers.1.self_attn.q_proj.weight \(layer 1, module model.layers.1.self_attn.q_proj\) "
     "holds 1 NaN/inf values; .* re-save or re-download it"),
    ("analyze on a NaN weight", lambda f: A.analyze(
        f["nan weight"], n_passages=2, n_tokens=8, random_seeds=(), shuffle=False, cache=False), ValueError,
     r"model.layers.1.self_attn.q_proj.weight \(layer 1"),
    ("auto_map in the tokenizer config", lambda f: models.load_model(f["code in tokenizer"]), ValueError,
     r"its tokenizer_config.json has an auto_map \(AutoTokenizer -> \['evil.EvilTokenizer', .*\), which asks to run "
     r"Python code .* never runs a model's own code \(trust_remote_code=False\): use a model of a supported family"),
    ("auto_map in the config", lambda f: models.load_model(f["code in config"]), ValueError,
     r"its config.json has an auto_map \(AutoConfig -> evil.EvilConfig\), which asks to run Python code"),
    ("analyze a folder with code", lambda f: A.analyze(f["code in tokenizer"], n_passages=2, n_tokens=8), ValueError,
     "its tokenizer_config.json has an auto_map"),
    ("weights of another family", lambda f: models.load_model(f["other family"]), ValueError,
     r"the weights file .*llama-over-gpt2/model.safetensors leaves \d+ parameters at their random initial values "
     r"\(missing from the file: model.embed_tokens.weight, model.layers.0.self_attn.\S+ .*the file holds \d+ keys the "
     r"model does not have, such as transformer.h.0.attn.c_attn.bias\), so it would be measured as an untrained model"
     r".*save the model's own weights into its folder"),
    ("analyze weights of another family", lambda f: A.analyze(f["other family"], n_passages=2, n_tokens=8),
     ValueError, r"llama-over-gpt2/model.safetensors leaves \d+ parameters at their random initial values"),
    ("an attention weight lost", lambda f: models.load_model(f["lost attention"]), ValueError,
     r"lost-key/model.safetensors leaves 1 parameter at its random initial value \(missing from the file: "
     r"model.layers.1.self_attn.k_proj.weight\)"),
    ("weights of another shape", lambda f: models.load_model(f["other shape"]), ValueError,
     r"other-shape/model.safetensors leaves 6 parameters .*of another shape there: model.layers.0.mlp.down_proj.weight"
     r".* or fix its config.json"),
    ("zero layers", lambda f: models.load_model(f["zero layers"]), ValueError,
     r"num_hidden_layers=0; there is no attention layer to measure: give a model with at least one layer \(fix "
     r"num_hidden_layers in its config.json\)"),
]


# ------------------------------------------------------------------ text (the offline BERT tokenizer)
@pytest.fixture(scope="module")
def tok():
    return models.load_model("minilm-l6")[1]


TEXT = [
    ("texts string", lambda t: T.passages(t, 2, 16, texts="one long text"), TypeError,
     "texts must be a list of strings, got one string"),
    ("texts empty", lambda t: T.passages(t, 2, 16, texts=[]), ValueError, "texts must hold at least one string"),
    ("texts ints", lambda t: T.passages(t, 2, 16, texts=[1, 2]), TypeError, "texts must hold only strings; entry 0"),
    ("texts blank", lambda t: T.passages(t, 2, 16, texts=["", "  "]), ValueError, "texts holds only empty strings"),
    ("texts dict", lambda t: T.passages(t, 2, 16, texts={"a": "b"}), TypeError, "texts must be a list of strings"),
    ("texts None entry", lambda t: T.passages(t, 2, 16, texts=["a", None]), TypeError, "entry 1 is a NoneType"),
    ("too few passages", lambda t: T.passages(t, 50, 16, texts=["a short text"] * 2), ValueError,
     "the texts give only .* passages"),
    ("n_passages zero", lambda t: T.passages(t, 0, 16), ValueError, "n_passages must be a positive int"),
    ("n_passages float", lambda t: T.passages(t, 2.0, 16), ValueError, "n_passages must be a positive int"),
    ("n_passages bool", lambda t: T.passages(t, True, 16), ValueError, "n_passages must be a positive int"),
    ("n_tokens small", lambda t: T.passages(t, 2, 3), ValueError, "n_tokens must be an int of at least 4"),
    ("n_tokens float", lambda t: T.passages(t, 2, 16.0), TypeError, "n_tokens must be an int"),
    ("seed float", lambda t: T.passages(t, 2, 16, seed=0.5), TypeError, "seed must be an int"),
    ("tokenizer string", lambda t: T.passages("bert", 2, 16), TypeError, "tokenizer must be a Hugging Face tokenizer"),
    ("bos without one", lambda t: T.passages(t, 2, 16, bos=True), ValueError,
     "this tokenizer has no beginning-of-sequence token; pass bos=None"),
    ("bos string", lambda t: T.passages(t, 2, 16, bos="yes"), TypeError, "bos must be True, False or None"),
    ("encode string", lambda t: T.encode(t, "a text"), TypeError, "texts must be a list of strings, got one string"),
    ("encode empty", lambda t: T.encode(t, []), ValueError, "texts must hold at least one string"),
    ("encode max_tokens", lambda t: T.encode(t, ["a"], max_tokens=0), ValueError, "max_tokens must be at least 1"),
    ("encode tokenizer", lambda t: T.encode(None, ["a"]), TypeError, "tokenizer must be a Hugging Face tokenizer"),
]


# ------------------------------------------------------------------ extraction (a tiny Llama, built offline)
@pytest.fixture(scope="module")
def tiny():
    from transformers import AutoModelForCausalLM, LlamaConfig
    torch.manual_seed(0)
    config = LlamaConfig(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, hidden_size=32,
                         intermediate_size=64, vocab_size=100, max_position_embeddings=16)
    return AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()


IDS = torch.randint(1, 100, (2, 6), generator=torch.Generator().manual_seed(0))


def _edited(model, **config):
    """A copy of ``model`` whose config was changed after it was built (a model built outside load_model)."""
    import copy

    other = copy.deepcopy(model)
    for k, v in config.items():
        setattr(other.config, k, v)
    return other


def _without_layout(model, **config):
    """An :func:`_edited` copy of ``model`` whose attention modules lost their query map: of no known layout (a type
    not in ``FAMILIES`` with Llama's layout is read through it: tests/models/test_unlisted_families.py)."""
    other = _edited(model, **config)
    for layer in other.model.layers:
        del layer.self_attn.q_proj
    return other


def _with_memory(free: int, fn):
    """``fn()`` on a machine with ``free`` bytes available."""
    from unittest import mock

    from connlap_lite.models import memory

    with mock.patch.object(memory, "available_bytes", lambda device="cpu": free):
        return fn()


def _first(model, batch, **kw):
    return next(iter(C.attention_walks(model, batch, progress=False, **kw)))


EXTRACTION = [
    ("batch list", lambda m: _first(m, [1, 2, 3]), TypeError, "batch must be a tensor of token ids"),
    ("batch no ids", lambda m: _first(m, {"ids": IDS}), TypeError, "batch must be a tensor of token ids"),
    ("ids list", lambda m: _first(m, {"input_ids": [[1, 2]]}), TypeError, "input_ids must be a torch tensor"),
    ("ids float", lambda m: _first(m, IDS.float()), TypeError, "input_ids must hold integer token ids"),
    ("ids 1-d", lambda m: _first(m, IDS[0]), ValueError, r"input_ids must have shape \(batch, tokens\)"),
    ("ids empty", lambda m: _first(m, IDS[:, :0]), ValueError, r"input_ids must have shape \(batch, tokens\)"),
    ("ids beyond vocabulary", lambda m: _first(m, IDS + 100), ValueError, r"input_ids must be token ids in \[0, 100\)"),
    ("ids negative", lambda m: _first(m, IDS - 1000), ValueError, r"input_ids must be token ids in \[0, 100\)"),
    ("context too long", lambda m: _first(m, torch.ones(1, 20, dtype=torch.long)), ValueError,
     "input_ids have 20 tokens per passage, more than the 16 positions"),
    ("mask shape", lambda m: _first(m, {"input_ids": IDS, "attention_mask": torch.ones(2, 5)}), ValueError,
     "attention_mask must be a tensor of the shape of input_ids"),
    ("mask values", lambda m: _first(m, {"input_ids": IDS, "attention_mask": torch.full((2, 6), 2)}), ValueError,
     "attention_mask must hold integers 0"),
    ("mask float", lambda m: _first(m, {"input_ids": IDS, "attention_mask": torch.ones(2, 6) * 0.5}), ValueError,
     "attention_mask must hold integers 0"),
    ("mask empty row", lambda m: _first(m, {"input_ids": IDS, "attention_mask": torch.tensor([[1] * 6, [0] * 6])}),
     ValueError, "attention_mask leaves passage 1 without any real token"),
    ("layers out of range", lambda m: _first(m, IDS, layers=[5]), ValueError, r"layers must hold indices in \[0, 2\)"),
    ("layers float", lambda m: _first(m, IDS, layers=[0.5]), ValueError, r"layers must hold indices in \[0, 2\)"),
    ("layers int", lambda m: _first(m, IDS, layers=1), TypeError, "layers must be an iterable of layer indices"),
    ("layers string", lambda m: _first(m, IDS, layers="01"), TypeError, "layers must be an iterable"),
    ("walk index", lambda m: _first(m, IDS).walk(2), ValueError, r"i must be a passage index, an int in \[0, 2\)"),
    ("walk float index", lambda m: _first(m, IDS).walk(0.7), ValueError, "i must be a passage index"),
    ("walk int dtype", lambda m: _first(m, IDS).walk(0, dtype=torch.int64), TypeError,
     "dtype must be a floating torch dtype"),
    ("section index", lambda m: _first(m, IDS).section(-1), ValueError, "i must be a passage index"),
    ("reference index", lambda m: _first(m, IDS).reference(True), ValueError, "i must be a passage index"),
    ("head transports layer", lambda m: C.head_transports(m, 2), ValueError, r"layer must be an int in \[0, 2\)"),
    ("head transports float", lambda m: C.head_transports(m, 1.0), ValueError, r"layer must be an int in \[0, 2\)"),
    ("unsupported model", lambda m: _first(torch.nn.Linear(2, 2), IDS), ValueError, "model must be a Hugging Face"),
    ("walks of a model built elsewhere, heads not dividing", lambda m: _first(_edited(m, num_key_value_heads=3), IDS),
     ValueError, "num_attention_heads=4 is not a multiple of num_key_value_heads=3 .* fix one of them"),
    ("transports of a model built elsewhere, heads not dividing",
     lambda m: C.head_transports(_edited(m, num_key_value_heads=3), 0), ValueError,
     "num_attention_heads=4 is not a multiple of num_key_value_heads=3"),
    ("walks of a model built elsewhere, no layers", lambda m: _first(_edited(m, num_hidden_layers=0), IDS),
     ValueError, "num_hidden_layers=0; there is no attention layer to measure"),
    ("walks of a model of another family", lambda m: _first(_without_layout(m, model_type="mamba"), IDS), ValueError,
     r"unsupported architecture 'mamba' .*supported families"),
    ("walks beyond the memory", lambda m: _with_memory(1000, lambda: _first(m, IDS)), MemoryError,
     r"LlamaForCausalLM: 2 passages of 6 tokens need about \d+.\d+ GiB at the peak beyond the weights \(attention .*"
     r"\), but 0.00 GiB are available on cpu: pass fewer passages or tokens \(n_passages or n_tokens\)"),
    ("model in training mode", lambda m: _first(m.train(), IDS), ValueError,
     r"model is in training mode \(dropout is active\); call model.eval\(\)"),
]


# ------------------------------------------------------------------ analysis
PADDED = {"input_ids": IDS, "attention_mask": torch.tensor([[1] * 6, [1] * 4 + [0] * 2])}
GOOD = fake_report("m", 1e8, False)
def _overflowing(m):
    """A copy of the tiny model whose layer-1 value and output maps are 1e20: its attention output overflows
    float32 (every weight finite)."""
    import copy
    big = copy.deepcopy(m)
    with torch.no_grad():
        big.model.layers[1].self_attn.v_proj.weight.mul_(1e20)
        big.model.layers[1].self_attn.o_proj.weight.mul_(1e20)
    return big


def _on_meta(m):
    with torch.device("meta"):
        return type(m)(m.config)


ANALYSIS = [
    ("verify overflow", lambda m: __import__("connlap_lite.models.verify", fromlist=["check"]).check(_overflowing(m), IDS),
     ValueError,
     r"layer 1 of llama: the module's output holds NaN or inf .* not the adapter's error\): check the scale"),
    ("measure on the meta device", lambda m: A.measure(_on_meta(m), {"input_ids": IDS}, encoder=False), ValueError,
     "its weights are on the meta device .* load it with load_model or from_pretrained onto 'cpu'"),
    ("verify a meta batch", lambda m: __import__("connlap_lite.models.verify", fromlist=["verify"]).verify(m, IDS.to("meta")),
     ValueError, "batch is on the meta device .* give real token ids"),
    ("name None", lambda m: A.analyze(None), TypeError, "name must be a model short name"),
    ("n_passages one", lambda m: A.analyze("minilm-l6", n_passages=1), ValueError, "n_passages must be at least 2"),
    ("n_passages float", lambda m: A.analyze("minilm-l6", n_passages=2.5), TypeError, "n_passages must be an int"),
    ("n_tokens small", lambda m: A.analyze("minilm-l6", n_tokens=2), ValueError, "n_tokens must be at least 8"),
    ("n_tokens string", lambda m: A.analyze("minilm-l6", n_tokens="64"), TypeError, "n_tokens must be an int"),
    ("n_tokens beyond positions", lambda m: A.analyze("minilm-l6", n_passages=2, n_tokens=600, cache=False),
     ValueError, "n_tokens must be at most 512"),
    ("seed negative", lambda m: A.analyze("minilm-l6", seed=-3), ValueError, "seed must be at least 0"),
    ("random_seeds int", lambda m: A.analyze("minilm-l6", random_seeds=3), TypeError,
     "random_seeds must be a sequence of ints"),
    ("random_seeds float", lambda m: A.analyze("minilm-l6", random_seeds=(0.5,)), TypeError,
     "random_seeds entries must be an int"),
    ("random_seeds repeat", lambda m: A.analyze("minilm-l6", random_seeds=(1, 1)), ValueError,
     "random_seeds must not repeat"),
    ("texts string", lambda m: A.analyze("minilm-l6", texts="a text"), TypeError, "texts must be a list of strings"),
    ("device int", lambda m: A.analyze("minilm-l6", device=0), TypeError, "device must be a string"),
    ("measure padded", lambda m: A.measure(m, PADDED, encoder=False), ValueError,
     r"batch has padding tokens \(attention_mask 0\) in passages \[1\]"),
    ("measure list", lambda m: A.measure(m, [1, 2], encoder=False), TypeError, "batch must be a dict with 'input_ids'"),
    ("measure encoder flag", lambda m: A.measure(m, {"input_ids": IDS}, encoder=True), ValueError,
     "encoder=True but LlamaForCausalLM is causal"),
    ("measure beyond the memory", lambda m: _with_memory(1000, lambda: A.measure(m, {"input_ids": IDS},
                                                                                    encoder=False)),
     MemoryError, r"2 passages of 6 tokens need about .* GiB .*, walks 0.00 GiB\), but 0.00 GiB are available .* pass "
     "fewer passages or tokens"),
    ("measure too long", lambda m: A.measure(m, {"input_ids": torch.ones(2, 20, dtype=torch.long)}, encoder=False),
     ValueError, "more than the 16 positions"),
    ("curve metric", lambda m: record.layer_curve(GOOD, "nope"), ValueError, "metric must be one of"),
    ("curve condition", lambda m: record.layer_curve(GOOD, "head_defect", "shuffled"), ValueError,
     "condition must be one of the report's conditions"),
    ("curve not report", lambda m: record.layer_curve([], "tv"), TypeError, "report must be a report from"),
    ("trend metric", lambda m: record.depth_trend(GOOD, 3), ValueError, "metric must be one of"),
    ("trend damaged", lambda m: record.depth_trend({"conditions": {"trained": {"tv": []}}}, "tv"), ValueError,
     "must be a non-empty list of per-layer lists"),
]


# ------------------------------------------------------------------ scorecard
def _without(key):
    r = fake_report("m", 1e8, False)
    del r[key]
    return r


def _no_nulls():
    r = fake_report("m", 1e8, False)
    del r["conditions"]["random0"], r["conditions"]["random1"]
    return r


def _fake(**kw):
    from fake_reports import fake
    return fake(**kw)


def _edited_report(cond="trained", metric="tv_norm_nosink", layer=0, value=None, cut=None, **fields):
    """A report whose ``cond/metric`` list at ``layer`` holds ``value`` first (or is cut to ``cut`` values), and
    whose top-level ``fields`` are set (a report edited by hand)."""
    r = _fake()
    values = r["conditions"][cond][metric]
    if value is not None:
        values[layer] = [value] + values[layer][1:]
    if cut is not None:
        values[layer] = values[layer][:cut]
    return {**r, **fields}


SCORECARD = [
    ("passages edited up", lambda: S.scorecard([{**RP.resample(_fake(), [0, 1]).to_dict(), "passages": 16}]),
     ValueError, r"reports\[0\] is not a measurement record .*: \S+ layer 0 holds 2 values, not the 16 passages the "
     "record declares"),
    ("a boolean for a number", lambda: S.scorecard([_edited_report(value=True)]), ValueError,
     r"reports\[0\] .*trained/tv_norm_nosink layer 0 holds True, not a number"),
    ("a string for a number", lambda: S.scorecard([_edited_report(value="0.4")]), ValueError,
     r"trained/tv_norm_nosink layer 0 holds '0.4', not a number"),
    ("a list for a number", lambda: S.scorecard([_edited_report(value=[0.4])]), ValueError,
     r"trained/tv_norm_nosink layer 0 holds \[0.4\], not a number"),
    ("a passage cut from a null", lambda: S.scorecard([_edited_report("random2", "data_defect", 3, cut=5)]),
     ValueError, "random2/data_defect layer 3 holds 5 values, not the 12 passages the record declares"),
    ("a head cut", lambda: S.scorecard([_edited_report(metric="head_defect", layer=2, cut=3, heads=4)]), ValueError,
     "trained/head_defect layer 2 holds 3 values, not the 4 heads the record declares"),
    ("a head cut, no head count", lambda: S.scorecard([_edited_report(metric="head_defect", layer=2, cut=3)]),
     ValueError, "trained/head_defect layer 2 holds 3 values, layer 0 4"),
    ("passages a boolean", lambda: S.scorecard([_edited_report(passages=True)]), ValueError,
     "its field 'passages' is True, not a whole number of at least 1"),
    ("layers a string", lambda: S.scorecard([_edited_report(layers="9")]), ValueError,
     "its field 'layers' is '9', not a whole number"),
    ("parameters a boolean", lambda: S.scorecard([_edited_report(parameters=True)]), ValueError,
     "its field 'parameters' is True, not a number"),
    ("one model twice", lambda: S.scorecard([_fake(model="m"), _fake(model="n"), _fake(model="m", seed=1)]),
     ValueError, r"reports\[0\] and reports\[2\] are both reports on model 'm': a model counts once .*pass one report "
     "per model"),
    ("a Report edited by hand", lambda: record.Report(_edited_report(value=False), name="r.json"), ValueError,
     "r.json is not a measurement record .*trained/tv_norm_nosink layer 0 holds False, not a number"),
    ("scorecard empty", lambda: S.scorecard([]), ValueError, "reports is empty"),
    ("scorecard dict", lambda: S.scorecard(GOOD), TypeError, r"reports must be a list of reports.*\[report\]"),
    ("scorecard string", lambda: S.scorecard("m"), TypeError, "reports must be a list of reports"),
    ("scorecard None", lambda: S.scorecard(None), TypeError, "reports must be a list of reports"),
    ("scorecard not reports", lambda: S.scorecard([1, 2]), TypeError, r"reports\[0\] must be a report"),
    ("scorecard no model", lambda: S.scorecard([_without("model")]), ValueError, r"reports\[0\] lacks \['model'\]"),
    ("scorecard no nulls", lambda: S.scorecard([_no_nulls()]), ValueError, "has no random-init null"),
    ("e1 not report", lambda: RP.e1("m"), TypeError, r"reports\[0\] must be a report"),
    ("e1 metric", lambda: RP.e1(GOOD, metric="nope"), ValueError, "metric must be one of"),
    ("e1 no trained", lambda: RP.e1({**GOOD, "conditions": {"random0": {}}}), ValueError,
     "has no 'trained' condition"),
    ("e1 no nulls", lambda: RP.e1(_no_nulls()), ValueError, "has no random-init null"),
    ("e1 table dict", lambda: RP.e1_table(GOOD), TypeError, r"wrap a single report: \[report\]"),
    ("e2 missing metric", lambda: RP.e2({**GOOD, "conditions": {**GOOD["conditions"], "trained": {}}}), ValueError,
     "metric must be one of"),
    ("e2 old report", lambda: RP.e2(GOOD), ValueError, r"refresh=True"),
    ("e3 empty", lambda: RP.e3([], "head_defect"), ValueError, "reports is empty"),
    ("e3 metric", lambda: RP.e3([GOOD], "nope"), ValueError, "metric must be one of"),
    ("e3 no family", lambda: RP.e3([_without("family")], "head_defect"), ValueError, r"lacks \['family'\]"),
    ("e3 parameters zero", lambda: RP.e3([{**GOOD, "non_embedding_parameters": 0}], "head_defect"), ValueError,
     "non_embedding_parameters must be positive"),
    ("rule 1 parameters zero", lambda: rules_history.e3_rule1([{**GOOD, "parameters": 0}], "head_defect"), ValueError,
     "reports must count positive parameters"),
    ("slope n_boot", lambda: rules_history.scale_slope([GOOD], "head_defect", n_boot=0), ValueError, "n_boot must be at least 1"),
    ("late empty", lambda: record.late([]), ValueError, "values must be a non-empty list"),
    ("late fraction", lambda: record.late([[1.0]], fraction=2), ValueError, r"fraction must be a number in \(0, 1\]"),
    ("late value condition", lambda: record.late_value(GOOD, "head_defect", "shuffled"), ValueError,
     "condition must be one of"),
    ("substitute other passages", lambda: RP.substitute({**GOOD, "windows": [[0, 0]]},
                                                        {**GOOD, "passages": 99, "windows": [[0, 0]]}), ValueError,
     r"differ in \['passages'\]"),
    ("substitute other windows", lambda: RP.substitute({**GOOD, "windows": [[0, 0]]}, {**GOOD, "windows": [[0, 1]]}),
     ValueError, r"differ in \['windows'\]"),
    ("robustness resamples", lambda: S.robustness([GOOD], [], resamples=0), ValueError, "resamples must be"),
]


# ------------------------------------------------------------------ the command line (in process)
def _cli(*argv):
    from connlap_lite.__main__ import main
    return lambda: main(["analyze", *map(str, argv)])


CLI = [
    ("no model", _cli(), "the following arguments are required: model"),
    ("passages one", _cli("m", "--passages", 1), "--passages must be at least 2"),
    ("passages text", _cli("m", "--passages", "x"), "argument --passages: invalid int value"),
    ("passages negative", _cli("m", "--passages", -4), "--passages must be at least 2"),
    ("tokens small", _cli("m", "--tokens", 2), "--tokens must be at least 8"),
    ("tokens float", _cli("m", "--tokens", 8.5), "argument --tokens: invalid int value"),
    ("seed negative", _cli("m", "--seed", -1), "--seed must be a nonnegative int"),
    ("seed text", _cli("m", "--seed", "zero"), "argument --seed: invalid int value"),
    ("device gpu", _cli("m", "--device", "gpu"), "--device must be cpu, cuda, cuda:N or mps"),
    ("device cuda bad", _cli("m", "--device", "cuda:x"), "--device must be cpu, cuda, cuda:N or mps"),
    ("texts missing", _cli("m", "--texts", "no/such/file.txt"), "--texts no/such/file.txt: no such file"),
    ("unknown option", _cli("m", "--fast"), "unrecognized arguments: --fast"),
    ("json inside the model's folder", _cli(Path(__file__).parent, "--json", Path(__file__).parent / "r.json"),
     "is inside the model's folder"),
    ("figures inside the model's folder", _cli(Path(__file__).parent, "--figures", Path(__file__).parent / "figs"),
     "--figures " + str(Path(__file__).parent / "figs") + " is inside the model's folder"),
    ("json onto a file that is no report", _cli("m", "--json", __file__),
     "exists and is not a report written by analyze --json: it is not overwritten; give a new path"),
    ("no command", lambda: __import__("connlap_lite.__main__", fromlist=["main"]).main([]),
     "the following arguments are required: COMMAND"),
    ("bad command", lambda: __import__("connlap_lite.__main__", fromlist=["main"]).main(["measure"]),
     "invalid choice: 'measure'"),
]


@pytest.mark.parametrize("fn, err, pattern", table(WALKS))
def test_walks(fn, err, pattern):
    check(fn, err, pattern)


@pytest.mark.parametrize("fn, err, pattern", table(TRANSPORTS))
def test_transports(fn, err, pattern):
    check(fn, err, pattern)


@pytest.mark.parametrize("fn, err, pattern", table(ATTENTION))
def test_attention(fn, err, pattern):
    check(fn, err, pattern)


@pytest.mark.parametrize("fn, err, pattern", table(LAPLACIAN))
def test_laplacian(fn, err, pattern):
    check(fn, err, pattern)


@pytest.mark.parametrize("fn, err, pattern", table(METRICS))
def test_metrics(fn, err, pattern):
    check(fn, err, pattern)


@pytest.mark.parametrize("fn, err, pattern", table(MODELS))
def test_models(fn, err, pattern, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    check(fn, err, pattern)


@pytest.mark.parametrize("fn, err, pattern", table(WIDGETS))
def test_widgets(fn, err, pattern):
    check(fn, err, pattern)


@pytest.mark.parametrize("fn, err, pattern", table(FOLDERS))
def test_folders(fn, err, pattern, folders, tmp_path, monkeypatch):
    monkeypatch.setenv("CONNLAP_CACHE", str(tmp_path))
    check(lambda: fn(folders), err, pattern)
    # a refused model: nothing of it cached, converted or run (the code folders' evil.py writes RAN-CODE)
    assert [p for p in tmp_path.rglob("*") if p.is_file() and not p.name.endswith(".lock")] == []
    assert not [f for f in folders.values() if (f / "RAN-CODE").exists()]


@pytest.mark.parametrize("fn, err, pattern", table(TEXT))
def test_text(fn, err, pattern, tok):
    check(lambda: fn(tok), err, pattern)


@pytest.mark.parametrize("fn, err, pattern", table(EXTRACTION))
def test_extraction(fn, err, pattern, tiny):
    check(lambda: fn(tiny), err, pattern)
    tiny.eval()
    assert all(not m._forward_hooks for m in tiny.model.layers[0].modules())


@pytest.mark.parametrize("fn, err, pattern", table(ANALYSIS))
def test_analysis(fn, err, pattern, tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("CONNLAP_CACHE", str(tmp_path))
    check(lambda: fn(tiny), err, pattern)


@pytest.mark.parametrize("fn, err, pattern", table(SCORECARD))
def test_scorecard(fn, err, pattern):
    check(fn, err, pattern)


@pytest.mark.parametrize("fn, pattern", [pytest.param(fn, pat, id=name) for name, fn, pat in CLI])
def test_cli(fn, pattern, capsys):
    assert fn() == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    # the usage of the sub-command (of the whole command when none was named), then one error line
    usage, error = lines[:-1], lines[-1]
    assert error.startswith("error: ") and pattern in error, err
    assert usage[0].startswith("usage: python -m connlap_lite ") and all(l.startswith(" ") for l in usage[1:]), err
    command = "" if "COMMAND" in pattern or "invalid choice" in pattern else "analyze "
    assert usage[0].startswith(f"usage: python -m connlap_lite {command}[-h]"), err


def test_the_table_is_large_enough():
    tables = [WALKS, TRANSPORTS, ATTENTION, LAPLACIAN, METRICS, MODELS, FOLDERS, WIDGETS, TEXT, EXTRACTION, ANALYSIS,
              SCORECARD, CLI]
    assert sum(map(len, tables)) >= 200


# ------------------------------------------------------------------ valid edge cases, with their answers
def _float32_stationary():
    P = torch.softmax(torch.randn(6, 6, generator=torch.Generator().manual_seed(3)), -1)
    pi = C.stationary_distribution(P)
    return pi.dtype == f32 and torch.allclose(pi @ P, pi, atol=1e-6)


def _mixed_walk():
    P = np.array([[0.5, 0.5], [0.25, 0.75]])
    walk = C.ConnectionWalk(torch.tensor(P, dtype=f32), R)
    return np.allclose(walk.apply(np.eye(2)).numpy() if isinstance(walk.apply(np.eye(2)), torch.Tensor)
                       else walk.apply(np.eye(2)), P @ np.eye(2) @ R.T, atol=1e-6)


def _numpy_and_torch():
    O = torch.tensor(O2)
    return np.allclose(C.connection_laplacian(W2, O.float()), C.connection_laplacian(W2, O2), atol=1e-6)


def _one_token_walk_metrics():
    P = torch.ones(1, 1, dtype=f64)
    return (float(M.walk_distance(P, P)) == 0.0 and float(M.sym_spectrum(P)[0]) == pytest.approx(0.0)
            and torch.equal(M.without_sinks(P, [0]), P))


def _one_token_attention():
    walk = C.mha_walk(X[:1], W, causal=True)
    return torch.allclose(walk(X[:1]), C.multi_head_attention(X[:1], W, causal=True))


def _float32_reversible():
    P = torch.tensor([[0.5, 0.5, 0.0], [0.25, 0.5, 0.25], [0.0, 0.5, 0.5]], dtype=f32)
    return float(C.reversibility_defect(P)) < 1e-6


def _uniform_float32():
    U = M.uniform_walk(4, False, dtype=f32)
    return U.dtype == f32 and torch.allclose(U.sum(1), torch.ones(4))


def _spearman_small():
    """A trend over two points is undefined (rho is +-1 whatever they are), and says so."""
    from connlap_lite._backend import UndefinedWarning

    with pytest.warns(UndefinedWarning, match="Spearman's rho is undefined .* fewer than three points"):
        rho, p = stats.spearman([0, 1], [3.0, 1.0])
    return math.isnan(rho) and math.isnan(p)


def _isometry_float32():
    return float(C.isometry_defect(2 * torch.eye(3, dtype=f32))) < 1e-6


def _scorecard_single():
    from fake_reports import fake
    rows = S.scorecard([fake("m")])
    return {r["claim"] for r in rows} == {"E1", "E2", "E3"} and all(r["verdict"] in verdicts.VERDICTS for r in rows)


def _weakly_connected():
    """Two blocks linked by one edge of 1e-7: connected (the linked block is transient), pi unique."""
    P = np.kron(np.eye(2), np.full((2, 2), 0.5))
    P[0, 2] = 1e-7
    P[0] /= P[0].sum()
    return np.allclose(C.stationary_distribution(P), [0, 0, 0.5, 0.5])


def _float32_noise_in_float64():
    """A walk normalised in float32 and stored in float64 (rows off by ~1e-7): stochastic within the tolerance."""
    P = torch.softmax(torch.randn(64, 64, generator=torch.Generator().manual_seed(1)), -1).double()
    pi = C.stationary_distribution(P)
    return bool(torch.allclose(pi @ (P / P.sum(1, keepdim=True)), pi, atol=1e-10)) and \
        float(C.reversibility_defect(P, pi=pi)) >= 0


def _symmetry_zero_transport():
    """An edge whose transport is the zero map: the relative defect is undefined, NaN with its warning, not inf."""
    from connlap_lite._backend import UndefinedWarning

    T = np.zeros((2, 2, 2, 2))
    T[0, 0] = T[1, 1] = T[1, 0] = np.eye(2)
    with pytest.warns(UndefinedWarning, match="symmetry_defect is undefined .* the zero map"):
        value = float(C.symmetry_defect(C.ConnectionWalk(np.full((2, 2), 0.5), T)))
    return math.isnan(value)


EDGE = [("float32 stationary", _float32_stationary), ("mixed float32 P, float64 T", _mixed_walk),
        ("numpy with torch", _numpy_and_torch), ("n = 1 walk metrics", _one_token_walk_metrics),
        ("n = 1 attention", _one_token_attention), ("float32 reversible chain", _float32_reversible),
        ("float32 uniform walk", _uniform_float32), ("two-point spearman", _spearman_small),
        ("float32 isometry", _isometry_float32), ("one report scorecard", _scorecard_single),
        ("walk connected by 1e-7", _weakly_connected), ("float32 noise stored in float64", _float32_noise_in_float64),
        ("symmetry defect of a zero transport", _symmetry_zero_transport)]


@pytest.mark.parametrize("fn", [pytest.param(fn, id=name) for name, fn in EDGE])
def test_valid_edge_cases(fn):
    assert fn() is True
