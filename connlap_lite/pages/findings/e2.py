"""*E2: isometry*, in words: the chapter's computed paragraphs, from its reports and the rule's rows.

The data defect is described against the nulls the verdict uses: the random-init twin's transports and
Gaussian transports applied to the trained model's own (sink-free) inputs, ``data_defect_cross`` and
``data_defect_gaussian``. :func:`paragraphs` returns every glued text of E2's rule (:data:`KEYS`); the section on
the rival reading "a dominant direction" has its own (:data:`DOMINANCE_KEYS`, :func:`dominance_paragraphs`, from
:func:`connlap_lite.verdicts.readings.dominance`) and figure (:func:`dominance_figure`).

Chapter: *E2*.
"""
from __future__ import annotations

import numpy as np

from ..prose import layers_of, names, pvalue, span, who
from ...verdicts.record import DATA_SEED_KEYS, layer_curve, layer_means, matrix, random_nulls
from ...verdicts.history import e2_rule1, e2_table_rule2, e2_table_rule3, in_force
from ..boxes import per_model, verdict_box
from ...measure.stats import mean_interval, spearman
from ...verdicts.words import flag

# the data nulls of the rule, by the keys that hold them in the trained condition (three seeds' transports)
DATA_NULLS = {"random-init transports": DATA_SEED_KEYS, "Gaussian transports": ("data_defect_gaussian",)}
TREND_METRICS = ("head_defect", "head_defect_gain", "data_defect_nosink", "edge_defect")
LABEL = {"head_defect": "head defect", "head_defect_gain": "gain-folded head defect",
         "data_defect_nosink": "data defect", "edge_defect": "edge defect"}
KEYS = ("e2_summary", "e2_main_take", "e2_data_take", "e2_heads_take", "e2_hist_take", "e2_data_cost", "e2_verdict",
        "e2_ranks", "e2_null_agree", "e2_curves_says",
        "e2_gauss_lower", "e2_survives", "e2_trends_says", "e2_hist_says", "e2_q4_says", "e2_q4_margin_says",
        "e2_headline", "e2_head_dir", "e2_head_span", "e2_data_span", "e2_trained_range", "e2_rule_change")


def edge_gap_interval(rep: dict) -> tuple[float, float, float]:
    """The trained mean edge defect minus the random-init seeds' mean, paired by passage (the edge passages are
    the same in every condition), with its 95% bootstrap interval over those few passages, widened for their number
    as the rules widen theirs (:func:`connlap_lite.measure.stats.mean_interval` with ``expand``): ``(gap, low, high)``."""
    per_passage = lambda c: matrix(rep, "edge_defect", c).mean(0)          # noqa: E731  mean over layers
    diff = per_passage("trained") - np.mean([per_passage(c) for c in random_nulls(rep)], axis=0)
    return mean_interval(diff, expand=True)


def random_init(rep: dict, metric: str) -> np.ndarray:
    """The random-init null's per-layer mean, averaged over its seeds."""
    return np.mean([layer_means(rep, metric, c) for c in random_nulls(rep)], axis=0)


def head_values(rep: dict, metric: str, conds=("trained",)) -> np.ndarray:
    """Every head's value of a head metric, pooled over the layers and the conditions ``conds``."""
    return np.concatenate([np.ravel(v) for c in conds for v in rep["conditions"][c][metric]])


def registered(rows: list[dict]) -> dict[str, dict]:
    """``{model: row}``: each model's E2 row of the scorecard ``rows``."""
    return {x["model"]: x for r in rows if r["claim"] == "E2" for x in r["per_model"]}


def data_seeds_curve(rep: dict) -> np.ndarray:
    """Per layer, the random-init seeds' transports on the trained inputs, averaged over the seeds (E2's data null
    from three seeds, :data:`connlap_lite.verdicts.record.DATA_SEED_KEYS`)."""
    keys = [k for k in DATA_SEED_KEYS if k in rep["conditions"]["trained"]]
    return np.mean([layer_means(rep, k) for k in keys], axis=0)


def _strongest_data(rep: dict) -> np.ndarray:
    """Per layer, the strongest data null: of the two (the random-init seeds' transports, averaged over the seeds,
    and the Gaussian transports), the one with the lower mean over the layers, as the rule picks it
    (``strongest_data_null``). One null for the whole curve, not the lower of the two at each layer: a per-layer
    minimum gave a second, lower "strongest null" (0.042 beside the rule's 0.043 on one build)."""
    seeds, gauss = data_seeds_curve(rep), layer_means(rep, "data_defect_gaussian")
    return seeds if seeds.mean() <= gauss.mean() else gauss


def heads_against_nulls(rep: dict, mp_pred: float) -> dict:
    """The heads' nulls as the figure draws them: how wide a strip the Gaussian null, two random-init seeds and
    ``sqrt(d_h / 2d)`` (``mp_pred``) span over the layers, the widest of their bands, how far the trained curve is
    from the Gaussian null on average, and the layers where it dips below the Gaussian null or the seeds' mean."""
    tr, gauss = layer_means(rep, "head_defect"), layer_means(rep, "head_defect_gaussian")
    seeds = random_nulls(rep)[:2]
    lines = np.stack([gauss, *(layer_means(rep, "head_defect", c) for c in seeds)])
    widths = []
    for m, c in (("head_defect_gaussian", "trained"), *(("head_defect", c) for c in seeds)):
        _, lo, hi = layer_curve(rep, m, c)
        widths.append(float(np.mean(np.array(hi) - np.array(lo))))
    return {"strip": float(max(lines.max(), mp_pred) - min(lines.min(), mp_pred)), "band": max(widths),
            "dist": float(np.abs(tr - gauss).mean()),
            "below": [int(i) for i in np.flatnonzero(tr < np.maximum(gauss, random_init(rep, "head_defect")))]}


