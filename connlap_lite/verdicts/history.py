"""The rules of E1-E3 that were replaced, still runnable, and the record of each change.

:data:`RULE_CHANGES`, the one record of every rule change (E1-E3's and the known results'), says for each claim and
date the old rule, the new one and why; the scorecard's *Rule changes*
(:func:`connlap_lite.verdicts.scorecard.rule_changes`) shows old and new verdicts side by side, and the chapter
*Known results, reproduced* its own (:func:`connlap_lite.known.history.rule_changes`).

Rule 1 (registered with the first measurements, replaced 2026-11-30):

``e1_rule1(report)``               rho < 0 with p < 0.05 over the layer means; late mean below seeds 0 and 1;
``e2_rule1(report)``               heads below the Gaussian heads and the lower seed; data below the lower seed;
``scale_slope(reports, metric)``   rule 1's fit: raw late value against log10(total parameters);
``e3_rule1(reports, metric)``      that slope's interval below 0 holds, above 0 does not.

Rule 3 for E2 (registered 2026-12-01, replaced 2026-12-02): ``e2_table_rule3``, its data condition against one
seed's transports.  Rule 4 for E2 (registered 2026-12-02, replaced 2026-12-04): ``e2_table_rule4``, its heads
resampled as if independent.

Rule 3 for E1 and E3 (registered 2026-12-01, replaced 2026-12-04), as it was in force:

``e1_table_rule3`` / ``e1_rule3``  the margin below the lowest passage null (per step and draw) grows with depth;
                                   the late mean below every passage-level null and the seeds;
``e3_rule3``                       the gap's slope: passage interval, jackknife and every leave-one-out slope below 0.  :data:`MEASUREMENT_CHANGES` records the measurements changed after results were seen, each
still measured under an archived key (:data:`connlap_lite.verdicts.record.ARCHIVED`).

Rule 2 (registered 2026-11-30, replaced 2026-12-01), as it was registered (1000 draws, the seeds as fixed
values, one null's denominator per null), except that a non-finite value now gives "undefined":

``e1_table_rule2`` / ``e1_rule2``  rho below 0 and below every seed's rho; late mean below every null;
``e2_table_rule2`` / ``e2_rule2``  heads below the Gaussian heads and every seed; data below the data nulls;
``e3_rule2``                       the late gap to the mean of the seeds against size, within one family.

The rules in force are :mod:`connlap_lite.verdicts.rules`'s; the replaced rules are read from this module only.

Chapters: *E1*, *E2*, *E3*, *Scorecard*.
"""
from __future__ import annotations

import numpy as np

import re

from .._backend import check_int
from .record import (DATA_SEED_KEYS, late, late_value, depth_trend, matrix, random_nulls, registered_nulls, third,
                     values_of)
from .rules import SEED_MEAN, nonfinite_cells, null_sources, p_max, row_slopes
from ..measure.stats import depth_rhos, draws_for, holm, jackknife_slope, p_win, percentile_interval, seed_p, unit_draws
from .words import ALPHA, check_reports, combine, data_status, decide, flag

E1_METRIC = "tv_norm_nosink"
INNER_NULLS = {"cross-passage": "cross_passage_tv_norm_nosink", "positional": "positional_tv_norm_nosink"}

# The names the frozen rules' helpers took after they were frozen (2026-12-05, issue 36: private names read across
# modules made public), each with the name it was frozen under.  A rename is not a rule change: the digests that
# freeze the rules read their code under the frozen names (:func:`under_frozen_names`: ``tests/verdicts``'
# test_frozen_rules and test_readings), so a rename keeps a digest and any other change still fails it.
RENAMED = {"p_win": "_p_win", "unit_draws": "_draws", "depth_rhos": "_rhos", "percentile_interval": "_interval",
           "p_max": "_pmax", "nonfinite_cells": "_nonfinite", "null_sources": "_sources", "row_slopes": "_slopes"}
_RENAMED = re.compile(r"(?<!\w)(" + "|".join(RENAMED) + r")(?!\w)")


_FROZEN_NAMES = re.compile(r"(?<!\w)(" + "|".join(RENAMED.values()) + r")(?!\w)")


def under_frozen_names(source: str) -> str:
    """``source`` with each name of :data:`RENAMED` put back to the name it was frozen under (whole names only).
    Code that already reads a frozen name is refused: renamed back, it would digest like the code it replaced.

    >>> under_frozen_names("p = stats.p_win(d) + my_p_win")
    'p = stats._p_win(d) + my_p_win'
    >>> under_frozen_names("p = _p_win(d)")
    Traceback (most recent call last):
    ...
    ValueError: the code reads _p_win, a name frozen before its rename (history.RENAMED): a new definition under an old name would digest as the frozen one; name it anew
    """
    old = _FROZEN_NAMES.search(source)
    if old:
        raise ValueError(f"the code reads {old.group(1)}, a name frozen before its rename (history.RENAMED): a new "
                         "definition under an old name would digest as the frozen one; name it anew")
    return _RENAMED.sub(lambda m: RENAMED[m.group(1)], source)


