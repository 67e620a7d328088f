"""Figures shared by the empirical chapters and the command line, sized to be read at column width.

``layer_curves``     one panel per report: a metric against depth, with bootstrap bands, against the nulls;
``against_null``     each model's registered metric against the strongest null its rule names (the chapters'
                     opening figures);
``metric_grid``      a metric with its sinks kept (top row) and removed (bottom row), one column per model;
``verdict_grid``     the scorecard's grid: one cell per claim and model, coloured by its verdict.
(A figure is handed to the book by :func:`connlap_lite.pages.edition.glue_figure`.)

Every figure is drawn under :func:`legible`: tick labels and legends at 9 pt or more, for a page column of
about 7 inches.

Chapters: *E1*, *E2*, *E3*, *Scorecard*.
"""
from __future__ import annotations

from contextlib import contextmanager

import matplotlib.pyplot as plt
import numpy as np

from ..verdicts.record import layer_curve, layer_means, random_nulls, third
from ..verdicts.rules import E1_METRIC, INNER_NULLS

STYLE = {"trained": dict(color="C0", lw=2), "random": dict(color="C0", lw=2),
         "random0": dict(color="0.45", ls="--"), "random1": dict(color="0.65", ls="--"),
         "shuffled": dict(color="C1", ls=":")}
WIDTH = 7.0          # inches: the page column
FONT = {"font.size": 10, "axes.titlesize": 10, "axes.labelsize": 10, "xtick.labelsize": 9,
        "ytick.labelsize": 9, "legend.fontsize": 9, "figure.titlesize": 11}
# one colour per verdict word; a word the rules add later gets the neutral grey
VERDICT_COLOURS = {"holds": "#1a9850", "partly": "#fee08b", "does not hold": "#d73027",
                   "inconclusive": "#bdbdbd", "not testable": "#f0f0f0",
                   "agree": "#1a9850", "disagree": "#d73027", "not comparable": "#f0f0f0"}


@contextmanager
def legible():
    """Matplotlib settings under which a figure of :data:`WIDTH` inches reads at 9 pt or more."""
    with plt.rc_context(FONT):
        yield


def _band(ax, rep, metric: str, cond: str, n_boot: int, *, alpha: float = 0.15, **line) -> np.ndarray:
    """One condition's per-layer mean of ``metric`` as a line on ``ax`` (matplotlib ``line`` keywords) and its 95%
    bootstrap band in the line's colour; the layers (the x values) are returned."""
    mean, lo, hi = layer_curve(rep, metric, cond, n_boot=n_boot)
    x = np.arange(len(mean))
    ax.plot(x, mean, **line)
    ax.fill_between(x, lo, hi, color=line.get("color", "C0"), alpha=alpha, lw=0)
    return x


def layer_curves(reports: list[dict], metric: str, conditions=("trained", "random0", "random1", "shuffled"),
                 *, axes=None, ylabel: str | None = None, n_boot: int = 1000):
    """One panel per report: ``metric`` against layer index, with 95% bootstrap bands, against the nulls.

    ``axes``: one matplotlib Axes per report (a single Axes is accepted for a single report);
    by default a new figure with a row of panels. Returns the figure.
    """
    if axes is None:
        fig, axes = plt.subplots(1, len(reports), figsize=(3.2 * len(reports), 2.8), squeeze=False, sharey=True)
        axes = list(axes[0])
    else:
        axes = list(np.atleast_1d(axes).ravel())
        fig = axes[0].figure
    if len(axes) != len(reports):
        raise ValueError(f"axes must hold one Axes per report: got {len(axes)} for {len(reports)} reports")
    for ax, rep in zip(axes, reports):
        for cond in conditions:
            if metric not in rep["conditions"].get(cond, {}):
                continue
            _band(ax, rep, metric, cond, n_boot, label=cond, **STYLE.get(cond, {}))
        ax.set_title(rep["model"], fontsize=10)
        ax.set_xlabel("layer")
    axes[0].set_ylabel(ylabel or metric)
    axes[0].legend(fontsize=9)
    fig.tight_layout()
    return fig


