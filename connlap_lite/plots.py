"""Figures shared by the empirical chapters and the command line.

Chapters: *E1*, *E2*, *E3*.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .record import layer_curve

STYLE = {"trained": dict(color="C0", lw=2), "random": dict(color="C0", lw=2),
         "random0": dict(color="0.45", ls="--"), "random1": dict(color="0.65", ls="--"),
         "shuffled": dict(color="C1", ls=":")}


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
            mean, lo, hi = layer_curve(rep, metric, cond, n_boot=n_boot)
            x = list(range(len(mean)))
            ax.plot(x, mean, label=cond, **STYLE.get(cond, {}))
            ax.fill_between(x, lo, hi, color=STYLE.get(cond, {}).get("color", "C0"), alpha=0.15, lw=0)
        ax.set_title(rep["model"], fontsize=10)
        ax.set_xlabel("layer")
    axes[0].set_ylabel(ylabel or metric)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig
