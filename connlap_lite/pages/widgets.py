"""Interactive explorers: a real model's walks, holonomy on a cycle, and the conditions (S), (R), (M) under which
the generator is a connection Laplacian.

=====================  ===================================================================
explorer               what it shows (and the plain functions that compute it)
=====================  ===================================================================
``model_explorer``     a real model's walk, the gates of one query's edges, the head
                       transports' singular values and the defects of the heaviest edge
                       transports (:func:`layer_attention`, :func:`model_view`)
``holonomy_explorer``  a rotation connection on a cycle: the Laplacian's spectrum and
                       kernel against the holonomy angle (:mod:`~connlap_lite.pages.toys`'
                       ``cycle_connection``, ``holonomy_spectrum``)
``conditions_lab``     (S), (R) and (M) switched on and off: the generator's spectrum and
                       the sign of the Dirichlet energy (:mod:`~connlap_lite.pages.toys`'
                       ``conditions_walk``, ``conditions_report``)
=====================  ===================================================================

Every number a widget shows comes from a plain function that knows nothing of widgets,
and every picture from a ``*_figure`` function that the book also calls to draw the
initial state as an ordinary figure.  ipywidgets is imported inside the three widget
builders only: ``import connlap_lite`` never needs it; import this module explicitly,
``from connlap_lite.pages import widgets``.

Chapter: *Interactive explorers* (``book/interactive/explorers.ipynb``).
"""
from __future__ import annotations

import functools
import html
import io
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import torch

from ..measure import metrics as M
from .._backend import check_index, integer
from ..attention import walk_from_heads
from ..measure.edges import edge_defects
from ..models.extraction import attention_walks, head_transports
from .toys import KERNEL_TOL, VERDICT_TOL, ConditionsReport, conditions_report, conditions_walk, holonomy_spectrum
from ..transports import HeadTransports


def _png(fig, dpi: int = 90) -> bytes:
    """``fig`` as PNG bytes for an ``ipywidgets.Image``, then freed.

    The explorers draw into an ``Image`` widget rather than an ``Output`` widget: a notebook executed by nbclient
    (the book's build, ``make colab``) answers every output an ``Output`` widget captures with a message on the
    kernel's shell channel, which can hide the cell's own reply from nbclient until its timeout (jupyter/nbclient#312);
    an image is plain widget state and needs no such answer.

    >>> fig = plt.figure(figsize=(1, 1))
    >>> _png(fig)[:8] == b"\\x89PNG\\r\\n\\x1a\\n", plt.fignum_exists(fig.number)
    (True, False)
    """
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    plt.close(fig)
    return buffer.getvalue()


def _picture(widgets):
    """The ``Image`` widget an explorer draws its figure into (the column's width at most)."""
    return widgets.Image(format="png", layout=widgets.Layout(max_width="100%"))


def _follow(controls: dict, draw) -> None:
    """Call ``draw(**values)`` now and whenever one of ``controls`` changes value."""
    def update(change=None):
        draw(**{name: c.value for name, c in controls.items()})

    for c in controls.values():
        c.observe(update, "value")
    update()


# --------------------------------------------------------------------- holonomy on a cycle


def holonomy_figure(n: int, angle: float, *, tol: float = KERNEL_TOL):
    """Left: the spectrum of ``L`` at ``angle``; right: the spectrum against the holonomy angle."""
    eig, dim = holonomy_spectrum(n, angle, tol=tol)
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(9, 3.2))
    kernel = eig < tol
    ax0.plot(np.flatnonzero(~kernel), eig[~kernel], "o", color="C0", label="eigenvalues")
    ax0.plot(np.flatnonzero(kernel), eig[kernel], "o", color="C3", label="kernel (parallel sections)")
    ax0.set_ylim(-0.1, 2.1)
    ax0.set_xlabel("index")
    ax0.set_ylabel("eigenvalue of $L$")
    ax0.set_title(f"n = {n}, holonomy {np.degrees(angle):.0f}°: kernel dimension {dim}", fontsize=10)
    ax0.text(0.03, 0.9, f"smallest eigenvalue {eig[0]:.2g}", transform=ax0.transAxes, fontsize=8)
    ax0.legend(fontsize=8, loc="lower right")
    degrees = np.linspace(-180, 180, 121)
    curves = np.array([holonomy_spectrum(n, np.radians(a), tol=tol)[0] for a in degrees])
    ax1.plot(degrees, curves, color="C0", lw=0.8)
    ax1.axvline(np.degrees(angle), color="C3", ls="--", lw=1)
    ax1.set_xlabel("holonomy angle (degrees)")
    ax1.set_ylabel("eigenvalues of $L$")
    ax1.set_title("the whole spectrum as the holonomy turns", fontsize=10)
    fig.tight_layout()
    return fig