def null_source(report: dict, metric: str, null: str) -> tuple[str, str]:
    """Where a named null of ``metric`` is stored in ``report``: ``(key, condition)``.

    A whole-model null (``random0``, ``shuffled``) is a condition measured with the same metric; a null inside
    the trained condition (``cross-passage``, ``positional``) has a key of its own.

    >>> rep = {"conditions": {"trained": {"m": [[1.0]]}, "random0": {"m": [[2.0]]}}}
    >>> null_source(rep, "m", "random0"), null_source(rep, "tv_norm_nosink", "positional")
    (('m', 'random0'), ('positional_tv_norm_nosink', 'trained'))
    """
    if null in INNER_NULLS:
        return INNER_NULLS[null], "trained"
    if null in report.get("conditions", {}):
        return metric, null
    raise ValueError(f"null must be a condition of the report {sorted(report.get('conditions', {}))} or one of "
                     f"{sorted(INNER_NULLS)}, got {null!r}")


def _grid(n: int, height: float):
    return _grid_cols(n, 2 if n > 1 else 1, height)


def _grid_cols(n: int, cols: int, height: float):
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(WIDTH, height * rows), squeeze=False)
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    return fig, list(axes.ravel()[:n])


def against_null(reports: list[dict], metric: str, strongest: dict[str, str], *, xlabel: str = "layer",
                 ylabel: str | None = None, n_boot: int = 1000):
    """Each model's ``metric`` (trained, with its 95% band over passages) against the strongest null its rule
    names (``strongest``: ``{model: null}``, e.g. the rows' ``strongest_null``), one panel per model, two a row.

    Two curves a panel: what the rule compares. Returns the figure.
    """
    missing = [r["model"] for r in reports if r["model"] not in strongest]
    if missing:
        raise ValueError(f"strongest must name a null for every report's model; missing {missing}")
    with legible():
        fig, axes = _grid(len(reports), 2.2)
        for ax, rep in zip(axes, reports):
            null = strongest[rep["model"]]
            for key, cond, label, colour, ls in ((metric, "trained", "trained", "C0", "-"),
                                                 (*null_source(rep, metric, null), "strongest null", "C3", "--")):
                x = _band(ax, rep, key, cond, n_boot, alpha=0.18, color=colour, lw=2 if ls == "-" else 1.5, ls=ls,
                          label=label)
            k = third(len(x))                               # the last third: what the level condition compares
            ax.axvspan(len(x) - k - 0.5, len(x) - 0.5, color="0.92", zorder=0, lw=0)
            ax.set_title(f"{rep['model']} (null: {null})")
            ax.locator_params(axis="x", nbins=5)
        for ax in axes[-2:]:
            ax.set_xlabel(xlabel)
        for ax in axes[::2]:
            ax.set_ylabel(ylabel or metric)
        handles, labels = axes[0].get_legend_handles_labels()
        handles.append(plt.Rectangle((0, 0), 1, 1, color="0.92"))
        labels.append("last third of the layers")
        fig.legend(handles, labels, loc="lower center", ncol=3, frameon=False)
        fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def metric_grid(reports: list[dict], metrics: list[str], *, ylabels: list[str] | None = None,
                conditions=("trained", "random0", "random1", "shuffled"), xlabel: str = "layer",
                log=False, n_boot: int = 1000):
    """One row per metric (e.g. a metric with its sinks kept and removed), one column per model, the trained
    curve against the nulls in ``conditions``, with one legend for the figure (``log``: one flag, or one per
    row). Returns the figure."""
    from matplotlib.ticker import NullFormatter

    ylabels = list(metrics) if ylabels is None else list(ylabels)
    logs = [log] * len(metrics) if isinstance(log, bool) else list(log)
    with legible():
        fig, axes = plt.subplots(len(metrics), len(reports), figsize=(WIDTH, 1.9 * len(metrics) + 0.6),
                                 squeeze=False)
        for i, metric in enumerate(metrics):
            for j, rep in enumerate(reports):
                ax = axes[i, j]
                for cond in conditions:
                    if metric not in rep["conditions"].get(cond, {}):
                        continue
                    _band(ax, rep, metric, cond, n_boot, label=cond, **STYLE.get(cond, {}))
                if logs[i]:
                    ax.set_yscale("log")
                    ax.yaxis.set_minor_formatter(NullFormatter())
                ax.locator_params(axis="x", nbins=4)
                if i == 0:
                    ax.set_title(rep["model"].split("-")[0])
                if i == len(metrics) - 1:
                    ax.set_xlabel(xlabel)
            axes[i, 0].set_ylabel(ylabels[i])
        handles, labels = axes[0, 0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False)
        fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def all_nulls(reports: list[dict], metric: str, *, xlabel: str = "step l to l+1", ylabel: str | None = None):
    """Each model's ``metric`` against every registered null at once: the random-init seeds as a grey range,
    the shuffled passages, and the nulls inside the trained model (cross-passage, positional). Returns the
    figure."""
    with legible():
        fig, axes = _grid(len(reports), 2.3)
        for ax, rep in zip(axes, reports):
            seeds = np.array([layer_means(rep, metric, c) for c in random_nulls(rep)])
            x = np.arange(seeds.shape[1])
            ax.fill_between(x, seeds.min(0), seeds.max(0), color="0.6", alpha=0.4, lw=0,
                            label=f"random init ({len(seeds)} seeds)")
            if metric in rep["conditions"].get("shuffled", {}):
                ax.plot(x, layer_means(rep, metric, "shuffled"), label="shuffled", **STYLE["shuffled"])
            for (name, key), colour in zip(INNER_NULLS.items(), ("C3", "C2")):
                if metric == E1_METRIC and key in rep["conditions"]["trained"]:
                    ax.plot(x, layer_means(rep, key), color=colour, lw=1.5, ls="--", label=name)
            ax.plot(x, layer_means(rep, metric), label="trained", **STYLE["trained"])
            ax.set_title(rep["model"])
        for ax in axes[-2:]:
            ax.set_xlabel(xlabel)
        for ax in axes[::2]:
            ax.set_ylabel(ylabel or metric)
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=3, frameon=False)
        fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def profiles(values: dict[str, list[float]], *, xlabel: str, ylabel: str):
    """One line per model over a small integer axis starting at 1 (``values``: ``{model: [y_1, y_2, ...]}``),
    e.g. the deep part of the layer-separation profile. Returns the figure."""
    with legible():
        fig, ax = plt.subplots(figsize=(WIDTH * 0.6, 2.8))
        for model, ys in values.items():
            ax.plot(np.arange(1, len(ys) + 1), ys, "o-", label=model)
        ax.set_xticks(np.arange(1, max(len(v) for v in values.values()) + 1))
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.legend(frameon=False, loc="best")
        fig.tight_layout()
    return fig


