"""Reading measurement reports: curves, late means, trends against nulls, and the verdicts on E1-E3.

Every empirical chapter, the scorecard and the command line read the reports of
:func:`connlap_lite.analysis.analyze` through this module, so each rule and each word of its
vocabulary (:data:`VERDICTS`) lives in one place.

**Uncertainty.** The unit of resampling is the passage (for head metrics, the head): a bootstrap
draws passages with replacement and keeps each passage's whole curve over the layers, so the
correlation between neighbouring layers is kept rather than treated as independent points. Trained
and null conditions are measured on the same passages, so they are resampled together (paired).
A one-sided bootstrap p-value is ``(1 + #{resamples where the trained model does not win}) /
(n_boot + 1)``; the p-values of one claim's table (every model and condition) are Holm-corrected
before the 0.05 threshold (:func:`holm`).

**Rules (rule 2, registered 2026-11-30; the rules they replace, and** ``RULE_CHANGES`` **, are in**
:mod:`connlap_lite.rules_history` **and answer here too, as** ``report.e1_rule1`` **etc.).**

E1, per model, metric ``tv_norm_nosink``:
    (a) *falls with depth beyond the nulls*: the trained curve's Spearman rho against depth is below 0
        and below every random-init seed's rho, in the paired bootstrap;
    (b) *below the strongest null late*: its mean over the last third of the layers is below that of every
        null: each random-init seed, the shuffled passages, the cross-passage and the positional-only walk.
    holds: (a) and (b); partly: one; does not hold: neither.
E2, per model:
    (a) *heads*: the mean ``head_defect`` over every head of every layer is below the Gaussian heads' and each
        random-init seed's (bootstrap over heads, paired by position);
    (b) *data*: the mean ``data_defect_nosink`` is below the random-init twin's transports and Gaussian
        transports applied to the same inputs (``data_defect_cross``, ``data_defect_gaussian``).
E3, per structure and metric (smaller = more of the claim): the late-layer *gap*, trained minus the mean of
    the random-init seeds, against log10(non-embedding parameters), within one family: holds if the slope's
    interval lies below 0, does not hold above 0, inconclusive otherwise; **not testable** unless one family
    gives at least three sizes. Two sizes of one family are reported as a step; a fit across families is
    shown as exploratory, with its leave-one-model-out slopes.

Chapters: *E1*, *E2*, *E3*, *Scorecard*, *Beyond*.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from .analysis import PASSAGE_METRICS
from .stats import _draws, _interval, _p_win, _rhos, bootstrap_ci, holm, spearman

VERDICTS = ("holds", "partly", "does not hold", "inconclusive", "not testable")
ALPHA = 0.05
E1_METRIC = "tv_norm_nosink"
# nulls measured inside the trained condition, by the key that holds them (for the E1 metric only)
INNER_NULLS = {"cross-passage": "cross_passage_tv_norm_nosink", "positional": "positional_tv_norm_nosink"}


# ----------------------------------------------------------------------- reading values
def values_of(report, metric: str, condition: str = "trained", name: str = "report") -> list:
    """``report["conditions"][condition][metric]``, or an error naming what is missing and what is there."""
    if not isinstance(report, dict) or not isinstance(report.get("conditions"), dict):
        raise TypeError(f"{name} must be a report from connlap_lite.analysis.analyze (a dict with 'conditions'), "
                        f"got {type(report).__name__}")
    conditions = report["conditions"]
    if not isinstance(condition, str) or condition not in conditions:
        raise ValueError(f"condition must be one of the report's conditions {sorted(conditions)}, got {condition!r}")
    if not isinstance(metric, str) or metric not in conditions[condition]:
        raise ValueError(f"metric must be one of {sorted(conditions[condition])} (measured in {condition!r}), "
                         f"got {metric!r}; a report made before this metric existed needs "
                         "analyze(..., refresh=True)")
    values = conditions[condition][metric]
    if not isinstance(values, list) or not values or not all(isinstance(v, list) and v for v in values):
        raise ValueError(f"{name}'s {condition}/{metric} must be a non-empty list of per-layer lists; the report "
                         "is damaged: recompute it with analyze(..., refresh=True)")
    return values


def layer_means(report: dict, metric: str, condition: str = "trained") -> np.ndarray:
    """One number per layer: the mean over passages (walk and data metrics) or over heads (head metrics).

    >>> layer_means({"conditions": {"trained": {"tv": [[0.2, 0.4], [0.1, 0.3]]}}}, "tv")
    array([0.3, 0.2])
    """
    return np.array([float(np.mean(v)) for v in values_of(report, metric, condition)])


def layer_curve(report: dict, metric: str, condition: str = "trained", *, n_boot: int = 1000):
    """Per-layer mean and 95% bootstrap interval over passages (or heads) of one metric."""
    values = values_of(report, metric, condition)
    means, lo, hi = [], [], []
    for v in values:
        m, a, b = bootstrap_ci(torch.tensor(v, dtype=torch.float64), n_boot=n_boot)
        means.append(float(m)); lo.append(float(a)); hi.append(float(b))
    return means, lo, hi


def depth_trend(report: dict, metric: str, condition: str = "trained") -> tuple[float, float]:
    """Spearman's rho of the per-layer mean against depth, and its p-value (layers taken as independent)."""
    means = layer_means(report, metric, condition)
    return spearman(range(len(means)), means)


