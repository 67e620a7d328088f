"""The scorecard: one row per claim and structure, each verdict with what it rests on.

The rules and their vocabulary are :mod:`connlap_lite.verdicts.rules`'s (read its docstring); this module
puts them in a table: per claim and structure the verdict, each model's verdict, the strongest null
the trained model beat or lost to with the interval of the gap, how often the verdict survives
resampling the passages (:func:`robustness`), and the verdict on every other corpus measured.
The chapters' verdict boxes put it in words (:mod:`connlap_lite.pages.boxes`).

Chapter: *Scorecard*.
"""
from __future__ import annotations

import numpy as np

from . import history as H
from .record import archived_view
from .rules import e1_table, e2_table, e3, resample
from .words import MIN_SEEDS, check_reports

E3_METRICS = ("tv_norm_nosink", "head_defect")


def structure_verdict(verdicts: list[str]) -> str:
    """One structure's verdict from its models': "undefined" if any model's is; else, over the models with
    enough data, their common verdict, or "inconclusive" if they differ and one of them is, or else "partly"
    (mixed); "insufficient data" if no model has enough.

    >>> structure_verdict(["holds", "holds"]), structure_verdict(["holds", "partly"]), structure_verdict(["holds", "insufficient data"])
    ('holds', 'partly', 'holds')
    >>> structure_verdict(["holds", "inconclusive"])
    'inconclusive'
    >>> structure_verdict(["holds", "undefined"]), structure_verdict(["insufficient data"])
    ('undefined', 'insufficient data')
    """
    if "undefined" in verdicts:
        return "undefined"
    decided = [v for v in verdicts if v != "insufficient data"]
    if not decided:
        return "insufficient data"
    if len(set(decided)) == 1:
        return decided[0]
    return "inconclusive" if "inconclusive" in decided else "partly"


NEED = ("model", "encoder", "family", "non_embedding_parameters")    # what the scorecard reads of each report


def scorecard(reports: list[dict], *, n_boot: int = 1000, seed: int = 0) -> list[dict]:
    """One row per claim and structure: the rule's verdict, the metric, the models and the numbers."""
    reports = one_each(check_reports(reports, need=NEED))
    rows = []
    for structure, is_enc in (("encoder", True), ("decoder", False)):
        group = [r for r in reports if r["encoder"] == is_enc]
        if not group:
            continue
        names = [r["model"] for r in group]
        e1s, e2s = e1_table(group, n_boot=n_boot, seed=seed), e2_table(group, n_boot=n_boot, seed=seed)
        rows.append({"claim": "E1", "structure": structure, "metric": "tv_norm_nosink", "models": names,
                     "per_model": e1s, "verdict": structure_verdict([x["verdict"] for x in e1s]),
                     "shares_structure": [x["model"] for x in e1s if x["shares_structure"]]})
        rows.append({"claim": "E2", "structure": structure, "metric": "head_defect, data_defect_nosink",
                     "models": names, "per_model": e2s, "verdict": structure_verdict([x["verdict"] for x in e2s])})
        for metric in E3_METRICS:
            rows.append({"structure": structure, **e3(group, metric, seed=seed)})
    return rows


def one_each(reports: list, names: list[str] | None = None) -> list:
    """``reports``, refused if two of them are on the same model (a model counts once: twice, its verdict would
    count twice and E3 would fit its size twice); ``names`` (files, by default ``reports[i]``) name the two.

    >>> one_each([{"model": "a"}, {"model": "b"}, {"model": "a"}], ["a.json", "b.json", "copy.json"])
    Traceback (most recent call last):
    ...
    ValueError: a.json and copy.json are both reports on model 'a': a model counts once in the scorecard; pass one report per model
    """
    names = names or [f"reports[{i}]" for i in range(len(reports))]
    seen = {}
    for name, r in zip(names, reports):
        if r["model"] in seen:
            raise ValueError(f"{seen[r['model']]} and {name} are both reports on model {r['model']!r}: a model "
                             "counts once in the scorecard; pass one report per model")
        seen[r["model"]] = name
    return reports


