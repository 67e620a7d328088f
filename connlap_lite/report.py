"""The verdicts on E1-E3 from measurement reports: the rules in force (rule 3 of 2026-12-01 for E1 and E3, rule 4
of 2026-12-02 for E2).

Every empirical chapter, the scorecard and the command line decide E1-E3 here; the record's shape and
its reading functions are :mod:`connlap_lite.record`'s, the vocabulary (:data:`VERDICTS`) and the
multiplicity machinery :mod:`connlap_lite.verdicts`'s, and the rules replaced (with ``RULE_CHANGES``)
:mod:`connlap_lite.rules_history`'s.

**Uncertainty.** The unit of resampling is the passage (for head metrics, the head): a bootstrap draws
passages with replacement and keeps each passage's whole curve over the layers; trained and null conditions
are measured on the same passages and resampled together (paired).  A one-sided bootstrap p-value is
``(1 + #{draws where the trained model does not win}) / (n_boot + 1)``, the draws widened first for the number
of units (:func:`connlap_lite.stats.expansion`: 1.12 for 16 passages), undefined if any draw is not finite.
The **random-init seeds are units** of their own: a comparison with them is Student's t over the seeds
(:func:`connlap_lite.stats.seed_p`; size alpha for any number of seeds), never "below every seed" (size
``1/(k+1)``).  The p-values of one claim's table are Holm-corrected as one family, and the table draws at
least :func:`connlap_lite.stats.draws_for` resamples, so that the family's smallest attainable p is an
order below alpha (checked: :func:`connlap_lite.stats.check_resolution`).

**Outcomes besides holds / partly / does not hold.** "insufficient data" below
:data:`~connlap_lite.verdicts.MIN_PASSAGES` (8) passages or :data:`~connlap_lite.verdicts.MIN_SEEDS` (3)
random-init seeds, or (E1) fewer than 3 layers; "undefined" where a value the rule reads is NaN or infinite
(the row's ``nonfinite`` names each ``(condition, metric, layer)``).

E1, per model, metric ``tv_norm_nosink`` (smaller = more alike):
    (a) *depth-specific*: the margin of the trained curve below its strongest passage-level null (shuffled,
        cross-passage, positional; the lowest at each step, in each draw) is larger over the last third of the
        steps than over the first third (paired bootstrap of the difference of margins);
    (b) *below every null late*: the last-third mean is below every passage-level null (paired bootstrap,
        the lowest null in each draw) and below the random-init seeds (seeds as units).
    holds: (a) and (b); partly: one; does not hold: neither.
    Beside the verdict, its own finding: *consecutive layers share input-specific structure at every depth*
    (``shares_structure``): at every step the trained curve is below every passage-level null (an
    intersection-union test, ``p_share`` the largest per-step p; Holm across the table's models).
    Condition (a) keeps the keys rule 2 gave its trend condition (``p_trend``, ``p_trend_holm``, ``falls``) and
    has its own too (``p_depth``, ``p_depth_holm``, ``deepens``); rule 2's trend statistics (``rho``,
    ``rho_interval``, ``null_rho``, ``p_trend_rule2``) are still reported, not used.
E2, per model (rule 4, registered 2026-12-02; rule 3 read (b) against one seed's transports):
    (a) *heads*: the mean ``head_defect`` over every head of every layer is below the Gaussian heads'
        (bootstrap over heads, paired by position) and below the random-init seeds' (seeds as units);
    (b) *data*: the mean ``data_defect_nosink`` is below Gaussian transports applied to the same inputs
        (``data_defect_gaussian``; bootstrap over passages) and below the transports of the first three
        random-init seeds applied to the same inputs (``data_defect_cross``, ``_2``, ``_3``), the seeds as units
        (Student's t over seeds; ``data_null_seeds`` says how many; below 3, "insufficient data").
E3, per structure and metric (smaller = more of the claim): the late-layer *gap*, trained minus the metric's
    strongest registered null (:func:`gap`), against log10(non-embedding parameters), within one family of at
    least three sizes: holds if the passage-bootstrap interval of the slope, its model-level jackknife
    interval and every leave-one-model-out slope lie below 0; does not hold if all lie above 0; inconclusive
    otherwise; **not testable** below three sizes of one family.  Two sizes are reported as a step; a fit
    across families is exploratory, with its leave-one-model-out slopes.

Chapters: *E1*, *E2*, *E3*, *Scorecard*, *Beyond*.
"""
from __future__ import annotations