def late(values, fraction: float = 1 / 3) -> list:
    """The per-layer lists of the last ``fraction`` of layers (at least one).

    >>> late([[1], [2], [3], [4], [5], [6]])
    [[5], [6]]
    """
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__len__") or len(values) == 0:
        raise ValueError(f"values must be a non-empty list of per-layer values, got {values!r}")
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
        raise ValueError(f"fraction must be a number in (0, 1], got {fraction!r}")
    k = max(1, math.ceil(len(values) * fraction))
    return values[-k:]


def late_value(report: dict, metric: str, condition: str = "trained") -> np.ndarray:
    """Per-passage (or per-head) values of ``metric``, averaged over the late layers."""
    return np.mean(np.array(late(values_of(report, metric, condition)), dtype=float), axis=0)


def random_nulls(report: dict) -> list[str]:
    """The report's random-init conditions, ``random0``, ``random1``, ... in seed order."""
    names = [c for c in report.get("conditions", {}) if c.startswith("random") and c[6:].isdigit()]
    return sorted(names, key=lambda c: int(c[6:]))


def _matrix(report: dict, metric: str, condition: str) -> np.ndarray:
    """``(layers, units)``: the per-layer lists as one array (every layer must have the same units)."""
    values = values_of(report, metric, condition)
    if len({len(v) for v in values}) != 1:
        raise ValueError(f"{condition}/{metric} has per-layer lists of different lengths; the report is damaged")
    return np.array(values, dtype=float)


# ----------------------------------------------------------------------- verdicts
def _verdict(a: bool, b: bool) -> str:
    return "holds" if a and b else ("partly" if a or b else "does not hold")


def _decide(rows: list[dict], *conditions: tuple[str, str]) -> list[dict]:
    """A claim's table decided: every row's p-values (``(p_key, flag_key)`` per condition) Holm-corrected as one
    family into ``<p_key>_holm``, each flag set where that is below ``ALPHA``, and the verdict from the two flags."""
    adjusted = iter(holm([r[p] for r in rows for p, _ in conditions]))
    for r in rows:
        for p, flag in conditions:
            r[p + "_holm"] = next(adjusted)
            r[flag] = r[p + "_holm"] < ALPHA
        r["verdict"] = _verdict(*(r[flag] for _, flag in conditions))
    return rows


# ----------------------------------------------------------------------- E1
def e1_nulls(report: dict, metric: str = E1_METRIC) -> dict[str, np.ndarray]:
    """Every registered null of E1 for ``metric`` as ``(layers, passages)`` arrays, by display name."""
    c = report["conditions"]
    out = {name: _matrix(report, metric, name) for name in random_nulls(report)}
    if "shuffled" in c:
        out["shuffled"] = _matrix(report, metric, "shuffled")
    if metric == E1_METRIC:
        for name, key in INNER_NULLS.items():
            if key in c["trained"]:
                out[name] = _matrix(report, key, "trained")
    return out