def flat(strip: float, band: float, dist: float) -> bool:
    """The nulls are one flat line on the plot's scale: strip and band together under a tenth of the distance."""
    return strip + band < 0.1 * dist


def data_cost(reports: list[dict]) -> str:
    """What E2's data null from three random-init seeds cost in these measurements (``e2_data_cost``): building each
    seed's model and head transports from its weights and applying them to the trained inputs
    (``data_null_seconds``), against each model's whole measurement (``seconds``)."""
    timed = [r for r in reports if r.get("data_null_seconds") is not None and r.get("seconds")]
    if not timed:
        return "These reports do not say what their data null cost."
    seeds = sorted({len(r.get("data_null_seeds", [])) for r in timed})
    k = seeds[-1]
    added = (f" ({k - 1} of those {k} seeds were added on 2026-12-02, when the rule began to count the seeds as "
             "units)" if len(seeds) == 1 and k > 1 else "")
    whose = "seeds'" if k > 1 else "seed's"
    return (f"Building {names([str(n) for n in seeds])} {whose} transports and applying them "
            f"cost {span([r['data_null_seconds'] for r in timed], '{:.1f}')} s per model in this build's "
            f"measurements, {span([100 * r['data_null_seconds'] / r['seconds'] for r in timed], '{:.0f}')}% of each "
            f"model's measurement{added}.")


def heads_take(reports: list[dict], mp_pred: dict) -> str:
    """The head figure's takeaway (``e2_heads_take``): where the nulls form one narrow strip and where the trained
    curve lies above it at every layer."""
    models = [r["model"] for r in reports]
    h = {r["model"]: heads_against_nulls(r, mp_pred[r["model"]]) for r in reports}
    narrow = [m for m in models if flat(h[m]["strip"], h[m]["band"], h[m]["dist"])]
    above = [m for m in models if not h[m]["below"]]
    return (f"On the plots' scale the nulls of the heads form one narrow strip in {who(narrow, models)}, and the "
            f"trained curve lies above them at every layer in {who(above, models)}.")


# ----------------------------------------------------------------------- the paragraphs
def summary(reports: list[dict], rows: list[dict]) -> str:
    """The chapter's opening in plain words: heads and token gains against their strongest nulls, and the verdict."""
    reg = registered(rows)
    models = [r["model"] for r in reports]
    heads = [m for m in models if reg[m]["heads_below_nulls"]]
    data = [m for m in models if reg[m]["data_below_nulls"]]
    head_ratio = [reg[m]["head_defect"] / reg[m]["head_nulls"][reg[m]["strongest_head_null"]] for m in models]
    data_ratio = [reg[m]["data_defect"] / reg[m]["data_nulls"][reg[m]["strongest_data_null"]] for m in models]
    verdicts = per_model(rows, "E2")
    return (f"A scaled isometry stretches every direction by the same factor. Measured on {len(models)} small "
            f"pretrained models, the trained attention heads are closer to one than random heads of the same shape "
            f"in {who(heads, models)}: their departure from it is {span(head_ratio)} times the nearest random "
            f"head's. On the token vectors the heads actually receive, the trained heads stretch them more evenly "
            f"than random heads applied to the same vectors in {who(data, models)}; their spread of stretches is "
            f"{span(data_ratio)} times the random heads'. {in_force('E2')} gives: {verdicts}.")


def main_take(rows: list[dict]) -> str:
    reg = registered(rows)
    above = [m for m, x in reg.items() if x["head_defect"] > x["head_nulls"][x["strongest_head_null"]]
             and x["data_defect"] > x["data_nulls"][x["strongest_data_null"]]]
    return (f"Both the heads and their gains on real tokens are further from a scaled isometry than the strongest "
            f"null in {who(above, list(reg))}." if above else
            f"No model is further from a scaled isometry than its strongest null in both respects "
            f"({len(reg)} models).")


