"""*E3: scale*, in words: the chapter's computed paragraphs, on the rule in force (rule 3 of
:mod:`connlap_lite.verdicts.rules`: the late-layer gap, trained minus the metric's strongest registered null
(:func:`connlap_lite.verdicts.rules.gap_null`), against log10 of the non-embedding parameters, within one family, with
a passage bootstrap, a model-level jackknife and every leave-one-model-out slope).

:func:`paragraphs` returns every glued text (:data:`KEYS`); :func:`gaps` gives the chapter's table of
verdicts. A fit across families is described as exploratory, and as a fit across designs.

Chapter: *E3*.
"""
from __future__ import annotations

import numpy as np

from ...verdicts import rules as R
from ..prose import names, size, sizes
from ...verdicts.record import DATA_SEED_KEYS, late_value
from ...verdicts.history import e3_rule1, in_force, scale_slope
from ..boxes import METRIC_TITLES, verdict_box

METRICS = ("tv_norm_nosink", "spec_nosink", "cross_nosink", "head_defect", "head_defect_gain", "data_defect_nosink",
           "edge_defect", "sink")     # (the data defect without sinks, against E2's nulls on the same inputs)
CLAIM_METRICS = METRICS[:-1]          # smaller = more of the claim; the sink mass is context only
KEYS = ("e3_summary", "e3_main_take", "e3_gaps_take", "e3_verdict", "e3_sizes", "e3_models", "e3_gqa", "e3_widths",
        "e3_points",
        "e3_arch_pair", "e3_step", "e3_says", "e3_ladder_costs")


def _listing(metrics) -> str:
    return ", ".join(f"`{m}`" for m in metrics) or "none"


def _titled(metrics) -> str:
    """The metrics in words, as the figures' panels name them: 'the distance between consecutive layers and ...'."""
    return names([f"the {METRIC_TITLES.get(m, m)}" for m in metrics])


def _structures(reports):
    return [(s, [r for r in reports if r["encoder"] == (s == "encoder")]) for s in ("encoder", "decoder")]


def gaps(reports: list[dict], metrics=CLAIM_METRICS) -> dict[tuple[str, str], dict]:
    """The rule in force on every structure and metric: ``{(structure, metric): rules.e3 row}``."""
    return {(s, m): R.e3(group, m) for s, group in _structures(reports) if group for m in metrics}


def families(reports: list[dict]) -> dict[tuple[str, str], set]:
    """``{(structure, family): non-embedding sizes}``: E3 is testable within a family of three sizes or more."""
    out: dict[tuple[str, str], set] = {}
    for r in reports:
        out.setdefault(("encoder" if r["encoder"] else "decoder", r["family"]), set()).add(
            r["non_embedding_parameters"])
    return out


def summary(reports: list[dict], rows: dict) -> str:
    """The opening in plain words: what a test of scale needs, what these models give, and the verdict."""
    fam = families(reports)
    ladders = sorted(f for (_, f), v in fam.items() if len(v) >= 3)
    words = sorted({v["verdict"] for v in rows.values()})
    counts = {w: sum(v["verdict"] == w for v in rows.values()) for w in words}
    text = (f"The claim is that both structures grow stronger as models grow. The {len(reports)} models measured here "
            f"span {sizes(r['non_embedding_parameters'] for r in reports)} outside their embeddings, and they come "
            f"from {len({f for _, f in fam})} families of different design. Size can be told apart from design only "
            "within one family, and a slope needs three sizes of it: ")
    text += ("no family here gives three, so the claim cannot be tested on these models." if not ladders else
             f"{names(ladders)} give{'s' * (len(ladders) == 1)} three or more.")
    return text + (f" {in_force('E3')} gives, over the structure-metric pairs: "
                   + ", ".join(f"*{w}* {counts[w]}" for w in words) + ".")


