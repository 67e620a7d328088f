"""*Replication scorecard*, in words: its headline, its table's cells, what the data say, the rule changes and
the ablations, from the scorecard rows of :func:`connlap_lite.verdicts.scorecard.scorecard`.

Verdict words are read from the rows; :data:`CLAIMS` names each claim in plain words for the headline.

Chapter: *Scorecard*.
"""
from __future__ import annotations

import html

from ..prose import count, names, span, tally
from ...verdicts.record import random_nulls
from ...verdicts.rules import CONFIRMATION_SEED, E2_RULE, RULE, RULE_DATE, e1_table, e2_table
from ...verdicts.scorecard import row_key
from ..boxes import loo_span, rule_changes_markdown, verdict_box
from ...verdicts.scorecard import rule_changes as _changes
from ...verdicts.words import MIN_SEEDS, VERDICTS

CLAIMS = {"E1": "attention converging to stable operators with depth (E1, read as convergence)",
          "E2": "transports close to scaled isometries (E2)",
          "E3": "the claim that both grow with model size (E3)"}
CHAPTER = {"E1": "E1: stability", "E2": "E2: isometry", "E3": "E3: scale"}
KEYS = ("scorecard_headline", "scorecard_grid_take", "scorecard_verdict", "scorecard_says", "scorecard_corpora",
        "scorecard_rule_changes", "scorecard_ablations")


def _ci(interval, fmt="{:+.3f}") -> str:
    return "[" + ", ".join(fmt.format(v) for v in interval) + "]"


def _structure(row: dict) -> str:
    """'the encoder' or 'the 3 decoders'."""
    k = len(row["models"])
    return f"the {row['structure']}" if k == 1 else f"the {k} {row['structure']}s"


def verdict_cells(rows: list[dict]) -> dict[tuple[str, str], str]:
    """``{(claim, model): verdict}`` for the verdict grid: E1 and E2 per model, E3 per metric with each model
    carrying its structure's verdict (E3 is decided per structure, not per model)."""
    cells = {}
    for r in rows:
        if r["claim"] in ("E1", "E2"):
            cells.update({(r["claim"], x["model"]): x["verdict"] for x in r["per_model"]})
        else:
            cells.update({(f"E3 ({r['metric']})", m["model"]): r["verdict"] for m in r["models"]})
    return cells


def headline(rows: list[dict]) -> str:
    """One sentence: what holds on these models, what does not, what cannot be tested, by structure; where a
    structure's models differ, each model's word in brackets (the grid's words), so the lead cannot say more than
    its grid. E1 is named by the reading it judges, convergence."""
    by_word: dict[str, list[str]] = {}
    for claim in ("E1", "E2", "E3"):
        got: dict[str, list[dict]] = {}
        for r in rows:
            if r["claim"] == claim:
                got.setdefault(r["verdict"], []).append(r)
        all_structures = {r["structure"] for r in rows if r["claim"] == claim}
        for word, where in got.items():
            structures = {r["structure"] for r in where}
            suffix = ("" if structures == all_structures and len(structures) > 1 else
                      " in " + names(_structure(r) for r in {r["structure"]: r for r in where}.values()))
            mixed = [x for r in where for x in r.get("per_model", []) if x["verdict"] != word]
            if mixed:
                suffix += (" (" + "; ".join(f"{x['model']} {x['verdict']}" for r in where
                                            for x in r.get("per_model", [])) + ")")
            by_word.setdefault(word, []).append(CLAIMS[claim] + suffix)
    models = sorted({m for r in rows if r["claim"] == "E1" for m in r["models"]})
    order = sorted(by_word, key=lambda w: VERDICTS.index(w) if w in VERDICTS else len(VERDICTS))
    return (f"On these {len(models)} small models, by the registered rules: "
            + "; ".join(f"*{w}* for {names(by_word[w])}" for w in order) + ".")