def curve_grid(reports: list[dict], rows: list[list[tuple]], *, ylabels: list[str], xlabel: str = "layer",
               n_boot: int = 1000):
    """One row per entry of ``rows``, one column per model: each row a list of curves ``(key, condition, label,
    style)`` (a key missing from a report is skipped), drawn with its 95% bootstrap band; one legend for all rows,
    under the figure. Returns the figure."""
    with legible():
        fig, axes = plt.subplots(len(rows), len(reports), figsize=(WIDTH, 2.2 * len(rows) + 0.4), squeeze=False)
        for i, curves in enumerate(rows):
            for j, rep in enumerate(reports):
                ax = axes[i, j]
                for key, cond, label, style in curves:
                    if key not in rep["conditions"].get(cond, {}):
                        continue
                    _band(ax, rep, key, cond, n_boot, label=label, **style)
                ax.locator_params(axis="x", nbins=4)
                if i == 0:
                    ax.set_title(rep["model"].split("-")[0])
                if i == len(rows) - 1:
                    ax.set_xlabel(xlabel)
            axes[i, 0].set_ylabel(ylabels[i])
        seen = {}
        for i in range(len(rows)):
            for h, label in zip(*axes[i, 0].get_legend_handles_labels()):
                seen.setdefault(label, h)
        fig.legend(list(seen.values()), list(seen), loc="lower center", ncol=min(4, len(seen)), frameon=False)
        fig.tight_layout(rect=(0, 0.06 * -(-len(seen) // 4), 1, 1))
    return fig


def ratios_to_null(panels: dict[str, dict[str, tuple[float, float, float]]], *, ylabel: str):
    """One panel per entry of ``panels`` (``{title: {model: (ratio, lo, hi)}}``): each model's trained value over
    its strongest null, with an interval, against the line at 1 where the trained model equals the null.
    Below 1 the trained model is closer to the claim. Returns the figure."""
    with legible():
        fig, axes = plt.subplots(1, len(panels), figsize=(WIDTH, 2.9), squeeze=False, sharey=True)
        for ax, (title, values) in zip(axes[0], panels.items()):
            models = list(values)
            y = np.array([values[m][0] for m in models])
            err = np.array([[values[m][0] - values[m][1] for m in models], [values[m][2] - values[m][0] for m in models]])
            ax.errorbar(np.arange(len(models)), y, yerr=err, fmt="o", color="C0", capsize=4, lw=1.5)
            ax.axhline(1, color="C3", ls="--", lw=1.5, label="strongest null")
            ax.set_xticks(np.arange(len(models)), [m.split("-")[0] for m in models])
            ax.set_xlim(-0.5, len(models) - 0.5)
            ax.set_title(title)
        axes[0, 0].set_ylabel(ylabel)
        axes[0, 0].legend(frameon=False, loc="best")
        fig.tight_layout()
    return fig


def gaps_by_size(points: dict[str, list[dict]], *, cols: int = 2, titles: dict[str, str] | None = None):
    """One panel per metric (``points``: ``{metric: [model entries of rules.e3 rows]}``): each model's late gap,
    trained minus the metric's strongest registered null, with its 95% interval, against log10 of its
    non-embedding parameters; one marker per family, the line at zero where training changes nothing beyond
    every null. ``titles``: each panel's title in words (by default the metric's name). Returns the figure."""
    titles = titles or {}
    markers = "osD^vP*X"
    families = sorted({p["family"] for ps in points.values() for p in ps})
    with legible():
        fig, axes = _grid_cols(len(points), cols, 2.4)
        for ax, (metric, ps) in zip(axes, points.items()):
            for p in ps:
                k = families.index(p["family"])
                ax.errorbar(p["x"], p["gap"], yerr=[[p["gap"] - p["interval"][0]], [p["interval"][1] - p["gap"]]],
                            fmt=markers[k % len(markers)], color=f"C{k}", ms=6, capsize=3)
            ax.axhline(0, color="0.3", lw=1, ls="--")
            ax.set_title(titles.get(metric, metric))
            ax.set_xlabel("log10 non-embedding parameters")
        for ax in axes[::cols]:
            ax.set_ylabel("gap: trained - strongest null")
        # each family by its name, without the model type's suffix ("gemma3_text": gemma3)
        handles = [plt.Line2D([], [], color=f"C{k}", marker=markers[k % len(markers)], ls="", label=f.split("_")[0])
                   for k, f in enumerate(families)]
        fig.legend(handles=handles, loc="lower center", ncol=min(5, len(handles)), frameon=False)
        fig.tight_layout(rect=(0, 0.08 if len(points) <= 2 else 0.04, 1, 1))
    return fig


def verdict_grid(verdicts: dict[tuple[str, str], str], claims: list[str], models: list[str],
                 labels: dict[str, str] | None = None):
    """The scorecard as a picture: one cell per claim (rows) and model (columns), coloured and labelled by its
    verdict (``verdicts``: ``{(claim, model): word}``; a missing pair is left blank; ``labels``: how to name a
    claim's row, by default the claim). Returns the figure."""
    labels = labels or {}
    from matplotlib.colors import to_rgb

    with legible():
        fig, ax = plt.subplots(figsize=(WIDTH, (0.55 if len(claims) < 6 else 0.42) * len(claims) + 1.0))
        for i, claim in enumerate(claims):
            for j, model in enumerate(models):
                word = verdicts.get((claim, model))
                colour = VERDICT_COLOURS.get(word, "#d9d9d9") if word else "white"
                ax.add_patch(plt.Rectangle((j, i), 1, 1, facecolor=colour, edgecolor="white", lw=2))
                if word:
                    dark = sum(to_rgb(colour)) < 1.5
                    ax.text(j + 0.5, i + 0.5, word.replace(" ", "\n") if len(word) > 12 else word, ha="center",
                            va="center", fontsize=9, color="white" if dark else "black", linespacing=0.9)
        ax.set_xlim(0, len(models))
        ax.set_ylim(len(claims), 0)
        ax.set_xticks(np.arange(len(models)) + 0.5, [m.split("-")[0] for m in models])   # the family's name
        ax.set_yticks(np.arange(len(claims)) + 0.5, [labels.get(c, c) for c in claims])
        ax.tick_params(length=0)
        ax.xaxis.tick_top()
        for side in ax.spines.values():
            side.set_visible(False)
        fig.tight_layout()
    return fig


# The theory chapters' figures: each draws arrays that its chapter has computed and checked, at the column's
# width, so that the chapter's code shows the computation and the page shows the picture.

def _complex_plane(ax, *, circle_at: float = 0.0) -> None:
    """Axes of the complex plane with the unit circle centred at ``circle_at``."""
    t = np.linspace(0, 2 * np.pi, 200)
    ax.plot(circle_at + np.cos(t), np.sin(t), color="0.6", lw=0.8, ls="--")
    ax.axhline(0, color="0.85", lw=0.6, zorder=0)
    ax.axvline(0, color="0.85", lw=0.6, zorder=0)
    ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel("real part")


def holonomy_angles_figure(thetas, angles: dict, carried, theta: float):
    """The holonomy of the rotation connection on a cycle, in two panels.

    Left: the measured holonomy angle (``angles``: ``{n: angle at each of thetas}``, in radians)
    against the rotation per edge ``thetas``, on the prediction ``n theta`` modulo ``2 pi``.
    Right: a vector carried once around the ``n``-cycle with rotation ``theta`` per edge
    (``carried``, shape ``(n + 1, 2)``: the vector leaving vertex 0, the vectors carried to
    vertices 1, ..., n - 1, and the vector back at 0), drawn at the vertices. Returns the figure.

    Examples
    --------
    >>> th = np.linspace(0, np.pi, 7)
    >>> v = np.array([[np.cos(k / 2), np.sin(k / 2)] for k in range(4)])
    >>> fig = holonomy_angles_figure(th, {3: np.angle(np.exp(3j * th))}, v, 0.5)
    >>> [ax.get_xlabel() for ax in fig.axes][0]
    'rotation per edge $\\\\theta$ (rad)'
    >>> plt.close(fig)

    Chapter: *Connection walks*.
    """
    thetas, carried = np.asarray(thetas, dtype=float), np.asarray(carried, dtype=float)
    n = len(carried) - 1
    with legible():
        fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(WIDTH, 2.85), width_ratios=(1.25, 1))
        for k, (m, measured) in enumerate(angles.items()):
            predicted = np.angle(np.exp(1j * m * thetas))            # m theta wrapped to (-pi, pi]
            predicted[1:][np.abs(np.diff(predicted)) > np.pi] = np.nan   # no wrap-around jumps
            ax0.plot(thetas, predicted, color=f"C{k}", lw=1)
            ax0.plot(thetas[::6], np.asarray(measured)[::6], "o", ms=3.5, color=f"C{k}")
            ax0.plot([], [], "o-", ms=3.5, lw=1, color=f"C{k}", label=f"{m}-cycle")
        ax0.set_xlabel(r"rotation per edge $\theta$ (rad)")
        ax0.set_ylabel("holonomy angle (rad)")
        ax0.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=len(angles), frameon=False)
        pos = np.array([[np.cos(2 * np.pi * k / n), np.sin(2 * np.pi * k / n)] for k in range(n)])
        ax1.plot(*np.vstack([pos, pos[:1]]).T, color="0.75", zorder=0)
        arrow = dict(angles="xy", scale_units="xy", scale=1, width=0.012)
        for k in range(n):
            ax1.annotate(str(k), pos[k] * 0.78, ha="center", va="center", fontsize=9)
            ax1.quiver(*pos[k], *(0.45 * carried[k]), color="C0" if k == 0 else "0.4", **arrow)
        ax1.quiver(*pos[0], *(0.45 * carried[n]), color="C3", **arrow)
        (a, b), (c, e) = carried[0], carried[n]
        turn = np.degrees(np.arctan2(a * e - b * c, a * c + b * e))
        ax1.set_title(f"{n}-cycle, {np.degrees(theta):.0f}° per edge: turned by {turn:.0f}°")
        for colour, label in (("C0", "leaving 0"), ("0.4", "carried on"), ("C3", "back at 0")):
            ax1.plot([], [], color=colour, lw=2, label=label)
        ax1.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=3, frameon=False,
                   handlelength=1.2, columnspacing=0.8)
        ax1.set_aspect("equal")
        ax1.set(xlim=(-1.6, 1.6), ylim=(-1.35, 1.35))
        ax1.axis("off")
        fig.tight_layout()
    return fig