import math

import numpy as np

from .record import (PASSAGE_METRICS, late, late_value, third, DATA_SEED_KEYS, NULLS, Report, matrix, random_nulls,
                     registered_nulls, values_of)
from .stats import _draws, _interval, _p_win, _rhos, draws_for, holm, jackknife_slope, seed_p
from .verdicts import ALPHA, check_reports, data_status, decide, flag

E1_METRIC = "tv_norm_nosink"
# the E1 metric's nulls measured inside the trained condition, by display name (from record.NULLS)
INNER_NULLS = {name: key for name, (cond, key) in NULLS[E1_METRIC].items() if cond == "trained"}
RULE = 3          # E1 and E3
E2_RULE = 4       # E2: rule 3 with its data null from three random-init seeds as units (2026-12-02)
SEED_MEAN = "random-init (mean of seeds)"


def _pmax(*ps) -> float:
    """The p-value of an intersection of one-sided tests: the largest; undefined if any is."""
    ps = [float(p) for p in ps]
    return float("nan") if not all(math.isfinite(p) for p in ps) else max(ps)


def _nonfinite(report, metric_conditions) -> list[tuple[str, str, int]]:
    """Every ``(condition, metric, layer)`` among ``metric_conditions`` holding a non-finite value."""
    out = []
    for cond, metric in metric_conditions:
        a = matrix(report, metric, cond)
        out += [(cond, metric, int(layer)) for layer in np.flatnonzero(~np.isfinite(a).all(1))]
    return out


def _sources(report, metric) -> list[tuple[str, str]]:
    """The ``(condition, key)`` pairs behind ``metric`` and its registered nulls in ``report``."""
    from .record import NULLS, SEED_NULL

    c = report["conditions"]
    out = [("trained", metric)] + [(s, SEED_NULL.get(metric, metric)) for s in random_nulls(report)]
    return out + [(cond, key) for cond, key in NULLS.get(metric, {}).values() if cond in c and key in c[cond]]


# ----------------------------------------------------------------------- E1
def e1_nulls(report, metric: str = E1_METRIC) -> dict[str, np.ndarray]:
    """Every registered null of E1 for ``metric`` as ``(layers, passages)`` arrays, by display name."""
    return registered_nulls(report, metric)


