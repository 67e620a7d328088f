"""The chapter's rule as it was before a change made after its results were seen, still runnable, and the
record of each change (as :mod:`connlap_lite.verdicts.history` keeps them for E1-E3).

(The changes themselves are in the one record of every rule change, :data:`connlap_lite.verdicts.history.RULE_CHANGES`,
under the claim ``"known"``.)
``verdicts_rule1(report)``     rule 1, the rule stated with the chapter's first measurements;
``rule_changes(reports)``      every change with the old and the new rule's verdict per statement and model.

Chapter: *Known results, reproduced*.
"""
from __future__ import annotations

import math

import torch

from ..measure.stats import mean_interval
from ..verdicts.history import RULE_CHANGES
from .sinks import INPUTS, middle_layers
from .statements import COLLAPSE, PROPOSITION_TOL, both_parts, mean_of, per_passage, statement_row, side, verdicts


def _interval(diff: torch.Tensor) -> list:
    return list(mean_interval(diff, n_boot=1000))


def verdicts_rule1(report: dict) -> list[dict]:
    """Rule 1 of the chapter (its first rule, replaced 2026-12-02) on one model's report: the rows of
    :func:`connlap_lite.known.verdicts` as that rule gave them (the statements' texts are today's).

    >>> from connlap_lite.known import toy_report
    >>> [r["verdict"] for r in verdicts_rule1(toy_report())][-2:]
    ['disagree', 'agree']

    Chapter: *Known results, reproduced*.
    """
    main = report.get("main", "trained")
    c, z = report["conditions"][main], report["conditions"]["random0"]
    nat, rnd = c["natural"], z["natural"]
    absolute, encoder, L = report["absolute_positions"], report["encoder"], report["layers"]
    rows = []

    rate = {i: per_passage(c[i]["rate"]) for i in INPUTS}
    rate0 = [mean_of(z[i]["rate"]) for i in INPUTS]
    steps = [mean_interval(rate["natural"] - rate["random"]), mean_interval(rate["random"] - rate["repeated"])]
    reversed_ = any(hi < 0 for _, _, hi in steps)
    order = ("undefined" if not all(math.isfinite(v) for s in steps for v in s) else
             "disagree" if reversed_ else "agree")
    rows.append(statement_row(report, "sink_order", order,
                     [float(rate[i].mean()) for i in INPUTS], rate0, [list(s) for s in steps]))
    zero = bool((rate["repeated"] == 0).all())
    rows.append(statement_row(report, "sink_repeated", "not comparable" if absolute else ("agree" if zero else "disagree"),
                     float(rate["repeated"].mean()), rate0[2]))
    spread = max(max(v) for v in c["repeated"]["spread"])
    spread0 = max(max(v) for v in z["repeated"]["spread"])
    rows.append(statement_row(report, "proposition", "not comparable" if absolute else
                     ("agree" if spread <= PROPOSITION_TOL else "disagree"), spread, spread0))

    if encoder:
        mid = middle_layers(L)
        sep, sep0 = per_passage(nat["mass_last"], mid), per_passage(rnd["mass_last"], mid)
        tested = _interval(sep - 0.5)
        rows.append(statement_row(report, "clark_sep", side(tested), float(sep.mean()), float(sep0.mean()), [tested]))
    else:
        rows.append(statement_row(report, "clark_sep", "not comparable", None, None))
    weight, norm = per_passage(nat["mass_sinks"]), per_passage(nat["norm_sinks"])
    tested = _interval(0.5 * weight - norm)
    rows.append(statement_row(report, "kobayashi_norm", side(tested),
                     [float(weight.mean()), float(norm.mean())], [mean_of(rnd["mass_sinks"]), mean_of(rnd["norm_sinks"])],
                     [tested]))

    walk, state = torch.tensor(nat["walk_residual"]), torch.tensor(nat["state_residual"])
    walk0, state0 = torch.tensor(rnd["walk_residual"]), torch.tensor(rnd["state_residual"])
    tested = _interval(COLLAPSE * walk[0] - walk[-1])
    rows.append(statement_row(report, "dong_walks", side(tested), [float(walk[0].mean()), float(walk[-1].mean())],
                     [float(walk0[0].mean()), float(walk0[-1].mean())], [tested]))
    tested = _interval(state[-1] - COLLAPSE * state[0])
    rows.append(statement_row(report, "dong_skip", side(tested), [float(state[0].mean()), float(state[-1].mean())],
                     [float(state0[0].mean()), float(state0[-1].mean())], [tested]))

    col, col0 = per_passage(nat["column_defect"]), per_passage(rnd["column_defect"])
    tested = _interval(col0 - col)
    rows.append(statement_row(report, "sinkformer", "not comparable" if not encoder else side(tested),
                     float(col.mean()), float(col0.mean()), [tested]))

    if not nat["head_tv2"]:                                   # fewer than three layers: no pair two apart
        rows.append(statement_row(report, "reuse", "not comparable", None, None))
        return rows
    adj, two = per_passage(nat["head_tv"]), per_passage(nat["head_tv2"])
    tvn, tvn0 = per_passage(nat["tv_norm"]), per_passage(rnd["tv_norm"])
    tested_a = _interval(two - adj)
    tested_b = _interval(tvn0 - tvn)
    rows.append(statement_row(report, "reuse", both_parts(side(tested_a), side(tested_b)),
                     [float(adj.mean()), float(two.mean()), float(tvn.mean())],
                     [mean_of(rnd["head_tv"]), mean_of(rnd["head_tv2"]), float(tvn0.mean())], [tested_a, tested_b]))
    return rows


RULES = {1: verdicts_rule1, 2: verdicts}


def rule_changes(reports: list[dict]) -> list[dict]:
    """The chapter's changes (the entries of :data:`connlap_lite.verdicts.history.RULE_CHANGES` under the claim
    ``"known"``), one per date and pair of rules, with the verdicts of its old and its new rule on ``reports``: each
    has ``date``, ``from``, ``to``, ``parts`` (its entries: ``statements``, ``old``, ``new``, ``why``) and
    ``verdicts``, ``{(statement key, model): (old, new)}``, for the statements its parts name.

    >>> from connlap_lite.known import toy_report
    >>> rule_changes([toy_report()])[0]["verdicts"][("reuse", "toy")]
    ('agree', 'agree')

    Chapter: *Known results, reproduced*.
    """
    changes: dict[tuple, dict] = {}
    for c in RULE_CHANGES:
        if c["claim"] == "known":
            change = changes.setdefault((c["date"], c["from"], c["to"]),
                                        {"date": c["date"], "from": c["from"], "to": c["to"], "parts": []})
            change["parts"].append({k: c[k] for k in ("statements", "old", "new", "why")})
    out = []
    for change in changes.values():
        pairs = {}
        for rep in reports:
            before = {r["key"]: r["verdict"] for r in RULES[change["from"]](rep)}
            after = {r["key"]: r["verdict"] for r in RULES[change["to"]](rep)}
            changed = [k for k in before if any(k in part["statements"] for part in change["parts"])]
            pairs.update({(k, rep["model"]): (before[k], after[k]) for k in changed})
        out.append({**change, "verdicts": pairs})
    return out