def main_take(reports: list[dict], rows: dict) -> str:
    """The opening figure's takeaway: the sign of the gaps and whether a family gives a slope."""
    above = [m for m in ("tv_norm_nosink", "head_defect")
             if all(x["gap"] > 0 for s in ("encoder", "decoder") if (s, m) in rows for x in rows[s, m]["models"])]
    ladders = [f for (_, f), v in families(reports).items() if len(v) >= 3]
    return ((f"On {_titled(above)}, every trained model sits above its strongest registered null (a positive gap)"
             if above else "The gaps have both signs")
            + ("; no family gives the three sizes a slope within it needs." if not ladders else
               f"; {names(sorted(ladders))} give{'s' * (len(ladders) == 1)} a slope within the family."))


def gaps_take(rows: dict, metrics=CLAIM_METRICS) -> str:
    """The takeaway of the figure of every claim metric's gap (``e3_gaps_take``): on which metrics every model
    sits above its strongest null, on which every model below, and on which the gaps have both signs."""
    def signs(m):
        return {np.sign(x["gap"]) for s in ("encoder", "decoder") if (s, m) in rows for x in rows[s, m]["models"]}
    metrics = [m for m in metrics if any((s, m) in rows for s in ("encoder", "decoder"))]
    above = [m for m in metrics if signs(m) == {1.0}]
    below = [m for m in metrics if signs(m) == {-1.0}]
    mixed = [m for m in metrics if m not in above and m not in below]
    return (f"Every model sits above its strongest registered null on {_titled(above) if above else 'no metric'}, "
            f"every model below it on {_titled(below) if below else 'no metric'}, and the gaps have both signs on "
            f"{_titled(mixed) if mixed else 'no metric'}.")


def model_words(reports: list[dict], full: bool) -> dict[str, str]:
    """The inline words of the caveats: sizes, grouped-query sharing, head widths, residual degrees of freedom."""
    encoders = [r for r in reports if r["encoder"]]
    decoders = [r for r in reports if not r["encoder"]]
    span_, fifth = sizes(r["parameters"] for r in reports), "" if full else " (the full build adds Qwen2.5-Coder-1.5B)"
    shared = [f"{r['heads'] // r['groups']}{(' query head' + 's' * (r['heads'] // r['groups'] != 1)) * (k == 0)} in "
              f"`{r['model']}`" + " (one group)" * (r["groups"] == 1)
              for k, r in enumerate(decoders)]
    widths: dict[int, list[str]] = {}
    for r in decoders:
        widths.setdefault(r["head_dim"], []).append(f"`{r['model']}`")
    dof = len(decoders) - 2                      # a line through the decoders: two parameters fitted
    return {"e3_sizes": span_ + ("" if full else " in this build") + fifth,
            "e3_models": (f"{len(reports)} models ({len(encoders)} encoder{'s' * (len(encoders) != 1)}, "
                          f"{len(decoders)} decoders), spanning {span_}{fifth}"),
            "e3_gqa": names(shared),
            "e3_widths": ", ".join(f"{w} for {names(ms)}" for w, ms in sorted(widths.items())),
            "e3_points": f"{len(decoders)} points has {dof} residual degree{'s' * (dof != 1)} of freedom"}


def arch_pair(a: dict, b: dict) -> str:
    """Two designs of about the same non-embedding size, compared on two E2 metrics (``e3_arch_pair``)."""
    ratio = {m: late_value(a, m).mean() / late_value(b, m).mean() for m in ("head_defect_gain", "data_defect_nosink")}
    apart = [m for m, r in ratio.items() if max(r, 1 / r) >= 1.5]
    return (f"{a['model']} and {b['model']} have almost the same number of parameters outside their embeddings "
            f"({size(a['non_embedding_parameters'])} and {size(b['non_embedding_parameters'])}), "
            + ("yet " if apart else "and ")
            + f"{a['model']}'s late-layer `head_defect_gain` is {ratio['head_defect_gain']:.2f} times "
            f"{b['model']}'s and its `data_defect_nosink` {ratio['data_defect_nosink']:.2f} times"
            + (": at about the same size, the two models differ by a factor of 1.5 or more on "
               + " and ".join(f"`{m}`" for m in apart) + "." if apart else
               ": on these two metrics the two models are within a factor of 1.5 of each other, which does not "
               "show that design leaves the other metrics alone."))


