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

from .analysis import depth_trend, values_of

NULLS = ("random0", "random1")


def _report(report, name: str = "report", *, nulls: bool = True, need=("model",)) -> dict:
    """Check a report has what a rule reads: the keys ``need``, the trained and (with ``nulls``) null conditions."""
    if not isinstance(report, dict) or not isinstance(report.get("conditions"), dict):
        raise TypeError(f"{name} must be a report from connlap_lite.analysis.analyze (a dict with 'conditions'), "
                        f"got {type(report).__name__}")
    missing = [k for k in need if k not in report]
    if missing:
        raise ValueError(f"{name} lacks {missing}: pass reports made by connlap_lite.analysis.analyze")
    if "trained" not in report["conditions"]:
        raise ValueError(f"{name} has no 'trained' condition (conditions: {sorted(report['conditions'])}); the rules "
                         "compare a trained model with its nulls: analyze without random_init")
    if nulls and not any(n in report["conditions"] for n in NULLS):
        raise ValueError(f"{name} has no random-init null ({' or '.join(NULLS)}); analyze with random_seeds=(0, 1)")
    return report


def _reports(reports, name: str = "reports", need=("parameters",)) -> list[dict]:
    if isinstance(reports, dict) or isinstance(reports, (str, bytes)) or not hasattr(reports, "__iter__"):
        raise TypeError(f"{name} must be a list of reports from analyze, got {type(reports).__name__}; "
                        "wrap a single report: [report]")
    reports = list(reports)
    if not reports:
        raise ValueError(f"{name} is empty: pass at least one report from connlap_lite.analysis.analyze")
    return [_report(r, f"{name}[{i}]", nulls=False, need=need) for i, r in enumerate(reports)]


def _verdict(a: bool, b: bool) -> str:
    return "holds" if a and b else ("partly" if a or b else "does not")


def _mean(values) -> float:
    return float(np.mean([np.mean(v) for v in values]))


def late(values, fraction: float = 1 / 3) -> list:
    """The per-layer lists of the last ``fraction`` of layers (at least one)."""
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__len__") or len(values) == 0:
        raise ValueError(f"values must be a non-empty list of per-layer values, got {values!r}")
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
        raise ValueError(f"fraction must be a number in (0, 1], got {fraction!r}")
    k = max(1, math.ceil(len(values) * fraction))
    return values[-k:]


def e1(report: dict, metric: str = "tv_norm_nosink") -> dict:
    """E1 verdict for one model: the numbers and the rule's outcome."""
    c = _report(report)["conditions"]
    for n in ("trained",) + NULLS:
        if n in c:
            values_of(report, metric, n)
    rho, p = depth_trend(report, metric)
    trained = _mean(late(c["trained"][metric]))
    null = min(_mean(late(c[n][metric])) for n in NULLS if n in c)      # below both nulls: below the lower one
    falls, below = rho < 0 and p < 0.05, trained < null
    return {"claim": "E1", "model": report["model"], "metric": metric, "rho": rho, "p": p,
            "late_trained": trained, "late_null": null, "falls": falls, "below_null": below,
            "verdict": _verdict(falls, below)}


def e2(report: dict) -> dict:
    """E2 verdict for one model."""
    c = _report(report)["conditions"]
    for metric in ("head_defect", "head_defect_gaussian", "data_defect"):
        values_of(report, metric, "trained")
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
    vals = late(values_of(report, metric, condition))
    return np.mean(np.array(vals, dtype=float), axis=0)


def scale_slope(reports: list[dict], metric: str, *, n_boot: int = 2000, seed: int = 0) -> dict:
    """Slope of the late-layer ``metric`` against log10(parameters), with a bootstrap interval."""
    reports = _reports(reports)
    bad = [i for i, r in enumerate(reports) if isinstance(r["parameters"], bool)
           or not isinstance(r["parameters"], (int, float, np.number)) or not r["parameters"] > 0]
    if bad:
        raise ValueError(f"reports must count positive parameters; reports[{bad[0]}] has {reports[bad[0]]['parameters']!r}")
    from ._backend import check_int
    check_int(n_boot, "n_boot", low=1)
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
    need = ("model", "encoder", "parameters")
    reports = [_report(r, f"reports[{i}]", need=need) for i, r in enumerate(_reports(reports, need=need))]
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