# the statements of the chapter *Known results, reproduced* that a statistical rule decides
KNOWN_STATISTICAL = ("sink_order", "clark_sep", "kobayashi_norm", "dong_walks", "dong_skip", "sinkformer", "reuse")
# Every dated rule change, one entry per claim ("E1", "E2", "E3", or "known": the chapter *Known results, reproduced*,
# whose entries name the statements they changed); the scorecard shows E1-E3's, that chapter its own.
RULE_CHANGES = [
    {"date": "2026-11-30", "claim": "E1", "from": 1, "to": 2,
     "old": "rho < 0 with p < 0.05 over the layer means; late mean below the random-init seeds 0 and 1",
     "new": "rho below 0 and below every random-init seed's rho, and late mean below every null (five seeds, "
            "shuffled, cross-passage, positional), paired passage bootstrap, Holm across the table",
     "why": "random-init curves alone reach |rho| near 0.9, the layer means are not independent points, and "
            "the near-uniform random-init null is beaten by construction"},
    {"date": "2026-11-30", "claim": "E2", "from": 1, "to": 2,
     "old": "mean head defect below the Gaussian heads and the lower random-init seed; data defect below "
            "the lower random-init seed on its own inputs",
     "new": "the same for the heads, with five seeds and a bootstrap over heads; the data defect (sink tokens "
            "left out) against random-init and Gaussian transports on the trained model's own inputs",
     "why": "the random-init twin's own inputs collapse with depth, which flatters the trained model"},
    {"date": "2026-11-30", "claim": "E3", "from": 1, "to": 2,
     "old": "slope of the raw late value against log10(total parameters) across families, passages resampled",
     "new": "slope of the trained-minus-null gap against log10(non-embedding parameters), within one family; "
            "not testable below three sizes of a family",
     "why": "the random-init nulls also move with size, the x-axis choice flipped verdicts, and leaving one "
            "model out flipped the sign: across families, size and architecture are confounded"},
    {"date": "2026-12-01", "claim": "E1", "from": 2, "to": 3,
     "old": "rho below 0 and below every seed's rho; late mean below every null; 1000 draws",
     "new": "the margin over the strongest passage-level null (shuffled, cross-passage, positional) grows from "
            "the first to the last third of the layers, and the late mean is below every passage-level null "
            "(paired bootstrap) and below the random-init seeds as units (Student's t over seeds); enough draws "
            "for the family (stats.draws_for); 'insufficient data' below 8 passages or 3 seeds; 'undefined' on "
            "a non-finite value; 'consecutive layers share input-specific structure at every depth' reported "
            "beside the verdict as its own finding",
     "why": "a late level that beats every null is similarity, not convergence (early layers beat the nulls too); "
            "54 p-values with 1000 draws could not pass (54/1001 > 0.05); 'below every seed' has size 1/(k+1); "
            "a NaN counted as a win"},
    {"date": "2026-12-01", "claim": "E2", "from": 2, "to": 3,
     "old": "mean head defect below the Gaussian heads and below every seed (bootstrap over heads, seeds fixed)",
     "new": "below the Gaussian heads (bootstrap over heads) and below the random-init seeds as units (Student's "
            "t over seeds); the data condition as before; enough draws; 'insufficient data' and 'undefined' as for E1",
     "why": "five fixed seeds are five draws, not a known distribution; a NaN head counted as a win"},
    {"date": "2026-12-01", "claim": "E3", "from": 2, "to": 3,
     "old": "gap to the mean of the random-init seeds; the slope's interval from resampled passages only",
     "new": "gap to the metric's strongest registered null (for the E1 metric the passage-level nulls, for the head "
            "defect the Gaussian heads or the seeds' mean); within one family of at least three sizes, holds only if "
            "the passage interval, the model-level jackknife interval and every leave-one-model-out slope are below 0",
     "why": "the random-init null is beaten by construction (the slope changed sign against the shuffled null); "
            "an interval from passages alone ignores the variation between models"},
    {"date": "2026-12-02", "claim": "E2", "from": 3, "to": 4,
     "old": "data defect below the transports of one random-init seed and Gaussian transports on the trained "
            "inputs (passage bootstrap against the lower of the two)",
     "new": "data defect below Gaussian transports on the trained inputs (passage bootstrap) and below the "
            "transports of three random-init seeds on the same inputs, the seeds as units (Student's t over seeds); "
            "'insufficient data' below three such seeds",
     "why": "one seed's transports are one draw of the null, not its distribution: against seed variation that "
            "comparison's size was not known (the heads condition already counted the seeds as units)"},
    {"date": "2026-12-04", "claim": "E1", "from": 3, "to": 4,
     "old": "the margin below the lowest passage-level null (the lowest at each step, in each draw) grows from the "
            "first to the last third of the layers, and the late mean is below every passage-level null (the lowest "
            "in each draw) and the random-init seeds; the shuffled null from one permutation",
     "new": "the claim's own words, three conditions: (i) the trained consecutive-layer distance falls from the first "
            "third to the last; (ii) the deep layers are stable: the last-third separation profile d(l, l + k), "
            "k = 1..4, grows by less than 10% of its k = 1 level and its k = 4 value is below the same profile of the "
            "shuffled null and the random-init seeds; (iii) the late mean is below every passage-level null, each "
            "separately (intersection-union), and the seeds; holds: all three; partly: (i) or (ii); does not hold: "
            "neither; the shuffled null from five permutations, counted as units like the seeds; a word other than "
            "inconclusive only if 80% of 100 passage resamples give it; the advantage over shuffled text growing with "
            "depth and the input-specific structure at every depth reported beside the verdict; frozen (a digest "
            "test), with a confirmation seed",
     "why": "rule 3 said holds for models whose own distance rises (SmolLM2, Qwen) because shuffled text rises "
            "faster: a margin that grows over a rising distance is not convergence; the lowest of noisy nulls per "
            "step and per draw favoured the trained model where the nulls are noisier (a constant margin gave holds "
            "in 16-34% of synthetic records); one permutation is one draw of the shuffled null; a word kept in 65% of "
            "resamples is a hair; every earlier E1 change moved verdicts towards the claim after results were read"},
    {"date": "2026-12-04", "claim": "E2", "from": 4, "to": 5,
     "old": "the heads' mean defect against the Gaussian heads by a bootstrap over heads, as if independent",
     "new": "a hierarchical bootstrap: layers, then value-sharing groups of heads within each drawn layer (a group's "
            "heads together), widened for the number of layers; the seeds and the data condition as before; a word "
            "other than inconclusive only if 80% of 100 resamples (layers and groups, passages) give it; frozen",
     "why": "heads of one layer and of one value group move together (intra-class correlation 0.22-0.31 on the "
            "real data): the bootstrap over heads gave standard errors 1.3-2.2 times too small and false positives "
            "in 15-29% of simulated records"},
    {"date": "2026-12-04", "claim": "E3", "from": 3, "to": 4,
     "old": "the data defect's gap to the random-init network on its own inputs; within a family, the passage "
            "interval, the jackknife interval and every leave-one-out slope below 0",
     "new": "the data gap of data_defect_nosink to E2's nulls (Gaussian transports, the random-init seeds' "
            "transports on the same inputs); within a family, the models as units: a one-sided t-test of the slope "
            "of each model's late gap to its strongest null against log10(non-embedding parameters), every "
            "leave-one-out slope of the same sign as robustness; a leave-one-out slope whose remaining models span "
            "less than 0.3 decades is not computed; frozen",
     "why": "E2 retired that null as confounded (the random network's inputs collapse), so E2 and E3 gave two data "
            "gaps for one model; across-family leave-one-out slopes down to -10.5 per decade came from two models "
            "0.025 decades apart"},
    {"date": "2026-12-02", "claim": "known", "from": 1, "to": 2, "statements": ("reuse",),
     "old": "its second part: the trained model's normalised walk distance of adjacent layers below the "
            "random-init null's",
     "new": "below the cross-passage null's (passage b at layer l against passage b + 1 at layer l + 1, the "
            "E1 chapter's null, on the same yardstick)",
     "why": "the near-uniform random-init null is beaten by construction, as the chapter said"},
    {"date": "2026-12-02", "claim": "known", "from": 1, "to": 2, "statements": KNOWN_STATISTICAL,
     "old": "the 95% percentile bootstrap interval of the mean over passages, at any number of passages",
     "new": "that interval widened about the mean by stats.expansion (1.29 at 8 passages); 'insufficient "
            "data' below 8 passages",
     "why": "at 8 passages the plain interval lay above 0 in about 6% of draws without an effect "
            "(tests/verdicts/test_rules.py), more than the 5% the rule promises"},
    {"date": "2026-12-02", "claim": "known", "from": 1, "to": 2, "statements": ("sink_order",),
     "old": "agree unless a step is reversed (an interval below 0)",
     "new": "agree only if natural minus repeated lies above 0 and no step is reversed; 'inconclusive' if no "
            "step is reversed and there is no drop either",
     "why": "'not reversed' says agree in nearly every draw without an effect: an agreement that cannot fail"},
    {"date": "2026-12-02", "claim": "known", "from": 1, "to": 2, "statements": ("sinkformer",),
     "old": "the random-init null's column-sum defect minus the trained one, over passages, against one seed",
     "new": "against five random-init seeds: the passage interval of the seeds' mean minus the trained "
            "defect, and the trained defect below the seeds as units (Student's t over the seeds, p < 0.05); "
            "'insufficient data' below 3 seeds",
     "why": "passages cannot see how much another seed would move the null: against one seed, a trained model "
            "that is one more seed agreed in a large share of draws (tests/verdicts/test_rules.py)"},
    {"date": "2026-12-02", "claim": "known", "from": 1, "to": 2, "statements": ("sink_repeated", "proposition"),
     "old": "a value that is not finite failed the exact comparison: 'disagree'",
     "new": "'undefined'",
     "why": "an undefined number is no evidence either way"},
]