def numbers(row: dict) -> str:
    """The numbers behind one row's verdict: each model against the strongest null it met."""
    if row["claim"] == "E1":
        return "; ".join(
            f"{x['model']}: late {x['late_trained']:.3f} vs {x['strongest_null']} "
            f"{x['late_nulls'][x['strongest_null']]:.3f} (gap {_ci(x['gap_interval'])}), margin below the strongest "
            f"passage-level null {x['early_margin']:+.3f} early, {x['late_margin']:+.3f} late (the curve's own change "
            f"{_ci(x['trained_rise_interval'])}) -> {x['verdict']}" for x in row["per_model"])
    if row["claim"] == "E2":
        return "; ".join(
            f"{x['model']}: heads {x['head_defect']:.3f} vs {x['strongest_head_null']} "
            f"{x['head_nulls'][x['strongest_head_null']]:.3f}, data {x['data_defect']:.3f} vs "
            f"{x['strongest_data_null']} {x['data_nulls'][x['strongest_data_null']]:.3f} -> {x['verdict']}"
            for x in row["per_model"])
    parts = [f"{fam}: slope {w['slope']:+.3f} per decade {_ci(w['interval'])}" for fam, w in row["within"].items()]
    parts += [f"step {s['from']} -> {s['to']}: gap {s['change']:+.3f} {_ci(s['interval'])}" for s in row["steps"]]
    if row["across"]:
        parts.append(f"across families (exploratory): {row['across']['slope']:+.3f} per decade "
                     f"{_ci(row['across']['interval'])}, leaving one model out {loo_span(row['across'])}")
    families = sorted({m["family"] for m in row["models"]})
    return "; ".join(parts) or f"{len(row['models'])} model(s) from {len(families)} family: no slope"


class Table:
    """A small table that renders as HTML in the book and as Markdown in a notebook front end.

    A cell is a string or a tuple of lines (shown one under another). Words are never broken inside a cell: a
    column is at least as wide as its longest word, and a long cell (over 80 characters) gets lines at its
    semicolons and a column of its own width, so that few, wide columns read as whole words on screen and on
    paper.

    >>> print(Table(["claim", "verdict"], [["E1", ("holds", "kept in 90% of resamples")]])._repr_markdown_())
    | claim | verdict |
    |---|---|
    | E1 | holds<br>kept in 90% of resamples |
    """

    def __init__(self, header, body):
        self.header, self.body = list(header), [list(r) for r in body]

    @staticmethod
    def _lines(c) -> list[str]:
        return [str(x) for x in c] if isinstance(c, (tuple, list)) else [str(c)]

    def _repr_html_(self):
        whole = "overflow-wrap:normal; word-break:normal; hyphens:none"
        th = "".join(f"<th style='text-align:left; {whole}'>{html.escape(h)}</th>" for h in self.header)
        wide = lambda c: "; min-width:22em" if len(" ".join(self._lines(c))) > 80 else ""      # noqa: E731
        text = lambda c: "<br>".join(html.escape(line).replace("; ", ";<br>") if wide(c) else html.escape(line)  # noqa: E731
                                     for line in self._lines(c))
        tr = "".join("<tr>" + "".join(f"<td style='text-align:left; vertical-align:top; {whole}{wide(c)}'>{text(c)}"
                                      "</td>" for c in r) + "</tr>" for r in self.body)
        return (f"<div style='overflow-x:auto; max-width:100%'><table class='whole-words'><thead><tr>{th}</tr>"
                f"</thead><tbody>{tr}</tbody></table></div>")

    def _repr_markdown_(self):
        cell = lambda c: "<br>".join(line.replace("|", "/") for line in self._lines(c))       # noqa: E731
        lines = ["| " + " | ".join(self.header) + " |", "|" + "---|" * len(self.header)]
        lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in self.body]
        return "\n".join(lines)


def table(rows: list[dict], robust: dict, corpora: dict) -> Table:
    """The scorecard table, five columns of whole words: per row the claim (its structure and metric), its
    models, the numbers behind the verdict, the verdict with how often it survives resampling (``robust``) and
    its verdict on the other corpora (``corpora``), and the chapter."""
    def models(r):
        return ", ".join(m["model"] if isinstance(m, dict) else m for m in r["models"])

    def verdict(r):
        other = ", ".join(f"{c}: {v}" for c, v in corpora[row_key(r)].items())
        return (r["verdict"], f"kept in {robust[row_key(r)]:.0%} of resamples",
                *([f"other corpora: {other}"] if other else []))
    return Table(["claim", "models", "trained vs the strongest null", "verdict", "chapter"],
                 [[(f"{r['claim']}, {r['structure']}", r["metric"]), models(r), numbers(r), verdict(r),
                   CHAPTER[r["claim"]]] for r in rows])