def same_after(reports: list[dict], rows: list[dict], swapped: dict, name: str, *, claims=("E1", "E2"),
               n_boot: int = 1000, seed: int = 0) -> list[dict]:
    """``rows`` with each E1 and E2 word kept only where the rule gives the same word with the model's ablated
    measurement in its place (``swapped``: ``{model: report}``, e.g. :func:`connlap_lite.verdicts.rules.substitute` of a
    4-bit round trip); a word that changes becomes *inconclusive*, the two words kept in the model's entry under
    ``"moved"`` (``{name: (word, word after)}``), and the structure's word is combined again. Each rule is applied
    to the structure's models as one table, as the registered verdicts are. ``claims``: those checked (E2 needs the
    ablated report's data seeds).

    A word that flips under a quantisation round trip rests on a difference that quantisation alone can make."""
    out = []
    for row in rows:
        mine = [m for m in row.get("models", []) if isinstance(m, str) and m in swapped]
        if row["claim"] not in claims or not mine:
            out.append(row)
            continue
        group = [swapped.get(r["model"], r) for r in reports if r["model"] in row["models"]]
        table = e1_table(group, n_boot=n_boot, seed=seed) if row["claim"] == "E1" else \
            e2_table(group, n_boot=n_boot, seed=seed)
        after = {x["model"]: x["verdict"] for x in table}
        per = []
        for x in row["per_model"]:
            m = x["model"]
            if m in swapped and after[m] != x["verdict"]:
                x = {**x, "verdict": "inconclusive", "moved": {**x.get("moved", {}), name: (x["verdict"], after[m])}}
            per.append(x)
        out.append({**row, "per_model": per, "verdict": structure_verdict([x["verdict"] for x in per])})
    return out


def row_key(row: dict) -> tuple:
    return row["claim"], row["structure"], row["metric"]


def robustness(reports: list[dict], rows: list[dict] | None = None, *, resamples: int = 20, seed: int = 0,
               n_boot: int = 200) -> dict[tuple, float]:
    """How often each row's verdict survives resampling every model's passages: ``{(claim, structure,
    metric): rate}`` over ``resamples`` bootstrap samples (each rule re-applied with ``n_boot`` draws)."""
    from .._backend import check_int

    check_int(resamples, "resamples", low=1)
    rows = scorecard(reports) if rows is None else rows
    rng = np.random.default_rng(seed)
    same = {row_key(r): 0 for r in rows}
    for k in range(resamples):
        drawn = [resample(r, rng.integers(0, r["passages"], r["passages"])) for r in reports]
        again = {row_key(x): x["verdict"] for x in scorecard(drawn, n_boot=n_boot, seed=seed + k + 1)}
        for r in rows:
            same[row_key(r)] += again.get(row_key(r)) == r["verdict"]
    return {key: n / resamples for key, n in same.items()}


def _nulls_of(row: dict) -> set:
    """The registered nulls a scorecard row's verdict was measured against (per model, by display name); the
    random-init seeds count as one null, ``"random-init seeds"``, where there are at least
    :data:`~connlap_lite.verdicts.words.MIN_SEEDS` of them (the rules count them as units: more seeds is more of the same
    null), and by name where there are fewer."""
    if row["claim"] == "E3":
        return {(m["model"], m["null"]) for m in row["models"]}
    key = "late_nulls" if row["claim"] == "E1" else "head_nulls"
    extra = "data_nulls" if row["claim"] == "E2" else key
    out = set()
    for x in row["per_model"]:
        names = {*x[key], *x[extra]}
        seeds = {n for n in names if n.startswith("random") and n[6:].isdigit()}
        out |= {(x["model"], n) for n in names - seeds}
        out |= {(x["model"], "random-init seeds")} if len(seeds) >= MIN_SEEDS else {(x["model"], n) for n in seeds}
        if x.get("data_null_seeds", MIN_SEEDS) < MIN_SEEDS:      # E2's data null from too few seeds' transports
            out.add((x["model"], f"random-init transports of {x['data_null_seeds']} seed(s)"))
    return out


def by_corpus(rows: list[dict], corpora: dict[str, list[dict]], *, n_boot: int = 1000) -> dict[tuple, dict]:
    """Each row's verdict on every corpus in ``corpora`` (``{corpus: reports}``): ``{(claim, structure,
    metric): {corpus: verdict}}``; a row that a corpus cannot give (no such structure) is left out there, and
    one whose models were measured there against other nulls than in ``rows`` (no shuffled passages, fewer than
    :data:`~connlap_lite.verdicts.words.MIN_SEEDS` random-init seeds, another null for E3's gap) says "not comparable": a
    verdict against weaker nulls is not a difference between corpora."""
    out = {row_key(r): {} for r in rows}
    mine = {row_key(r): _nulls_of(r) for r in rows}
    for name, reports in corpora.items():
        for row in scorecard(reports, n_boot=n_boot):
            if row_key(row) in out:
                same = {(m, n) for m, n in mine[row_key(row)] if m in {m for m, _ in _nulls_of(row)}} == _nulls_of(row)
                out[row_key(row)][name] = row["verdict"] if same else "not comparable"
    return out


def _structures(reports):
    for structure, is_enc in (("encoder", True), ("decoder", False)):
        group = [r for r in reports if r["encoder"] == is_enc]
        if group:
            yield structure, group