def step_changes(small: dict, big: dict, *, draws: int = 2000, seed: int = 0) -> dict:
    """The within-family step from ``small`` to ``big`` (two reports of one family): per metric of :data:`METRICS`
    and condition (``"trained"``, ``"random0"``), the change of the late-layer mean and its 95% bootstrap interval
    over passages (``draws`` resamples), ``{(metric, condition): (change, lo, hi)}``; a metric not measured in a
    condition (E2's data defect has no random-init twin) has no entry."""
    g, out = np.random.default_rng(seed), {}
    for metric in METRICS:
        for cond in ("trained", "random0"):
            if any(metric not in r["conditions"].get(cond, {}) for r in (small, big)):
                continue
            a, b = late_value(small, metric, cond), late_value(big, metric, cond)
            boots = [g.choice(b, b.size).mean() - g.choice(a, a.size).mean() for _ in range(draws)]
            lo, hi = np.percentile(boots, [2.5, 97.5])
            out[metric, cond] = (float(b.mean() - a.mean()), float(lo), float(hi))
    return out


def step(steps: dict | None) -> str:
    """The within-family step (``e3_step``): ``steps`` ``{(metric, condition): (change, lo, hi)}``, or None
    where the build does not measure the second size."""
    if not steps:
        return ("The step is measured only in the full build (`make book`); this build (make test's setting) has "
                "three decoders and no 1.5B model.")
    def way(m, c="trained"):
        return "falls" if steps[m, c][2] < 0 else "rises" if steps[m, c][1] > 0 else "unclear"
    groups = {w: [m for m in CLAIM_METRICS if way(m) == w] for w in ("falls", "rises", "unclear")}
    return (f"From 0.5B to 1.5B, the trained late-layer value falls (interval below zero) for "
            f"{_listing(groups['falls'])}, rises (interval above zero) for {_listing(groups['rises'])}, and moves "
            f"by less than its interval for {_listing(groups['unclear'])}. The random-init twin's head defect "
            f"{way('head_defect', 'random0').replace('unclear', 'does not move clearly')} over the same step.")


def what_the_data_say(reports: list[dict], rows: dict) -> str:
    """The section *What the data say*: the verdict, the first rule beside it, the exploratory fit across
    families and the sink mass (a fit across designs)."""
    decoders = [r for r in reports if not r["encoder"]]
    fam = families(reports)
    ladders = sorted(f for (_, f), v in fam.items() if len(v) >= 3)
    words = sorted({v["verdict"] for v in rows.values()})
    structures = [f"the {len(g)} {s}s" if len(g) > 1 else f"the {s}" for s, g in _structures(reports) if g]
    pairs = {w: [f"{s} `{m}`" for (s, m), v in rows.items() if v["verdict"] == w] for w in words}
    verdict = (f"E3 is *{words[0]}* on every claim metric, for {' and '.join(structures)}." if len(words) == 1 else
               "E3 is " + "; ".join(f"*{w}* for {', '.join(pairs[w])}" for w in words) + ".")
    dec_fams = sorted({r["family"] for r in decoders})
    members = {f: sorted(r["model"] for r in decoders if r["family"] == f) for f in dec_fams}
    family_text = ("no family gives three sizes, and across families the size of a model cannot be separated from "
                   "its design." if not ladders else
                   f"{', '.join(ladders)} give{'s' if len(ladders) == 1 else ''} three sizes or more, so within "
                   f"{'that family' if len(ladders) == 1 else 'each of them'} size is tested apart from design; "
                   "across families the size of a model cannot be separated from its design.")
    old_holds = [m for m in CLAIM_METRICS if e3_rule1(decoders, m)["verdict"] == "holds"]
    gap_above = [m for m in CLAIM_METRICS if all(x["gap"] > 0 for x in rows["decoder", m]["models"])]
    against = sorted({x["null"] for m in gap_above for x in rows["decoder", m]["models"]})
    flips = [m for m in CLAIM_METRICS if rows["decoder", m]["across"]
             and len({np.sign(v) for v in rows["decoder", m]["across"]["leave_one_out"].values() if v is not None}) == 2]
    sink = scale_slope(decoders, "sink")
    sink_way = "falls" if sink["hi"] < 0 else "rises" if sink["lo"] > 0 else "shows no clear slope"
    return "\n".join([
        f"* **The verdict:** {verdict} The decoders come from {len(dec_fams)} "
        f"famil{'y' if len(dec_fams) == 1 else 'ies'} (" + "; ".join(f"{f}: {', '.join(members[f])}" for f in dec_fams)
        + f"); {family_text}",
        f"* **The gap.** For {_listing(gap_above)} every trained decoder lies above its strongest registered null"
        + (f" ({names(against)})" if against else "")
        + ": on those metrics the trained models are further from the claimed structure than that null, at every "
        "size measured.",
        f"* **The first rule said *holds*** for {_listing(old_holds)} (the raw late value against all parameters, "
        "across families); the raw value moves with the shapes of the architectures, which the gap takes out.",
        f"* **Exploratory, across families:** the fit of the gap against non-embedding parameters changes sign when "
        f"one model is left out for {_listing(flips)}; the table above gives each slope, its interval and its "
        "leave-one-out range.",
        f"* **The sink mass** (context, no verdict) {sink_way} across the {len(decoders)} trained decoders (a raw "
        f"slope of {sink['slope']:+.4f} per decade of all parameters, interval [{sink['lo']:+.4f}, "
        f"{sink['hi']:+.4f}]), but that is a fit across {len(dec_fams)} designs, not a change with size within one.",
    ])