def curves(reports: list[dict], rows: list[dict], mp_pred: dict, edges: int,
           q4_shift: dict | None = None) -> tuple[str, str, str]:
    """What the per-layer curves show (``e2_curves_says``), whether a Gaussian matrix scores lower
    (``e2_gauss_lower``) and what survives of the claim (``e2_survives``). ``mp_pred``: ``{model:
    sqrt(d_h / 2d)}``; ``edges``: heaviest edges kept per passage. The data defect's ratio to its null is the
    rows' (the quantity the verdict compares). ``q4_shift``: ``{model: mean absolute change of its edge defect
    under a 4-bit round trip}`` where one is measured; an edge gap no larger than it is not counted either way."""
    reg = registered(rows)
    q4_shift = q4_shift or {}
    models = [r["model"] for r in reports]
    rep_of = dict(zip(models, reports))
    decoders = [m for m in models if not rep_of[m]["encoder"]]
    below_gauss, closer_rot, data_every, data_ratio, shuffle_rel, null_falls = {}, [], [], {}, {}, {}
    co_adapt, co_ci, edge_gap, fold, fold_curve = {}, {}, {}, {}, {}
    null_strip, null_band, null_dist, edge_passages, edge_band = {}, {}, {}, {}, {}
    for name, rep in rep_of.items():
        tr, gauss = layer_means(rep, "head_defect"), layer_means(rep, "head_defect_gaussian")
        init, rot = random_init(rep, "head_defect"), layer_means(rep, "head_defect_rotation")
        below_gauss[name] = [int(i) for i in np.flatnonzero(tr < np.maximum(gauss, init))]
        if abs(tr.mean() - rot.mean()) < abs(tr.mean() - gauss.mean()):
            closer_rot.append(name)
        cond = rep["conditions"]["trained"]
        diff = np.concatenate([np.ravel(r) - np.ravel(t)
                               for r, t in zip(cond["head_defect_rotation"], cond["head_defect"])])
        mean, lo, hi = mean_interval(diff)
        co_adapt[name], co_ci[name] = mean, (lo, hi)
        d_tr, d_null = layer_means(rep, "data_defect_nosink"), _strongest_data(rep)
        if (d_tr > d_null).all():
            data_every.append(name)
        x = reg[name]
        data_ratio[name] = x["data_defect"] / x["data_nulls"][x["strongest_data_null"]]
        shuffle_rel[name] = abs(layer_means(rep, "data_defect", "shuffled").mean()
                                / layer_means(rep, "data_defect").mean() - 1)
        null_falls[name] = spearman(np.arange(len(d_null)), data_seeds_curve(rep))
        edge_gap[name] = edge_gap_interval(rep)
        fold_curve[name] = layer_means(rep, "head_defect_gain")
        fold[name] = float(fold_curve[name].mean() - tr.mean())
        strip = heads_against_nulls(rep, mp_pred[name])
        null_strip[name], null_band[name], null_dist[name] = strip["strip"], strip["band"], strip["dist"]
        edge_passages[name] = len(cond["edge_defect"][0])
        _, lo_, hi_ = layer_curve(rep, "edge_defect")
        edge_band[name] = float(np.mean(np.array(hi_) - np.array(lo_)))

    flat_nulls = [m for m in models if flat(null_strip[m], null_band[m], null_dist[m])]
    row0 = (f"The Gaussian null, the two random-init seeds that the figure draws and $\\sqrt{{d_h/2d}}$ stay, over "
            f"all layers, within a strip {span(null_strip.values(), '{:.3f}')} wide (depending on the model), and "
            f"the widest of their 95% bands is on average {span(null_band.values(), '{:.3f}')} wide; the trained "
            f"curve is on average {span(null_dist.values(), '{:.3f}')} from the Gaussian null. ")
    row0 += ("Strip and bands together are less than a tenth of that distance in every model, so on the plots' "
             "scale the nulls are one flat line." if len(flat_nulls) == len(models) else
             f"Strip and bands together are less than a tenth of that distance in {who(flat_nulls, models)}, where "
             "on the plots' scale the nulls are one flat line." if flat_nulls else
             "Strip and bands are not small beside that distance in any model, so the nulls can be told apart on "
             "the plots.")
    above_all = [m for m in models if not below_gauss[m]]
    dips = names([f"at {layers_of(below_gauss[m])} of {m} ({rep_of[m]['layers']} layers)"
                  if len(below_gauss[m]) <= 4 else
                  f"at {len(below_gauss[m])} of the {rep_of[m]['layers']} layers of {m}"
                  for m in models if below_gauss[m]])
    if above_all:
        row1 = ("The trained curve lies above them at every layer of "
                + ("every model" if len(above_all) == len(models) else names(above_all))
                + (f"; it dips below them {dips}." if dips != "none" else "."))
    else:
        row1 = f"The trained curve dips below them {dips}."
    co = [m for m in models if co_ci[m][0] > 0]
    anti = [m for m in models if co_ci[m][1] < 0]
    even = [m for m in models if m not in co and m not in anti]
    row1 += f" The rotation null is closer to the trained mean than the Gaussian null is in {who(closer_rot, models)}"
    row1 += (": there the trained heads' excess over the Gaussian null is carried by the singular values of $W_V$ "
             "and $W_O$ themselves, more than by the way the two were fitted together." if closer_rot else ".")
    parts = []
    if co:
        parts.append(f"the trained heads sit clearly *below* their rotated copies on average in {names(co)} (by "
                     f"{span([co_adapt[m] for m in co], '{:.3f}')}; "
                     + ("the third exercise looks at MiniLM's layers one by one" if "minilm-l6" in co else
                        "co-adaptation towards isometry") + ")")
    if anti:
        parts.append(f"clearly *above* them in {names(anti)} (by {span([-co_adapt[m] for m in anti], '{:.3f}')})")
    if even:
        parts.append(f"in {names(even)} the two means differ by {span([abs(co_adapt[m]) for m in even], '{:.3f}')}, "
                     "and the interval contains zero")
    row1 += " Paired head by head, with a 95% bootstrap interval over the heads, " + "; ".join(parts) + "."

    little = [m for m in models if abs(fold[m]) < 0.02]
    row2 = (f"For {names(little)} folding the norm gain changes the mean head defect little ("
            + ", ".join(f"{fold[m]:+.3f}" for m in little) + "). ") if little else ""
    for m in (m for m in models if abs(fold[m]) >= 0.02):
        y = fold_curve[m]
        rho, p = spearman(np.arange(len(y)), y)
        how = ("climbs with depth" if rho > 0 and p < 0.05 else
               "falls with depth" if rho < 0 and p < 0.05 else "varies from layer to layer")
        row2 += (f"For {m} it changes the picture: with the gains folded in, the mean head defect moves by "
                 f"{fold[m]:+.2f}, and the per-layer defect {how}, to {y[-1]:.2f} in the last layer (largest "
                 f"{y.max():.2f}). ")

    lo_ratio = min(data_ratio.values())
    row3 = (f"On the trained model's own token vectors (sink tokens left out), the trained heads scale the tokens "
            f"{'far ' if lo_ratio > 1.5 else ''}less uniformly than the "
            f"stronger of the two registered data nulls (random-init and Gaussian transports applied to the same "
            f"vectors) at every layer of {who(data_every, models)}: over all layers the trained mean data defect is "
            f"{span(data_ratio.values())} times the stronger null's.")
    small = [m for m in models if shuffle_rel[m] < 0.15]
    row3 += (f" Shuffling the tokens' order moves the trained model's data defect (sinks kept) by "
             f"{span(shuffle_rel.values(), '{:.0%}')}")
    row3 += (": the defect belongs to the distribution of the token vectors rather than to the order of the text."
             if len(small) == len(models) else
             f", by less than 15% in {who(small, models)}: there the defect belongs to the distribution of the "
             "token vectors more than to the order of the text.")
    falls = [m for m in decoders if null_falls[m][0] < 0 and null_falls[m][1] < 0.05]
    if decoders:
        row3 += (f" The random-init transports' defect on those vectors falls with depth (Spearman's $\\rho < 0$, "
                 f"$p < 0.05$) in {who(falls, decoders, 'decoder')}")
        row3 += (" ($\\rho$ = " + span([null_falls[m][0] for m in falls], "{:+.2f}")
                 + "): a trend that comes with the inputs, before any training, to keep in mind when reading "
                 "depth trends." if falls else ".")

    # a gap no larger than the model's own 4-bit shift is not counted: quantisation alone could make it
    within_q4 = [m for m in models if m in q4_shift and abs(edge_gap[m][0]) <= q4_shift[m]]
    further = [m for m in models if edge_gap[m][1] > 0 and m not in within_q4]
    closer = [m for m in models if edge_gap[m][2] < 0 and m not in within_q4]
    unsettled = [m for m in models if m not in further and m not in closer and m not in within_q4]
    row4 = ("On the heaviest edges the trained mean edge defect minus the random-init seeds' mean, paired by passage, "
            "is " + ", ".join(f"{g:+.3f} ({m}; 95% interval {lo:+.3f} to {hi:+.3f})" for m, (g, lo, hi)
                              in edge_gap.items())
            + f". The mixed transports are further from a scaled partial isometry of any rank than those of the "
            f"random-init model where that interval lies above 0, in {who(further, models)}"
            + (f"; closer where it lies below 0, in {names(closer)}" if closer else "")
            + (f"; in {names(unsettled)} it contains 0, so there the sign of the gap is not settled" if unsettled
               else "")
            + ("; in " + names(f"{m} the gap ({edge_gap[m][0]:+.3f}) is no larger than its own 4-bit round trip's "
                               f"shift of the edge defect ({q4_shift[m]:.3f}), so it is not counted either way"
                               for m in within_q4) if within_q4 else "") + "."
            + f" Each layer's value rests on {names(sorted({edges * p for p in edge_passages.values()}))} edges "
            f"({edges} in each of {names(sorted(set(edge_passages.values())))} passages), and the interval is over "
            "those passages, widened for their number; the trained curve's 95% band is on average "
            f"{span(edge_band.values(), '{:.3f}')} wide.")
    text = (f"1. **Head defect.** {row0} {row1}\n2. **Gain folded.** {row2.strip()}\n"
            f"3. **Data defect.** {row3}\n4. **Edge defect.** {row4}")

    gauss_lower = [m for m in models if layer_means(rep_of[m], "head_defect_gaussian").mean()
                   < layer_means(rep_of[m], "head_defect").mean()]
    lower = ("But a Gaussian matrix of the same shape scores lower" if len(gauss_lower) == len(models) else
             f"A Gaussian matrix of the same shape scores lower on {who(gauss_lower, models)}")
    beat = [m for m in co if layer_means(rep_of[m], "head_defect").mean()
            < min(layer_means(rep_of[m], "head_defect_gaussian").mean(), random_init(rep_of[m], "head_defect").mean())]
    if co:
        survives = (f"What does survive is weaker: the heads of {names(co)} are more isometric than their own "
                    "factors' spectra would make them (the rotation null), that is, training co-adapted the value "
                    "and output projections towards isometry")
        survives += (", though not far enough to beat a random head." if not beat else
                     ", far enough to beat a random head." if len(beat) == len(co) else
                     f", far enough to beat a random head in {names(beat)} but not in "
                     f"{names([m for m in co if m not in beat])}.")
    else:
        survives = ("Not even a weaker form survives: in no model are the trained heads clearly more isometric "
                    "than their own factors rotated against each other (the rotation null), so nothing here shows "
                    "that training co-adapted the value and output projections towards isometry.")
    return text, lower, survives