def kronecker_spectrum_figure(lam, mu, spec_W):
    """The spectrum of a head's walk against the products of its factors' eigenvalues.

    Three panels in the complex plane, each with the unit circle: ``lam`` (the eigenvalues of
    the attention matrix), ``mu`` (those of the transport), and ``spec_W`` (those of the dense
    walk) drawn as circles on the products ``lam_i mu_a`` (crosses). Returns the figure.

    Examples
    --------
    >>> fig = kronecker_spectrum_figure(np.array([1.0, 0.5]), np.array([0.3j, -0.3j]),
    ...                                 np.array([0.3j, -0.3j, 0.15j, -0.15j]))
    >>> [ax.get_title() for ax in fig.axes]
    ['attention matrix $A$', 'transport $T$', 'walk $W = A \\\\otimes T$']
    >>> plt.close(fig)

    Chapter: *Single-head attention is a connection walk*.
    """
    lam, mu, spec_W = (np.asarray(z, dtype=complex) for z in (lam, mu, spec_W))
    products = np.outer(lam, mu).ravel()
    with legible():
        fig, axes = plt.subplots(1, 3, figsize=(WIDTH, 2.7), sharex=True, sharey=True)
        axes[0].scatter(lam.real, lam.imag, s=22, color="C0")
        axes[1].scatter(mu.real, mu.imag, s=22, color="C2")
        axes[2].scatter(spec_W.real, spec_W.imag, s=48, facecolors="none", edgecolors="C3",
                        label="eigenvalues of $W$")
        axes[2].scatter(products.real, products.imag, marker="x", s=14, color="k",
                        lw=0.8, label=r"products $\lambda\mu$")
        titles = ("attention matrix $A$", "transport $T$", r"walk $W = A \otimes T$")
        for ax, title in zip(axes, titles):
            _complex_plane(ax)
            ax.set_title(title)
        axes[0].set_ylabel("imaginary part")
        fig.legend(*axes[2].get_legend_handles_labels(), loc="lower center", ncol=2, frameon=False)
        fig.tight_layout(rect=(0, 0.13, 1, 1))
    return fig