def _per_structure(rows, claim) -> str:
    got = [(_structure(r), r["verdict"]) for r in rows if r["claim"] == claim]
    if len({v for _, v in got}) == 1:
        return f"**{got[0][1]}** for " + " and ".join(s for s, _ in got)
    return "; ".join(f"**{v}** for {s}" for s, v in got)


def what_the_data_say(rows: list[dict], robust: dict, corpora: dict) -> str:
    """The section *What the data say*: per claim its verdict and conditions, then robustness."""
    e1s = [x for r in rows if r["claim"] == "E1" for x in r["per_model"]]
    e2s = [x for r in rows if r["claim"] == "E2" for x in r["per_model"]]
    ok = [x for x in e1s if x["verdict"] in ("holds", "partly", "does not hold", "inconclusive")]
    text = (f"* **E1** (read as convergence): {_per_structure(rows, 'E1')}; per model, "
            + "; ".join(f"{x['model']} *{x['verdict']}*" for x in e1s) + ".")
    if ok:
        text += (f" Condition (i), the trained distance between consecutive layers falls from the first third of the "
                 f"layers to the last (its interval below 0), is met by {tally([bool(x['falls']) for x in ok])} "
                 f"(last minus first third {span([x['trained_rise'] for x in ok], '{:+.3f}')}). Condition (ii), "
                 f"the deep layers stable (the separation profile grows with k by less than the tolerance and "
                 f"less than the nulls'), is met by {tally([bool(x.get('stable')) for x in ok])}. Condition (iii), "
                 f"below every null over the last third of the layers (each passage-level null separately, the "
                 f"shuffle permutations and random-init seeds counted as units), is met by "
                 f"{tally([bool(x['below_nulls']) for x in ok])}. A word other than *inconclusive* needs the same "
                 f"word in 80% of resamples. Beside the verdict, the advantage over shuffled text grows with depth "
                 f"for {tally([bool(x.get('advantage_grows')) for x in ok])}. The strongest null (the lowest "
                 f"late value) is {names(sorted({x['strongest_null'] for x in e1s}))}; the trained late value sits "
                 f"{span([x['gap_to_strongest'] for x in e1s], '{:+.3f}')} from it.")
    if len(ok) < len(e1s):
        text += (" No verdict from the conditions for "
                 + names(f"{x['model']} (*{x['verdict']}*)" for x in e1s if x not in ok) + ".")
    if ok:
        text += (f" Beside the verdict, consecutive layers of one passage are below every null made from other "
                 f"passages or shuffled text at every depth for {tally([bool(x['shares_structure']) for x in ok])}: "
                 "where that holds, they share structure specific to their input, which is a finding about "
                 "neighbouring layers, not about convergence with depth.")
    head = [x["head_defect"] / x["head_nulls"][x["strongest_head_null"]] for x in e2s]
    data = [x["data_defect"] / x["data_nulls"][x["strongest_data_null"]] for x in e2s]
    text += (f"\n* **E2**: {_per_structure(rows, 'E2')}. Condition (a), heads below the Gaussian heads and the "
             f"random-init seeds (the seeds counted as units), is met by "
             f"{tally([x['heads_below_nulls'] for x in e2s])}: the trained mean head defect is "
             f"{span(head, '{:.2f}')} times the strongest null's. Condition (b), data defect below Gaussian "
             f"transports and three random-init seeds' transports on the same inputs (the seeds again counted as "
             f"units), is met by {tally([x['data_below_nulls'] for x in e2s])}: the "
             f"trained data defect is {span(data, '{:.2f}')} times the strongest of those.")
    e3_rows = [r for r in rows if r["claim"] == "E3"]
    parts = []
    for r in e3_rows:
        part = f"on `{r['metric']}`, **{r['verdict']}** for {_structure(r)}"
        if r["across"]:
            part += (f" (the exploratory fit across families: {r['across']['slope']:+.3f} per decade, 95% "
                     f"interval {_ci(r['across']['interval'])}, and {loo_span(r['across'])} when one "
                     "model is left out)")
        parts.append(part)
    sizes: dict[tuple, set] = {}
    for r in e3_rows:
        for m in r["models"]:
            sizes.setdefault((r["structure"], m["family"]), set()).add(round(m["x"], 6))
    ladders = sorted({f"{f} ({len(v)} {s} sizes)" for (s, f), v in sizes.items() if len(v) >= 3})
    tested = [r for r in e3_rows if r["within"]]
    text += ("\n* **E3**: " + "; ".join(parts) + ". "
             + ("No family among these models gives three sizes, so the scale claim is not tested here; "
                "{ref}`e3-scale` shows the one step within a family and the recipe for the ladders."
                if not ladders else
                f"Within {names(ladders)} the scale claim is tested, on the gap's slope within the family, in "
                f"{len(tested)} of the {len(e3_rows)} rows; across families size and design still cannot be "
                "separated."))
    verdict = {row_key(r): r["verdict"] for r in rows}
    said = {k: {c: x for c, x in v.items() if x != "not comparable"} for k, v in corpora.items()}
    agree = [k for k, v in said.items() if v and all(x == verdict[k] for x in v.values())]
    differ = [k for k, v in said.items() if v and any(x != verdict[k] for x in v.values())]
    apart = [k for k, v in corpora.items() if "not comparable" in v.values()]
    fragile = [k for k, v in robust.items() if v < 0.8]
    text += (f"\n* **Robustness.** Of the {len(verdict)} rows, {len(agree)} give the same verdict on the other "
             f"corpora and {len(differ)} differ{'s' if len(differ) == 1 else ''} on at least one"
             + (f" ({'; '.join(f'{c} {s}' for c, s, _ in differ)})" if differ else "")
             + (f"; {len(apart)} {'is' if len(apart) == 1 else 'are'} *not comparable* on at least one, measured there "
                "against fewer nulls" if apart else "")
             + f"; {len(fragile)} keep{'s' if len(fragile) == 1 else ''} "
             f"{'its' if len(fragile) == 1 else 'their'} verdict in fewer than 80% of the passage resamples"
             + (f" ({'; '.join(f'{c} {s} {m}' for c, s, m in fragile)})." if fragile else "."))
    return text