def trends(reports: list[dict]) -> str:
    """Which curves have a depth trend, trained and null (``e2_trends_says``)."""
    def trend(curve):
        return spearman(np.arange(len(curve)), curve)

    sig = [(r["model"], m, *trend(layer_means(r, m))) for r in reports for m in ("head_defect", "data_defect_nosink")]
    sig = [s for s in sig if s[3] < 0.05]
    says = ("The tables confirm the curves and add the trends. "
            + ("No trained head defect or data defect has a significant depth trend ($p < 0.05$) in any model"
               if not sig else "A trained head or data defect has a significant depth trend ($p < 0.05$) in "
               + names([f"{n}'s {LABEL[m]} ($\\rho = {r:+.2f}$)" for n, m, r, _ in sig])))
    few = [r for r in reports if r["layers"] <= 8]
    says += (f" ({names(r['model'] for r in few)}, with {min(r['layers'] for r in few)} layers, could barely show "
             "one anyway). " if few else ". ")
    strong = [(r["model"], m, *trend(layer_means(r, m))) for r in reports for m in TREND_METRICS]
    items = [f"{n}'s {LABEL[m]}, which {'rises' if rho > 0 else 'falls'} with depth ($\\rho = {rho:+.2f}$)"
             for n, m, rho, p in strong if p < 0.01]
    nulls = {"head_defect": lambda r: random_init(r, "head_defect"),
             "data_defect_nosink": data_seeds_curve}
    for m, curve in nulls.items():
        for sign, verb in ((1, "rises"), (-1, "falls")):
            hit = [(r["model"], trend(curve(r))) for r in reports]
            hit = [(n, rho) for n, (rho, p) in hit if p < 0.01 and np.sign(rho) == sign]
            if hit:
                items.append(f"the random-init null's {LABEL[m]}, which {verb} with depth in "
                             f"{names([n for n, _ in hit])} ($\\rho$ = {span([r for _, r in hit], '{:+.2f}')}) "
                             "although nothing was trained")
    return says + ("No curve, trained or null, has a strong trend ($p < 0.01$)." if not items else
                   f"The only strong trends ($p < 0.01$) are {names(items)}.")