def in_force(claim: str) -> str:
    """Who judges ``claim`` now, said as the start of a sentence: the rule in force, its number and date, and that
    it was chosen after the results under the earlier rules had been read (from :data:`RULE_CHANGES`).

    >>> in_force("E2")
    'The rule in force (rule 5, registered on 2026-12-04 after the results under rules 1 to 4 had been read; *Rule changes* shows their verdicts)'
    >>> in_force("E9")
    Traceback (most recent call last):
    ValueError: claim='E9' has no rule: use one of E1, E2, E3
    """
    changes = [c for c in RULE_CHANGES if c["claim"] == claim and claim != "known"]    # (E1-E3: the scorecard's)
    if not changes:
        claims = ", ".join(sorted({c["claim"] for c in RULE_CHANGES} - {"known"}))
        raise ValueError(f"claim={claim!r} has no rule: use one of {claims}")
    last = max(changes, key=lambda c: c["to"])
    earlier = {2: "rule 1", 3: "rules 1 and 2"}.get(last["to"], f"rules 1 to {last['to'] - 1}")
    return (f"The rule in force (rule {last['to']}, registered on {last['date']} after the results under {earlier} "
            f"had been read; *Rule changes* shows their verdicts)")


# Measurements changed after results were seen. Each old measurement is still measured under an archived key
# (connlap_lite.verdicts.record.ARCHIVED); keys maps the current key to it, and the scorecard's Rule changes applies each
# listed rule to the report as measured before (record.archived_view) and as measured now, side by side.
MEASUREMENT_CHANGES = [
    {"date": "2026-11-30", "metric": "`tv_norm_nosink`", "claims": ("E1",), "rules": (1, 3),
     "keys": {"tv_norm_nosink": "tv_norm_nosink_pre1130",
              "cross_passage_tv_norm_nosink": "cross_passage_tv_norm_nosink_pre1130",
              "positional_tv_norm_nosink": "positional_tv_norm_nosink_pre1130"},
     "old": "tv_norm_nosink divided by the walks' distance from the full uniform walk U, though the sink-free walks "
            "put no mass on the sink columns (sinks fixed at the first token, and an encoder's last)",
     "new": "divided by the distance from the uniform walk with the same sink columns removed",
     "why": "U is at a fixed distance from every sink-free walk (2/n in an encoder), a floor that dominates the "
            "denominator of nearly uniform walks and pushed the random-init null's value far below its tv_norm; "
            "the verdicts of that day were read with rule 1 (its inner nulls, which came later that day, are "
            "measured with the old denominator for the rule in force)"},
    {"date": "2026-12-01", "metric": "`tv_norm_nosink` and E2's data defects", "claims": ("E1", "E2"), "rules": (3,),
     "keys": {"tv_norm_nosink": "tv_norm_nosink_pre1201",
              "cross_passage_tv_norm_nosink": "cross_passage_tv_norm_nosink_pre1201",
              "positional_tv_norm_nosink": "positional_tv_norm_nosink_pre1201",
              "data_defect_nosink": "data_defect_nosink_pre1201", "data_defect_cross": "data_defect_cross_pre1201",
              "data_defect_gaussian": "data_defect_gaussian_pre1201"},
     "old": "sink columns fixed at the first token (and an encoder's last); the cross-passage and positional nulls "
            "each divided by their own pair's distance from uniform",
     "new": "sink columns detected in each layer (over 8/n of the attention, metrics.detect_sinks); the nulls "
            "divided by the trained step's distance (one yardstick); E2's data defects leave out the detected sinks",
     "why": "a sink that moves (Qwen's, with the BOS token first) was not left out; the positional null's own, "
            "smaller distance from uniform inflated it by 15-22%, in the trained model's favour"},
    {"date": "2026-12-02", "metric": "the sink mass `sink`", "claims": (), "rules": (), "keys": {},
     "old": "sink mass on each condition's own detected sink columns, so a random-init walk, which has none, had "
            "sink mass 0 in every layer",
     "new": "sink mass of every condition on the trained model's sink columns (every column detected in some "
            "layer), the same tokens in every layer and every null (sink_mass_columns)",
     "why": "a null with no detected sink measured nothing, so 'more than three times any random-init seed' "
            "compared with 0 and could not fail; no rule reads the sink mass, so no verdict moves"},
]