def gates_figure(P, distance, gates):
    """A multi-head layer's walk in one row of heat maps over (query, key): the walk matrix
    ``P``, each edge transport's ``distance`` from the mean transport, and each head's gate
    (``gates``, shape ``(H, n, n)``, on a common scale from 0 to 1). Returns the figure.

    Examples
    --------
    >>> g = np.full((2, 3, 3), 0.5)
    >>> fig = gates_figure(np.full((3, 3), 1 / 3), np.zeros((3, 3)), g)
    >>> [ax.get_title() for ax in fig.axes if ax.get_title()]
    ['walk matrix $P$', 'distance from $\\\\bar T$', 'gate of head 1', 'gate of head 2']
    >>> plt.close(fig)

    Chapter: *Multi-head attention is one edge-dependent connection walk*.
    """
    gates = np.asarray(gates)
    H = len(gates)
    with legible():
        fig, axes = plt.subplots(1, H + 2, figsize=(WIDTH, 2.35), layout="constrained")
        for ax, M, title, cmap in ((axes[0], P, "walk matrix $P$", "viridis"),
                                   (axes[1], distance, r"distance from $\bar T$", "magma")):
            im = ax.imshow(np.asarray(M), cmap=cmap)
            fig.colorbar(im, ax=ax, shrink=0.72, pad=0.03)
            ax.set_title(title)
        for h, ax in enumerate(axes[2:]):
            im = ax.imshow(gates[h], cmap="Blues", vmin=0, vmax=1)
            ax.set_title(f"gate of head {h + 1}")
        fig.colorbar(im, ax=axes[2:], shrink=0.72, pad=0.02)
        for ax in axes:
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_xlabel("key $j$")
        axes[0].set_ylabel("query $i$")
    return fig


