"""*Known results, reproduced*, in words: the chapter's computed paragraphs, from the reports of
:func:`connlap_lite.known.known_results` and the verdicts of :mod:`connlap_lite.known.statements`.

:func:`paragraphs` returns every glued text (:data:`KEYS`); :func:`verdict_cells` feeds the opening figure.
Verdict words are the rows' (:data:`connlap_lite.known.statements.KNOWN_VERDICTS`), never chosen here.

Chapter: *Known results, reproduced*.
"""
from __future__ import annotations

import numpy as np
import torch

from ...known.sinks import INPUTS, middle_layers
from ...known.history import rule_changes
from ...known.statements import COLLAPSE, STATEMENTS, interval, side, verdict_counts, verdict_table
from ..prose import names, span, who
from ...verdicts.record import random_nulls
from ...verdicts.words import MIN_PASSAGES, MIN_SEEDS

KEYS = ("known_summary", "known_grid_take", "known_verdict", "known_tokens", "known_sinks", "known_special",
        "known_rank", "known_rank_states", "known_ds", "known_reuse", "known_table", "known_disagree",
        "known_rule_changes", "known_sinks_take", "known_special_take", "known_ds_take", "known_reuse_take")


def rows_of(reports: dict[str, dict]) -> dict[str, dict[str, dict]]:
    """``{model: {statement key: row}}``."""
    return {m: {r["key"]: r for r in rep["verdicts"]} for m, rep in reports.items()}


def verdict_cells(reports: dict[str, dict]) -> dict[tuple[str, str], str]:
    """``{(statement label, model): verdict}`` for the opening grid (labels: :data:`STATEMENTS`' short ones)."""
    return {(STATEMENTS[r["key"]][3], m): r["verdict"] for m, rep in reports.items() for r in rep["verdicts"]}


def _cond(rep, c="trained"):
    return rep["conditions"][c]


def _rate(rep, c, i):
    return interval(torch.tensor(_cond(rep, c)[i]["rate"], dtype=torch.float64))


def _spread(rep, c):
    return max(max(v) for v in _cond(rep, c)["repeated"]["spread"])


def summary(reports: dict[str, dict]) -> str:
    """The opening in plain words: what the chapter checks and how many published statements it reproduces."""
    rows = [r for rep in reports.values() for r in rep["verdicts"]]
    words = sorted({r["verdict"] for r in rows}, key=[r["verdict"] for r in rows].index)
    counts = {w: sum(r["verdict"] == w for r in rows) for w in words}
    return (f"Before the book's own instruments judge the seed paper, they are pointed at {len(STATEMENTS)} "
            f"statements that others have published about attention (sinks, special tokens, rank collapse, "
            f"doubly stochastic attention, similar neighbouring layers), on the same {len(reports)} models. Of the "
            f"{len(rows)} statement-model pairs, " + ", ".join(f"{counts[w]} *{w}*" for w in words) + ".")


def grid_take(reports: dict[str, dict]) -> str:
    cells = verdict_cells(reports)
    agree = [s for s in dict.fromkeys(s for s, _ in cells)
             if all(v == "agree" for (t, _), v in cells.items() if t == s)]
    return (f"{len(agree)} of the {len(STATEMENTS)} published statements are reproduced on every model"
            + (f" ({'; '.join(agree)})." if agree else "."))