def rule_changes(reports: list[dict]) -> str:
    """Each dated rule change (rule 1 -> 2 -> 3, and 3 -> 4 for E2) and measurement change with the verdicts before
    and after it on these reports, in Markdown (:func:`connlap_lite.verdicts.scorecard.rule_changes`)."""
    return rule_changes_markdown(_changes(reports))


def grid_take(rows: list[dict]) -> str:
    """The verdict grid's takeaway: how many claim-model cells got each verdict."""
    cells = verdict_cells(rows)
    counts: dict[str, int] = {}
    for word in cells.values():
        counts[word] = counts.get(word, 0) + 1
    order = sorted(counts, key=lambda w: VERDICTS.index(w) if w in VERDICTS else len(VERDICTS))
    return f"Of the {len(cells)} claim-model cells: " + ", ".join(f"{counts[w]} *{w}*" for w in order) + "."


def ablation_entries(reports: list[dict], q4: dict, flipped: dict, flip_words: dict,
                     q4_words: dict | None = None) -> list[tuple]:
    """Every ablation's verdicts, ``(ablation, claim, model, verdict)``: E1 with the sinks kept, E2 with the norm
    gains folded, E1 and E2 with a second 4-bit round trip (``q4``: ``{model: report}`` with the ablated trained
    condition; named by ``q4_words`` where given, e.g. MiniLM's first round trip of its float weights) and with the
    BOS token toggled (``flipped``, named by ``flip_words``). Each rule is applied to a
    structure's models as one table, as the registered verdicts are."""
    out = []
    for is_encoder in (True, False):
        group = [r for r in reports if r["encoder"] == is_encoder]
        if not group:
            continue
        out += [("sinks kept (`tv_norm`)", "E1", x["model"], x["verdict"]) for x in e1_table(group, "tv_norm")]
        out += [("norm gains folded", "E2", x["model"], x["verdict"])
                for x in e2_table(group, heads_metric="head_defect_gain")]
        q4_named = {m: (q4_words or {}).get(m, "second 4-bit round trip") for m in q4}
        for name, swap, word in (("second 4-bit round trip", q4, q4_named), ("BOS", flipped, flip_words)):
            if not any(r["model"] in swap for r in group):
                continue
            table = [swap.get(r["model"], r) for r in group]
            out += [(word[x["model"]] if word else name, c, x["model"], x["verdict"])
                    for c, rows in (("E1", e1_table(table)), ("E2", e2_table(table)))
                    for x in rows if x["model"] in swap]
    return out