def e1_evidence(report: dict, metric: str = E1_METRIC, *, n_boot: int = 1000, seed: int = 0) -> dict:
    """The numbers behind E1 on one model, before the table's multiplicity correction."""
    trained = _matrix(report, metric, "trained")
    nulls = e1_nulls(report, metric)
    seeds = [n for n in nulls if n.startswith("random")]
    if not seeds:
        raise ValueError(f"report on {report.get('model')!r} has no random-init null: analyze with random_seeds")
    L, B = trained.shape
    idx = _draws(B, n_boot, seed)
    boot = lambda a: a[:, idx].mean(-1).T                    # noqa: E731  (n_boot, layers)
    rho_b = _rhos(boot(trained))
    null_rho_b = np.stack([_rhos(boot(nulls[s])) for s in seeds])           # (seeds, n_boot)
    rho = float(_rhos(trained.mean(1)[None])[0])
    null_rho = {s: float(_rhos(nulls[s].mean(1)[None])[0]) for s in seeds}
    # (a) an intersection of two one-sided tests: rho < 0 and rho < every seed's rho; its p is the larger
    p_trend = max(_p_win(rho_b), _p_win(rho_b - null_rho_b.min(0)))
    k = max(1, math.ceil(L / 3))
    late_t = trained[-k:].mean(0)
    late_n = {n: v[-max(1, math.ceil(len(v) / 3)):].mean(0) for n, v in nulls.items()}
    t_b = late_t[idx].mean(1)
    n_b = np.stack([v[idx].mean(1) for v in late_n.values()])               # (nulls, n_boot)
    strongest = min(late_n, key=lambda n: late_n[n].mean())
    gap_b = t_b - late_n[strongest][idx].mean(1)
    return {"claim": "E1", "model": report["model"], "metric": metric,
            "rho": rho, "rho_interval": _interval(rho_b), "null_rho": null_rho,
            "late_trained": float(late_t.mean()), "late_interval": _interval(t_b),
            "late_nulls": {n: float(v.mean()) for n, v in late_n.items()},
            "strongest_null": strongest, "gap_to_strongest": float(late_t.mean() - late_n[strongest].mean()),
            "gap_interval": _interval(gap_b),
            "p_trend": p_trend, "p_level": _p_win(t_b - n_b.min(0))}


def e1_table(reports: list[dict], metric=E1_METRIC, *, n_boot: int = 1000, seed: int = 0) -> list[dict]:
    """E1 on every model of ``reports``: the evidence, Holm-corrected p-values and each model's verdict.

    ``metric`` may be a list: one row per model and metric, the Holm correction across all of them.
    """
    metrics = [metric] if isinstance(metric, str) else list(metric)
    rows = [e1_evidence(r, m, n_boot=n_boot, seed=seed) for r in _reports(reports) for m in metrics]
    return _decide(rows, ("p_trend", "falls"), ("p_level", "below_nulls"))


def e1(report: dict, metric: str = E1_METRIC, *, n_boot: int = 1000, seed: int = 0) -> dict:
    """E1 on one model (a table of one: Holm over its two conditions)."""
    return e1_table([report], metric, n_boot=n_boot, seed=seed)[0]