def sinks(reports: dict[str, dict]) -> str:
    """Gu et al.'s sink rates and the proposition (``known_sinks``)."""
    rows = rows_of(reports)
    models = list(reports)
    rotary = [m for m in models if not reports[m]["absolute_positions"]]
    lines = []
    for m in models:
        row = rows[m]["sink_order"]
        nat, rnd, rep = row["trained"]
        (d1, lo1, hi1), (d2, lo2, hi2), (d, lo, hi) = row["tested"]
        steps = (f"natural minus random is {d1:+.2f} [{lo1:+.2f}, {hi1:+.2f}], random minus repeated {d2:+.2f} "
                 f"[{lo2:+.2f}, {hi2:+.2f}]")
        step = {"agree": f"natural minus repeated, {d:+.2f} [{lo:+.2f}, {hi:+.2f}], lies above 0 and no step is "
                         "reversed",
                "disagree": f"a step is reversed beyond the noise: {steps}",
                "inconclusive": f"no step is reversed, and natural minus repeated, {d:+.2f} [{lo:+.2f}, {hi:+.2f}], "
                                "does not lie above 0 either"}.get(row["verdict"], steps)
        null = ", ".join(f"{v:.2f}" for v in row["null"])
        lines.append(f"- `{m}`: natural {nat:.2f}, random {rnd:.2f}, repeated {rep:.2f} (random init: {null}); "
                     f"{step}: **{row['verdict']}**.")
    zero = [m for m in rotary if rows[m]["sink_repeated"]["verdict"] == "agree"]
    other = [m for m in rotary if m not in zero]
    spread = max(_spread(reports[m], c) for m in rotary for c in ("trained", "random0")) if rotary else 0.0
    lines += ["", f"On one repeated token the sink rate is 0 in every passage for {len(zero)} of the {len(rotary)} "
              "rotary decoders" + (f" ({', '.join(zero)})" if zero else "")
              + (f"; {names(other)} {'keeps' if len(other) == 1 else 'keep'} some sink heads" if other else "")
              + f", and every rotary decoder's states are equal at every position to within {spread:.1e} of their "
              "norm, trained or not."]
    for m in (m for m in models if m not in rotary):
        nat, rep = _rate(reports[m], "trained", "natural")[0], _rate(reports[m], "trained", "repeated")[0]
        lines.append(f"`{m}`, whose positions are learned vectors added to the tokens, has a sink rate of {rep:.2f} "
                     f"on repeated tokens ({'above' if rep > nat else 'at or below'} its {nat:.2f} on natural text), "
                     f"and its states differ from position to position by up to {_spread(reports[m], 'trained'):.2f} "
                     "of their norm: without the proposition's premise there is no reason for the sink to vanish"
                     + (", and it does not." if rep > 0 else "; on these passages it vanishes all the same."))
    null_max = max(_rate(reports[m], "random0", i)[0] for m in models for i in INPUTS)
    lines.append(f"At random initialisation the largest sink rate of any model on any input is {null_max:.2f}: "
                 + ("training makes the sinks." if null_max == 0 else
                    "some random heads already exceed the threshold."))
    return "\n".join(lines)


def special(reports: dict[str, dict]) -> str:
    """Clark et al.'s [SEP] and Kobayashi et al.'s norm weighting (``known_special``)."""
    rows = rows_of(reports)
    lines = []
    for m in (m for m, r in reports.items() if r["encoder"]):
        row = rows[m]["clark_sep"]
        mid = middle_layers(reports[m]["layers"])
        nat = _cond(reports[m])["natural"]
        cls = float(np.mean([np.mean(nat["mass_first"][l]) for l in mid]))
        lines.append(f"- **[SEP] in `{m}`** (layers {mid}): {row['trained']:.2f} of the attention goes to [SEP] "
                     f"(random init {row['null']:.2f}), against more than 0.5 in BERT-base: **{row['verdict']}**. "
                     f"[CLS] receives {cls:.2f} in the same layers"
                     + (", so this model parks its attention on the first token, not on [SEP]."
                        if cls > row["trained"] else "."))
    for m, rep in reports.items():
        row = rows[m]["kobayashi_norm"]
        (w, n), (w0, n0) = row["trained"], row["null"]
        what = "[CLS] and [SEP]" if rep["encoder"] else "the first token"
        lines.append(f"- **Norm-weighted, `{m}`** ({what}, mean over layers): the attention gives {w:.2f}, the "
                     f"norm-weighted walk {n:.2f}, {n / w:.0%} of it (random init {w0:.2f} and {n0:.2f}): "
                     f"**{row['verdict']}**.")
    return "\n".join(lines)