def ablations(entries: list[tuple[str, str, str, str]], registered: dict, sinks: dict) -> str:
    """What the ablations move: ``entries`` ``(ablation, claim, model, verdict)``, ``registered``
    ``{(claim, model): verdict}``, ``sinks`` ``{model: (what was done, registered sink columns, registered mass,
    ablated sink columns, ablated mass)}``, each mass the late mean on that measurement's own detected sink columns."""
    moved = [(a, c, m, v) for a, c, m, v in entries if v != registered[c, m]]
    text = (f"Of the {count(len(entries), 'verdict')} re-derived under an ablation, {len(moved)} "
            f"differ{'s' if len(moved) == 1 else ''} from the registered one"
            + (": " + "; ".join(f"{c} on {m} with {a}: {registered[c, m]} -> {v}" for a, c, m, v in moved) + "."
               if moved else "."))
    if sinks:
        def cols(c, mass):
            return ("no sink column" if not c else
                    f"column{'s' * (len(c) > 1)} {names([str(i) for i in c])} ({mass:.2f})")
        text += (" The BOS ablation moves the detected sinks themselves (the sink columns, token positions from 0, "
                 "and the detected sinks' mass over the last third of the layers, registered -> ablated): "
                 + "; ".join(f"{m}, {what}: {cols(ca, a)} -> {cols(cb, b)}"
                             for m, (what, ca, a, cb, b) in sinks.items()) + ".")
    return text


def corpora_note(reports: list[dict], corpora: dict[str, list[dict]]) -> str:
    """Why the other corpora's verdicts can or cannot be set beside the main corpus's (``scorecard_corpora``): the
    nulls each was measured with, from the reports (comparable: the same kinds of null, and at least
    :data:`~connlap_lite.verdicts.words.MIN_SEEDS` random-init seeds, which the rules count as units)."""
    def seeds(r):
        return len(random_nulls(r))

    def nulls(rs):
        k = sorted({seeds(r) for r in rs})
        shuffled = {"shuffled" in r["conditions"] for r in rs}
        return (f"{names([str(i) for i in k])} random-init seed{'s' * (k != [1])}"
                + (" and the shuffled passages" if shuffled == {True} else ", no shuffled passages"
                   if shuffled == {False} else ", shuffled passages for some models only"))
    other = [r for rs in corpora.values() for r in rs]
    if not other:
        return "No other corpus is measured in this build."
    measured = list(dict.fromkeys(r["model"] for r in other))
    which = "" if {r["model"] for r in reports} <= set(measured) else f" for {names(measured)} only"
    alike = all(seeds(r) >= MIN_SEEDS for r in other) and \
        {"shuffled" in r["conditions"] for r in other} <= {"shuffled" in r["conditions"] for r in reports}
    if alike:
        return (f"The other corpora are measured{which} with {nulls(other)}, the main corpus with {nulls(reports)}: the same "
                "nulls, the seeds counted as units by the rules, so their verdicts can be set beside the main "
                "corpus's.")
    return (f"In this build the other corpora are measured{which} with {nulls(other)}, the main corpus with "
            f"{nulls(reports)}: the other corpora's rows say *not comparable*, since a verdict against fewer "
            f"nulls is no difference between corpora. (The full build measures every model on every corpus with at "
            f"least {MIN_SEEDS} seeds and the shuffled passages; `make test` cannot spend the time.)")