def _slider(widgets, value, name: str, low: int, high: int, step: int = 1, description: str = ""):
    """An ``IntSlider`` from ``low`` to ``high`` showing exactly ``value``: a value the slider would move (out
    of its range, off its steps, not an int) is refused, naming the argument, instead of shown as another.

    >>> import ipywidgets
    >>> _slider(ipywidgets, 2, "n", 3, 16).value
    Traceback (most recent call last):
    ...
    ValueError: n must be in [3, 16] (the slider's range), got 2
    """
    as_int = integer(value)
    if as_int is None:
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    if not low <= as_int <= high:
        raise ValueError(f"{name} must be in [{low}, {high}] (the slider's range), got {as_int}")
    if (as_int - low) % step:
        raise ValueError(f"{name} must be a multiple of {step} (the slider's step) in [{low}, {high}], got {as_int}")
    return widgets.IntSlider(value=as_int, min=low, max=high, step=step, description=description or name)


def holonomy_explorer(n: int = 8, degrees: int = 0):
    """A slider for the holonomy angle (and one for the cycle length) over the figure of
    :func:`holonomy_figure`; ``.controls`` holds the sliders and ``.readout`` the kernel dimension.

    Chapter: *Interactive explorers*.
    """
    import ipywidgets as widgets

    angle = _slider(widgets, degrees, "degrees", -180, 180, 5, "holonomy (°)")
    size = _slider(widgets, n, "n", 3, 16, description="cycle n")
    readout, picture = widgets.HTML(), _picture(widgets)

    def draw(n, degrees):
        eig, dim = holonomy_spectrum(n, np.radians(degrees))
        readout.value = (f"kernel dimension <b>{dim}</b> (eigenvalues below {KERNEL_TOL:g}); "
                         f"smallest eigenvalue {eig[0]:.3g}")
        picture.value = _png(holonomy_figure(n, np.radians(degrees)))

    _follow({"n": size, "degrees": angle}, draw)
    box = widgets.VBox([widgets.HBox([angle, size]), readout, picture])
    box.controls, box.readout = {"degrees": angle, "n": size}, readout
    return box


# ------------------------------------------------------------------------ conditions lab


def conditions_figure(report: ConditionsReport, title: str = ""):
    """Left: the spectrum in the complex plane against ``[0, 2]``; right: the energy form's
    eigenvalues (the energies of its eigen-sections) and, in grey, those of random sections."""
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(9, 3.4))
    t = np.linspace(0, 2 * np.pi, 200)
    ax0.plot(1 + np.cos(t), np.sin(t), color="0.7", lw=0.8, ls=":", label="$|z - 1| = 1$")
    ax0.plot([0, 2], [0, 0], color="C2", lw=4, alpha=0.4, label="[0, 2]")
    ax0.plot(report.spectrum.real, report.spectrum.imag, "o", color="C0" if report.holds else "C3", ms=5)
    ax0.set_aspect("equal")
    ax0.set_xlabel("Re λ")
    ax0.set_ylabel("Im λ")
    ax0.set_title("spectrum of $L$" + (f" ({title})" if title else ""), fontsize=10)
    ax0.legend(fontsize=7, loc="upper right")
    negative = report.form < -VERDICT_TOL
    ax1.axhline(0, color="k", lw=1)
    ax1.plot(np.flatnonzero(~negative), report.form[~negative], "o", color="C0", ms=4)
    ax1.plot(np.flatnonzero(negative), report.form[negative], "o", color="C3", ms=4,
             label="negative energy" if negative.any() else None)
    ax1.plot(np.full(len(report.energies), len(report.form) + 1.5), report.energies, "_", color="0.5",
             ms=8, label="random sections")
    ax1.set_xlabel("eigen-section of the energy form")
    ax1.set_ylabel(r"$\langle f, Lf\rangle_\pi / \langle f, f\rangle_\pi$")
    ax1.set_title(f"Dirichlet energy: least {report.min_energy:.3f}", fontsize=10)
    ax1.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return fig