def rank(reports: dict[str, dict]) -> tuple[str, str]:
    """Dong et al.'s rank collapse, per model (``known_rank``), and the sentence under the figure
    (``known_rank_states``)."""
    rows = rows_of(reports)
    models = list(reports)
    lines = []
    for m in models:
        a, b = rows[m]["dong_walks"], rows[m]["dong_skip"]
        lines.append(f"- `{m}`: from {a['trained'][0]:.2f} at the embeddings, the walks alone end at "
                     f"{a['trained'][1]:.1e} (**{a['verdict']}**), the model's own states at {b['trained'][1]:.2f} "
                     f"(**{b['verdict']}**); random init: {a['null'][1]:.1e} and {b['null'][1]:.2f}.")
    keep = [m for m in models if rows[m]["dong_skip"]["verdict"] == "agree"]
    apart = [m for m in keep if rows[m]["dong_walks"]["verdict"] == "agree"]
    out = []
    if apart:
        out.append(("No model's states follow the walks" if len(apart) == len(models) else
                    f"The states of {who(apart, models)} do not follow the walks")
                   + ": the walks alone collapse, the states keep more than "
                   f"{COLLAPSE:g} times the embeddings' residual.")
    if [m for m in keep if m not in apart]:
        out.append(f"In {names(m for m in keep if m not in apart)} the states keep their rank, but the walks alone "
                   "do not collapse either.")
    if [m for m in models if m not in keep]:
        out.append(f"The states of {names(m for m in models if m not in keep)} do not stay above {COLLAPSE:g} "
                   "times the embeddings' residual beyond the noise.")
    return "\n".join(lines), " ".join(out)


def _seeds(rep) -> list[str]:
    """The random-init seeds that carry the column-sum defect (``random0`` and the further ones)."""
    return [s for s in random_nulls(rep) if "column_defect" in rep["conditions"][s].get("natural", {})]


def doubly_stochastic(reports: dict[str, dict]) -> str:
    """Sander et al.'s column sums (``known_ds``): each model's defect against its random-init seeds, and for
    the encoder what the rule's two tests say."""
    rows = rows_of(reports)
    lines = []
    for m, rep in reports.items():
        row, seeds = rows[m]["sinkformer"], _seeds(rep)
        ns = float(np.mean(_cond(rep)["natural"]["column_defect_nosink"]))
        ns0 = float(np.mean([np.mean(_cond(rep, s)["natural"]["column_defect_nosink"]) for s in seeds]))
        lines.append(f"- `{m}`: defect {row['trained']:.2f} trained, {row['null']:.2f} at random init"
                     + (f" (the mean of {len(seeds)} seeds)" if len(seeds) > 1 else "")
                     + f"; with the sinks removed {ns:.2f} and {ns0:.2f}: **{row['verdict']}**.")
    for m, rep in reports.items():
        row = rows[m]["sinkformer"]
        if not rep["encoder"] or row["verdict"] == "not comparable":
            continue
        d, lo, hi = row["tested"][0]                       # the seeds' mean minus the trained defect, per passage
        ns = float(np.mean(_cond(rep)["natural"]["column_defect_nosink"]))
        numbers = (f"the seeds' mean minus the trained defect is {d:+.2f} [{lo:+.2f}, {hi:+.2f}] over passages, and "
                   f"with the {row['seeds']} seeds as units the trained defect lies below them with p = "
                   f"{row['p_below']:.2g}, above them with p = {row['p_above']:.2g}")
        if row["verdict"] == "disagree":
            lines.append(f"\nThe encoder ends training *farther* from doubly stochastic than its random "
                         f"initialisations: {numbers}"
                         + (". The uniform walk is exactly doubly stochastic, so an initialisation this close to "
                            "it leaves little to approach" if row["null"] < 0.1 else "")
                         + (f"; with the sinks removed the trained defect falls to {ns:.2f}, so the sinks make "
                            f"{1 - ns / row['trained']:.0%} of it." if ns < row["trained"] else
                            f"; with the sinks removed the trained defect is {ns:.2f}."))
        elif row["verdict"] == "agree":
            lines.append(f"\nThe encoder ends training closer to doubly stochastic than its random "
                         f"initialisations: {numbers}.")
        elif row["verdict"] == "inconclusive":
            lines.append(f"\nThe encoder is not clearly closer to doubly stochastic than its random "
                         f"initialisations, nor farther: {numbers}.")
        else:
            lines.append(f"\nFor the encoder the rule says **{row['verdict']}**: it needs "
                         f"{MIN_PASSAGES} passages and {MIN_SEEDS} random-init seeds with finite defects, and has "
                         f"{len(_cond(rep)['natural']['rate'])} passages and {row['seeds']} seeds.")
    return "\n".join(lines)


