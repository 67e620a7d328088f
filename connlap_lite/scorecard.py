"""Verdicts for E1-E3, by rules fixed before looking at the data.

E1 (stable operators with depth), per model, metric ``tv_norm_nosink`` by default:
    (a) the trained curve falls with depth: Spearman rho < 0 with p < 0.05;
    (b) its mean over the last third of layers is below both random-init nulls' mean there.
    holds: (a) and (b); partly: one of them; does not: neither.
E2 (scaled isometries), per model:
    (a) the trained mean ``head_defect`` is below the Gaussian null's and both random-init nulls';
    (b) the trained mean ``data_defect`` is below both random-init nulls'.
    holds / partly / does not as above.
E3 (both strengthen with scale), per structure (encoder, decoder), for a metric where smaller
    means "more of the claim": the least-squares slope of the model's late-layer value against
    log10(parameters), with a 95% bootstrap interval (passages resampled within each model).
    holds: the interval lies below 0; does not: above 0; inconclusive: it contains 0;
    not testable: fewer than three sizes.

Chapter: *Scorecard*.
"""
from __future__ import annotations

import math

import numpy as np

from .analysis import depth_trend

NULLS = ("random0", "random1")


def _verdict(a: bool, b: bool) -> str:
    return "holds" if a and b else ("partly" if a or b else "does not")


def _mean(values) -> float:
    return float(np.mean([np.mean(v) for v in values]))


def late(values, fraction: float = 1 / 3) -> list:
    """The per-layer lists of the last ``fraction`` of layers (at least one)."""
    k = max(1, math.ceil(len(values) * fraction))
    return values[-k:]


def e1(report: dict, metric: str = "tv_norm_nosink") -> dict:
    """E1 verdict for one model: the numbers and the rule's outcome."""
    c = report["conditions"]
    rho, p = depth_trend(report, metric)
    trained = _mean(late(c["trained"][metric]))
    null = min(_mean(late(c[n][metric])) for n in NULLS if n in c)      # below both nulls: below the lower one
    falls, below = rho < 0 and p < 0.05, trained < null
    return {"claim": "E1", "model": report["model"], "metric": metric, "rho": rho, "p": p,
            "late_trained": trained, "late_null": null, "falls": falls, "below_null": below,
            "verdict": _verdict(falls, below)}


def e2(report: dict) -> dict:
    """E2 verdict for one model."""
    c = report["conditions"]
    head = _mean(c["trained"]["head_defect"])
    gauss = _mean(c["trained"]["head_defect_gaussian"])
    rand_head = min(_mean(c[n]["head_defect"]) for n in NULLS if n in c)
    data = _mean(c["trained"]["data_defect"])
    rand_data = min(_mean(c[n]["data_defect"]) for n in NULLS if n in c)
    a, b = head < min(gauss, rand_head), data < rand_data
    return {"claim": "E2", "model": report["model"], "head_defect": head, "gaussian_null": gauss,
            "random_head": rand_head, "data_defect": data, "random_data": rand_data,
            "heads_below_nulls": a, "data_below_null": b, "verdict": _verdict(a, b)}


def late_value(report: dict, metric: str, condition: str = "trained") -> np.ndarray:
    """Per-passage (or per-head) late-layer values of ``metric``, averaged over the late layers."""
    vals = late(report["conditions"][condition][metric])
    return np.mean(np.array(vals, dtype=float), axis=0)


def scale_slope(reports: list[dict], metric: str, *, n_boot: int = 2000, seed: int = 0) -> dict:
    """Slope of the late-layer ``metric`` against log10(parameters), with a bootstrap interval."""
    x = np.log10([r["parameters"] for r in reports])
    samples = [late_value(r, metric) for r in reports]
    y = np.array([s.mean() for s in samples])
    if len(reports) < 2:
        return {"metric": metric, "n_models": len(reports), "slope": float("nan"), "lo": float("nan"),
                "hi": float("nan"), "x": x.tolist(), "y": y.tolist()}
    slope = float(np.polyfit(x, y, 1)[0])
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot):
        yb = [rng.choice(s, size=len(s)).mean() for s in samples]
        boots.append(np.polyfit(x, yb, 1)[0])
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return {"metric": metric, "n_models": len(reports), "slope": slope, "lo": float(lo), "hi": float(hi),
            "x": x.tolist(), "y": y.tolist()}