def _spread(samples: dict[str, np.ndarray]) -> tuple[float, float, np.ndarray, bool, float]:
    """The nulls' range (Gaussian and random-init heads), the trained heads' middle 90%, whether the nulls form a
    spike (a range under a quarter of that middle), and the trained median over the Gaussian null's."""
    nulls = np.concatenate([samples["Gaussian null"], samples["random init (seed 0)"]])
    lo, hi = float(nulls.min()), float(nulls.max())
    mid = np.percentile(samples["trained"], [5, 95])
    shift = float(np.median(samples["trained"]) / np.median(samples["Gaussian null"]))
    return lo, hi, mid, hi - lo < 0.25 * (mid[1] - mid[0]), shift


def _where(shift: float) -> str:
    return "far to the right of it" if shift > 1.5 else "to the right of it" if shift > 1.05 else "around it"


def hist_take(samples: dict[str, np.ndarray]) -> str:
    """The histogram's takeaway (``e2_hist_take``): spike or not, and where the trained heads lie."""
    *_, spike, shift = _spread(samples)
    return (("The nulls form a narrow spike" if spike else "The nulls spread about as widely as the trained heads")
            + f"; the trained heads lie {_where(shift)}.")


def histogram(model: str, samples: dict[str, np.ndarray], mp_exact: float, mp_pred: float) -> str:
    """One model's heads pooled against three nulls of the same heads (``e2_hist_says``); ``samples``: the
    trained heads and the nulls ``'Gaussian null'``, ``'rotation null'``, ``'random init (seed 0)'``."""
    from scipy.stats import binomtest

    med = {k: float(np.median(v)) for k, v in samples.items()}
    trained = samples["trained"]
    n_heads = len(trained)
    frac_gauss = float(np.mean(trained > samples["Gaussian null"].max()))
    frac_rot = float(np.mean(trained < samples["rotation null"]))
    sign_p = binomtest(int(np.sum(trained < samples["rotation null"])), n_heads).pvalue
    lo, hi, mid, spike, shift = _spread(samples)
    return (f"The Gaussian and random-init heads all lie between {lo:.3f} and {hi:.3f}, with medians "
            f"{med['Gaussian null']:.3f} and {med['random init (seed 0)']:.3f}; the limit law of Marchenko–Pastur "
            f"puts their mean at {mp_exact:.3f} ($\\sqrt{{d_h/2d}} = {mp_pred:.3f}$ to first order). "
            + (f"That range is less than a quarter of the width of the middle 90% of the trained heads "
               f"({mid[0]:.2f} to {mid[1]:.2f}), so the nulls form a narrow spike, and the count axis is "
               "logarithmic so that the spike does not hide everything else. " if spike else
               f"The middle 90% of the trained heads spans {mid[0]:.2f} to {mid[1]:.2f}. ")
            + f"The trained heads (median {med['trained']:.2f}) spread {_where(shift)}, "
            f"and {frac_gauss:.0%} of them lie above every one of the {n_heads} Gaussian heads. The rotation null "
            f"has median {med['rotation null']:.2f}, and {frac_rot:.0%} of the trained heads beat their own rotated "
            f"copy (sign test $p = {sign_p:.2g}$): "
            + (f"about half, so in {model} the factors were not fitted to each other in a way that makes their "
               "product more isometric." if sign_p >= 0.05 else
               f"most of them, so in {model} training fitted the two factors to each other towards isometry."
               if frac_rot > 0.5 else
               f"a minority, so in {model} the fit of the two factors makes their product less isometric than "
               "their spectra alone would."))


def quantisation(base: dict, q4: dict, reports: list[dict]) -> tuple[str, str, dict]:
    """How far a 4-bit round trip moves MiniLM's defects (``e2_q4_says``), and what that means for the quantised
    models (``e2_q4_margin_says``); also the shifts, ``{metric: {abs, rel, gap}}``, for the chapter's table."""
    def flat(rep, m):
        return np.concatenate([np.ravel(v) for v in rep["conditions"]["trained"][m]])

    def null(rep, m):       # the null the verdict compares with: the strongest data null, or the seeds' heads
        return _strongest_data(rep).mean() if m == "data_defect_nosink" else random_init(rep, m).mean()

    shift, signed = {}, {}
    for m in TREND_METRICS + ("head_defect_rotation",):
        a, b = flat(base, m), flat(q4, m)
        mad = float(np.abs(b - a).mean())
        gap = (abs(layer_means(base, m).mean() - null(base, m)) if m in TREND_METRICS else float("nan"))
        shift[m] = dict(float=float(a.mean()), q4=float(b.mean()), abs=mad, rel=mad / float(np.abs(a).mean()),
                        gap=gap)
        signed[m] = float(b.mean() - a.mean())
    decide = ("head_defect", "data_defect_nosink")
    towards = {m: bool(np.sign(signed[m]) == np.sign(null(base, m) - layer_means(base, m).mean())) for m in decide}
    ratio = {m: shift[m]["gap"] / shift[m]["abs"] for m in decide}
    says = (f"The round trip moves {base['model']}'s head defects by {shift['head_defect']['rel']:.1%} of their "
            f"value, its data defects by {shift['data_defect_nosink']['rel']:.1%} and its edge defects by "
            f"{shift['edge_defect']['rel']:.1%} (mean absolute change over mean value). For the two defects that "
            "decide the verdict the shift is ")
    says += (f"{span(ratio.values(), '{:.0f}')} times smaller than the distance between the trained value and the "
             "strongest null" if min(ratio.values()) >= 2 else
             "comparable to the distance between the trained value and the strongest null ("
             + "; ".join(f"{shift[m]['abs']:.4f} against {shift[m]['gap']:.4f} for the {LABEL[m]}" for m in decide)
             + ")")
    both = [towards[m] for m in decide]
    says += (", and both means moved slightly *towards* the nulls, as unstructured noise added to a weight matrix "
             "tends to do." if all(both) else ", and both means moved slightly *away from* the nulls."
             if not any(both) else
             f"; the head defect's mean moved {'towards' if both[0] else 'away from'} its null and the data "
             f"defect's {'towards' if both[1] else 'away from'} its null.")
    e = shift["edge_defect"]["abs"] / shift["edge_defect"]["gap"]
    says += (f" The edge defect is different: its Q4 shift ({shift['edge_defect']['abs']:.4f}) is "
             f"{'larger than' if e > 1.2 else 'about as large as'} {base['model']}'s small trained–null gap in that "
             f"defect ({shift['edge_defect']['gap']:.4f}), one more reason why it stays out of the verdict."
             if e >= 0.5 else
             f" The edge defect's Q4 shift ({shift['edge_defect']['abs']:.4f}) is {e:.0%} of {base['model']}'s "
             f"trained–null gap in that defect ({shift['edge_defect']['gap']:.4f}); it stays out of the verdict "
             "for the reasons given above.")
    margin = {}
    for rep in reports:
        if rep["model"] != base["model"]:
            margin[rep["model"]] = min(abs(layer_means(rep, m).mean() - null(rep, m)) / layer_means(rep, m).mean()
                                       / shift[m]["rel"] for m in decide)
    close = [n for n, v in margin.items() if v < 3]
    more = (f"Their relative distances from the nulls are {span(margin.values(), '{:.0f}')} times "
            f"{base['model']}'s relative shifts (the smaller of the head and data ratios), ")
    more += ("more than an order of magnitude: quantisation cannot have produced their verdicts."
             if min(margin.values()) > 10 else
             "several times larger: quantisation is unlikely to have produced their verdicts." if not close else
             f"and for {names(close)} close enough that quantisation could have moved the verdict.")
    more += (" And if quantisation noise pushes their defects towards the nulls as it does the float model's, the "
             "full-precision originals would sit, if anything, slightly further from the nulls than what we "
             "measure." if all(both) else
             f" {base['model']}'s shifts do not all point towards the nulls, so the sign of the error for the "
             "full-precision originals is not known.")
    return says, more, shift