def generator_spectra_figure(spectra: dict):
    """The eigenvalues of generators ``L = I - W`` in the complex plane, one panel per walk
    (``spectra``: ``{title: eigenvalues}``), each against the circle ``|z - 1| = 1`` and the
    segment ``[0, 2]`` where a connection Laplacian's spectrum lies. Returns the figure.

    Examples
    --------
    >>> fig = generator_spectra_figure({"a": np.array([0.0, 1.0, 2.0]), "b": np.array([1 + 0.5j])})
    >>> [ax.get_title() for ax in fig.axes]
    ['a', 'b']
    >>> plt.close(fig)

    Chapter: *When the generator is a connection Laplacian*.
    """
    with legible():
        fig, axes = plt.subplots(1, len(spectra), figsize=(WIDTH, 2.45), sharex=True, sharey=True,
                                 squeeze=False)
        for k, (ax, (title, spec)) in enumerate(zip(axes[0], spectra.items())):
            spec = np.asarray(spec, dtype=complex)
            _complex_plane(ax, circle_at=1.0)
            ax.plot([0, 2], [0, 0], color="0.55", lw=5, alpha=0.45, solid_capstyle="butt")
            ax.scatter(spec.real, spec.imag, s=14, color=f"C{k}", zorder=3)
            ax.set_title(title)
        axes[0, 0].set_ylabel("imaginary part")
        handles = [plt.Line2D([], [], color="0.6", lw=0.8, ls="--"),
                   plt.Line2D([], [], color="0.55", lw=5, alpha=0.45)]
        fig.legend(handles, ["circle $|z - 1| = 1$", "segment $[0, 2]$"], loc="lower center",
                   ncol=2, frameon=False)
        fig.tight_layout(rect=(0, 0.09, 1, 1))
    return fig