def e1_evidence(report, metric: str = E1_METRIC, *, n_boot: int = 1000, seed: int = 0) -> dict:
    """The numbers behind E1 on one model, before the table's multiplicity correction."""
    trained = matrix(report, metric, "trained")
    nulls = e1_nulls(report, metric)
    seeds = [n for n in nulls if n.startswith("random")]
    if not seeds:
        raise ValueError(f"report on {report.get('model')!r} has no random-init null: analyze with random_seeds")
    passage = {n: v for n, v in nulls.items() if not n.startswith("random")}
    if not passage:
        raise ValueError(f"report on {report.get('model')!r} has no passage-level null of {metric!r} (shuffled, "
                         "cross-passage, positional): analyze with shuffle=True")
    S, B = trained.shape
    k = third(S)
    idx = _draws(B, n_boot, seed)
    per_step = lambda a: a[:, idx].mean(-1)                                # noqa: E731  (steps, n_boot)
    t_s = per_step(trained)
    p_s = np.stack([per_step(v) for v in passage.values()])                # (nulls, steps, n_boot)
    lowest = p_s.min(0)                                                    # the strongest passage null, per draw
    lowest_point = np.min([v.mean(1) for v in passage.values()], axis=0)   # and per step, on all the passages
    band = lambda a, first: a[..., :k, :].mean(-2) if first else a[..., -k:, :].mean(-2)   # noqa: E731
    margin_early, margin_late = band(lowest, True) - band(t_s, True), band(lowest, False) - band(t_s, False)
    growth_b = margin_late - margin_early
    p_depth = _p_win(-growth_b, B) if S >= 2 else float("nan")
    late_t = trained[-k:].mean(0)
    late_n = {n: v[-third(len(v)):].mean(0) for n, v in nulls.items()}
    t_b = band(t_s, False)
    p_level_passage = _p_win(t_b - band(lowest, False), B)
    p_level_seeds = seed_p(float(late_t.mean()), [late_n[s].mean() for s in seeds])
    per_step_p = [_p_win(t_s[s] - lowest[s], B) for s in range(S)]
    strongest = min(late_n, key=lambda n: late_n[n].mean())
    gap_b = t_b - late_n[strongest][idx].mean(1)
    # rule 2's trend statistics, reported (not used by rule 3)
    rho_b = _rhos(t_s.T)
    null_rho_b = np.stack([_rhos(per_step(nulls[s]).T) for s in seeds])
    bad = _nonfinite(report, _sources(report, metric))
    status = data_status(report, seeds=len(seeds)) or ("insufficient data" if S < 2 else None)
    return {"claim": "E1", "model": report["model"], "metric": metric, "rule": RULE,
            "rho": float(_rhos(trained.mean(1)[None])[0]), "rho_interval": _interval(rho_b),
            "null_rho": {s: float(_rhos(nulls[s].mean(1)[None])[0]) for s in seeds},
            "late_trained": float(late_t.mean()), "late_interval": _interval(t_b),
            "late_nulls": {n: float(v.mean()) for n, v in late_n.items()},
            "strongest_null": strongest, "gap_to_strongest": float(late_t.mean() - late_n[strongest].mean()),
            "gap_interval": _interval(gap_b),
            "p_trend_rule2": _pmax(_p_win(rho_b), _p_win(rho_b - null_rho_b.min(0))),
            "early_margin": float(np.mean(margin_early)), "late_margin": float(np.mean(margin_late)),
            # the levels behind the margins: the trained curve and the strongest passage-level null at each step
            # (the lowest), over the first and the last third of the steps (reported, not used by the rule)
            "early_trained": float(trained[:k].mean()), "early_passage_null": float(lowest_point[:k].mean()),
            "late_passage_null": float(lowest_point[-k:].mean()),
            "trained_rise_interval": _interval(band(t_s, False) - band(t_s, True)),
            "margin_growth_interval": _interval(growth_b), "p_depth": p_depth,
            "p_level_passage_nulls": p_level_passage, "p_level_seeds": p_level_seeds,
            "p_level": _pmax(p_level_passage, p_level_seeds),
            "p_share": _pmax(*per_step_p), "p_share_per_step": per_step_p,
            "n_passages": B, "n_seeds": len(seeds), "n_boot": n_boot, "nonfinite": bad,
            "verdict": "undefined" if bad else status}


def e1_table(reports, metric=E1_METRIC, *, n_boot: int = 1000, seed: int = 0) -> list[dict]:
    """E1 on every model of ``reports``: the evidence, Holm-corrected p-values and each model's verdict.

    ``metric`` may be a list: one row per model and metric, the Holm correction across all of them.
    ``n_boot`` is a minimum: the table draws at least :func:`~connlap_lite.stats.draws_for` its family.
    """
    metrics = [metric] if isinstance(metric, str) else list(metric)
    reports = check_reports(reports)
    draws = max(n_boot, draws_for(2 * len(reports) * len(metrics), ALPHA))
    rows = [e1_evidence(r, m, n_boot=draws, seed=seed) for r in reports for m in metrics]
    for r in rows:                          # condition (a) under the keys rule 2 gave it, and by its own name
        r["p_trend"] = r["p_depth"]
    decide(rows, ("p_trend", "falls"), ("p_level", "below_nulls"), n_boot=draws)
    for r in rows:
        r["p_depth_holm"], r["deepens"] = r["p_trend_holm"], r["falls"]
    for r, q in zip(rows, holm([r["p_share"] for r in rows])):            # the finding beside the verdict
        r["p_share_holm"], r["shares_structure"] = q, None if r["verdict"] == "undefined" else flag(q)
    return rows


def e1(report, metric: str = E1_METRIC, *, n_boot: int = 1000, seed: int = 0) -> dict:
    """E1 on one model (a table of one: Holm over its two conditions)."""
    return e1_table([report], metric, n_boot=n_boot, seed=seed)[0]