def ladder_costs(cost: dict, shapes: dict, setting: tuple[int, int], seeds: int, version: str,
                 llama: str = "meta-llama/Meta-Llama-3-8B") -> str:
    """What the large-model path holds in memory, from the published shapes (``cost``: ``{model:
    footprint}``, ``shapes``: ``{model: (config, dtype)}``): a table and four notes (``e3_ladder_costs``)."""
    gib, mib = 2 ** 30, 2 ** 20
    b, n = setting
    big = cost[llama]
    others = max((m for m in shapes if m != llama), key=lambda m: cost[m]["weight_bytes"])
    widest = max(shapes, key=lambda m: cost[m]["edge_bytes"])
    extra = max(min(seeds, len(DATA_SEED_KEYS)) - 1, 0)        # data seeds beyond the twin kept whole

    def peak(f):
        return 2 * f["weight_bytes"] + extra * f["ov_bytes"]

    rows = ["| model | parameters | weights as stored | with its random-init twin | one layer's attention, float32 |",
            "|---|---|---|---|---|"]
    for m, f in cost.items():
        rows.append(f"| `{m}` | {size(f['parameters'])} | {f['weight_bytes'] / gib:.2f} GiB "
                    f"({str(shapes[m][1]).removeprefix('torch.')}) | {2 * f['weight_bytes'] / gib:.2f} GiB | "
                    f"{f['attention_bytes'] / mib:.0f} MiB |")
    notes = [
        f"* **Attention.** The measurement keeps one layer's attention at a time, $B \\cdot H \\cdot n^2$ numbers in "
        f"float32: for the full build's {b} passages of {n} tokens and Llama-3-8B's {big['heads']} heads, "
        f"${b} \\cdot {big['heads']} \\cdot {n}^2 \\cdot 4$ bytes = {big['attention_bytes'] / mib:.0f} MiB, beside "
        f"{big['weight_bytes'] / gib:.1f} GiB of weights.",
        f"* **The nulls.** With transformers 5 (this build has {version}) a model loads in its checkpoint's "
        "precision, and `analyze` builds each random-init twin in that precision while the trained model is still "
        f"loaded, so the peak holds two copies of the weights"
        + (f" and, for E2's data null, the value and output maps of {extra} more twin{'s' * (extra != 1)} (their "
           "head transports are views of those weights)" if extra else "")
        + f": {peak(big) / gib:.1f} GiB for Llama-3-8B, {peak(cost[others]) / gib:.1f} GiB for `{others}`, the "
        "largest of the others. The twins are initialised on the CPU before they move to the GPU, so the host "
        "needs about as much memory as one copy of the weights.",
        f"* **Per-head work** runs in float64 from the factors, never a $d \\times d$ matrix per head. For Llama-3-8B "
        f"its largest arrays are the heads' stacked factors and their Gram matrix, {big['head_bytes'] / mib:.0f} MiB "
        f"each, and the batch of the edges' cores measured at a layer, {big['edge_bytes'] / mib:.0f} MiB, which a "
        "GPU keeps in two or three forms at once (the CPU solves them one edge at a time where the heads do not "
        "share values)"
        + (f"; `{widest}`, whose heads do not share values, has the largest such batch of these models "
           f"({cost[widest]['edge_bytes'] / mib:.0f} MiB)." if widest != llama else "."),
        f"* **Time** has not been measured on a GPU here. Each `analyze` runs the model {seeds + 2} times over the "
        f"passages (trained, {seeds} random-init twins, the shuffled passages), besides one check of its adapter on "
        f"two passages, and builds {seeds} twins; "
        "{ref}`performance` estimates the eigen-solves of an 8B-shaped model, and `benchmarks/gpu_8b.py` measures "
        "them where a GPU is at hand."]
    return "\n".join(rows) + "\n\n" + "\n".join(notes)