def old_verdicts(reports: list[dict]) -> dict[str, tuple[str, str]]:
    """Rule 2's and rule 3's E2 verdicts (rule 2 registered 2026-11-30, replaced 2026-12-01; rule 3 replaced
    2026-12-02), one table per structure as each was registered: ``{model: (rule 2's, rule 3's)}``."""
    out = {}
    for is_encoder in (True, False):
        group = [r for r in reports if r["encoder"] == is_encoder]
        if group:
            out.update({a["model"]: (a["verdict"], b["verdict"])
                        for a, b in zip(e2_table_rule2(group), e2_table_rule3(group))})
    return out


def verdict_words(reports: list[dict], rows: list[dict]) -> dict[str, str]:
    """The inline words of *Verdicts*: the headline, the direction and size of the gaps, the rule changes
    (``e2_rule_change``: each model whose verdict differs between rules 1 to 4, as 'rule 1 -> 2 -> 3 -> 4')."""
    reg = registered(rows)
    models = [r["model"] for r in reports]
    head_ratio = {m: reg[m]["head_defect"] / reg[m]["head_nulls"][reg[m]["strongest_head_null"]] for m in models}
    data_ratio = {m: reg[m]["data_defect"] / reg[m]["data_nulls"][reg[m]["strongest_data_null"]] for m in models}
    above = sum(r > 1 for r in head_ratio.values())
    direction = ("less" if above == len(models) else "more" if above == 0 else
                 f"in {above} of {len(models)} models less")
    counts: dict[str, list[str]] = {}
    for m in models:
        counts.setdefault(reg[m]["verdict"], []).append(m)
    headline = "The verdict on E2 is " + "; ".join(f"*{w}* for {who(ms, models)}" for w, ms in counts.items())
    before = old_verdicts(reports)
    old = {r["model"]: (e2_rule1(r)["verdict"], *before[r["model"]], reg[r["model"]]["verdict"]) for r in reports}
    changed = [m for m, v in old.items() if len(set(v)) > 1]
    heads = [reg[m]["head_defect"] for m in models]
    return {"e2_headline": headline, "e2_head_dir": direction, "e2_head_span": span(head_ratio.values()),
            "e2_data_span": span(data_ratio.values()), "e2_trained_range": span(heads),
            "e2_rule_change": "no model's verdict" if not changed else
            "the verdict of " + "; ".join(f"{m} ({' -> '.join(old[m])})" for m in changed)}


def paragraphs(reports: list[dict], rows: list[dict], *, mp_pred: dict, edges: int, hist: tuple,
               q4: dict) -> dict[str, str]:
    """Every glued text of the chapter (:data:`KEYS`). ``hist``: ``(model, samples, mp_exact, mp_pred)`` of
    :func:`histogram`; ``q4``: the float model after a 4-bit round trip (its trained condition)."""
    base = next(r for r in reports if r["model"] == q4["model"])
    q4_says, margin, shift = quantisation(base, q4, reports)
    text, lower, survives = curves(reports, rows, mp_pred, edges, {q4["model"]: shift["edge_defect"]["abs"]})
    agree = max(abs(layer_means(r, "head_defect_gaussian").mean() - random_init(r, "head_defect").mean())
                for r in reports)
    below = [r["model"] for r in reports
             if layer_means(r, "data_defect_nosink").mean() < _strongest_data(r).mean()]
    out = {"e2_summary": summary(reports, rows), "e2_main_take": main_take(rows),
           "e2_data_take": (f"On its own tokens, the trained data defect is below the stronger data null in "
                            f"{who(below, [r['model'] for r in reports])}."),
           "e2_heads_take": heads_take(reports, mp_pred), "e2_hist_take": hist_take(hist[1]),
           "e2_data_cost": data_cost(reports),
           "e2_verdict": verdict_box(rows, "E2"),
           "e2_ranks": names(f"{r['groups'] * r['head_dim']} of {r['d']} for {r['model']}" for r in reports),
           "e2_null_agree": f"{agree:.3f}", "e2_curves_says": text, "e2_gauss_lower": lower,
           "e2_survives": survives, "e2_trends_says": trends(reports), "e2_hist_says": histogram(*hist),
           "e2_q4_says": q4_says, "e2_q4_margin_says": margin, **verdict_words(reports, rows)}
    assert set(out) == set(KEYS)
    return {k: out[k] for k in KEYS}