def e3(reports: list[dict], metric: str) -> dict:
    """E3 verdict for one structure (all encoders or all decoders) and one metric."""
    fit = scale_slope(reports, metric)
    if len(reports) < 3:
        verdict = "not testable"
    elif fit["hi"] < 0:
        verdict = "holds"
    elif fit["lo"] > 0:
        verdict = "does not"
    else:
        verdict = "inconclusive"
    return {"claim": "E3", **fit, "models": [r["model"] for r in reports], "verdict": verdict}


def scorecard(reports: list[dict]) -> list[dict]:
    """One row per claim and structure: the rule's verdict, the metric, the models and the numbers."""
    rows = []
    for structure, is_enc in (("encoder", True), ("decoder", False)):
        group = [r for r in reports if r["encoder"] == is_enc]
        if not group:
            continue
        e1s = [e1(r) for r in group]
        e2s = [e2(r) for r in group]
        rows.append({"claim": "E1", "structure": structure, "metric": "tv_norm_nosink",
                     "models": [r["model"] for r in group], "per_model": e1s,
                     "verdict": _combine([x["verdict"] for x in e1s])})
        rows.append({"claim": "E2", "structure": structure, "metric": "head_defect, data_defect",
                     "models": [r["model"] for r in group], "per_model": e2s,
                     "verdict": _combine([x["verdict"] for x in e2s])})
        for metric in ("tv_norm_nosink", "head_defect"):
            rows.append({"claim": "E3", "structure": structure, "metric": metric,
                         "models": [r["model"] for r in group], **e3(group, metric)})
    return rows


def _combine(verdicts: list[str]) -> str:
    """All models agree -> that verdict; otherwise 'partly' (mixed across models)."""
    return verdicts[0] if len(set(verdicts)) == 1 else "partly"


def verdict_box(rows: list[dict], claim: str, table: dict | None = None, what: str = "model-metric pairs") -> str:
    """The opening verdict box of an empirical chapter, in Markdown, written from computed verdicts only.

    One line per structure from the scorecard ``rows`` of ``claim`` (with each model's verdict where the
    row has them), and, if the chapter has a finer table of its own (``{key: verdict}``, of ``what``), how
    many of its entries got each verdict.  A chapter glues this text, so its box cannot contradict its numbers.

    Examples
    --------
    >>> rows = [{"claim": "E2", "structure": "decoder", "metric": "head_defect, data_defect",
    ...          "verdict": "does not", "per_model": [{"model": "a", "verdict": "does not"}]}]
    >>> print(verdict_box(rows, "E2", {"a/head": "does not", "a/data": "holds"}))
    - **E2, decoder** (`head_defect, data_defect`): **does not** (a: does not)
    - the chapter's table of 2 model-metric pairs: *holds* 1, *does not* 1
    """
    lines = []
    for r in rows:
        if r["claim"] != claim:
            continue
        who = "; ".join(f"{x['model']}: {x['verdict']}" for x in r.get("per_model", []))
        lines.append(f"- **{claim}, {r['structure']}** (`{r['metric']}`): **{r['verdict']}**"
                     + (f" ({who})" if who else ""))
    if not lines:
        raise ValueError(f"claim {claim!r} has no row in the scorecard rows given; claims there: "
                         f"{sorted({r['claim'] for r in rows})}")
    if table:
        counts: dict[str, int] = {}
        for v in table.values():
            counts[v] = counts.get(v, 0) + 1
        order = sorted(counts, key=lambda v: (not v.startswith("holds"), not v.startswith("partly"), v))
        lines.append(f"- the chapter's table of {len(table)} {what}: "
                     + ", ".join(f"*{v}* {counts[v]}" for v in order))
    return "\n".join(lines)


def glue_verdict(name: str, markdown: str) -> None:
    """Hand a verdict box's Markdown to the book under ``name`` (myst-nb's ``glue``; the chapter's opening
    ``{glue:md}`` box shows it), or, where myst-nb is absent (Colab, a plain Jupyter), display it here."""
    from IPython.display import Markdown, display

    try:
        from myst_nb import glue
    except ModuleNotFoundError:
        display(Markdown(markdown))
    else:
        glue(name, Markdown(markdown), display=False)