def stationary_figure(pi_causal, pi_tied, pi_formula):
    """Two stationary distributions as bar charts over the tokens: a causal head's
    ``pi_causal`` and a tied bidirectional head's ``pi_tied``, with the closed form
    ``pi_formula`` drawn as dots on the second. Returns the figure.

    Examples
    --------
    >>> fig = stationary_figure(np.eye(4)[0], np.full(4, 0.25), np.full(4, 0.25))
    >>> [ax.get_title() for ax in fig.axes]
    ['causal head', 'bidirectional head, $W_K = W_Q$']
    >>> plt.close(fig)

    Chapter: *Reversibility, defects and low-rank heads*.
    """
    tokens = np.arange(1, len(pi_causal) + 1)
    with legible():
        fig, axes = plt.subplots(1, 2, figsize=(WIDTH, 2.6), sharey=True)
        axes[0].bar(tokens, pi_causal, color="C3")
        axes[0].set_title("causal head")
        axes[1].bar(tokens, pi_tied, color="C0", label="stationary $\\pi$")
        axes[1].plot(tokens, pi_formula, "ko", ms=4, label="closed form")
        axes[1].set_title("bidirectional head, $W_K = W_Q$")
        axes[1].legend(frameon=False, loc="upper right")
        for ax in axes:
            ax.set_xticks(tokens)
            ax.set_xlabel("token $i$")
        axes[0].set_ylabel("probability $\\pi_i$")
        fig.tight_layout()
    return fig