# ----------------------------------------------------------------------- rule 3, E1 and E3 (2026-12-01 to 2026-12-04)
def e1_evidence_rule3(report, metric: str = E1_METRIC, *, n_boot: int = 1000, seed: int = 0) -> dict:
    """The numbers behind E1 on one model, before the table's multiplicity correction."""
    trained = matrix(report, metric, "trained")
    nulls = registered_nulls(report, metric)
    seeds = [n for n in nulls if n.startswith("random")]
    if not seeds:
        raise ValueError(f"report on {report.get('model')!r} has no random-init null: analyze with random_seeds")
    passage = {n: v for n, v in nulls.items() if not n.startswith("random")}
    if not passage:
        raise ValueError(f"report on {report.get('model')!r} has no passage-level null of {metric!r} (shuffled, "
                         "cross-passage, positional): analyze with shuffle=True")
    S, B = trained.shape
    k = third(S)
    idx = unit_draws(B, n_boot, seed)
    per_step = lambda a: a[:, idx].mean(-1)                                # noqa: E731  (steps, n_boot)
    t_s = per_step(trained)
    p_s = np.stack([per_step(v) for v in passage.values()])                # (nulls, steps, n_boot)
    lowest = p_s.min(0)                                                    # the strongest passage null, per draw
    lowest_point = np.min([v.mean(1) for v in passage.values()], axis=0)   # and per step, on all the passages
    band = lambda a, first: a[..., :k, :].mean(-2) if first else a[..., -k:, :].mean(-2)   # noqa: E731
    margin_early, margin_late = band(lowest, True) - band(t_s, True), band(lowest, False) - band(t_s, False)
    growth_b = margin_late - margin_early
    p_depth = p_win(-growth_b, B) if S >= 2 else float("nan")
    late_t = trained[-k:].mean(0)
    late_n = {n: v[-third(len(v)):].mean(0) for n, v in nulls.items()}
    t_b = band(t_s, False)
    p_level_passage = p_win(t_b - band(lowest, False), B)
    p_level_seeds = seed_p(float(late_t.mean()), [late_n[s].mean() for s in seeds])
    per_step_p = [p_win(t_s[s] - lowest[s], B) for s in range(S)]
    strongest = min(late_n, key=lambda n: late_n[n].mean())
    gap_b = t_b - late_n[strongest][idx].mean(1)
    # rule 2's trend statistics, reported (not used by rule 3)
    rho_b = depth_rhos(t_s.T)
    null_rho_b = np.stack([depth_rhos(per_step(nulls[s]).T) for s in seeds])
    bad = nonfinite_cells(report, null_sources(report, metric))
    status = data_status(report, seeds=len(seeds)) or ("insufficient data" if S < 2 else None)
    return {"claim": "E1", "model": report["model"], "metric": metric, "rule": 3,
            "rho": float(depth_rhos(trained.mean(1)[None])[0]), "rho_interval": percentile_interval(rho_b),
            "null_rho": {s: float(depth_rhos(nulls[s].mean(1)[None])[0]) for s in seeds},
            "late_trained": float(late_t.mean()), "late_interval": percentile_interval(t_b),
            "late_nulls": {n: float(v.mean()) for n, v in late_n.items()},
            "strongest_null": strongest, "gap_to_strongest": float(late_t.mean() - late_n[strongest].mean()),
            "gap_interval": percentile_interval(gap_b),
            "p_trend_rule2": p_max(p_win(rho_b), p_win(rho_b - null_rho_b.min(0))),
            "early_margin": float(np.mean(margin_early)), "late_margin": float(np.mean(margin_late)),
            # the levels behind the margins: the trained curve and the strongest passage-level null at each step
            # (the lowest), over the first and the last third of the steps (reported, not used by the rule)
            "early_trained": float(trained[:k].mean()), "early_passage_null": float(lowest_point[:k].mean()),
            "late_passage_null": float(lowest_point[-k:].mean()),
            "trained_rise_interval": percentile_interval(band(t_s, False) - band(t_s, True)),
            "margin_growth_interval": percentile_interval(growth_b), "p_depth": p_depth,
            "p_level_passage_nulls": p_level_passage, "p_level_seeds": p_level_seeds,
            "p_level": p_max(p_level_passage, p_level_seeds),
            "p_share": p_max(*per_step_p), "p_share_per_step": per_step_p,
            "n_passages": B, "n_seeds": len(seeds), "n_boot": n_boot, "nonfinite": bad,
            "verdict": "undefined" if bad else status}