# ----------------------------------------------------------------------- E2
def e2_evidence(report, *, n_boot: int = 1000, seed: int = 0, heads_metric: str = "head_defect") -> dict:
    """The numbers behind E2 on one model, before the table's multiplicity correction.

    ``heads_metric="head_defect_gain"`` is the ablation with the pre-attention norm's gain folded into the
    trained heads (the nulls' gains are one, so their defects are unchanged).
    """
    seeds = random_nulls(report)
    if not seeds:
        raise ValueError(f"report on {report.get('model')!r} has no random-init null: analyze with random_seeds")
    flat = lambda m, c: matrix(report, m, c).reshape(-1)           # noqa: E731  every head of every layer
    heads = flat(heads_metric, "trained")
    gaussian = flat("head_defect_gaussian", "trained")
    seed_heads = {s: flat("head_defect", s) for s in seeds}
    head_nulls = {"Gaussian heads": gaussian, **seed_heads}
    idx = _draws(len(heads), n_boot, seed)
    p_gauss = _p_win(heads[idx].mean(1) - gaussian[idx].mean(1), len(heads))
    p_seeds = seed_p(float(heads.mean()), [v.mean() for v in seed_heads.values()])
    per_passage = lambda m: matrix(report, m, "trained").mean(0)   # noqa: E731  mean over layers
    data = per_passage("data_defect_nosink")
    cross = [k for k in DATA_SEED_KEYS if k in report["conditions"]["trained"]]
    if not cross:
        raise ValueError(f"report on {report.get('model')!r} has no random-init transports on its inputs "
                         "(data_defect_cross): analyze with random_seeds or data_seeds")
    by_seed = [per_passage(k) for k in cross]                      # each data seed's transports, per passage
    data_nulls = {"random-init transports": np.mean(by_seed, axis=0),
                  "Gaussian transports": per_passage("data_defect_gaussian")}
    jdx = _draws(len(data), n_boot, seed + 1)
    d_b = data[jdx].mean(1)
    p_data_gauss = _p_win(d_b - data_nulls["Gaussian transports"][jdx].mean(1), len(data))
    p_data_seeds = seed_p(float(data.mean()), [v.mean() for v in by_seed])
    strongest_head = min(head_nulls, key=lambda n: head_nulls[n].mean())
    strongest_data = min(data_nulls, key=lambda n: data_nulls[n].mean())
    used = [("trained", heads_metric), ("trained", "head_defect_gaussian"), *((s, "head_defect") for s in seeds),
            ("trained", "data_defect_nosink"), *(("trained", k) for k in cross), ("trained", "data_defect_gaussian")]
    bad = _nonfinite(report, used)
    return {"claim": "E2", "model": report["model"], "rule": E2_RULE,
            "head_defect": float(heads.mean()), "head_interval": _interval(heads[idx].mean(1)),
            "head_nulls": {n: float(v.mean()) for n, v in head_nulls.items()}, "strongest_head_null": strongest_head,
            "data_defect": float(data.mean()), "data_interval": _interval(d_b),
            "data_nulls": {n: float(v.mean()) for n, v in data_nulls.items()}, "strongest_data_null": strongest_data,
            "data_seed_nulls": [float(v.mean()) for v in by_seed],
            "p_heads_gaussian": p_gauss, "p_heads_seeds": p_seeds, "p_heads": _pmax(p_gauss, p_seeds),
            "p_data_gaussian": p_data_gauss, "p_data_seeds": p_data_seeds, "p_data": _pmax(p_data_gauss, p_data_seeds),
            "n_passages": len(data), "n_seeds": len(seeds), "data_null_seeds": len(cross),
            "n_boot": n_boot, "nonfinite": bad,
            "verdict": "undefined" if bad else data_status(report, seeds=min(len(seeds), len(cross)))}


def e2_table(reports, *, n_boot: int = 1000, seed: int = 0, heads_metric: str = "head_defect") -> list[dict]:
    """E2 on every model of ``reports``: evidence, Holm-corrected p-values and each model's verdict."""
    reports = check_reports(reports)
    draws = max(n_boot, draws_for(2 * len(reports), ALPHA))
    rows = [e2_evidence(r, n_boot=draws, seed=seed, heads_metric=heads_metric) for r in reports]
    return decide(rows, ("p_heads", "heads_below_nulls"), ("p_data", "data_below_nulls"), n_boot=draws)