# ----------------------------------------------------------------------- E2
def e2_evidence(report: dict, *, n_boot: int = 1000, seed: int = 0, heads_metric: str = "head_defect") -> dict:
    """The numbers behind E2 on one model, before the table's multiplicity correction.

    ``heads_metric="head_defect_gain"`` is the ablation with the pre-attention norm's gain folded into the
    trained heads (the nulls' gains are one, so their defects are unchanged).
    """
    seeds = random_nulls(report)
    if not seeds:
        raise ValueError(f"report on {report.get('model')!r} has no random-init null: analyze with random_seeds")
    flat = lambda m, c: _matrix(report, m, c).reshape(-1)           # noqa: E731  every head of every layer
    heads = flat(heads_metric, "trained")
    head_nulls = {"Gaussian heads": flat("head_defect_gaussian", "trained"),
                  **{s: flat("head_defect", s) for s in seeds}}
    idx = _draws(len(heads), n_boot, seed)
    p_heads = _p_win(heads[idx].mean(1) - np.stack([v[idx].mean(1) for v in head_nulls.values()]).min(0))
    per_passage = lambda m: _matrix(report, m, "trained").mean(0)   # noqa: E731  mean over layers
    data = per_passage("data_defect_nosink")
    data_nulls = {"random-init transports": per_passage("data_defect_cross"),
                  "Gaussian transports": per_passage("data_defect_gaussian")}
    jdx = _draws(len(data), n_boot, seed + 1)
    d_b = data[jdx].mean(1)
    p_data = _p_win(d_b - np.stack([v[jdx].mean(1) for v in data_nulls.values()]).min(0))
    strongest_head = min(head_nulls, key=lambda n: head_nulls[n].mean())
    strongest_data = min(data_nulls, key=lambda n: data_nulls[n].mean())
    return {"claim": "E2", "model": report["model"],
            "head_defect": float(heads.mean()), "head_interval": _interval(heads[idx].mean(1)),
            "head_nulls": {n: float(v.mean()) for n, v in head_nulls.items()}, "strongest_head_null": strongest_head,
            "data_defect": float(data.mean()), "data_interval": _interval(d_b),
            "data_nulls": {n: float(v.mean()) for n, v in data_nulls.items()}, "strongest_data_null": strongest_data,
            "p_heads": p_heads, "p_data": p_data}


def e2_table(reports: list[dict], *, n_boot: int = 1000, seed: int = 0, heads_metric: str = "head_defect") -> list[dict]:
    """E2 on every model of ``reports``: evidence, Holm-corrected p-values and each model's verdict."""
    rows = [e2_evidence(r, n_boot=n_boot, seed=seed, heads_metric=heads_metric) for r in _reports(reports)]
    return _decide(rows, ("p_heads", "heads_below_nulls"), ("p_data", "data_below_nulls"))


def e2(report: dict, *, n_boot: int = 1000, seed: int = 0) -> dict:
    """E2 on one model (a table of one)."""
    return e2_table([report], n_boot=n_boot, seed=seed)[0]


# ----------------------------------------------------------------------- E3
def gap(report: dict, metric: str) -> np.ndarray:
    """Per-unit late-layer gap: trained minus the mean of the random-init seeds (paired by passage or head)."""
    seeds = random_nulls(report)
    if not seeds:
        raise ValueError(f"report on {report.get('model')!r} has no random-init null: analyze with random_seeds")
    return late_value(report, metric) - np.mean([late_value(report, metric, s) for s in seeds], axis=0)


def _slope(x, y) -> float:
    return float(np.polyfit(x, y, 1)[0]) if len(set(np.round(x, 12))) > 1 else float("nan")


def e3(reports: list[dict], metric: str, *, n_boot: int = 2000, seed: int = 0) -> dict:
    """E3 for one structure's models and one metric: the gap against size, within and across families."""
    reports = _reports(reports, need=("model", "family", "non_embedding_parameters"))
    bad = [i for i, r in enumerate(reports) if isinstance(r["non_embedding_parameters"], bool) or not
           isinstance(r["non_embedding_parameters"], (int, float, np.number)) or not r["non_embedding_parameters"] > 0]
    if bad:
        raise ValueError(f"reports[{bad[0]}]'s non_embedding_parameters must be positive, got "
                         f"{reports[bad[0]]['non_embedding_parameters']!r}")
    samples = [gap(r, metric) for r in reports]
    rng = np.random.default_rng(seed)
    boots = np.array([[s[rng.integers(0, len(s), len(s))].mean() for s in samples] for _ in range(n_boot)])
    x = np.log10([r["non_embedding_parameters"] for r in reports])
    y = np.array([s.mean() for s in samples])
    models = [{"model": r["model"], "family": r["family"], "x": float(xi), "gap": float(yi),
               "interval": _interval(boots[:, i]), "layers": r.get("layers"), "heads": r.get("heads"),
               "groups": r.get("groups"), "d": r.get("d")} for i, (r, xi, yi) in enumerate(zip(reports, x, y))]
    families: dict[str, list[int]] = {}
    for i, r in enumerate(reports):
        families.setdefault(r["family"], []).append(i)
    within, steps = {}, []
    for fam, ix in families.items():
        sizes = sorted(ix, key=lambda i: x[i])
        if len({round(x[i], 6) for i in ix}) >= 3:
            b = [_slope(x[sizes], boots[k, sizes]) for k in range(n_boot)]
            lo, hi = _interval(np.array(b))
            within[fam] = {"slope": _slope(x[sizes], y[sizes]), "interval": (lo, hi),
                           "verdict": "holds" if hi < 0 else "does not hold" if lo > 0 else "inconclusive"}
        for a, b in zip(sizes, sizes[1:]):
            d = boots[:, b] - boots[:, a]
            steps.append({"family": fam, "from": reports[a]["model"], "to": reports[b]["model"],
                          "change": float(y[b] - y[a]), "interval": _interval(d)})
    verdicts = {w["verdict"] for w in within.values()}
    verdict = "not testable" if not verdicts else verdicts.pop() if len(verdicts) == 1 else "partly"
    across = None
    if len(reports) >= 3 and len(set(np.round(x, 6))) >= 2:
        b = [_slope(x, boots[k]) for k in range(n_boot)]
        across = {"slope": _slope(x, y), "interval": _interval(np.array(b)),
                  "leave_one_out": {reports[i]["model"]: _slope(np.delete(x, i), np.delete(y, i))
                                    for i in range(len(reports))}}
    return {"claim": "E3", "metric": metric, "n_models": len(reports), "models": models, "within": within,
            "steps": steps, "across": across, "verdict": verdict}