def paragraphs(reports: list[dict], scorecard_rows: list[dict], rows: dict, *, pair: tuple[dict, dict],
               steps: dict | None, full: bool, ladder: str) -> dict[str, str]:
    """Every glued text of the chapter (:data:`KEYS`). ``rows``: :func:`gaps`; ``pair``: two reports of about the
    same non-embedding size from two designs; ``steps``: the within-family step, or None; ``ladder``: the text of
    :func:`ladder_costs`."""
    out = {"e3_summary": summary(reports, rows), "e3_main_take": main_take(reports, rows),
           "e3_gaps_take": gaps_take(rows),
           "e3_verdict": verdict_box(scorecard_rows, "E3", {f"{s}/{m}": v["verdict"] for (s, m), v in rows.items()},
                                     what="structure-metric pairs"),
           **model_words(reports, full), "e3_arch_pair": arch_pair(*pair), "e3_step": step(steps),
           "e3_says": what_the_data_say(reports, rows), "e3_ladder_costs": ladder}
    assert tuple(out) == KEYS
    return out


# ----------------------------------------------------------------------- what the rule can see
def rule_power(power: dict, *, draws: int, slope: float, model_sd: float, decades: tuple) -> str:
    """How often the rule in force says *holds* on synthetic ladders with a real effect (``e3_power_says``), from
    ``power`` (:func:`connlap_lite.verdicts.synthetic.e3_power`: ``{sizes: share}`` over ``draws`` ladders of one family
    whose late gap moves ``slope`` per decade with a between-model spread ``model_sd``, over ``decades``).

    >>> rule_power({3: 0.4, 5: 0.9, 8: 1.0}, draws=100, slope=-0.05, model_sd=0.01, decades=(8.0, 10.0))[:40]
    'On synthetic ladders of one family whose'
    """
    counts = sorted(power)
    return (f"On synthetic ladders of one family whose late gap falls by {abs(slope):g} per decade of non-embedding "
            f"parameters (from $10^{{{decades[0]:g}}}$ to $10^{{{decades[1]:g}}}$, a spread of {model_sd:g} between "
            f"models; `connlap_lite.verdicts.synthetic.e3_power`, {draws} ladders each), the rule says *holds* in "
            + ", ".join(f"{power[n]:.0%} with {n} sizes" for n in counts)
            + ". Two sizes give a step, never a verdict; "
            + (f"{min(n for n in counts if power[n] >= 0.8)} sizes are the fewest of those tried that find such an "
               "effect at least four times in five." if any(power[n] >= 0.8 for n in counts) else
               f"none of the ladders tried, up to {counts[-1]} sizes, finds such an effect four times in five."))