def _verdicts_by_rule(reports: list[dict], rule: int) -> dict[tuple, str]:
    """Every verdict that rule ``rule`` (1 to 5) gives on ``reports``: per model for E1 and E2, ``{(claim, model):
    verdict}``; per structure and metric for E3, ``{("E3", structure, metric): verdict}``.  The rules in force
    (:mod:`connlap_lite.verdicts.rules`) are rule 4 for E1 and E3 and rule 5 for E2; so rule 4 reads E2 by
    :func:`connlap_lite.verdicts.history.e2_table_rule4` and rule 5 reads E1 and E3 by the rule in force (rule 4)."""
    out = {}
    for structure, group in _structures(reports):
        if rule == 1:
            e1s = [{"model": r["model"], **H.e1_rule1(r)} for r in group]
            e2s = [{"model": r["model"], **H.e2_rule1(r)} for r in group]
            e3s = {m: H.e3_rule1(group, m)["verdict"] for m in E3_METRICS}
        elif rule == 2:
            e1s, e2s = H.e1_table_rule2(group), H.e2_table_rule2(group)
            e3s = {m: H.e3_rule2(group, m)["verdict"] for m in E3_METRICS}
        elif rule == 3:
            e1s, e2s = H.e1_table_rule3(group), H.e2_table_rule3(group)
            e3s = {m: H.e3_rule3(group, m)["verdict"] for m in E3_METRICS}
        else:
            e1s, e2s = e1_table(group), e2_table(group) if rule == 5 else H.e2_table_rule4(group)
            e3s = {m: e3(group, m)["verdict"] for m in E3_METRICS}
        out.update({("E1", x["model"]): x["verdict"] for x in e1s})
        out.update({("E2", x["model"]): x["verdict"] for x in e2s})
        out.update({("E3", structure, m): v for m, v in e3s.items()})
    return out


def rule_changes(reports: list[dict]) -> list[dict]:
    """Every dated change of E1-E3 (:data:`connlap_lite.verdicts.history.RULE_CHANGES`, then
    :data:`~connlap_lite.verdicts.history.MEASUREMENT_CHANGES`) with the verdicts before and after it on ``reports``,
    side by side: each rule change's row gains ``verdicts``, ``{key: (old, new)}`` (keys as in
    :func:`_verdicts_by_rule`, for that change's claim); each measurement change's row gains ``verdicts``,
    ``{rule: {key: (as measured before, as measured now)}}``, the rules it lists applied to the archived
    measurement (:func:`connlap_lite.verdicts.record.archived_view`) and to the current one (None where the reports do
    not hold the archived keys)."""
    reports = check_reports(reports, need=(*NEED, "parameters"))
    mine = [c for c in H.RULE_CHANGES if c["claim"] in ("E1", "E2", "E3")]     # (the known results': their chapter's)
    rules = {c[e] for c in mine for e in ("from", "to")} | {k for c in H.MEASUREMENT_CHANGES for k in c["rules"]}
    by_rule = {k: _verdicts_by_rule(reports, k) for k in rules}
    out = []
    for change in mine:
        old, new = by_rule[change["from"]], by_rule[change["to"]]
        pairs = {k: (old[k], new[k]) for k in old if k[0] == change["claim"]}
        out.append({**change, "verdicts": pairs})
    for change in H.MEASUREMENT_CHANGES:
        if not all(k in r["conditions"]["trained"] for r in reports for k in change["keys"].values()):
            out.append({**change, "verdicts": None})            # reports measured without the archive
            continue
        before = [archived_view(r, change["keys"]) for r in reports]
        verdicts = {}
        for rule in change["rules"]:
            old = _verdicts_by_rule(before, rule)
            verdicts[rule] = {k: (old[k], by_rule[rule][k]) for k in old if k[0] in change["claims"]}
        out.append({**change, "verdicts": verdicts})
    return out


SUPPORT = {"holds": 3, "partly": 2, "inconclusive": 1, "does not hold": 0}   # how far a word supports the claim


def direction(pairs) -> str:
    """Which way a rule change moved the verdicts, from its ``(old, new)`` pairs: towards the paper's claim (more
    support by :data:`SUPPORT`), away from it, both ways, or not at all; words outside :data:`SUPPORT`
    (insufficient data, undefined) count as no move.

    >>> direction([("partly", "holds"), ("holds", "holds")])
    'towards the claim (1 verdict towards it, none away)'
    >>> direction([("holds", "does not hold"), ("partly", "holds")])
    'both ways (1 verdict towards the claim, 1 away from it)'
    >>> direction([("holds", "holds")])
    'no verdict moved'
    """
    moves = [SUPPORT[b] - SUPPORT[a] for a, b in pairs if a in SUPPORT and b in SUPPORT]
    up, down = sum(m > 0 for m in moves), sum(m < 0 for m in moves)
    if not up and not down:
        return "no verdict moved"
    if up and down:
        return f"both ways ({up} verdict{'s' * (up != 1)} towards the claim, {down} away from it)"
    if up:
        return f"towards the claim ({up} verdict{'s' * (up != 1)} towards it, none away)"
    return f"away from the claim ({down} verdict{'s' * (down != 1)} away from it, none towards it)"