def e2(report, *, n_boot: int = 1000, seed: int = 0) -> dict:
    """E2 on one model (a table of one)."""
    return e2_table([report], n_boot=n_boot, seed=seed)[0]


# ----------------------------------------------------------------------- E3
def gap_null(report, metric: str) -> tuple[str, np.ndarray]:
    """The strongest registered null of ``metric`` for E3 and its per-unit late values: the lowest late mean among
    the metric's registered nulls other than the seeds (:data:`connlap_lite.record.NULLS`) and the seeds' mean."""
    values_of(report, metric)                                  # (an error naming the metrics measured, if not)
    nulls = {n: v for n, v in registered_nulls(report, metric).items() if not n.startswith("random")}
    seeds = random_nulls(report)
    candidates = {n: np.mean(np.array(late(list(v)), dtype=float), axis=0) for n, v in nulls.items()}
    if seeds and all(metric in report["conditions"][s] for s in seeds):
        candidates[SEED_MEAN] = np.mean([late_value(report, metric, s) for s in seeds], axis=0)
    if not candidates:
        raise ValueError(f"report on {report.get('model')!r} has no registered null of {metric!r}: analyze with "
                         "random_seeds and shuffle=True")
    name = min(candidates, key=lambda n: float(np.mean(candidates[n])))
    return name, candidates[name]


def gap(report, metric: str) -> np.ndarray:
    """Per-unit late-layer gap: trained minus the metric's strongest registered null (:func:`gap_null`), paired
    by passage or head."""
    return late_value(report, metric) - gap_null(report, metric)[1]