def reuse(reports: dict[str, dict]) -> str:
    """Bhojanapalli et al.'s neighbouring layers (``known_reuse``): each part with its interval and its own word
    (:func:`connlap_lite.known.statements.side`), the row's verdict, and the random-init numbers beside them."""
    rows = rows_of(reports)
    models = list(reports)
    lines = []
    for m in models:
        row = rows[m]["reuse"]
        if not row.get("tested"):
            lines.append(f"- `{m}`: **{row['verdict']}**.")
            continue
        adj, two, tvn, cross = row["trained"]
        _, _, tvn0, _ = row["null"]
        (d, lo, hi), (e, elo, ehi) = row["tested"]
        parts = {"adjacent against two apart": side(row["tested"][0]),
                 "own passage against another passage": side(row["tested"][1])}
        tv, tv0 = (float(np.mean(_cond(reports[m], c)["natural"]["tv"])) for c in ("trained", "random0"))
        crosses = [name for name, word in parts.items() if word == "inconclusive"]
        lines.append(f"- `{m}`: head-matched distance {adj:.2f} for adjacent layers, {two:.2f} two apart "
                     f"(difference {d:+.3f} [{lo:+.3f}, {hi:+.3f}]); tv_norm {tvn:.2f} against {cross:.2f} for the "
                     f"next layer of another passage (difference {e:+.3f} [{elo:+.3f}, {ehi:+.3f}]); "
                     + "; ".join(f"{name}: *{word}*" for name, word in parts.items())
                     + f"; random init: tv_norm {tvn0:.2f}, raw tv {tv:.2f} trained against {tv0:.2f}: "
                     f"**{row['verdict']}**"
                     + (f" (the interval of {names(crosses)} contains 0: no clear difference, not a reversal)."
                        if crosses else "."))
    reversed_ = [m for m in models if np.mean(_cond(reports[m])["natural"]["tv"])
                 > np.mean(_cond(reports[m], "random0")["natural"]["tv"])]
    if reversed_:
        lines.append(f"\nOn the raw distance, {len(reversed_)} of {len(models)} trained models "
                     f"{'is' if len(reversed_) == 1 else 'are'} *less* alike from "
                     "layer to layer than their random-init nulls: the near-uniform null, not a failure of the "
                     "published result, and the reason the rule compares with another passage instead.")
    return "\n".join(lines)


def changes(reports: dict[str, dict]) -> str:
    """The chapter's dated rule changes (``known_rule_changes``, from
    :func:`connlap_lite.known.history.rule_changes`): per change and statement the old and the new rule, why,
    and each model's verdict old -> new."""
    lines = []
    for c in rule_changes(list(reports.values())):
        lines.append(f"- **Rule {c['from']} -> rule {c['to']}, changed {c['date']}.**")
        for part in c["parts"]:
            what = "; ".join(STATEMENTS[k][3] for k in part["statements"])
            lines.append(f"  - *{what}*. Before: {part['old']}. Now: {part['new']}. Why: {part['why']}.")
        lines.append("  - Verdicts, old -> new (a change in bold):")
        for key in dict.fromkeys(k for k, _ in c["verdicts"]):
            who = "; ".join(f"`{m}` " + (f"{a} -> {b}" if a == b else f"**{a} -> {b}**")
                            for (k, m), (a, b) in c["verdicts"].items() if k == key)
            lines.append(f"    - {STATEMENTS[key][3]}: {who}.")
    return "\n".join(lines)


def sinks_take(reports: dict[str, dict]) -> str:
    """The first sentence of the sink figure's caption (``known_sinks_take``): trained sink rates on natural text
    against the largest rate at random initialisation."""
    trained = [_rate(rep, "trained", "natural")[0] for rep in reports.values()]
    null = max(_rate(rep, "random0", i)[0] for rep in reports.values() for i in INPUTS)
    if min(trained) > null:
        return (f"Trained models make sinks that random ones do not: on natural text a share of {span(trained)} of "
                f"the heads are sinks, at random initialisation at most {null:.2f} on any input.")
    return (f"On natural text a share of {span(trained)} of the trained heads are sinks, and random initialisation "
            f"reaches {null:.2f} on some input: not every sink comes from training.")