def e1_table_rule3(reports, metric=E1_METRIC, *, n_boot: int = 1000, seed: int = 0) -> list[dict]:
    """E1 on every model of ``reports``: the evidence, Holm-corrected p-values and each model's verdict.

    ``metric`` may be a list: one row per model and metric, the Holm correction across all of them.
    ``n_boot`` is a minimum: the table draws at least :func:`~connlap_lite.measure.stats.draws_for` its family.
    """
    metrics = [metric] if isinstance(metric, str) else list(metric)
    reports = check_reports(reports)
    draws = max(n_boot, draws_for(2 * len(reports) * len(metrics), ALPHA))
    rows = [e1_evidence_rule3(r, m, n_boot=draws, seed=seed) for r in reports for m in metrics]
    for r in rows:                          # condition (a) under the keys rule 2 gave it, and by its own name
        r["p_trend"] = r["p_depth"]
    decide(rows, ("p_trend", "falls"), ("p_level", "below_nulls"), n_boot=draws)
    for r in rows:
        r["p_depth_holm"], r["deepens"] = r["p_trend_holm"], r["falls"]
    for r, q in zip(rows, holm([r["p_share"] for r in rows])):            # the finding beside the verdict
        r["p_share_holm"], r["shares_structure"] = q, None if r["verdict"] == "undefined" else flag(q)
    return rows

def e1_rule3(report, metric: str = E1_METRIC, *, n_boot: int = 1000, seed: int = 0) -> dict:
    """E1 on one model (a table of one: Holm over its two conditions)."""
    return e1_table_rule3([report], metric, n_boot=n_boot, seed=seed)[0]

def _sign(lo: float, hi: float) -> int:
    return -1 if hi < 0 else 1 if lo > 0 else 0


def gap_null_rule3(report, metric: str) -> tuple[str, np.ndarray]:
    """The strongest registered null of ``metric`` for E3 and its per-unit late values: the lowest late mean among
    the metric's registered nulls other than the seeds (:data:`connlap_lite.verdicts.record.NULLS`) and the seeds' mean."""
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

def gap_rule3(report, metric: str) -> np.ndarray:
    """Per-unit late-layer gap: trained minus the metric's strongest registered null (:func:`gap_null`), paired
    by passage or head."""
    return late_value(report, metric) - gap_null_rule3(report, metric)[1]