def _slopes(x: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Least-squares slope of each row of ``Y`` on ``x``."""
    xc = x - x.mean()
    return (Y - Y.mean(-1, keepdims=True)) @ xc / (xc @ xc)


def _sign(lo: float, hi: float) -> int:
    return -1 if hi < 0 else 1 if lo > 0 else 0


def e3(reports, metric: str, *, n_boot: int = 2000, seed: int = 0) -> dict:
    """E3 for one structure's models and one metric: the gap against size, within and across families."""
    reports = check_reports(reports, need=("model", "family", "non_embedding_parameters"))
    bad = [i for i, r in enumerate(reports) if isinstance(r["non_embedding_parameters"], bool) or not
           isinstance(r["non_embedding_parameters"], (int, float, np.number)) or not r["non_embedding_parameters"] > 0]
    if bad:
        raise ValueError(f"reports[{bad[0]}]'s non_embedding_parameters must be positive, got "
                         f"{reports[bad[0]]['non_embedding_parameters']!r}")
    gaps = [gap_null(r, metric) for r in reports]
    samples = [late_value(r, metric) - g for r, (_, g) in zip(reports, gaps)]
    rng = np.random.default_rng(seed)
    boots = np.stack([s[rng.integers(0, len(s), (n_boot, len(s)))].mean(1) for s in samples], 1)  # (n_boot, models)
    x = np.log10([r["non_embedding_parameters"] for r in reports])
    y = np.array([s.mean() for s in samples])
    models = [{"model": r["model"], "family": r["family"], "x": float(xi), "gap": float(yi), "null": g[0],
               "interval": _interval(boots[:, i]), "layers": r.get("layers"), "heads": r.get("heads"),
               "groups": r.get("groups"), "d": r.get("d"), "passages": r.get("passages"),
               "status": "undefined" if not np.isfinite(samples[i]).all() else data_status(r)}
              for i, (r, xi, yi, g) in enumerate(zip(reports, x, y, gaps))]
    families: dict[str, list[int]] = {}
    for i, r in enumerate(reports):
        families.setdefault(r["family"], []).append(i)
    within, steps = {}, []
    for fam, ix in families.items():
        sizes = sorted(ix, key=lambda i: x[i])
        if len({round(x[i], 6) for i in ix}) >= 3:
            lo, hi = _interval(_slopes(x[sizes], boots[:, sizes]))
            jk = jackknife_slope(x[sizes], y[sizes])
            signs = {_sign(lo, hi), _sign(*jk["interval"]), *(np.sign(jk["leave_one_out"]).astype(int).tolist())}
            status = {models[i]["status"] for i in sizes} - {None}
            verdict = ("undefined" if "undefined" in status else "insufficient data" if status else
                       "holds" if signs == {-1} else "does not hold" if signs == {1} else "inconclusive")
            within[fam] = {"slope": float(_slopes(x[sizes], y[sizes][None])[0]), "interval": (lo, hi),
                           "jackknife_interval": jk["interval"], "leave_one_out": jk["leave_one_out"],
                           "signs_agree": jk["signs_agree"], "verdict": verdict}
        for a, b in zip(sizes, sizes[1:]):
            d = boots[:, b] - boots[:, a]
            steps.append({"family": fam, "from": reports[a]["model"], "to": reports[b]["model"],
                          "change": float(y[b] - y[a]), "interval": _interval(d)})
    verdicts = {w["verdict"] for w in within.values()}
    verdict = "not testable" if not verdicts else verdicts.pop() if len(verdicts) == 1 else "partly"
    across = None
    if len(reports) >= 3 and len(set(np.round(x, 6))) >= 2:
        across = {"slope": float(_slopes(x, y[None])[0]), "interval": _interval(_slopes(x, boots)),
                  "leave_one_out": {reports[i]["model"]: float(_slopes(np.delete(x, i), np.delete(y, i)[None])[0])
                                    if len(set(np.round(np.delete(x, i), 6))) > 1 else float("nan")
                                    for i in range(len(reports))}}
    return {"claim": "E3", "metric": metric, "rule": RULE, "n_models": len(reports), "models": models,
            "within": within, "steps": steps, "across": across, "verdict": verdict}


# ----------------------------------------------------------------------- robustness
def resample(report, idx) -> Report:
    """A copy of ``report`` with its passages replaced by ``idx`` (in every condition, so pairs stay paired)."""
    idx = list(idx)
    out = {**report, "conditions": {}, **({"passages": len(idx)} if "passages" in report else {})}
    for cond, values in report["conditions"].items():
        out["conditions"][cond] = {m: ([[v[i] for i in idx] for v in per_layer] if m in PASSAGE_METRICS else per_layer)
                                   for m, per_layer in values.items()}
    return Report(out, name="the resampled report")


def substitute(report, trained) -> Report:
    """``report`` with its trained condition taken from ``trained`` (an ablation measured on the same passages,
    e.g. ``analyze(..., q4=True)``); the nulls stay ``report``'s.

    The two must be reports on the same model, setting and text spans: the same corpus (its digest) and the same
    passage windows (``windows``, which toggling the BOS token keeps; :func:`connlap_lite.text.windows`), else
    the ablated passages would be paired with other passages' nulls.  The ablation's own sink columns come with
    its trained condition (``sink_columns``); where its sink-mass columns differ from ``report``'s, the nulls'
    ``sink`` (measured on ``report``'s columns) is left out rather than set beside a mass on other tokens."""
    keys = ("model", "passages", "tokens", "seed", "corpus", "corpus_digest")
    differ = [k for k in keys if report.get(k) != trained.get(k)]
    if "windows" not in report or "windows" not in trained:
        differ.append("windows (one of them does not say which passages it measured: re-measure it)")
    elif report["windows"] != trained["windows"]:
        differ.append("windows")
    if differ or "trained" not in trained.get("conditions", {}):
        raise ValueError(f"trained must be a report on the same model and passages as report, with a 'trained' "
                         f"condition; they differ in {differ or ['conditions']}")
    conditions = {**report["conditions"], "trained": trained["conditions"]["trained"]}
    if report.get("sink_mass_columns") != trained.get("sink_mass_columns"):
        conditions = {c: (v if c == "trained" else {m: x for m, x in v.items() if m != "sink"})
                      for c, v in conditions.items()}
    out = {**report, "conditions": conditions, "sink_mass_columns": trained.get("sink_mass_columns")}
    if "sink_columns" in report and "sink_columns" in trained:
        out["sink_columns"] = {**report["sink_columns"], "trained": trained["sink_columns"]["trained"]}
    return Report(out, name="the substituted report")