# ----------------------------------------------------------------------- robustness
def resample(report: dict, idx) -> dict:
    """A copy of ``report`` with its passages replaced by ``idx`` (in every condition, so pairs stay paired)."""
    idx = list(idx)
    out = {**report, "conditions": {}}
    for cond, values in report["conditions"].items():
        out["conditions"][cond] = {m: ([[v[i] for i in idx] for v in per_layer] if m in PASSAGE_METRICS else per_layer)
                                   for m, per_layer in values.items()}
    return out


def substitute(report: dict, trained: dict) -> dict:
    """``report`` with its trained condition taken from ``trained`` (an ablation measured on the same passages,
    e.g. ``analyze(..., q4=True)``); the nulls stay ``report``'s."""
    keys = ("model", "passages", "tokens", "seed")
    differ = [k for k in keys if report.get(k) != trained.get(k)]
    if differ or "trained" not in trained.get("conditions", {}):
        raise ValueError(f"trained must be a report on the same model and passages as report, with a 'trained' "
                         f"condition; they differ in {differ or ['conditions']}")
    return {**report, "conditions": {**report["conditions"], "trained": trained["conditions"]["trained"]}}


def _reports(reports, name: str = "reports", need=("model",)) -> list[dict]:
    if isinstance(reports, (dict, str, bytes)) or not hasattr(reports, "__iter__"):
        raise TypeError(f"{name} must be a list of reports from analyze, got {type(reports).__name__}; "
                        "wrap a single report: [report]")
    reports = list(reports)
    if not reports:
        raise ValueError(f"{name} is empty: pass at least one report from connlap_lite.analysis.analyze")
    for i, r in enumerate(reports):
        if not isinstance(r, dict) or not isinstance(r.get("conditions"), dict):
            raise TypeError(f"{name}[{i}] must be a report from connlap_lite.analysis.analyze (a dict with "
                            f"'conditions'), got {type(r).__name__}")
        missing = [k for k in need if k not in r]
        if missing:
            raise ValueError(f"{name}[{i}] lacks {missing}: pass reports made by connlap_lite.analysis.analyze")
        if "trained" not in r["conditions"]:
            raise ValueError(f"{name}[{i}] has no 'trained' condition (conditions: {sorted(r['conditions'])}); the "
                             "rules compare a trained model with its nulls: analyze without random_init")
    return reports


# ----------------------------------------------------------------------- rule 1, kept in rules_history
_RULE1 = ("RULE_CHANGES", "e1_rule1", "e2_rule1", "scale_slope", "e3_rule1")


def __getattr__(name: str):
    """``report.e1_rule1`` and the other first rules: read from :mod:`connlap_lite.rules_history` on first use
    (that module reads this one, so it is imported late, not at the top)."""
    if name in _RULE1:
        from . import rules_history
        return getattr(rules_history, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_RULE1])