def _switches(stochastic: bool, reversible: bool, isometric: bool) -> str:
    return ", ".join(f"{c} {'on' if on else 'off'}" for c, on in
                     (("S", stochastic), ("R", reversible), ("M", isometric)))


def conditions_lab(stochastic: bool = True, reversible: bool = True, isometric: bool = True, seed: int = 0):
    """Three switches for (S), (R) and (M) and a seed, over :func:`conditions_figure`;
    ``.controls`` holds the switches and ``.readout`` the verdict.

    Chapter: *Interactive explorers*.
    """
    import ipywidgets as widgets

    def toggle(value, label):
        return widgets.ToggleButton(value=value, description=label, layout=widgets.Layout(width="auto"))

    controls = {"stochastic": toggle(stochastic, "(S) stochastic"),
                "reversible": toggle(reversible, "(R) reversible"),
                "isometric": toggle(isometric, "(M) metric-compatible"),
                "seed": _slider(widgets, seed, "seed", 0, 9)}
    readout, picture = widgets.HTML(), _picture(widgets)

    def draw(stochastic, reversible, isometric, seed):
        report = conditions_report(conditions_walk(stochastic, reversible, isometric, seed=seed))
        verdict = "all three consequences hold" if report.holds else "a consequence fails"
        d = report.defects
        readout.value = (f"<b>{verdict}</b>: spectrum real {report.real}, in [0, 2] {report.in_range}, "
                         f"least energy {report.min_energy:.3f}.  Defects: "
                         + ", ".join(f"{k} {v:.2f}" for k, v in d.items()))
        picture.value = _png(conditions_figure(report, _switches(stochastic, reversible, isometric)))

    _follow(controls, draw)
    box = widgets.VBox([widgets.HBox(list(controls.values())), readout, picture])
    box.controls, box.readout = controls, readout
    return box


# ------------------------------------------------------------------------- model explorer
@dataclass
class ModelView:
    """One layer of a real model as :func:`model_view` reads it."""

    walk: torch.Tensor          # (n, n) head ``head``'s attention, or the layer's walk P (mean over heads)
    gates: torch.Tensor         # (H, n) the gates gamma^h_{q j} of the query's edges
    head_sv: torch.Tensor       # (H, r) singular values of each head transport T_h
    head_defect: torch.Tensor   # (H,) scaled-isometry defect of each T_h (rank d_h)
    edges: list                 # the heaviest edges (i, j) of ``walk``, off the diagonal and the sinks
    edge_defect: torch.Tensor   # (m,) rank-free defect of each edge transport T_ij (the heads' gated mixture)
    head: int | None
    query: int


def layer_attention(model, batch, *, passage: int = 0) -> list[torch.Tensor]:
    """Every layer's attention ``(H, n, n)`` for one passage of ``batch``, on its real tokens, float64.

    Chapter: *Interactive explorers*.
    """
    attention = []
    for lw in attention_walks(model, batch, progress=False):
        keep = lw.tokens[passage]
        attention.append(lw.attention[passage][:, keep][:, :, keep].double().cpu())
    return attention