# ----------------------------------------------------------------------- the exercises' solutions
def exercise_two(shapes: dict[str, tuple[float, float, float]]) -> str:
    """The second exercise's paragraph (``e2_ex2_says``): ``shapes`` ``{model: (d_h / d, |simulation - limit
    law|, |sqrt(d_h / 2d) - limit law|)}``."""
    narrow, wide = min(shapes, key=lambda m: shapes[m][0]), max(shapes, key=lambda m: shapes[m][0])
    return (f"The limit law is within {max(v[1] for v in shapes.values()):.3f} of the simulation for every shape. "
            f"The approximation $\\sqrt{{d_h / 2d}}$ is off by {shapes[narrow][2]:.3f} for the narrowest heads "
            f"({narrow}, $\\lambda = {shapes[narrow][0]:.2f}$) and by {shapes[wide][2]:.3f} for the widest "
            f"({wide}, $\\lambda = {shapes[wide][0]:.2f}$): it comes from the first-order expansion "
            "$s \\approx 1 + (\\mu - 1)/2$, which is accurate only while the squared singular values stay near 1.")


def exercise_three(frac_below: np.ndarray, rot_mean, report_rot, n_rot: int) -> str:
    """The third exercise's paragraph (``e2_ex3_says``): ``frac_below`` ``(layers, heads)``, each head's share of
    ``n_rot`` rotated copies more isometric than it; ``rot_mean`` the layers' mean rotated defect over those copies,
    ``report_rot`` the report's one-rotation layer means."""
    frac_below = np.asarray(frac_below)
    co, anti = (frac_below < 0.05).sum(1), (frac_below > 0.95).sum(1)
    layers, H = frac_below.shape
    mostly = [l for l in range(layers) if co[l] >= 0.75 * H]
    mixed = [l for l in range(layers) if anti[l] > 0]
    if mostly:
        text = (("In {} nearly every head is more isometric than at least 95% of its rotated copies ({})"
                 if min(co[l] for l in mostly) >= 0.9 * H else
                 "In {} most heads are more isometric than at least 95% of their rotated copies ({})").format(
                    layers_of(mostly), ", ".join(f"{co[l]} of {H} in layer {l}" for l in mostly))
                + ": there, training did fit $W_O$ to $W_V$ so that the product evens out the factors' spectra.")
    else:
        text = (f"In no layer are most heads more isometric than 95% of their rotated copies (at most {co.max()} of "
                f"{H}).")
    text += (f" In {layers_of(mixed)} heads go both ways: {int(anti[mixed].sum())} heads in all are *less* isometric "
             "than at least 95% of their rotations, as if their factors' large directions had been aligned with each "
             "other." if mixed else " No head is less isometric than 95% of its rotations.")
    return text + (f" The report's single rotation per head gives layer means within "
                   f"{np.abs(np.asarray(rot_mean) - np.asarray(report_rot)).max():.3f} of the {n_rot}-rotation "
                   "means, less than four standard errors of a one-rotation layer mean, so it is a fair null for layer "
                   "averages (though not for single heads).")


# ----------------------------------------------------------------------- figures' numbers and tables
def ratios(rows: list[dict]) -> dict[str, dict[str, tuple[float, float, float]]]:
    """What the rule compares, as ratios for the opening figure: per model the trained mean head defect and
    data defect over their strongest nulls, with the trained value's 95% interval on the same scale."""
    out = {"heads": {}, "gains on the model's own tokens": {}}
    for m, x in registered(rows).items():
        h = x["head_nulls"][x["strongest_head_null"]]
        d = x["data_nulls"][x["strongest_data_null"]]
        out["heads"][m] = (x["head_defect"] / h, x["head_interval"][0] / h, x["head_interval"][1] / h)
        out["gains on the model's own tokens"][m] = (x["data_defect"] / d, x["data_interval"][0] / d,
                                                     x["data_interval"][1] / d)
    return out


def null_curve(rep: dict, metric: str) -> np.ndarray:
    """The null a metric's curve is read against: the strongest data null for the data defect, else the
    random-init seeds' mean."""
    return _strongest_data(rep) if metric == "data_defect_nosink" else random_init(rep, metric)


def trend_table(report: dict) -> str:
    """One model's defects: first, last and mean value, the depth trend, and the same for its null."""
    def rho_p(curve):
        r, p = spearman(np.arange(len(curve)), curve)
        return f"{r:+.2f} ({p:.2g})"

    lines = [f"{report['model']}: {report['layers']} layers, d = {report['d']}, d_h = {report['head_dim']}",
             f"  {'defect':<19}{'first':>7}{'last':>7}{'mean':>7}{'rho (p)':>15}  |{'null mean':>10}"
             f"{'null rho (p)':>15}"]
    for m in TREND_METRICS:
        tr, nl = layer_means(report, m), null_curve(report, m)
        lines.append(f"  {m:<19}{tr[0]:>7.3f}{tr[-1]:>7.3f}{tr.mean():>7.3f}{rho_p(tr):>15}  |{nl.mean():>10.3f}"
                     f"{rho_p(nl):>15}")
    return "\n".join(lines)