def masks_figure(patterns: dict):
    """Attention matrices as heat maps over (query, key), one panel per entry of ``patterns``
    (``{title: A}``; the masked entries of a masked array ``A`` are drawn grey), on one
    scale from 0 to 1. Returns the figure.

    Examples
    --------
    >>> A = np.ma.masked_where(np.triu(np.ones((3, 3)), 1) > 0, np.tril(np.ones((3, 3))) / 3)
    >>> fig = masks_figure({"causal": A})
    >>> [ax.get_title() for ax in fig.axes][0]
    'causal'
    >>> plt.close(fig)

    Chapter: *Single-head attention is a connection walk*.
    """
    cmap = plt.get_cmap("viridis").with_extremes(bad="0.85")   # masked pairs in light grey
    with legible():
        fig, axes = plt.subplots(1, len(patterns), figsize=(WIDTH, 2.6), layout="constrained",
                                 squeeze=False)
        for ax, (title, A) in zip(axes[0], patterns.items()):
            im = ax.imshow(A, cmap=cmap, vmin=0, vmax=1)
            ax.set_title(title)
            ax.set_xlabel("key $j$")
        axes[0, 0].set_ylabel("query $i$")
        fig.colorbar(im, ax=axes[0], shrink=0.85, label="$A_{ij}$")
    return fig


def energies_figure(energies: dict):
    """Histograms of Dirichlet energies ``<f, L f>_pi`` of sections with ``<f, f>_pi = 1``,
    one per walk (``energies``: ``{label: values}``), on common bins, with the line at zero.
    Returns the figure.

    Examples
    --------
    >>> fig = energies_figure({"a": np.array([0.2, 0.5]), "b": np.array([-0.3, 1.0])})
    >>> fig.axes[0].get_ylabel()
    'sections'
    >>> plt.close(fig)

    Chapter: *When the generator is a connection Laplacian*.
    """
    values = np.concatenate([np.asarray(v, dtype=float) for v in energies.values()])
    bins = np.linspace(min(values.min(), 0) - 0.05, values.max() + 0.05, 50)
    with legible():
        fig, ax = plt.subplots(figsize=(WIDTH, 2.7))
        for k, (label, E) in enumerate(energies.items()):
            ax.hist(E, bins=bins, alpha=0.6, color=("C0", "C3", "C2", "C1")[k % 4], label=label)
        ax.axvline(0, color="k", lw=1.2)
        ax.set_xlabel(r"$\langle f, L f\rangle_\pi$ with $\langle f, f\rangle_\pi = 1$")
        ax.set_ylabel("sections")
        ax.legend(frameon=False)
        fig.tight_layout()
    return fig


def defects_by_width_figure(widths, width: int, histograms: dict, curves: dict, floor):
    """A narrow head's distance from scaled isometries, in two panels.

    Left: histograms of defects at one head width ``width`` (``histograms``: ``{label:
    values}``). Right: the mean and standard deviation of each defect against the head
    width (``curves``: ``{label: (means, stds)}``, one entry per ``widths``), with ``floor``
    dashed, on a logarithmic width axis. Returns the figure.

    Examples
    --------
    >>> w = [1, 2, 4]
    >>> fig = defects_by_width_figure(w, 2, {"a": np.array([0.1, 0.2])},
    ...                               {"a": (np.array([0.0, 0.1, 0.2]), np.zeros(3))},
    ...                               np.sqrt(1 - np.array(w) / 4))
    >>> fig.axes[1].get_xlabel()
    'head width $d_h$'
    >>> plt.close(fig)

    Chapter: *Reversibility, defects and low-rank heads*.
    """
    widths = np.asarray(widths)
    colours = ("C1", "C2", "C3", "C0")
    with legible():
        fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(WIDTH, 3.3))
        bins = np.linspace(0, 0.7, 36)
        for k, (label, values) in enumerate(histograms.items()):
            ax0.hist(values, bins=bins, alpha=0.7, color=colours[k % 4], label=label)
        ax0.set(xlabel=r"defect $\varepsilon(T_h)$", ylabel="heads",
                title=f"head width $d_h = {width}$")
        ax0.legend(frameon=False, fontsize=9)
        for k, (label, (means, stds)) in enumerate(curves.items()):
            ax1.errorbar(widths, means, yerr=stds, marker="os^D"[k % 4], capsize=3,
                         color=colours[k % 4], label=label)
        ax1.plot(widths, floor, "k--", label=r"floor $\sqrt{1 - d_h/d}$")
        ax1.set_xscale("log", base=2)
        ax1.set(xlabel="head width $d_h$", ylabel="relative distance", title="against head width")
        fig.legend(*ax1.get_legend_handles_labels(), loc="lower center", ncol=2, frameon=False)
        fig.tight_layout(rect=(0, 0.14, 1, 1))
    return fig
