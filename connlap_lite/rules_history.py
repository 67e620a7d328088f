"""The superseded first rules of E1-E3 (rule 1, replaced 2026-11-30) and the record of the change.

:data:`RULE_CHANGES` says for each claim the old rule, the new one and why; the scorecard's *Rule
changes* shows both verdicts side by side, so the first rules stay runnable here:

``e1_rule1(report)``               rho < 0 with p < 0.05 over the layer means; late mean below seeds 0 and 1;
``e2_rule1(report)``               heads below the Gaussian heads and the lower seed; data below the lower seed;
``scale_slope(reports, metric)``   rule 1's fit: raw late value against log10(total parameters);
``e3_rule1(reports, metric)``      that slope's interval below 0 holds, above 0 does not.

The rules in force, and the reading helpers these use, are in :mod:`connlap_lite.report`, which also
answers every name here (``report.e1_rule1``, ``report.RULE_CHANGES``).

Chapters: *E1*, *E2*, *E3*, *Scorecard*.
"""
from __future__ import annotations

import numpy as np

from ._backend import check_int
from .report import ALPHA, E1_METRIC, _matrix, _reports, _verdict, depth_trend, late_value

RULE_CHANGES = [
    {"date": "2026-11-30", "claim": "E1",
     "old": "rho < 0 with p < 0.05 over the layer means; late mean below the random-init seeds 0 and 1",
     "new": "rho below 0 and below every random-init seed's rho, and late mean below every null (five seeds, "
            "shuffled, cross-passage, positional), paired passage bootstrap, Holm across the table",
     "why": "random-init curves alone reach |rho| near 0.9, the layer means are not independent points, and "
            "the near-uniform random-init null is beaten by construction"},
    {"date": "2026-11-30", "claim": "E2",
     "old": "mean head defect below the Gaussian heads and the lower random-init seed; data defect below "
            "the lower random-init seed on its own inputs",
     "new": "the same for the heads, with five seeds and a bootstrap over heads; the data defect (sink tokens "
            "left out) against random-init and Gaussian transports on the trained model's own inputs",
     "why": "the random-init twin's own inputs collapse with depth, which flatters the trained model"},
    {"date": "2026-11-30", "claim": "E3",
     "old": "slope of the raw late value against log10(total parameters) across families, passages resampled",
     "new": "slope of the trained-minus-null gap against log10(non-embedding parameters), within one family; "
            "not testable below three sizes of a family",
     "why": "the random-init nulls also move with size, the x-axis choice flipped verdicts, and leaving one "
            "model out flipped the sign: across families, size and architecture are confounded"},
]


def e1_rule1(report: dict, metric: str = E1_METRIC) -> dict:
    """E1 by the first rule: rho < 0 with p < 0.05 over the layer means; late mean below seeds 0 and 1."""
    c = report["conditions"]
    nulls = [n for n in ("random0", "random1") if n in c]
    if not nulls:
        raise ValueError(f"report on {report.get('model')!r} has no random0/random1 null")
    rho, p = depth_trend(report, metric)
    trained = float(np.mean(late_value(report, metric)))
    null = min(float(np.mean(late_value(report, metric, n))) for n in nulls)
    falls, below = rho < 0 and p < ALPHA, trained < null
    return {"model": report["model"], "rho": rho, "p": p, "late_trained": trained, "late_null": null,
            "falls": falls, "below_null": below, "verdict": _verdict(falls, below)}


def e2_rule1(report: dict) -> dict:
    """E2 by the first rule: heads below the Gaussian heads and the lower seed; data below the lower seed's own."""
    c = report["conditions"]
    nulls = [n for n in ("random0", "random1") if n in c]
    if not nulls:
        raise ValueError(f"report on {report.get('model')!r} has no random0/random1 null")
    mean = lambda m, cond: float(np.mean(_matrix(report, m, cond)))      # noqa: E731
    head, gauss = mean("head_defect", "trained"), mean("head_defect_gaussian", "trained")
    rand_head = min(mean("head_defect", n) for n in nulls)
    data, rand_data = mean("data_defect", "trained"), min(mean("data_defect", n) for n in nulls)
    a, b = head < min(gauss, rand_head), data < rand_data
    return {"model": report["model"], "head_defect": head, "gaussian_null": gauss, "random_head": rand_head,
            "data_defect": data, "random_data": rand_data, "heads_below_nulls": a, "data_below_null": b,
            "verdict": _verdict(a, b)}


def scale_slope(reports: list[dict], metric: str, *, n_boot: int = 2000, seed: int = 0) -> dict:
    """Rule 1's fit: slope of the raw late-layer ``metric`` against log10(total parameters), passages resampled."""
    reports = _reports(reports, need=("parameters",))
    bad = [i for i, r in enumerate(reports) if isinstance(r["parameters"], bool)
           or not isinstance(r["parameters"], (int, float, np.number)) or not r["parameters"] > 0]
    if bad:
        raise ValueError(f"reports must count positive parameters; reports[{bad[0]}] has {reports[bad[0]]['parameters']!r}")
    check_int(n_boot, "n_boot", low=1)
    x = np.log10([r["parameters"] for r in reports])
    samples = [late_value(r, metric) for r in reports]
    y = np.array([s.mean() for s in samples])
    if len(reports) < 2:
        return {"metric": metric, "n_models": len(reports), "slope": float("nan"), "lo": float("nan"),
                "hi": float("nan"), "x": x.tolist(), "y": y.tolist()}
    slope = float(np.polyfit(x, y, 1)[0])
    rng = np.random.default_rng(seed)
    boots = [np.polyfit(x, [rng.choice(s, size=len(s)).mean() for s in samples], 1)[0] for _ in range(n_boot)]
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return {"metric": metric, "n_models": len(reports), "slope": slope, "lo": float(lo), "hi": float(hi),
            "x": x.tolist(), "y": y.tolist()}


def e3_rule1(reports: list[dict], metric: str) -> dict:
    """E3 by the first rule: the raw slope's interval below 0 holds, above 0 does not; under three sizes not testable."""
    fit = scale_slope(reports, metric)
    verdict = ("not testable" if fit["n_models"] < 3 else "holds" if fit["hi"] < 0
               else "does not hold" if fit["lo"] > 0 else "inconclusive")
    return {**fit, "verdict": verdict}
