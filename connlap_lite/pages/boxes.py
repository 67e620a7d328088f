"""The verdicts in words for the pages: each empirical chapter's opening verdict box, the verdict grid's rows,
each model's verdict by word, and the scorecard's *Rule changes*, written from computed verdicts only
(:mod:`connlap_lite.verdicts.scorecard`'s rows), so that a page's words cannot contradict its numbers.

Chapters: *E1*, *E2*, *E3*, *Scorecard*.
"""
from __future__ import annotations

from ..verdicts.rules import E2_RULE, RULE
from ..verdicts.scorecard import E3_METRICS, direction
from .prose import names


def rule_changes_markdown(changes: list[dict]) -> str:
    """The scorecard's *Rule changes* in Markdown, from :func:`connlap_lite.verdicts.scorecard.rule_changes`: per
    change, the old and new rule (or measurement), why, and the verdicts old -> new.

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
    (:data:`E3_METRICS`), under the row names :func:`connlap_lite.pages.findings.scorecard.verdict_cells` gives.

    >>> print(grid_rows()["E3 (head_defect)"])
    E3: stronger with size,
    by the heads' distance from an isometry
    """
    if set(E3_METRICS) - set(METRIC_TITLES):
        raise ValueError(f"no short title for the E3 metrics {sorted(set(E3_METRICS) - set(METRIC_TITLES))}: add "
                         "them to connlap_lite.pages.boxes's METRIC_TITLES")
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
        raise ValueError(f"no plain words for the {what} {key!r}: add them to connlap_lite.pages.boxes's "
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