def paragraphs(rows: list[dict], robust: dict, corpora: dict, reports: list[dict],
               ablated: tuple, corpus_reports: dict[str, list[dict]] | None = None) -> dict[str, str]:
    """Every glued text of the chapter (:data:`KEYS`): the headline, the verdict box, *What the data say*, what
    the other corpora were measured against (``corpus_reports``: ``{corpus: reports}``), the rule changes on
    ``reports`` and the ablations (``ablated``: the arguments of :func:`ablations`)."""
    out = {"scorecard_headline": headline(rows), "scorecard_grid_take": grid_take(rows),
           "scorecard_verdict": "\n".join(verdict_box(rows, c) for c in ("E1", "E2", "E3")),
           "scorecard_says": what_the_data_say(rows, robust, corpora),
           "scorecard_corpora": corpora_note(reports, corpus_reports or {}),
           "scorecard_rule_changes": rule_changes(reports),
           "scorecard_ablations": ablations(*ablated)}
    assert tuple(out) == KEYS
    return out


# ----------------------------------------------------------------------- the confirmation
def _words(rows: list[dict], claim: str) -> dict[str, str]:
    """``claim``'s words in ``rows``: per model for E1 and E2, per structure and metric for E3."""
    out = {}
    for r in rows:
        if r["claim"] != claim:
            continue
        if claim == "E3":
            out[f"{r['structure']}s, `{r['metric']}`"] = r["verdict"]
        else:
            out.update({x["model"]: x["verdict"] for x in r["per_model"]})
    return out


def confirmation(claim: str, explored: list[dict], confirmed: list[dict] | None, *, setting: tuple[int, int],
                 when: str) -> str:
    """``claim``'s confirmatory verdicts apart from its exploratory ones, dated, and where they differ
    (``<chapter>_confirmation``): ``explored`` and ``confirmed`` are scorecard rows on the exploratory passages and
    on the confirmation split (:func:`connlap_lite.models.text.windows`, ``split="confirmation"``, drawn with
    :data:`connlap_lite.verdicts.rules.CONFIRMATION_SEED`); ``confirmed`` None says that this build does not run the
    confirmation (the full build does). ``setting``: (passages, tokens); ``when``: the build's date.

    >>> rows = [{"claim": "E1", "per_model": [{"model": "a", "verdict": "holds"}]}]
    >>> print(confirmation("E1", rows, [{"claim": "E1", "per_model": [{"model": "a", "verdict": "partly"}]}],
    ...                    setting=(32, 128), when="2026-12-05"))  # doctest: +NORMALIZE_WHITESPACE
    **Confirmatory verdicts** (rule 4 of 2026-12-04, frozen, applied once to the confirmation split: 32 passages
    x 128 tokens drawn with the registered seed 20261204 from windows no rule was developed on; this build,
    2026-12-05): a *partly*. **Exploratory verdicts** (the draw at seed 0, which holds `make test`'s passages,
    those the rules were developed on): a *holds*.
    They differ on a (exploratory *holds*, confirmatory *partly*): where they differ, the confirmatory word is
    the one to cite.
    """
    rule = E2_RULE if claim == "E2" else RULE
    frozen = f"rule {rule} of {RULE_DATE}, frozen"
    before = _words(explored, claim)
    said = "; ".join(f"{k} *{v}*" for k, v in before.items())
    if confirmed is None:
        return (f"**Exploratory verdicts** ({frozen}; the passages the rules were developed on, this build, {when}): "
                f"{said}. **Confirmatory verdicts:** the full build (`make book`) applies the same "
                f"rule once to a confirmation split of the corpus, drawn with the registered seed "
                f"{CONFIRMATION_SEED} from windows that no exploratory passage touches; this build does not measure "
                "it, so its verdicts are exploratory only.")
    after = _words(confirmed, claim)
    differ = [k for k in before if k in after and after[k] != before[k]]
    return (f"**Confirmatory verdicts** ({frozen}, applied once to the confirmation split: {setting[0]} passages "
            f"x {setting[1]} tokens drawn with the registered seed {CONFIRMATION_SEED} from windows no rule was "
            f"developed on; this build, {when}): " + "; ".join(f"{k} *{v}*" for k, v in after.items())
            + f". **Exploratory verdicts** (the draw at seed 0, which holds `make test`'s passages, those the rules "
            f"were developed on): {said}. "
            + (f"They differ on {names(f'{k} (exploratory *{before[k]}*, confirmatory *{after[k]}*)' for k in differ)}"
               ": where they differ, the confirmatory word is the one to cite." if differ else
               "They agree on every one."))