def model_view(attention, heads: HeadTransports, *, head: int | None = None, query: int = 0,
               n_edges: int = 4, sinks=()) -> ModelView:
    """The model explorer's numbers for one layer: its walk, the query's gates, and the defects.

    Parameters
    ----------
    attention : (H, n, n) the layer's attention for one passage (:func:`layer_attention`)
    heads : the layer's head transports (:func:`connlap_lite.head_transports`)
    head : a head to show, or None for the layer's walk ``P`` (the mean over heads)
    query : the token whose edges' gates ``gamma^h_{qj} = A^h_qj / sum_h A^h_qj`` are shown
    n_edges : how many of the heaviest edges of the shown walk get their transport's defect
    sinks : token positions left out of those edges (the attention sinks)

    The layer is read as the book's multi-head walk (:func:`connlap_lite.attention.walk_from_heads`): its
    ``P`` is the walk shown, and its :class:`connlap_lite.MixtureTransport` holds the gates (as its weights
    ``H gamma^h_ij``) and the head transports.  The edge transports ``T_ij = H sum_h gamma^h_ij T_h`` are never
    formed: their defects come from the factors (:func:`connlap_lite.measure.edges.edge_defects`, as in ``analyze``).

    Chapter: *Interactive explorers*.
    """
    A = torch.as_tensor(attention).double()
    if A.ndim != 3 or A.shape[1] != A.shape[2]:
        raise ValueError(f"attention must have shape (H, n, n), got {tuple(A.shape)}")
    H, n, _ = A.shape
    if head is not None and not 0 <= head < H:
        raise ValueError(f"head must be None (the layer's walk) or an int in [0, {H}), got {head!r}")
    if not 0 <= query < n:
        raise ValueError(f"query must be a token position in [0, {n}), got {query!r}")
    layer = walk_from_heads(A, heads.to(device="cpu"))     # P = mean of heads, gated mixture transport
    mixture = layer.transport                               # weights H gamma^h_ij, heads T_h (float64)
    walk = layer.P if head is None else A[head]
    allowed = ~torch.eye(n, dtype=torch.bool)
    allowed[:, list(sinks)] = False
    allowed[list(sinks), :] = False
    flat = torch.where(allowed, walk, torch.zeros_like(walk)).flatten()
    top = [int(t) for t in flat.topk(min(n_edges, n * n)).indices if flat[t] > 0]
    edges = [(t // n, t % n) for t in top]
    rows = torch.tensor([e[0] for e in edges], dtype=torch.long)
    cols = torch.tensor([e[1] for e in edges], dtype=torch.long)
    return ModelView(walk=walk, gates=mixture.weights[:, query] / H, head_sv=heads.singular_values().double().cpu(),
                     head_defect=M.scaled_isometry_defect(heads).cpu(), edges=edges,
                     edge_defect=edge_defects(A, mixture.heads, rows, cols),    # T_ij's, factored
                     head=head, query=query)


def model_figure(view: ModelView, title: str = ""):
    """Four panels: the walk, the query's gates, the head transports' singular values, the edge defects."""
    fig, axes = plt.subplots(2, 2, figsize=(9, 7))
    (ax0, ax1), (ax2, ax3) = axes
    who = "layer walk P (mean over heads)" if view.head is None else f"head {view.head}'s attention"
    ax0.imshow(view.walk.numpy(), cmap="viridis")
    ax0.axhline(view.query, color="w", lw=0.6, ls=":")
    for i, j in view.edges:
        ax0.plot(j, i, "s", mfc="none", mec="C3", ms=7)
    ax0.set_title(f"{title}{': ' if title else ''}{who}", fontsize=9)
    ax0.set_xlabel("key j")
    ax0.set_ylabel("query i")
    ax1.imshow(view.gates.numpy(), cmap="magma", aspect="auto", vmin=0, vmax=1)
    ax1.set_title(rf"gates $\gamma^h_{{qj}}$ of query q = {view.query}'s edges", fontsize=9)
    ax1.set_xlabel("key j")
    ax1.set_ylabel("head h")
    H = view.head_sv.shape[0]
    for h in range(H):
        chosen = h == view.head
        ax2.plot(view.head_sv[h].sort(descending=True).values.numpy(), color="C3" if chosen else "0.6",
                 lw=2 if chosen else 0.8, zorder=3 if chosen else 2)
    ax2.set_yscale("log")
    ax2.set_xlabel("index")
    ax2.set_ylabel("singular value")
    shown = f"head {view.head}: defect {float(view.head_defect[view.head]):.3f}" if view.head is not None else \
        f"mean defect {float(view.head_defect.mean()):.3f}"
    ax2.set_title(f"head transports T_h ({shown})", fontsize=9)
    labels = [f"{i}←{j}" for i, j in view.edges]
    ax3.bar(range(len(labels)), view.edge_defect.numpy(), color="C0")
    ax3.set_xticks(range(len(labels)), labels)
    ax3.set_ylim(0, 1)
    ax3.set_xlabel("edge i←j (heaviest first)")
    ax3.set_ylabel("rank-free defect")
    ax3.set_title("edge transports T_ij: distance to a scaled isometry", fontsize=9)
    fig.tight_layout()
    return fig


N_PASSAGES = 4     # passages offered by the model explorer


@functools.lru_cache(maxsize=2)
def _loaded(name: str):
    from ..models.load import load_model

    return load_model(name)


@functools.lru_cache(maxsize=4)
def _batch(name: str, n_tokens: int) -> dict:
    from ..models.text import passages

    return passages(_loaded(name)[1], n_passages=N_PASSAGES, n_tokens=n_tokens, seed=0)


@functools.lru_cache(maxsize=8)
def _passage(name: str, passage: int, n_tokens: int):
    """A model's attention on one passage (all layers), its tokens, and its text; cached."""
    model, tokenizer = _loaded(name)
    one = {k: v[passage:passage + 1] for k, v in _batch(name, n_tokens).items()}
    ids = one["input_ids"][0]
    return layer_attention(model, one), tokenizer.convert_ids_to_tokens(ids), tokenizer.decode(ids)


@functools.lru_cache(maxsize=16)
def _heads(name: str, layer: int) -> HeadTransports:
    return head_transports(_loaded(name)[0], layer)


def model_explorer(model: str = "minilm-l6", *, layer: int = 0, head: int | None = None, passage: int = 0,
                   query: int = 1, n_tokens: int = 32):
    """Controls for model, passage, layer, head and query token over :func:`model_figure`.

    ``model`` is an offline short name (:data:`connlap_lite.models.offline.OFFLINE`).  Each model is
    loaded once and each passage run through it once (cached); a control change recomputes
    only the shown layer.  ``.controls`` holds the controls, ``.readout`` a summary and
    ``.view`` the current :class:`ModelView`.

    Chapter: *Interactive explorers*.
    """
    import ipywidgets as widgets

    from ..measure.metrics import detect_sinks
    from ..models.offline import OFFLINE

    if model not in OFFLINE:
        raise ValueError(f"model must be an offline short name, one of {list(OFFLINE)}; got {model!r}")
    passage = check_index(passage, "passage", N_PASSAGES)
    controls = {"model": widgets.Dropdown(options=list(OFFLINE), value=model, description="model"),
                "passage": widgets.Dropdown(options=list(range(N_PASSAGES)), value=passage, description="passage"),
                "layer": widgets.IntSlider(value=0, min=0, max=0, description="layer"),
                "head": widgets.Dropdown(options=[("mean (P)", None)], value=None, description="head"),
                "query": _slider(widgets, query, "query", 0, n_tokens - 1, description="query token")}
    readout, picture = widgets.HTML(), _picture(widgets)
    box = widgets.VBox([widgets.HBox([controls["model"], controls["passage"]]),
                        widgets.HBox([controls["layer"], controls["head"], controls["query"]]), readout, picture])
    box.controls, box.readout, box.view = controls, readout, None
    busy = [False]

    def fit(attention, layer_value, head_value):
        """Ranges of the layer and head controls for the current model, without redrawing."""
        busy[0] = True
        try:
            L, H = len(attention), attention[0].shape[0]
            controls["layer"].max = L - 1
            controls["layer"].value = min(layer_value, L - 1)
            controls["head"].options = [("mean (P)", None)] + [(f"head {h}", h) for h in range(H)]
            controls["head"].value = head_value if head_value is None or head_value < H else None
        finally:
            busy[0] = False

    def refresh(change=None):
        if busy[0]:
            return
        name, p = controls["model"].value, controls["passage"].value
        try:
            attention, tokens, text = _passage(name, p, n_tokens)
            if change is None or change["owner"] in (controls["model"], controls["passage"]):
                fit(attention, controls["layer"].value if change else layer, controls["head"].value if change else head)
            l, h, q = controls["layer"].value, controls["head"].value, controls["query"].value
            # the layer's sink columns read from its walks, as the chapters read them (metrics.detect_sinks)
            view = model_view(attention[l], _heads(name, l), head=h, query=q, sinks=detect_sinks(attention[l]))
        except (ImportError, OSError, ValueError) as exc:
            readout.value = f"<b>cannot show {name}</b>: {html.escape(str(exc))}"
            picture.value = b""
            return
        box.view = view
        readout.value = (f"<b>{name}</b>, layer {l}, {'mean walk' if h is None else f'head {h}'}; "
                         f"query token {q} = <code>{html.escape(tokens[q])}</code>; heaviest edges' rank-free defect "
                         f"{float(view.edge_defect.mean()):.3f}, head transports' scaled-isometry defect "
                         f"{float(view.head_defect.mean()):.3f} (mean).<br><i>{html.escape(text[:160])}…</i>")
        picture.value = _png(model_figure(view, name))

    for c in controls.values():
        c.observe(refresh, "value")
    refresh()
    return box
