"""*Performance*, in words: the appendix's opening summary and its figures' first sentences, from the
committed benchmark records (``benchmarks/results/*.json``: ``extraction``, ``walk_apply``, ``spectra``).

:func:`paragraphs` returns every glued text (:data:`KEYS`).  Nothing here measures: the benchmarks did.

Chapter: *Performance*.
"""
from __future__ import annotations

from ..prose import names, span

KEYS = ("perf_summary", "perf_depth_take", "perf_apply_take", "perf_spectra_take")
FLAT = 1.1          # a peak that grows by less than this factor from the shallowest to the deepest model is flat


def _flat(extraction: dict) -> bool:
    return extraction["growth"]["walks"] < FLAT


def summary(results: dict) -> str:
    """The opening in plain words: what the package costs beside the plainest code, and how many goals are met."""
    E = results["extraction"]
    walks = [r["ratio"]["walks"] for r in E["pretrained"]]
    layers = E["layers"]
    goals = [g for r in results.values() for g in r.get("goals", [])]
    run = [g for g in goals if g["met"] is not None]
    met = sum(g["met"] is True for g in run)
    memory = (f"its memory stays flat as the model gets deeper (a factor {E['growth']['walks']:.2f} from "
              f"{layers[0]['n_layer']} to {layers[-1]['n_layer']} layers, against {E['growth']['floor']:.1f} for "
              "that forward pass)" if _flat(E) else
              f"its memory grows by a factor {E['growth']['walks']:.2f} from {layers[0]['n_layer']} to "
              f"{layers[-1]['n_layer']} layers (that forward pass: {E['growth']['floor']:.1f})")
    return ("This appendix measures what the package costs beside the plainest PyTorch code that computes the "
            "same thing, on one machine. Reading every layer's walk of a real model costs "
            f"{span(walks)} times one forward pass that returns every attention matrix, and {memory}. "
            f"Of the {len(run)} performance goals that were run, {met} {'is' if met == 1 else 'are'} met; the "
            "missed ones are listed with their reasons below.")


def depth_take(extraction: dict) -> str:
    """The first sentence of the depth figure's caption."""
    E = extraction
    walks = [r["peak_in_layers"]["walks"] for r in E["layers"]]
    floor = [r["peak_in_layers"]["floor"] for r in E["layers"]]
    if _flat(E):
        return (f"Reading every walk needs about the same memory at every depth ({span(walks)} layers of attention), "
                f"while the forward pass that returns the attention grows from {floor[0]:.1f} to {floor[-1]:.1f} layers' worth.")
    return (f"Reading every walk needs {span(walks)} layers of attention in memory, growing with depth; the forward "
            f"pass that returns the attention needs {span(floor, '{:.1f}')}.")


def apply_take(walk_apply: dict) -> str:
    """The first sentence of the figure of applying a walk."""
    big = walk_apply["rows"][-1]
    r = big["ratio"]
    return (f"At {big['n']} tokens, applying a built walk takes {r['apply/torch']:.2f} times as long as PyTorch's "
            f"fused attention, and going from the tokens to the output through the walk {r['walk/torch']:.1f} "
            "times.")


def spectra_take(spectra: dict) -> str:
    """The first sentence of the spectra figure's caption."""
    last = spectra["rows"][-1]
    return (f"ARPACK finds the leading eigenvalues of a generator of size $nd = {last['N']:,}$ in "
            f"{last['arpack_seconds']:.0f} s; the dense solver stops at $nd = {spectra['dense_largest_N']:,}$.")


def paragraphs(results: dict) -> dict[str, str]:
    """Every glued text of the opening, ``{key: markdown}`` in the order of :data:`KEYS`, from ``results``
    (``{benchmark name: its JSON record}``, as the appendix loads them).

    >>> E = {"pretrained": [{"ratio": {"walks": 1.2}}, {"ratio": {"walks": 1.3}}], "growth": {"walks": 1.0,
    ...      "floor": 4.9}, "layers": [{"n_layer": 2, "peak_in_layers": {"walks": 1.75, "floor": 3.6}},
    ...      {"n_layer": 16, "peak_in_layers": {"walks": 1.75, "floor": 17.6}}], "goals": [{"met": True}]}
    >>> W = {"rows": [{"n": 2048, "ratio": {"apply/torch": 0.66, "walk/torch": 3.8}}], "goals": [{"met": False}]}
    >>> S = {"rows": [{"N": 393216, "arpack_seconds": 27.1}], "dense_largest_N": 8192, "goals": []}
    >>> says = paragraphs({"extraction": E, "walk_apply": W, "spectra": S})
    >>> print(says["perf_depth_take"])
    Reading every walk needs about the same memory at every depth (1.75 layers of attention), while the forward pass that returns the attention grows from 3.6 to 17.6 layers' worth.
    >>> "Of the 2 performance goals that were run, 1 is met" in says["perf_summary"]
    True
    """
    missing = [k for k in ("extraction", "walk_apply", "spectra") if k not in results]
    if missing:
        raise ValueError(f"results lacks the benchmark records {names(missing)}: load benchmarks/results/*.json")
    says = {"perf_summary": summary(results), "perf_depth_take": depth_take(results["extraction"]),
            "perf_apply_take": apply_take(results["walk_apply"]), "perf_spectra_take": spectra_take(results["spectra"])}
    assert tuple(says) == KEYS
    return says