def e3_rule3(reports, metric: str, *, n_boot: int = 2000, seed: int = 0) -> dict:
    """E3 for one structure's models and one metric: the gap against size, within and across families."""
    reports = check_reports(reports, need=("model", "family", "non_embedding_parameters"))
    bad = [i for i, r in enumerate(reports) if isinstance(r["non_embedding_parameters"], bool) or not
           isinstance(r["non_embedding_parameters"], (int, float, np.number)) or not r["non_embedding_parameters"] > 0]
    if bad:
        raise ValueError(f"reports[{bad[0]}]'s non_embedding_parameters must be positive, got "
                         f"{reports[bad[0]]['non_embedding_parameters']!r}")
    gaps = [gap_null_rule3(r, metric) for r in reports]
    samples = [late_value(r, metric) - g for r, (_, g) in zip(reports, gaps)]
    rng = np.random.default_rng(seed)
    boots = np.stack([s[rng.integers(0, len(s), (n_boot, len(s)))].mean(1) for s in samples], 1)  # (n_boot, models)
    x = np.log10([r["non_embedding_parameters"] for r in reports])
    y = np.array([s.mean() for s in samples])
    models = [{"model": r["model"], "family": r["family"], "x": float(xi), "gap": float(yi), "null": g[0],
               "interval": percentile_interval(boots[:, i]), "layers": r.get("layers"), "heads": r.get("heads"),
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
            lo, hi = percentile_interval(row_slopes(x[sizes], boots[:, sizes]))
            jk = jackknife_slope(x[sizes], y[sizes])
            signs = {_sign(lo, hi), _sign(*jk["interval"]), *(np.sign(jk["leave_one_out"]).astype(int).tolist())}
            status = {models[i]["status"] for i in sizes} - {None}
            verdict = ("undefined" if "undefined" in status else "insufficient data" if status else
                       "holds" if signs == {-1} else "does not hold" if signs == {1} else "inconclusive")
            within[fam] = {"slope": float(row_slopes(x[sizes], y[sizes][None])[0]), "interval": (lo, hi),
                           "jackknife_interval": jk["interval"], "leave_one_out": jk["leave_one_out"],
                           "signs_agree": jk["signs_agree"], "verdict": verdict}
        for a, b in zip(sizes, sizes[1:]):
            d = boots[:, b] - boots[:, a]
            steps.append({"family": fam, "from": reports[a]["model"], "to": reports[b]["model"],
                          "change": float(y[b] - y[a]), "interval": percentile_interval(d)})
    verdicts = {w["verdict"] for w in within.values()}
    verdict = "not testable" if not verdicts else verdicts.pop() if len(verdicts) == 1 else "partly"
    across = None
    if len(reports) >= 3 and len(set(np.round(x, 6))) >= 2:
        across = {"slope": float(row_slopes(x, y[None])[0]), "interval": percentile_interval(row_slopes(x, boots)),
                  "leave_one_out": {reports[i]["model"]: float(row_slopes(np.delete(x, i), np.delete(y, i)[None])[0])
                                    if len(set(np.round(np.delete(x, i), 6))) > 1 else float("nan")
                                    for i in range(len(reports))}}
    return {"claim": "E3", "metric": metric, "rule": 3, "n_models": len(reports), "models": models,
            "within": within, "steps": steps, "across": across, "verdict": verdict}



def e2_evidence_rule4(report, *, n_boot: int = 1000, seed: int = 0, heads_metric: str = "head_defect") -> dict:
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
    idx = unit_draws(len(heads), n_boot, seed)
    p_gauss = p_win(heads[idx].mean(1) - gaussian[idx].mean(1), len(heads))
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
    jdx = unit_draws(len(data), n_boot, seed + 1)
    d_b = data[jdx].mean(1)
    p_data_gauss = p_win(d_b - data_nulls["Gaussian transports"][jdx].mean(1), len(data))
    p_data_seeds = seed_p(float(data.mean()), [v.mean() for v in by_seed])
    strongest_head = min(head_nulls, key=lambda n: head_nulls[n].mean())
    strongest_data = min(data_nulls, key=lambda n: data_nulls[n].mean())
    used = [("trained", heads_metric), ("trained", "head_defect_gaussian"), *((s, "head_defect") for s in seeds),
            ("trained", "data_defect_nosink"), *(("trained", k) for k in cross), ("trained", "data_defect_gaussian")]
    bad = nonfinite_cells(report, used)
    return {"claim": "E2", "model": report["model"], "rule": 4,
            "head_defect": float(heads.mean()), "head_interval": percentile_interval(heads[idx].mean(1)),
            "head_nulls": {n: float(v.mean()) for n, v in head_nulls.items()}, "strongest_head_null": strongest_head,
            "data_defect": float(data.mean()), "data_interval": percentile_interval(d_b),
            "data_nulls": {n: float(v.mean()) for n, v in data_nulls.items()}, "strongest_data_null": strongest_data,
            "data_seed_nulls": [float(v.mean()) for v in by_seed],
            "p_heads_gaussian": p_gauss, "p_heads_seeds": p_seeds, "p_heads": p_max(p_gauss, p_seeds),
            "p_data_gaussian": p_data_gauss, "p_data_seeds": p_data_seeds, "p_data": p_max(p_data_gauss, p_data_seeds),
            "n_passages": len(data), "n_seeds": len(seeds), "data_null_seeds": len(cross),
            "n_boot": n_boot, "nonfinite": bad,
            "verdict": "undefined" if bad else data_status(report, seeds=min(len(seeds), len(cross)))}

def e2_table_rule4(reports, *, n_boot: int = 1000, seed: int = 0, heads_metric: str = "head_defect") -> list[dict]:
    """E2 on every model of ``reports``: evidence, Holm-corrected p-values and each model's verdict."""
    reports = check_reports(reports)
    draws = max(n_boot, draws_for(2 * len(reports), ALPHA))
    rows = [e2_evidence_rule4(r, n_boot=draws, seed=seed, heads_metric=heads_metric) for r in reports]
    return decide(rows, ("p_heads", "heads_below_nulls"), ("p_data", "data_below_nulls"), n_boot=draws)



# ----------------------------------------------------------------------- rule 2, E1 (registered 2026-11-30)
def e1_nulls_rule2(report: dict, metric: str = E1_METRIC) -> dict[str, np.ndarray]:
    """Every registered null of E1 for ``metric`` as ``(layers, passages)`` arrays, by display name."""
    c = report["conditions"]
    out = {name: matrix(report, metric, name) for name in random_nulls(report)}
    if "shuffled" in c:
        out["shuffled"] = matrix(report, metric, "shuffled")
    if metric == E1_METRIC:
        for name, key in INNER_NULLS.items():
            if key in c["trained"]:
                out[name] = matrix(report, key, "trained")
    return out


def e1_evidence_rule2(report: dict, metric: str = E1_METRIC, *, n_boot: int = 1000, seed: int = 0) -> dict:
    """The numbers behind E1 on one model, before the table's multiplicity correction."""
    trained = matrix(report, metric, "trained")
    nulls = e1_nulls_rule2(report, metric)
    seeds = [n for n in nulls if n.startswith("random")]
    if not seeds:
        raise ValueError(f"report on {report.get('model')!r} has no random-init null: analyze with random_seeds")
    L, B = trained.shape
    idx = unit_draws(B, n_boot, seed)
    boot = lambda a: a[:, idx].mean(-1).T                    # noqa: E731  (n_boot, layers)
    rho_b = depth_rhos(boot(trained))
    null_rho_b = np.stack([depth_rhos(boot(nulls[s])) for s in seeds])           # (seeds, n_boot)
    rho = float(depth_rhos(trained.mean(1)[None])[0])
    null_rho = {s: float(depth_rhos(nulls[s].mean(1)[None])[0]) for s in seeds}
    # (a) an intersection of two one-sided tests: rho < 0 and rho < every seed's rho; its p is the larger
    p_trend = max(p_win(rho_b), p_win(rho_b - null_rho_b.min(0)))
    k = third(L)
    late_t = trained[-k:].mean(0)
    late_n = {n: v[-third(len(v)):].mean(0) for n, v in nulls.items()}
    t_b = late_t[idx].mean(1)
    n_b = np.stack([v[idx].mean(1) for v in late_n.values()])               # (nulls, n_boot)
    strongest = min(late_n, key=lambda n: late_n[n].mean())
    gap_b = t_b - late_n[strongest][idx].mean(1)
    return {"claim": "E1", "model": report["model"], "metric": metric,
            "rho": rho, "rho_interval": percentile_interval(rho_b), "null_rho": null_rho,
            "late_trained": float(late_t.mean()), "late_interval": percentile_interval(t_b),
            "late_nulls": {n: float(v.mean()) for n, v in late_n.items()},
            "strongest_null": strongest, "gap_to_strongest": float(late_t.mean() - late_n[strongest].mean()),
            "gap_interval": percentile_interval(gap_b),
            "p_trend": p_trend, "p_level": p_win(t_b - n_b.min(0))}


def e1_table_rule2(reports: list[dict], metric=E1_METRIC, *, n_boot: int = 1000, seed: int = 0) -> list[dict]:
    """E1 on every model of ``reports``: the evidence, Holm-corrected p-values and each model's verdict.

    ``metric`` may be a list: one row per model and metric, the Holm correction across all of them.
    """
    metrics = [metric] if isinstance(metric, str) else list(metric)
    rows = [e1_evidence_rule2(r, m, n_boot=n_boot, seed=seed) for r in check_reports(reports) for m in metrics]
    return decide(rows, ("p_trend", "falls"), ("p_level", "below_nulls"))


def e1_rule2(report: dict, metric: str = E1_METRIC, *, n_boot: int = 1000, seed: int = 0) -> dict:
    """E1 on one model (a table of one: Holm over its two conditions)."""
    return e1_table_rule2([report], metric, n_boot=n_boot, seed=seed)[0]


# ----------------------------------------------------------------------- rule 2, E2
def e2_evidence_rule2(report: dict, *, n_boot: int = 1000, seed: int = 0, heads_metric: str = "head_defect") -> dict:
    """The numbers behind E2 on one model, before the table's multiplicity correction.

    ``heads_metric="head_defect_gain"`` is the ablation with the pre-attention norm's gain folded into the
    trained heads (the nulls' gains are one, so their defects are unchanged).
    """
    seeds = random_nulls(report)
    if not seeds:
        raise ValueError(f"report on {report.get('model')!r} has no random-init null: analyze with random_seeds")
    flat = lambda m, c: matrix(report, m, c).reshape(-1)           # noqa: E731  every head of every layer
    heads = flat(heads_metric, "trained")
    head_nulls = {"Gaussian heads": flat("head_defect_gaussian", "trained"),
                  **{s: flat("head_defect", s) for s in seeds}}
    idx = unit_draws(len(heads), n_boot, seed)
    p_heads = p_win(heads[idx].mean(1) - np.stack([v[idx].mean(1) for v in head_nulls.values()]).min(0))
    per_passage = lambda m: matrix(report, m, "trained").mean(0)   # noqa: E731  mean over layers
    data = per_passage("data_defect_nosink")
    data_nulls = {"random-init transports": per_passage("data_defect_cross"),
                  "Gaussian transports": per_passage("data_defect_gaussian")}
    jdx = unit_draws(len(data), n_boot, seed + 1)
    d_b = data[jdx].mean(1)
    p_data = p_win(d_b - np.stack([v[jdx].mean(1) for v in data_nulls.values()]).min(0))
    strongest_head = min(head_nulls, key=lambda n: head_nulls[n].mean())
    strongest_data = min(data_nulls, key=lambda n: data_nulls[n].mean())
    return {"claim": "E2", "model": report["model"],
            "head_defect": float(heads.mean()), "head_interval": percentile_interval(heads[idx].mean(1)),
            "head_nulls": {n: float(v.mean()) for n, v in head_nulls.items()}, "strongest_head_null": strongest_head,
            "data_defect": float(data.mean()), "data_interval": percentile_interval(d_b),
            "data_nulls": {n: float(v.mean()) for n, v in data_nulls.items()}, "strongest_data_null": strongest_data,
            "p_heads": p_heads, "p_data": p_data}


def e2_table_rule2(reports: list[dict], *, n_boot: int = 1000, seed: int = 0,
                   heads_metric: str = "head_defect") -> list[dict]:
    """E2 on every model of ``reports``: evidence, Holm-corrected p-values and each model's verdict."""
    rows = [e2_evidence_rule2(r, n_boot=n_boot, seed=seed, heads_metric=heads_metric) for r in check_reports(reports)]
    return decide(rows, ("p_heads", "heads_below_nulls"), ("p_data", "data_below_nulls"))


def e2_rule2(report: dict, *, n_boot: int = 1000, seed: int = 0) -> dict:
    """E2 on one model (a table of one)."""
    return e2_table_rule2([report], n_boot=n_boot, seed=seed)[0]


# ----------------------------------------------------------------------- rule 3, E2 (registered 2026-12-01)
def e2_evidence_rule3(report: dict, *, n_boot: int = 1000, seed: int = 0) -> dict:
    """E2 as rule 3 read it: the heads as rule 4 does; the data defect below the lower of one seed's transports
    (``data_defect_cross``) and Gaussian transports on the trained inputs (paired passage bootstrap)."""
    seeds = random_nulls(report)
    if not seeds:
        raise ValueError(f"report on {report.get('model')!r} has no random-init null: analyze with random_seeds")
    flat = lambda m, c: matrix(report, m, c).reshape(-1)           # noqa: E731  every head of every layer
    heads, gaussian = flat("head_defect", "trained"), flat("head_defect_gaussian", "trained")
    seed_heads = [flat("head_defect", s) for s in seeds]
    idx = unit_draws(len(heads), n_boot, seed)
    p_heads = max(p_win(heads[idx].mean(1) - gaussian[idx].mean(1), len(heads)),
                  seed_p(float(heads.mean()), [v.mean() for v in seed_heads]))
    per_passage = lambda m: matrix(report, m, "trained").mean(0)   # noqa: E731  mean over layers
    data = per_passage("data_defect_nosink")
    nulls = [per_passage("data_defect_cross"), per_passage("data_defect_gaussian")]
    jdx = unit_draws(len(data), n_boot, seed + 1)
    p_data = p_win(data[jdx].mean(1) - np.stack([v[jdx].mean(1) for v in nulls]).min(0), len(data))
    values = np.concatenate([heads, gaussian, *seed_heads, data, *nulls])
    return {"claim": "E2", "model": report["model"], "rule": 3, "p_heads": p_heads, "p_data": p_data,
            "verdict": "undefined" if not np.isfinite(values).all() else data_status(report, seeds=len(seeds))}


def e2_table_rule3(reports: list[dict], *, n_boot: int = 1000, seed: int = 0) -> list[dict]:
    """E2 by rule 3 on every model of ``reports`` (Holm across the table, enough draws for it)."""
    reports = check_reports(reports)
    draws = max(n_boot, draws_for(2 * len(reports), ALPHA))
    rows = [e2_evidence_rule3(r, n_boot=draws, seed=seed) for r in reports]
    return decide(rows, ("p_heads", "heads_below_nulls"), ("p_data", "data_below_nulls"), n_boot=draws)


# ----------------------------------------------------------------------- rule 2, E3
def gap_rule2(report: dict, metric: str) -> np.ndarray:
    """Per-unit late-layer gap: trained minus the mean of the random-init seeds (paired by passage or head)."""
    seeds = random_nulls(report)
    if not seeds:
        raise ValueError(f"report on {report.get('model')!r} has no random-init null: analyze with random_seeds")
    return late_value(report, metric) - np.mean([late_value(report, metric, s) for s in seeds], axis=0)


def _slope(x, y) -> float:
    return float(np.polyfit(x, y, 1)[0]) if len(set(np.round(x, 12))) > 1 else float("nan")


def e3_rule2(reports: list[dict], metric: str, *, n_boot: int = 2000, seed: int = 0) -> dict:
    """E3 for one structure's models and one metric: the gap against size, within and across families."""
    reports = check_reports(reports, need=("model", "family", "non_embedding_parameters"))
    bad = [i for i, r in enumerate(reports) if isinstance(r["non_embedding_parameters"], bool) or not
           isinstance(r["non_embedding_parameters"], (int, float, np.number)) or not r["non_embedding_parameters"] > 0]
    if bad:
        raise ValueError(f"reports[{bad[0]}]'s non_embedding_parameters must be positive, got "
                         f"{reports[bad[0]]['non_embedding_parameters']!r}")
    samples = [gap_rule2(r, metric) for r in reports]
    rng = np.random.default_rng(seed)
    boots = np.array([[s[rng.integers(0, len(s), len(s))].mean() for s in samples] for _ in range(n_boot)])
    x = np.log10([r["non_embedding_parameters"] for r in reports])
    y = np.array([s.mean() for s in samples])
    models = [{"model": r["model"], "family": r["family"], "x": float(xi), "gap": float(yi),
               "interval": percentile_interval(boots[:, i]), "layers": r.get("layers"), "heads": r.get("heads"),
               "groups": r.get("groups"), "d": r.get("d")} for i, (r, xi, yi) in enumerate(zip(reports, x, y))]
    families: dict[str, list[int]] = {}
    for i, r in enumerate(reports):
        families.setdefault(r["family"], []).append(i)
    within, steps = {}, []
    for fam, ix in families.items():
        sizes = sorted(ix, key=lambda i: x[i])
        if len({round(x[i], 6) for i in ix}) >= 3:
            b = [_slope(x[sizes], boots[k, sizes]) for k in range(n_boot)]
            lo, hi = percentile_interval(np.array(b))
            within[fam] = {"slope": _slope(x[sizes], y[sizes]), "interval": (lo, hi),
                           "verdict": "holds" if hi < 0 else "does not hold" if lo > 0 else "inconclusive"}
        for a, b in zip(sizes, sizes[1:]):
            d = boots[:, b] - boots[:, a]
            steps.append({"family": fam, "from": reports[a]["model"], "to": reports[b]["model"],
                          "change": float(y[b] - y[a]), "interval": percentile_interval(d)})
    verdicts = {w["verdict"] for w in within.values()}
    verdict = "not testable" if not verdicts else verdicts.pop() if len(verdicts) == 1 else "partly"
    across = None
    if len(reports) >= 3 and len(set(np.round(x, 6))) >= 2:
        b = [_slope(x, boots[k]) for k in range(n_boot)]
        across = {"slope": _slope(x, y), "interval": percentile_interval(np.array(b)),
                  "leave_one_out": {reports[i]["model"]: _slope(np.delete(x, i), np.delete(y, i))
                                    for i in range(len(reports))}}
    return {"claim": "E3", "metric": metric, "n_models": len(reports), "models": models, "within": within,
            "steps": steps, "across": across, "verdict": verdict}



# ----------------------------------------------------------------------- rule 1 (replaced 2026-11-30)
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
            "falls": falls, "below_null": below, "verdict": combine(falls, below)}


def e2_rule1(report: dict) -> dict:
    """E2 by the first rule: heads below the Gaussian heads and the lower seed; data below the lower seed's own."""
    c = report["conditions"]
    nulls = [n for n in ("random0", "random1") if n in c]
    if not nulls:
        raise ValueError(f"report on {report.get('model')!r} has no random0/random1 null")
    mean = lambda m, cond: float(np.mean(matrix(report, m, cond)))      # noqa: E731
    head, gauss = mean("head_defect", "trained"), mean("head_defect_gaussian", "trained")
    rand_head = min(mean("head_defect", n) for n in nulls)
    data, rand_data = mean("data_defect", "trained"), min(mean("data_defect", n) for n in nulls)
    a, b = head < min(gauss, rand_head), data < rand_data
    return {"model": report["model"], "head_defect": head, "gaussian_null": gauss, "random_head": rand_head,
            "data_defect": data, "random_data": rand_data, "heads_below_nulls": a, "data_below_null": b,
            "verdict": combine(a, b)}


def scale_slope(reports: list[dict], metric: str, *, n_boot: int = 2000, seed: int = 0,
                condition: str = "trained") -> dict:
    """Rule 1's fit: slope of the raw late-layer ``metric`` against log10(total parameters), passages resampled;
    ``condition`` (e.g. ``"random0"``) fits a null's values instead of the trained model's."""
    reports = check_reports(reports, need=("parameters",))
    bad = [i for i, r in enumerate(reports) if isinstance(r["parameters"], bool)
           or not isinstance(r["parameters"], (int, float, np.number)) or not r["parameters"] > 0]
    if bad:
        raise ValueError(f"reports must count positive parameters; reports[{bad[0]}] has {reports[bad[0]]['parameters']!r}")
    check_int(n_boot, "n_boot", low=1)
    x = np.log10([r["parameters"] for r in reports])
    samples = [late_value(r, metric, condition) for r in reports]
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
