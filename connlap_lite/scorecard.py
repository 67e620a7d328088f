"""The scorecard: one row per claim and structure, each verdict with what it rests on.

The rules and their vocabulary are :mod:`connlap_lite.report`'s (read its docstring); this module
puts them in a table: per claim and structure the verdict, each model's verdict, the strongest null
the trained model beat or lost to with the interval of the gap, how often the verdict survives
resampling the passages (:func:`robustness`), and the verdict on every other corpus measured.
It also writes the opening verdict boxes of the empirical chapters (:func:`verdict_box`).

Chapter: *Scorecard*.
"""
from __future__ import annotations

import numpy as np

from . import rules_history as H
from .prose import names
from .record import archived_view
from .report import E2_RULE, RULE, e1_table, e2_table, e3, resample
from .verdicts import MIN_SEEDS, check_reports

E3_METRICS = ("tv_norm_nosink", "head_defect")


def _combine(verdicts: list[str]) -> str:
    """One structure's verdict from its models': "undefined" if any model's is; else, over the models with
    enough data, their common verdict, or "inconclusive" if they differ and one of them is, or else "partly"
    (mixed); "insufficient data" if no model has enough.

    >>> _combine(["holds", "holds"]), _combine(["holds", "partly"]), _combine(["holds", "insufficient data"])
    ('holds', 'partly', 'holds')
    >>> _combine(["holds", "inconclusive"])
    'inconclusive'
    >>> _combine(["holds", "undefined"]), _combine(["insufficient data"])
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
                     "per_model": e1s, "verdict": _combine([x["verdict"] for x in e1s]),
                     "shares_structure": [x["model"] for x in e1s if x["shares_structure"]]})
        rows.append({"claim": "E2", "structure": structure, "metric": "head_defect, data_defect_nosink",
                     "models": names, "per_model": e2s, "verdict": _combine([x["verdict"] for x in e2s])})
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
    measurement in its place (``swapped``: ``{model: report}``, e.g. :func:`connlap_lite.report.substitute` of a
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
        out.append({**row, "per_model": per, "verdict": _combine([x["verdict"] for x in per])})
    return out


def _key(row: dict) -> tuple:
    return row["claim"], row["structure"], row["metric"]


def robustness(reports: list[dict], rows: list[dict] | None = None, *, resamples: int = 20, seed: int = 0,
               n_boot: int = 200) -> dict[tuple, float]:
    """How often each row's verdict survives resampling every model's passages: ``{(claim, structure,
    metric): rate}`` over ``resamples`` bootstrap samples (each rule re-applied with ``n_boot`` draws)."""
    from ._backend import check_int

    check_int(resamples, "resamples", low=1)
    rows = scorecard(reports) if rows is None else rows
    rng = np.random.default_rng(seed)
    same = {_key(r): 0 for r in rows}
    for k in range(resamples):
        drawn = [resample(r, rng.integers(0, r["passages"], r["passages"])) for r in reports]
        again = {_key(x): x["verdict"] for x in scorecard(drawn, n_boot=n_boot, seed=seed + k + 1)}
        for r in rows:
            same[_key(r)] += again.get(_key(r)) == r["verdict"]
    return {key: n / resamples for key, n in same.items()}


def _nulls_of(row: dict) -> set:
    """The registered nulls a scorecard row's verdict was measured against (per model, by display name); the
    random-init seeds count as one null, ``"random-init seeds"``, where there are at least
    :data:`~connlap_lite.verdicts.MIN_SEEDS` of them (the rules count them as units: more seeds is more of the same
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
    :data:`~connlap_lite.verdicts.MIN_SEEDS` random-init seeds, another null for E3's gap) says "not comparable": a
    verdict against weaker nulls is not a difference between corpora."""
    out = {_key(r): {} for r in rows}
    mine = {_key(r): _nulls_of(r) for r in rows}
    for name, reports in corpora.items():
        for row in scorecard(reports, n_boot=n_boot):
            if _key(row) in out:
                same = {(m, n) for m, n in mine[_key(row)] if m in {m for m, _ in _nulls_of(row)}} == _nulls_of(row)
                out[_key(row)][name] = row["verdict"] if same else "not comparable"
    return out


def _structures(reports):
    for structure, is_enc in (("encoder", True), ("decoder", False)):
        group = [r for r in reports if r["encoder"] == is_enc]
        if group:
            yield structure, group


def _verdicts_by_rule(reports: list[dict], rule: int) -> dict[tuple, str]:
    """Every verdict that rule ``rule`` (1 to 5) gives on ``reports``: per model for E1 and E2, ``{(claim, model):
    verdict}``; per structure and metric for E3, ``{("E3", structure, metric): verdict}``.  The rules in force
    (:mod:`connlap_lite.report`) are rule 4 for E1 and E3 and rule 5 for E2; so rule 4 reads E2 by
    :func:`connlap_lite.rules_history.e2_table_rule4` and rule 5 reads E1 and E3 by the rule in force (rule 4)."""
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
    """Every dated change (:data:`connlap_lite.rules_history.RULE_CHANGES`, then
    :data:`~connlap_lite.rules_history.MEASUREMENT_CHANGES`) with the verdicts before and after it on ``reports``,
    side by side: each rule change's row gains ``verdicts``, ``{key: (old, new)}`` (keys as in
    :func:`_verdicts_by_rule`, for that change's claim); each measurement change's row gains ``verdicts``,
    ``{rule: {key: (as measured before, as measured now)}}``, the rules it lists applied to the archived
    measurement (:func:`connlap_lite.record.archived_view`) and to the current one (None where the reports do
    not hold the archived keys)."""
    reports = check_reports(reports, need=(*NEED, "parameters"))
    rules = {c[e] for c in H.RULE_CHANGES for e in ("from", "to")} | {k for c in H.MEASUREMENT_CHANGES
                                                                       for k in c["rules"]}
    by_rule = {k: _verdicts_by_rule(reports, k) for k in rules}
    out = []
    for change in H.RULE_CHANGES:
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


def rule_changes_markdown(changes: list[dict]) -> str:
    """The scorecard's *Rule changes* in Markdown, from :func:`rule_changes`: per change, the old and new rule (or
    measurement), why, and the verdicts old -> new.

    Examples
    --------
    >>> change = {"date": "2026-12-01", "claim": "E1", "from": 2, "to": 3, "old": "a", "new": "b", "why": "c",
    ...           "verdicts": {("E1", "m"): ("holds", "partly")}}
    >>> measured = {"date": "2026-11-30", "metric": "`x`", "claims": ("E1",), "rules": (1,), "keys": {"x": "x_old"},
    ...             "old": "d", "new": "e", "why": "f", "verdicts": {1: {("E1", "m"): ("partly", "partly")}}}
    >>> print(rule_changes_markdown([change, measured]))
    - **E1, rule 2 -> rule 3, changed 2026-12-01.** Before: a. Now: b. Why: c.
      Verdicts, old -> new: m: holds -> partly. On these measurements the change moved the verdicts away from the claim (1 verdict away from it, none towards it).
    - **Measurement of `x`, changed 2026-11-30.** Before: d. Now: e. Why: f.
      E1 by rule 1, as measured before -> now: m: partly -> partly.
    """
    lines = []
    for c in changes:
        if "keys" not in c:
            lines.append(f"- **{c['claim']}, rule {c['from']} -> rule {c['to']}, changed {c['date']}.** "
                         f"Before: {c['old']}. Now: {c['new']}. Why: {c['why']}.")
            who = "; ".join(f"{' '.join(k[1:])}: {a} -> {b}" for k, (a, b) in c["verdicts"].items())
            lines.append(f"  Verdicts, old -> new: {who}. On these measurements the change moved the verdicts "
                         f"{direction(c['verdicts'].values())}."
                         .replace("moved the verdicts no verdict moved", "moved no verdict"))
            continue
        lines.append(f"- **Measurement of {c['metric']}, changed {c['date']}.** Before: {c['old']}. Now: "
                     f"{c['new']}. Why: {c['why']}.")
        if c["verdicts"] is None:
            lines.append("  These reports do not hold the archived measurement, so its verdicts cannot be shown.")
            continue
        for rule, pairs in c["verdicts"].items():
            for claim in c["claims"]:
                who = "; ".join(f"{' '.join(k[1:])}: {a} -> {b}" for k, (a, b) in pairs.items() if k[0] == claim)
                in_force = " (in force)" if rule == (E2_RULE if claim == "E2" else RULE) else ""
                lines.append(f"  {claim} by rule {rule}{in_force}, as measured before -> now: {who}.")
        if not c["verdicts"]:
            lines.append("  No rule reads it: no verdict moves.")
    return "\n".join(lines)


# The verdict boxes' plain words: each claim as a sentence, each registered metric as what it measures.
CLAIM_WORDS = {"E1": "Attention converges to stable operators with depth",
               "E2": "Transports become close to scaled isometries",
               "E3": "Both grow stronger with model size"}
METRIC_WORDS = {
    "tv_norm_nosink": "the distance between consecutive layers' walks, attention sinks left out",
    "head_defect": "how far each head's transport is from a scaled isometry",
    "head_defect, data_defect_nosink": "how far each head's transport, and each layer's transport on the "
                                       "passages (attention sinks left out), is from a scaled isometry",
}


# The same in a few words, where a line is short: a figure's panel title, a row of the verdict grid.
METRIC_TITLES = {"tv_norm_nosink": "distance between consecutive layers",
                 "spec_nosink": "spectral change between layers",
                 "cross_nosink": "spectral change between passages",
                 "head_defect": "heads' distance from an isometry",
                 "head_defect_gain": "heads' distance, norm gains folded in",
                 "data_defect": "spread of the heads' gains on the data",
                 "data_defect_nosink": "spread of the heads' gains on the data, sinks left out",
                 "edge_defect": "heaviest edges' distance from an isometry"}
GRID_WORDS = {"E1": "E1: settles with depth", "E2": "E2: near scaled isometries", "E3": "E3: stronger with size"}


def grid_rows() -> dict[str, str]:
    """The verdict grid's rows in plain words, ``{row: label}``: E1, E2, and E3 once per metric it is judged by
    (:data:`E3_METRICS`), under the row names :func:`connlap_lite.findings.scorecard.verdict_cells` gives.

    >>> print(grid_rows()["E3 (head_defect)"])
    E3: stronger with size,
    by the heads' distance from an isometry
    """
    if set(E3_METRICS) - set(METRIC_TITLES):
        raise ValueError(f"no short title for the E3 metrics {sorted(set(E3_METRICS) - set(METRIC_TITLES))}: add "
                         "them to connlap_lite.scorecard's METRIC_TITLES")
    return {"E1": GRID_WORDS["E1"], "E2": GRID_WORDS["E2"],
            **{f"E3 ({m})": f"{GRID_WORDS['E3']},\nby the {METRIC_TITLES[m]}" for m in E3_METRICS}}


def per_model(rows: list[dict], claim: str = "E1") -> str:
    """Each model's verdict of ``claim`` in the scorecard ``rows``, grouped by word: ``'*holds* on a, b;
    *does not hold* on c'`` (the words of the verdict grid, in the rows' order).

    >>> per_model([{"claim": "E1", "per_model": [{"model": "a", "verdict": "holds"},
    ...                                           {"model": "b", "verdict": "partly"}]}])
    '*holds* on a; *partly* on b'
    """
    by: dict[str, list[str]] = {}
    for r in rows:
        if r["claim"] == claim:
            for x in r["per_model"]:
                by.setdefault(x["verdict"], []).append(x["model"])
    return "; ".join(f"*{w}* on {names(ms)}" for w, ms in by.items())


def loo_span(across: dict) -> str:
    """An E3 fit's leave-one-model-out slopes as a range, saying how many were not computed (the models left span
    less than 0.3 decades of size).

    >>> loo_span({"leave_one_out": {"a": -1.0, "b": 0.5, "c": None}})
    '-1.000 to +0.500 (1 not computed: the models left span less than 0.3 decades)'
    >>> loo_span({"leave_one_out": {"a": None}})
    'not computed (the models left span less than 0.3 decades)'
    """
    values = [v for v in across["leave_one_out"].values() if v is not None]
    skipped = len(across["leave_one_out"]) - len(values)
    if not values:
        return "not computed (the models left span less than 0.3 decades)"
    return (f"{min(values):+.3f} to {max(values):+.3f}"
            + (f" ({skipped} not computed: the models left span less than 0.3 decades)" if skipped else ""))


def _plain(words: dict, key: str, what: str) -> str:
    if key not in words:
        raise ValueError(f"no plain words for the {what} {key!r}: add them to connlap_lite.scorecard's "
                         f"{'CLAIM_WORDS' if what == 'claim' else 'METRIC_WORDS'} (it has {sorted(words)})")
    return words[key]


def _on(row: dict) -> str:
    """'the encoder' or 'the 3 decoders'."""
    k = len(row.get("models", [])) or 1
    return f"the {row['structure']}" if k == 1 else f"the {k} {row['structure']}s"


def verdict_box(rows: list[dict], claim: str, table: dict | None = None, what: str = "model-metric pairs") -> str:
    """The opening verdict box of an empirical chapter, in Markdown, written from computed verdicts only.

    The claim in plain words (:data:`CLAIM_WORDS`), what judges it (:data:`METRIC_WORDS`), and one line per
    structure from the scorecard ``rows`` of ``claim``, with each model's verdict where the row has them.
    The metric's identifier and, if the chapter has a finer table of its own (``{key: verdict}``, of
    ``what``), how many of its entries got each verdict, are folded away under the lines.  A chapter glues
    this text, so its box cannot contradict its numbers.

    Examples
    --------
    >>> rows = [{"claim": "E2", "structure": "decoder", "metric": "head_defect", "models": ["a"],
    ...          "verdict": "does not hold", "per_model": [{"model": "a", "verdict": "does not hold"}]}]
    >>> print(verdict_box(rows, "E2", {"a/head": "does not hold", "a/data": "holds"}))
    **Transports become close to scaled isometries**, judged by how far each head's transport is from a scaled isometry:
    <BLANKLINE>
    - on the decoder: **does not hold** (a: does not hold)
    <BLANKLINE>
    ```{dropdown} The metric by name, and the chapter's table
    Metric `head_defect`. The chapter's table of 2 model-metric pairs: *holds* 1, *does not hold* 1.
    ```
    """
    mine = [r for r in rows if r["claim"] == claim]
    if not mine:
        raise ValueError(f"claim {claim!r} has no row in the scorecard rows given; claims there: "
                         f"{sorted({r['claim'] for r in rows})}")
    by_metric: dict[str, list[dict]] = {}
    for r in mine:
        by_metric.setdefault(r["metric"], []).append(r)

    def verdict(r: dict) -> str:
        who = "; ".join(f"{x['model']}: {x['verdict']}" for x in r.get("per_model", []))
        return f"**{r['verdict']}**" + (f" ({who})" if who else "")

    head = f"**{_plain(CLAIM_WORDS, claim, 'claim')}**"
    if len(by_metric) == 1:
        ((metric, group),) = by_metric.items()
        lines = [f"{head}, judged by {_plain(METRIC_WORDS, metric, 'metric')}:", ""]
        lines += [f"- on {_on(r)}: {verdict(r)}" for r in group]
    else:
        lines = [f"{head}:", ""]
        lines += [f"- judged by {_plain(METRIC_WORDS, metric, 'metric')}: "
                  + "; ".join(f"{verdict(r)} on {_on(r)}" for r in group) for metric, group in by_metric.items()]
    detail = ("Metric " if len(by_metric) == 1 else "Metrics ") + ", ".join(f"`{m}`" for m in by_metric) + "."
    if table:
        counts: dict[str, int] = {}
        for v in table.values():
            counts[v] = counts.get(v, 0) + 1
        order = sorted(counts, key=lambda v: (not v.startswith("holds"), not v.startswith("partly"), v))
        detail += (f" The chapter's table of {len(table)} {what}: "
                   + ", ".join(f"*{v}* {counts[v]}" for v in order) + ".")
    title = "The metric by name" + (", and the chapter's table" if table else "")
    return "\n".join(lines + ["", f"```{{dropdown}} {title}", detail, "```"])


def glue_verdict(name: str, markdown: str) -> None:
    """Hand a verdict box's Markdown to the book under ``name`` (the chapter's opening ``{glue:md}`` box shows it;
    in the Colab edition the box's spot, in a plain notebook of the book here: :func:`connlap_lite.edition.glue`)."""
    from IPython.display import Markdown

    from .edition import glue

    glue(name, Markdown(markdown))