def verdict_table(reports: list[dict], rows: list[dict]) -> str:
    """Per model the numbers behind the verdict, with the verdicts of rules 1 to 3 beside the rule in force (4)."""
    reg = registered(rows)
    before = old_verdicts(reports)
    lines = [f"{'model':<20}{'head':>7}{'null':>7}{'p':>7}{'data':>8}{'null':>8}{'p':>7}  "
             "rule 1 -> rule 2 -> rule 3 -> rule 4"]
    for r in reports:
        x = reg[r["model"]]
        lines.append(f"{r['model']:<20}{x['head_defect']:>7.3f}{x['head_nulls'][x['strongest_head_null']]:>7.3f}"
                     f"{x['p_heads_holm']:>7.3f}{x['data_defect']:>8.3f}"
                     f"{x['data_nulls'][x['strongest_data_null']]:>8.3f}{x['p_data_holm']:>7.3f}  "
                     f"{e2_rule1(r)['verdict']} -> {' -> '.join(before[r['model']])} -> {x['verdict']}")
    return "\n".join(lines)


# ----------------------------------------------------------------------- the rival reading: a dominant direction
# (rule "dominance", connlap_lite.verdicts.readings, registered 2026-12-04; its words are the rule's, never chosen here)
DOMINANCE_KEYS = ("e2_dominance_take", "e2_dominance_says")
READINGS = ("dominant direction", "towards isometry", "neither")


def dominance_take(rows: dict[str, dict]) -> str:
    """The first sentence of the figure's caption (``e2_dominance_take``): how many models each of the rule's
    readings got (``rows``: ``{model: readings.dominance(report)}``).

    >>> dominance_take({"a": {"reading": "dominant direction"}, "b": {"reading": "neither"}})
    'The registered rule reads a dominant direction in 1 of 2 models (a), a move towards isometry in no model.'
    """
    models = list(rows)
    dom = [m for m in models if rows[m]["reading"] == "dominant direction"]
    iso = [m for m in models if rows[m]["reading"] == "towards isometry"]
    return (f"The registered rule reads a dominant direction in {who(dom, models)}, a move towards isometry in "
            f"{who(iso, models)}.")


def _against(row: dict) -> str:
    """Where the heads' dominance lies against each head null, by the rule's Holm-corrected one-sided p-values.

    >>> row = {"nulls": {"Gaussian heads": 0.1, "rotated heads": 0.2}, "p_above": [0.01, 0.5], "p_below": [1, 0.6]}
    >>> _against(row).split(", ")
    ['above the Gaussian heads (p = 0.010)', 'neither above nor below the rotated heads (p = 0.500 for above)']
    """
    parts = []
    for name, up, down in zip(row["nulls"], row["p_above"], row["p_below"]):
        if flag(up):
            parts.append(f"above the {name} ({pvalue(up)})")
        elif flag(down):
            parts.append(f"below the {name} ({pvalue(down)})")
        else:
            parts.append(f"neither above nor below the {name} ({pvalue(up)} for above)")
    return ", ".join(parts)


def dominance_says(reports: list[dict], rows: dict[str, dict], e2_rows: list[dict]) -> str:
    """``e2_dominance_says``: per model, the heads' spectral dominance against the Gaussian and rotated heads and
    an isometry's ``1/d_h``, the states' late-third alignment with each layer's top ``W_O W_V`` direction against
    random init, the rule's reading (``rows``: ``{model: readings.dominance(report)}``) and E2's verdict beside it
    (``e2_rows``: the scorecard's rows)."""
    e2 = registered(e2_rows)
    lines = []
    for r in reports:
        m, row = r["model"], rows[r["model"]]
        verdict = f"; E2's verdict: *{e2[m]['verdict']}*" if m in e2 else ""
        if "nulls" not in row:
            lines.append(f"- **{m}**: the rule gives *{row['reading']}*{verdict}.")
            continue
        g, rot = row["nulls"]["Gaussian heads"], row["nulls"]["rotated heads"]
        seeds = row["alignment_seeds"]
        lines.append(
            f"- **{m}**: the heads' dominance is {row['dominance']:.3f} on average, against {g:.3f} for Gaussian heads "
            f"of the same shape, {rot:.3f} for the same heads with their factors rotated, and 1/d_h = "
            f"{1 / r['head_dim']:.3f} for a scaled isometry: {_against(row)}, Holm-corrected. Over the last third of the layers the "
            f"states' alignment with the layer's top direction is {row['alignment']:.3f}, against "
            f"{span(seeds, '{:.3f}')} at random init ({len(seeds)} seeds; {pvalue(row['p_alignment'])}): "
            f"reading *{row['reading']}*{verdict}.")
    return "\n".join(lines)


def dominance_paragraphs(reports: list[dict], rows: dict[str, dict], e2_rows: list[dict]) -> dict[str, str]:
    """The section's glued texts, ``{key: markdown}`` (:data:`DOMINANCE_KEYS`)."""
    return {"e2_dominance_take": dominance_take(rows), "e2_dominance_says": dominance_says(reports, rows, e2_rows)}


def dominance_figure(reports: list[dict], n_boot: int = 1000):
    """One column per model: each layer's head dominance (mean over heads) against the Gaussian and rotated heads
    (top), and the states' alignment with the layer's top ``W_O W_V`` direction against the random-init seeds and a
    random direction (bottom). Returns the figure."""
    from .. import plots

    seeds = [("state_alignment", c, "random init" if i == 0 else f"_{c}", plots.STYLE["random0"])
             for i, c in enumerate(random_nulls(reports[0]))]
    return plots.curve_grid(reports, [
        [("head_dominance", "trained", "trained", plots.STYLE["trained"]),
         ("head_dominance_gaussian", "trained", "Gaussian heads", dict(color="C3", ls="--")),
         ("head_dominance_rotation", "trained", "rotated heads", dict(color="C2", ls="-."))],
        [("state_alignment", "trained", "trained", plots.STYLE["trained"]), *seeds,
         ("state_alignment_random", "trained", "random direction", dict(color="C1", ls=":"))]],
        ylabels=["head dominance", "alignment"], n_boot=n_boot)