def special_take(reports: dict[str, dict]) -> str:
    """The first sentence of the special-token figure's caption (``known_special_take``): how much of the sinks'
    attention-weighted mass the norm-weighted walk keeps."""
    rows = rows_of(reports)
    kept = {m: n / w for m in reports for w, n in [rows[m]["kobayashi_norm"]["trained"]] if w > 0}
    if not kept:
        return "No model pays its sinks any attention, so there is nothing for the norm weighting to remove."
    half = [m for m, r in kept.items() if r >= 0.5]
    return (f"Weighting each edge by what it carries leaves the sinks {span(kept.values(), '{:.0%}')} of the mass "
            "the attention weights give them" + (f", more than half in {names(half)}." if half else "."))


def ds_take(reports: dict[str, dict]) -> str:
    """The first sentence of the column-sum figure's caption (``known_ds_take``): what the rule says for each
    encoder."""
    rows = rows_of(reports)
    out = []
    for m in (m for m, rep in reports.items() if rep["encoder"]):
        row = rows[m]["sinkformer"]
        what = {"agree": "ends training closer to doubly stochastic than its random initialisations",
                "disagree": "ends training farther from doubly stochastic than its random initialisations",
                "inconclusive": "is neither clearly closer to doubly stochastic than its random initialisations nor "
                                "farther"}.get(row["verdict"], f"gets no comparison ({row['verdict']})")
        out.append(f"`{m}` {what} (defect {row['trained']:.2f} against {row['null']:.2f}).")
    return " ".join(out) if out else "Every model here is a decoder, so none is comparable."


def reuse_take(reports: dict[str, dict]) -> str:
    """The first sentence of the reuse figure's caption (``known_reuse_take``): each part's agreement, by model."""
    rows = rows_of(reports)
    models = [m for m in reports if rows[m]["reuse"].get("tested")]
    if not models:
        return "No model has three layers, so no pair of layers lies two apart."
    own = [m for m in models if side(rows[m]["reuse"]["tested"][1]) == "agree"]
    adjacent = [m for m in models if side(rows[m]["reuse"]["tested"][0]) == "agree"]
    return (f"A passage's consecutive layers are closer than a layer and another passage's next layer in "
            f"{who(own, models)}, and adjacent layers closer than layers two apart in {who(adjacent, models)}.")


def disagreements(reports: dict[str, dict]) -> str:
    """The list of the statement-model pairs that disagree (``known_disagree``)."""
    out = [f"- `{r['model']}`: {r['statement']} ({r['result'].lower()})"
           for rep in reports.values() for r in rep["verdicts"] if r["verdict"] == "disagree"]
    return "\n".join(out) if out else "- none"


def paragraphs(reports: dict[str, dict]) -> dict[str, str]:
    """Every glued text of the chapter (:data:`KEYS`)."""
    tokens = {r["tokens"] for r in reports.values()}
    if len(tokens) != 1:
        raise ValueError(f"reports must share one passage length, got {sorted(tokens)}")
    rank_text, states = rank(reports)
    out = {"known_summary": summary(reports), "known_grid_take": grid_take(reports),
           "known_verdict": verdict_counts(list(reports.values())), "known_tokens": f"{tokens.pop()}",
           "known_sinks": sinks(reports), "known_special": special(reports), "known_rank": rank_text,
           "known_rank_states": states, "known_ds": doubly_stochastic(reports), "known_reuse": reuse(reports),
           "known_table": verdict_table(list(reports.values())), "known_disagree": disagreements(reports),
           "known_rule_changes": changes(reports), "known_sinks_take": sinks_take(reports),
           "known_special_take": special_take(reports), "known_ds_take": ds_take(reports),
           "known_reuse_take": reuse_take(reports)}
    assert tuple(out) == KEYS
    return out
