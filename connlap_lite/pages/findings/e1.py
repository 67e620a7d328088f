"""*E1: stability*, in words: the chapter's computed paragraphs, from its reports and the rule's rows.

:func:`paragraphs` returns every glued text of the chapter's E1 rule (:data:`KEYS`), :func:`report_paragraphs`
those that read only the models' reports and the rule's rows; each of the other functions writes one of them and
can be called alone. Verdict words are read from the rows (:mod:`connlap_lite.verdicts.rules`'s rules), never chosen here.
The section on the rival reading "layers that write little" has its own texts (:data:`WRITE_KEYS`,
:func:`write_paragraphs`, from :func:`connlap_lite.verdicts.readings.where_it_matters`) and figure (:func:`write_figure`).

Chapter: *E1*.
"""
from __future__ import annotations

import math

import numpy as np

from ...verdicts import rules as R
from ..prose import count, names, pvalue, span, who
from ...verdicts.record import SEP_METRICS, depth_trend, late_value, layer_means, random_nulls, third
from ...verdicts.history import e1_rule1, e1_table_rule2, e1_table_rule3, in_force
from ...verdicts.scorecard import direction
from ..boxes import per_model, verdict_box
from ...verdicts.words import ALPHA, MIN_PASSAGES, MIN_SEEDS

GRAPH = ("tv", "tv_norm", "spec", "cross", "rev")
METRICS = GRAPH + tuple(g + "_nosink" for g in GRAPH)        # the ten metrics that get a verdict
PROFILE = ("tv_norm_nosink", *SEP_METRICS)   # the separation profile: layer l against l + 1, ..., l + 4
WALK_KEYS = ("tv", "tv_norm", "rev", "tv_nosink", "tv_norm_nosink", "rev_nosink", "sink")
NEAR = 0.05          # a null "stays near U" when every layer's walk is within this distance of the uniform walk
KEYS = ("e1_summary", "e1_main_take", "e1_verdict", "e1_sizes", "e1_sinks_take", "e1_tv_take", "e1_tv_raw_take",
        "e1_nulls_take", "e1_profile_take", "e1_input_take", "e1_spec_take", "e1_cross_take", "e1_rev_take",
        "e1_diag_says", "e1_tv_says", "e1_decoder_says", "e1_nulls_says", "e1_input_says", "e1_spec_says", "e1_rev_says", "e1_says",
        "e1_structures_says", "e1_q4_says", "e1_long_says")
SINK_FACTOR = 3      # "training makes the sinks": the late sink mass above this many times every seed's largest


# ----------------------------------------------------------------------- reading (report's rules only)
DECIDED = ("holds", "partly", "does not hold", "inconclusive")   # the verdicts that read the conditions' flags


def label(row: dict) -> str:
    """The row's verdict, with the conditions met where it is *partly*. Under rule 4 (a row with ``rule`` 4: three
    conditions) the conditions met are named: ``'partly (falls)'``, ``'partly (stable, level)'``. Under rule 3 the first condition is depth-specific: ``'partly (depth)'``; under the earlier rules it
    was a trend: ``'partly (trend)'``; the second is ``'partly (level)'`` under rules 1 to 3.

    >>> label({"verdict": "partly", "falls": False, "below_nulls": True, "rule": 3})
    'partly (level)'
    >>> label({"verdict": "partly", "falls": True, "below_nulls": False, "rule": 3})
    'partly (depth)'
    >>> label({"verdict": "insufficient data", "falls": True, "below_nulls": True, "rule": 3})
    'insufficient data'

    Under rule 4 (three conditions) a partly names those met:

    >>> label({"verdict": "partly", "falls": False, "stable": True, "below_nulls": True, "rule": 4})
    'partly (stable, level)'
    """
    if row.get("rule", 0) >= 4:
        met = [w for w, key in (("falls", "falls"), ("stable", "stable"), ("level", "below_nulls")) if row.get(key)]
        return row["verdict"] + (f" ({', '.join(met)})" if row["verdict"] == "partly" and met else "")
    below = row.get("below_nulls", row.get("below_null"))
    if row["verdict"] != "partly" or row.get("falls") == below:
        return row["verdict"]
    first = " (depth)" if row.get("rule", 0) >= 3 else " (trend)"
    return row["verdict"] + (first if row.get("falls") else " (level)")


def decided(row: dict) -> bool:
    """Whether the rule gave ``row`` a verdict that reads its conditions (not insufficient data, not undefined)."""
    return row["verdict"] in DECIDED


def passage_null(row: dict) -> str:
    """The row's strongest passage-level null over the last third (shuffled, cross-passage, positional)."""
    names_ = [n for n in row["late_nulls"] if not n.startswith("random")]
    return min(names_, key=lambda n: row["late_nulls"][n])


def shares(rows) -> list[str]:
    """The models whose row finds consecutive layers below every passage-level null at every step
    (``shares_structure``, Holm-corrected across the table)."""
    return [x["model"] for x in rows if x.get("shares_structure")]


def _late(rep, metric, cond="trained") -> float:
    return float(late_value(rep, metric, cond).mean())


def _rho(rep, metric, cond="trained") -> float:
    return depth_trend(rep, metric, cond)[0]


def _falls(rep, metric) -> bool:
    """The curve falls with depth, reading its layer means as independent points (a description, not the rule)."""
    rho, p = depth_trend(rep, metric)
    return rho < 0 and p < ALPHA


def _models(reports) -> list[str]:
    return [r["model"] for r in reports]


def _decoders(reports) -> list[str]:
    return [r["model"] for r in reports if not r["encoder"]]


def registered(rows: list[dict]) -> dict[str, dict]:
    """``{model: row}``: each model's E1 row of the scorecard ``rows`` (the registered metric)."""
    return {x["model"]: x for r in rows if r["claim"] == "E1" for x in r["per_model"]}


def ten_metrics(reports: list[dict], rows: list[dict]) -> dict[tuple[str, str], dict]:
    """The rule on all ten graph metrics: ``{(model, metric): row}``. The registered metric's rows are the
    scorecard's (its table: a structure's models); the nine others form one Holm family per structure."""
    grid = {}
    for is_encoder in (True, False):
        group = [r for r in reports if r["encoder"] == is_encoder]
        if group:
            for row in R.e1_table(group, [k for k in METRICS if k != R.E1_METRIC]):
                grid[row["model"], row["metric"]] = row
    for m, row in registered(rows).items():
        grid[m, R.E1_METRIC] = row
    return grid


def sink_made(report: dict) -> bool | None:
    """Whether the trained late sink mass exceeds :data:`SINK_FACTOR` times the largest per-layer sink mass of any
    random-init seed, all measured on the same columns (the trained model's, ``sink_mass_columns``); None where
    the seeds' mass is 0 in every layer (no column measured: a comparison with 0 cannot fail, so none is made)."""
    top = max(layer_means(report, "sink", c).max() for c in random_nulls(report))
    return None if not top > 0 else bool(_late(report, "sink") > SINK_FACTOR * top)


def columns_of(reports: list[dict]) -> str:
    """Each report's sink columns, on which its sink mass is measured: 'enc column 0; dec columns 0 and 1' (token
    positions from 0), or 'none'."""
    def cols(r):
        c = [str(i) for i in r.get("sink_mass_columns", [])]
        return "no column" if not c else f"column{'s' * (len(c) > 1)} {names(c)}"
    return "; ".join(f"{r['model']} {cols(r)}" for r in reports)


def near_uniform(reports: list[dict]) -> list[str]:
    """The models whose random-init walks stay within :data:`NEAR` of the uniform walk in every layer."""
    return [r["model"] for r in reports
            if max(layer_means(r, "uniform_dist", c).max() for c in random_nulls(r)) < NEAR]


# ----------------------------------------------------------------------- the paragraphs
def against_rule3(reports: list[dict], rows: list[dict]) -> str:
    """Which way the change from rule 3 to the rule in force moved E1's registered verdicts on these measurements,
    computed (rule 3 applied again, one table per structure as it was): a sentence naming each move."""
    old = {}
    for is_encoder in (True, False):
        group = [r for r in reports if r["encoder"] == is_encoder]
        if group:
            old.update({x["model"]: x["verdict"] for x in e1_table_rule3(group)})
    now = {x["model"]: x["verdict"] for r in rows if r["claim"] == "E1" for x in r["per_model"]}
    pairs = [(old[m], now[m]) for m in now if m in old]
    moved = [f"{m} {old[m]} -> {now[m]}" for m in now if m in old and old[m] != now[m]]
    return (f"On these measurements the change from rule 3 moved the verdicts {direction(pairs)}"
            .replace("moved the verdicts no verdict moved", "moved no verdict")
            + (f": {'; '.join(moved)}." if moved else "."))


def summary(reports: list[dict], rows: list[dict]) -> str:
    """The chapter's opening in a few plain sentences: the reading judged (convergence: the distance between
    consecutive layers falls with depth, the deep layers stay alike, and the late layers are closer than every
    null), in which models each of its three conditions is met, what the distance does on the models where it
    rises, with its numbers, and the verdict of the rule in force per model (the verdict grid's words)."""
    reg = registered(rows)
    models = _models(reports)
    ok = [m for m in models if decided(reg[m]) or reg[m]["verdict"] == "inconclusive"]
    short = [m for m in models if m not in ok]
    falls = [m for m in ok if reg[m].get("falls")]
    stable = [m for m in ok if reg[m].get("stable")]
    below = [m for m in ok if reg[m].get("below_nulls")]
    n_dec = len(_decoders(reports))
    n_enc = len(models) - n_dec
    text = (f"E1 is read here as the paper words it, convergence: on {count(len(models), 'small pretrained model')} ({n_enc} "
            f"encoder{'s' * (n_enc != 1)}, {n_dec} decoder{'s' * (n_dec != 1)}), the distance between consecutive "
            f"layers' attention (attention sinks set aside) falls from the first third of the layers to the last in "
            f"{who(falls, ok, listed=False)}; the deep layers stay alike (layers further apart hardly differ more) in "
            f"{who(stable, ok, listed=False)}; and the late layers are closer to the next layer's than any null makes "
            f"them in {who(below, ok, listed=False)}.")
    rises = [m for m in ok if reg[m]["trained_rise_interval"][0] > 0]
    if rises:
        text += (" On " + names(rises) + " the distance between consecutive layers rises instead ("
                 + "; ".join(f"{m} {reg[m]['early_trained']:.2f} to {reg[m]['late_trained']:.2f}" for m in rises)
                 + "): their layers become less alike towards the output.")
    if short:
        text += (f" The rule gives no verdict on {names(short)} ("
                 + "; ".join(f"{m}: *{reg[m]['verdict']}*" for m in short) + ").")
    return (text + f" {in_force('E1')} gives {per_model(rows)}. {against_rule3(reports, rows)} Input "
            "independence and reversibility, the other readings, are reported beside it and decide nothing here.")


def decoder_finding(reports: list[dict], rows: list[dict]) -> str:
    """What E1 finds on the decoders, in plain words with its numbers ('' without decoders): per model, the
    sink-free distance between consecutive layers over the first and the last third of the layers beside its own
    strongest null made from the model itself (the margins the rule reads), whether that distance *rises* with
    depth while the margin grows only because the null rises faster, the late level against every null, and the
    structure shared at every depth."""
    reg = registered(rows)
    dec = [m for m in _decoders(reports) if decided(reg[m])]
    if not dec:
        return ""
    x = [reg[m] for m in dec]
    grows = [m for m in dec if reg[m]["late_margin"] > reg[m]["early_margin"]]
    # the distance rises (falls) where the bootstrap interval of late minus early lies above (below) 0
    rises = [m for m in dec if reg[m]["trained_rise_interval"][0] > 0]
    falls = [m for m in dec if reg[m]["trained_rise_interval"][1] < 0]
    outrun = [m for m in rises if m in grows]          # (margin growth = the null's rise minus the trained rise)
    share = shares(x)
    below = [m for m in dec if reg[m].get("below_nulls")]
    levels = "; ".join(
        f"{m} {r['early_trained']:.2f} over the first third of the layers and {r['late_trained']:.2f} over the last, "
        f"against {r['early_passage_null']:.2f} and {r['late_passage_null']:.2f} for its strongest null made from "
        f"the model itself (margin {r['early_margin']:+.3f} early, {r['late_margin']:+.3f} late)"
        for m, r in zip(dec, x))
    text = (f" On the decoders, the sink-free distance between consecutive layers is: {levels}. The margin is "
            f"larger late in {who(grows, dec, 'decoder')}; the advantage over shuffled text grows with depth "
            f"(a finding beside the verdict, not part of it) in "
            f"{who([m for m in dec if reg[m].get('advantage_grows', reg[m].get('deepens'))], dec, 'decoder')}.")
    if rises:
        text += (f" The distance itself *rises* with depth in {names(rises)} (the 95% interval of its last-third "
                 "minus first-third level lies above 0): there consecutive layers become less alike towards the "
                 "output, not more"
                 + (f", and in {names(outrun)} the margin grows only because the strongest null rises faster"
                    if outrun else "") + ".")
    if falls:
        text += f" In {names(falls)} it is lower over the last third than over the first (the interval below 0)."
    text += (f" Over the last third the distance lies below every null, the random-init seeds included, in "
             f"{who(below, dec, 'decoder')}; consecutive layers are below every null made from other passages or "
             f"shuffled text at every step in {who(share, dec, 'decoder')}.")
    if share and not any(reg[m].get("falls") for m in dec):
        text += (" What the decoders show is layer-to-layer similarity specific to the input, not a distance "
                 "that falls with depth.")
    elif outrun:
        text += (f" In {names(outrun)} a margin that grows over a rising distance is not the layers converging to a "
                 "stable operator.")
    return text


def takeaways(reports: list[dict], rows: list[dict]) -> dict[str, str]:
    """The first sentence of each figure's caption, computed: what the figure shows on this build's data."""
    from ..prose import sizes

    models, reg = _models(reports), registered(rows)
    rep = dict(zip(models, reports))
    seeds = {m: random_nulls(r) for m, r in rep.items()}
    made = {m: sink_made(rep[m]) for m in models}
    measured = [m for m in models if made[m] is not None]
    below_seeds = [m for m in models if _late(rep[m], "tv_norm") < min(_late(rep[m], "tv_norm", c) for c in seeds[m])]
    inner = [m for m in models if all(k in reg[m]["late_nulls"] for k in R.INNER_NULLS)]
    below_cross = [m for m in inner if reg[m]["late_trained"] < reg[m]["late_nulls"]["cross-passage"]]
    rising = [r["model"] for r in reports if len(p := separation_profile(r)) > 1
              and all(b > a for a, b in zip(p, p[1:]))]
    spec_rises = [m for m in models if _rho(rep[m], "spec_nosink") > 0]
    rev_ns_above = [m for m in models if _late(rep[m], "rev_nosink")
                    > max(_late(rep[m], "rev_nosink", c) for c in seeds[m])]
    rev_low = [m for m in models if _late(rep[m], "rev") < 0.5 * min(_late(rep[m], "rev", c) for c in seeds[m])]
    raw_below = [m for m in models if max(layer_means(rep[m], "tv", c).max() for c in seeds[m])
                 < layer_means(rep[m], "tv").min()]
    cross_above = [m for m in models if _late(rep[m], "cross") > max(_late(rep[m], "cross", c) for c in seeds[m])]
    has_input = [m for m in models if "input_dependence_nosink" in rep[m]["conditions"]["trained"]]
    falls_in = [m for m in has_input if input_falls(rep[m])]
    sinks_take = (f"On each trained model's sink columns, the late sink mass exceeds {SINK_FACTOR} times every "
                  f"random-init seed's largest in {who([m for m in measured if made[m]], measured)}."
                  if measured else "No sink column was found in any trained model, so no sink mass is compared.")
    return {
        "e1_main_take": (f"The distance falling from the first third of the layers to the last: "
                         f"{who([m for m in models if reg[m].get('falls')], models)}; "
                         f"the deep layers stable: {who([m for m in models if reg[m].get('stable')], models)}; "
                         f"the last third below every null: "
                         f"{who([m for m in models if reg[m].get('below_nulls')], models)}."),
        "e1_sizes": sizes(r["parameters"] for r in reports),
        "e1_sinks_take": sinks_take,
        "e1_tv_take": (f"Normalised, the trained late layers are closer to each other than every random-init "
                       f"seed's in {who(below_seeds, models)}."),
        "e1_tv_raw_take": (f"Raw, every random-init step lies below every trained step in {who(raw_below, models)}"
                           + (": near-uniform walks are close to each other whatever they do." if raw_below
                              else ".")),
        "e1_nulls_take": (f"Against the nulls made from the trained model itself, consecutive layers of one passage "
                          f"stay closer than a layer and the next layer of another passage in "
                          f"{who(below_cross, inner)}."),
        "e1_profile_take": (f"Layers further apart differ more, even in the deep layers, in {who(rising, models)}"
                            + (": there the deep walks keep changing rather than settling on one operator."
                               if rising else ".")),
        "e1_input_take": (f"How much a layer's walk depends on its passage is lower over the last third of the layers "
                          f"than over the first in {who(falls_in, has_input)}."),
        "e1_spec_take": f"The sink-free spectra change more from layer to layer with depth in {who(spec_rises, models)}.",
        "e1_cross_take": (f"Over the last third of the layers, the trained operators differ more from passage to "
                          f"passage than every random-init seed's in {who(cross_above, models)}."),
        "e1_rev_take": (f"Without their sinks, the late layers are less reversible than every random-init seed's "
                        f"in {who(rev_ns_above, models)}; with them, the late defect is below half of every seed's "
                        f"in {who(rev_low, models)}."),
    }


def diagnostics(reports: list[dict]) -> str:
    """Sink mass and distance from uniform, against the random-init seeds (``e1_diag_says``)."""
    models, decoders = _models(reports), _decoders(reports)
    rep = dict(zip(models, reports))
    sink = {m: layer_means(r, "sink") for m, r in rep.items()}
    made = {m: sink_made(rep[m]) for m in models}
    measured = [m for m in models if made[m] is not None]
    makes = [m for m in measured if made[m]]
    grows = [m for m in models if _late(rep[m], "sink") > sink[m][0]]
    peak = {m: float(sink[m].max()) for m in models}
    falls_back = [m for m in decoders if sink[m][-1] < 0.9 * peak[m]]
    shuffle_lower = [m for m in decoders if _late(rep[m], "sink", "shuffled") < _late(rep[m], "sink")]
    null_far = {m: max(layer_means(r, "uniform_dist", c).max() for c in random_nulls(r)) for m, r in rep.items()}
    near = near_uniform(reports)
    off = [m for m in models if m not in near]
    encoders = [m for m in models if m not in decoders]
    text = (f"**What the diagnostics say.** The sink mass is measured, in every condition, on the trained model's "
            f"sink columns (token positions counted from 0: {columns_of(reports)}), so a random-init walk, which has "
            "no sink of its own, is measured on the same tokens. ")
    if measured:
        text += (f"The mean over the last third of the layers is more than {SINK_FACTOR} times the largest value of "
                 f"any random-init seed in {who(makes, measured)}, and larger than in the first layer in "
                 f"{who(grows, models)}")
        text += (f". In {'every model' if len(makes) == len(models) else names(makes)} no random-init seed reaches "
                 f"1/{SINK_FACTOR} of it on the same tokens: training makes the sinks. " if makes else
                 ". By this measure no model's sinks come from training. ")
    if len(measured) < len(models):
        text += (f"In {names([m for m in models if m not in measured])} no sink column was found, so there is no sink "
                 "mass to compare with the seeds'. ")
    if decoders:
        text += (f"The decoders' peak sink mass is {span([peak[m] for m in decoders])}"
                 + (f" (the encoder's {span([peak[m] for m in encoders])})" if encoders else "")
                 + f", and towards the output it falls below 90% of its peak in "
                 f"{who(falls_back, decoders, 'decoder')}. On shuffled text the late layers put less mass on the "
                 f"sink than on real text in {who(shuffle_lower, decoders, 'decoder')}.")
    text += ("\n\n" + ("The lower row shows the pitfall that motivated `tv_norm`. " if near else "")
             + f"The random-init walks stay within {NEAR} of the uniform walk in every layer in {who(near, models)}, "
             f"while the trained walks' smallest distance from it is "
             f"{span([layer_means(rep[m], 'uniform_dist').min() for m in models])}.")
    if off:
        qk = [m for m in off if str(rep[m].get("family", "")).startswith("gemma3")]   # Gemma-3 normalises q and k
        text += (f" The exception{'s are' if len(off) > 1 else ' is'} "
                 + ", ".join(f"{m}, whose random-init walks are up to {null_far[m]:.2f} away" for m in off)
                 + ": a design difference"
                 + (f" (an RMS norm on queries and keys, Gemma-3's design, keeps random scores from being small in "
                    f"{names(qk)})" if qk else "")
                 + " that must not be read as an effect of scale ({ref}`e3-scale`).")
    return text


def distances(reports: list[dict]) -> str:
    """Raw and normalised distances between consecutive layers against the nulls (``e1_tv_says``)."""
    models = _models(reports)
    rep = dict(zip(models, reports))
    seeds = {m: random_nulls(r) for m, r in rep.items()}
    raw_null_falls = [m for m in models if all(_rho(rep[m], "tv", c) < 0 for c in seeds[m])]
    null_closer = [m for m in raw_null_falls if all(_rho(rep[m], "uniform_dist", c) < 0 for c in seeds[m])]
    null_tvn = [_late(rep[m], "tv_norm", c) for m in models for c in seeds[m]]
    late_tvn = {m: _late(rep[m], "tv_norm") for m in models}
    first = lambda m, k: float(layer_means(rep[m], k)[0])            # noqa: E731
    sink_carries = [m for m in models if late_tvn[m] / first(m, "tv_norm")
                    < _late(rep[m], "tv_norm_nosink") / first(m, "tv_norm_nosink")]
    real_steadier = [m for m in models if _late(rep[m], "tv_norm", "shuffled") > late_tvn[m]]
    raw_below = [m for m in models if max(layer_means(rep[m], "tv", c).max() for c in seeds[m])
                 < layer_means(rep[m], "tv").min()]
    raw_ratio = [_late(rep[m], "tv") / np.mean([_late(rep[m], "tv", c) for c in seeds[m]]) for m in models]
    below_seeds = [m for m in models if late_tvn[m] < min(_late(rep[m], "tv_norm", c) for c in seeds[m])]
    below_one = [m for m in models if late_tvn[m] < 1]
    text = (("The raw distance makes the pitfall visible. " if raw_below else "")
            + f"Every random-init step lies below every trained step in {who(raw_below, models)}; over the last "
            f"third of the layers the trained raw `tv` is {span(raw_ratio, '{:.1f}')} times the seeds' mean. The "
            f"raw `tv` of every random-init seed *falls* with depth in {who(raw_null_falls, models)}")
    if null_closer:
        text += (f", and in {'each of them' if null_closer == raw_null_falls else names(null_closer)} the seeds' "
                 "walks also come closer to $U$ with depth, so consecutive null walks get closer without any "
                 "training")
    text += f". Normalised, the seeds' `tv_norm` over the last third of the layers is {span(null_tvn)}, "
    text += ("near $\\sqrt 2 \\approx 1.41$, the value for small independent fluctuations around $U$ (third "
             "exercise)." if all(abs(v - math.sqrt(2)) < 0.15 for v in null_tvn) else
             "against $\\sqrt 2 \\approx 1.41$ for small independent fluctuations around $U$ and about 1 for large "
             "ones (third exercise).")
    text += (f"\n\nThe trained models' late `tv_norm` is {span(late_tvn.values())}, below every random-init seed's "
             f"in {who(below_seeds, models)} and below 1 in {who(below_one, models)}"
             + (": there, consecutive late layers are on average closer to each other than to uniform attention. "
                if below_one else ". ")
             + "The curve falls with depth (Spearman's $\\rho < 0$ with $p < 0.05$, reading the layer means as "
             f"independent points, which they are not) in {who([m for m in models if _falls(rep[m], 'tv_norm')], models)}; "
             f"with the sinks removed, in {who([m for m in models if _falls(rep[m], 'tv_norm_nosink')], models)}. "
             f"In {who(sink_carries, models)} the relative drop from the first step to the last third is larger "
             "with the sinks than without them"
             + (", which is what a growing sink does: more and more of each row goes to the same column, so "
                "consecutive walks look alike." if sink_carries else ".")
             + f" Late layers are steadier on real text than on shuffled text (a higher shuffled `tv_norm`) in "
             f"{who(real_steadier, models)}.")
    return text


def separation_profile(report: dict) -> list[float]:
    """The deep part of the layer-separation profile: the late mean of each separation ``k = 1..4`` measured."""
    return [_late(report, k) for k in PROFILE if k in report["conditions"]["trained"]]


def stronger_nulls(reports: list[dict], rows: list[dict]) -> str:
    """The registered metric against the nulls inside the trained model, and the separation profile
    (``e1_nulls_says``)."""
    models, reg = _models(reports), registered(rows)
    inner = [m for m in models if all(k in reg[m]["late_nulls"] for k in R.INNER_NULLS)]
    within = {m: reg[m]["late_trained"] for m in models}
    seeds_late = [min(v for n, v in reg[m]["late_nulls"].items() if n.startswith("random")) for m in models]
    profile = {r["model"]: separation_profile(r) for r in reports}
    rising = [m for m in models if len(profile[m]) > 1 and all(b > a for a, b in zip(profile[m], profile[m][1:]))]
    cross = {m: reg[m]["late_nulls"]["cross-passage"] for m in inner}
    posit = {m: reg[m]["late_nulls"]["positional"] for m in inner}
    text = ("Over the last third of the layers, each model's trained `tv_norm_nosink` is, against its "
            + ("cross-passage, positional and " if inner else "") + "lowest random-init null: "
            + "; ".join(f"{m} {within[m]:.2f} against "
                        + (f"{cross[m]:.2f}, {posit[m]:.2f} and " if m in inner else "") + f"{low:.2f}"
                        for m, low in zip(models, seeds_late)) + ".")
    if inner:
        text += (f" Consecutive layers of one passage are closer than a layer and the next layer of another passage "
                 f"in {who([m for m in inner if within[m] < cross[m]], inner)}, and closer than the positional "
                 f"operator in {who([m for m in inner if within[m] < posit[m]], inner)}: where they are, "
                 "consecutive layers share structure that is specific to their input.")
        share = shares(reg[m] for m in inner if decided(reg[m]))
        text += (f" Tested at every step rather than on the last third (below every null made from other passages "
                 f"or shuffled text, paired passage bootstrap, Holm across the models), they do so at every depth in "
                 f"{who(share, inner)} (largest per-step $p$ after Holm: "
                 + "; ".join(f"{m} {reg[m]['p_share_holm']:.3g}" for m in inner) + ").")
    text += (" The strongest null (the lowest late value) is "
             + "; ".join(f"{m}: {reg[m]['strongest_null']}" for m in models) + ". "
             f"The deep part of the separation profile rises at every step of $k$ in {who(rising, models)} "
             "(last-third values for k = 1 to 4: "
             + "; ".join(f"{m} " + ", ".join(f"{v:.2f}" for v in profile[m]) for m in models) + ")")
    text += (". Where it rises, layers further apart differ more even in the deep layers, the signature of "
             "operators that keep changing with depth rather than settling on one." if rising else
             ". No model's profile rises at every step, so this test does not show the deep operators changing "
             "with depth.")
    return text


def _input_thirds(report: dict, cond: str = "trained") -> tuple[float, float]:
    """``input_dependence_nosink`` averaged over the first and over the last third of the layers."""
    y = layer_means(report, "input_dependence_nosink", cond)
    k = third(len(y))
    return float(y[:k].mean()), float(y[-k:].mean())


def input_falls(report: dict) -> bool:
    """Whether a layer's walk depends less on its passage over the last third of the layers than over the first."""
    early, late_ = _input_thirds(report)
    return late_ < early


def input_dependence(reports: list[dict]) -> str:
    """How much each layer's walk depends on its passage, against the shuffled passages and the random-init seeds
    (``e1_input_says``; the registered descriptive measure ``input_dependence_nosink``, no verdict)."""
    k = "input_dependence_nosink"
    rep = {r["model"]: r for r in reports if k in r["conditions"]["trained"]}
    if not rep:
        return "These reports do not measure how much a layer's walk depends on its passage."
    models = list(rep)
    trained = {m: _input_thirds(rep[m]) for m in models}
    shuffled = {m: _input_thirds(rep[m], "shuffled") for m in models if k in rep[m]["conditions"].get("shuffled", {})}
    seeds = {m: float(np.mean([_input_thirds(rep[m], c)[1] for c in random_nulls(rep[m])])) for m in models
             if random_nulls(rep[m]) and all(k in rep[m]["conditions"][c] for c in random_nulls(rep[m]))}
    falls = [m for m in models if input_falls(rep[m])]
    below_shuffled = [m for m in shuffled if trained[m][1] < shuffled[m][1]]
    below_seeds = [m for m in seeds if trained[m][1] < seeds[m]]
    text = ("**How much a layer's walk depends on its passage** (`input_dependence_nosink`, a descriptive measure "
            "registered beside the rule: each passage's sink-free walk against the mean walk of the other passages at "
            "the same layer, over its distance from the uniform walk; 0 if every passage gets the same walk). Over "
            "the first and the last third of the layers it is "
            + "; ".join(f"{m} {a:.2f} and {b:.2f}" for m, (a, b) in trained.items()))
    if shuffled:
        text += (" (on shuffled passages " + "; ".join(f"{m} {a:.2f} and {b:.2f}" for m, (a, b) in shuffled.items())
                 + ")")
    text += f". It is lower over the last third than over the first in {who(falls, models)}"
    text += (": there the deep layers' walks depend less on which passage they read, as reading 2 of the claim, "
             "stable across inputs, asks." if falls else ".")
    if shuffled:
        text += (f" Late, it is below its value on shuffled text in {who(below_shuffled, list(shuffled))}"
                 + (": real text makes the walks more alike across passages than shuffled tokens do." if below_shuffled
                    else "."))
    if seeds:
        text += (f" The random-init seeds' late value is {span(seeds.values())} (each seed's walks, divided by their "
                 f"own distance from the uniform walk); the trained value is below it in "
                 f"{who(below_seeds, list(seeds))}.")
    return text


def spectra(reports: list[dict]) -> str:
    """The spectral distance between consecutive layers (``e1_spec_says``)."""
    models = _models(reports)
    rep = dict(zip(models, reports))
    falls = [m for m in models if any(_falls(rep[m], k) for k in ("spec", "spec_nosink"))]
    rises = [m for m in models if _rho(rep[m], "spec_nosink") > 0]
    last_big = [m for m in models if all(layer_means(rep[m], k)[-1] > layer_means(rep[m], k)[0]
                                         for k in ("spec", "spec_nosink"))]
    return (f"The spectral distance between consecutive layers falls with depth ($\\rho < 0$, $p < 0.05$) in "
            f"{who(falls, models)} for `spec` or `spec_nosink`. The sink-removed spectra change *more* from layer "
            f"to layer as depth grows ($\\rho > 0$) in {who(rises, models)}, and the last step is larger than the "
            f"first, with and without sinks, in {who(last_big, models)}. Judged by the geometry of the undirected "
            "graph rather than by row-wise agreement, "
            + ("the operators do not settle in any model." if not falls else
               f"the operators settle in {who(falls, models)} only."))


def cross_and_reversibility(reports: list[dict]) -> str:
    """Cross-passage spectra and the reversibility defect, with and without sinks (``e1_rev_says``)."""
    from ...measure.stats import spearman

    models = _models(reports)
    rep = dict(zip(models, reports))
    null_level = lambda m, k: [_late(rep[m], k, c) for c in random_nulls(rep[m])]   # noqa: E731
    sink_rev = {m: spearman(layer_means(rep[m], "sink"), layer_means(rep[m], "rev"))[0] for m in models}
    cross_falls = [m for m in models if any(_falls(rep[m], k) for k in ("cross", "cross_nosink"))]
    cross_apart = [m for m in models if _rho(rep[m], "cross_nosink") > 0]
    cross_ratio = {m: _late(rep[m], "cross") / max(null_level(m, "cross")) for m in models}
    cross_above = [m for m in models if cross_ratio[m] > 1]
    near = [m for m in cross_above if m in near_uniform(reports)]
    rev_low = [m for m in models if _late(rep[m], "rev") < 0.5 * min(null_level(m, "rev"))]
    rev_ns_above = [m for m in models if _late(rep[m], "rev_nosink") > max(null_level(m, "rev_nosink"))]
    text = (f"**Across passages** (`cross`), the layer operators become more alike with depth ($\\rho < 0$, "
            f"$p < 0.05$) in {who(cross_falls, models)}, and the sink-removed spectra of different passages drift "
            f"*apart* in deeper layers ($\\rho > 0$ for `cross_nosink`) in {who(cross_apart, models)}. Over the "
            f"last third of the layers the trained `cross` is above every random-init seed's in "
            f"{who(cross_above, models)} ({span(cross_ratio.values(), '{:.1f}')} times the highest seed's)")
    text += (f". In {'every model' if len(near) == len(models) else names(near)} the random-init walks stay near "
             "$U$, and walks near $U$ have spectra near $U$'s whatever the passage, so that null is small by "
             "construction.\n\n" if near else ".\n\n")
    text += ("**Reversibility** shows most clearly how sinks can fake the claim. When every row puts most of its "
             "mass on token 1, the walk is close to the rank-one chain $\\mathbf 1 \\pi^\\top$, whose rows are all "
             "equal; such a chain is exactly reversible, since $\\pi_i \\pi_j = \\pi_j \\pi_i$, so a growing sink "
             "drives `rev` towards zero whatever the other tokens do. With sinks, the late `rev` is below half of "
             f"every random-init seed's in {who(rev_low, models)}; across the layers `rev` and the sink mass move "
             f"in near-perfect opposition (Spearman $\\rho < -0.8$) in "
             f"{who([m for m in models if sink_rev[m] < -0.8], models)}; and `rev` falls significantly with depth "
             f"in {who([m for m in models if _falls(rep[m], 'rev')], models)}. Remove the sinks and `rev_nosink` "
             f"falls significantly in {who([m for m in models if _falls(rep[m], 'rev_nosink')], models)}, while "
             f"its late layers are *less* reversible than every random-init seed's walks in "
             f"{who(rev_ns_above, models)}.")
    return text


def _by_metric(verdicts: dict, models: list[str], word: str) -> str:
    """'`tv_norm` in every model; `rev` in a, b': the metrics whose verdict is ``word``, with their models."""
    out = []
    for k in METRICS:
        ms = [m for m in models if verdicts[m, k] == word]
        if ms:
            out.append(f"`{k}` in " + ("every model" if len(ms) == len(models) else ", ".join(ms)))
    return "; ".join(out)


def rule1_labels(reports: list[dict]) -> dict[tuple[str, str], str]:
    """The first rule's verdicts (replaced 2026-11-30) on the ten metrics, for the record: ``{(model, metric):
    label}``."""
    return {(r["model"], k): label(e1_rule1(r, k)) for r in reports for k in METRICS}


def _table_labels(reports: list[dict], table) -> dict[tuple[str, str], str]:
    """A table rule's verdicts on the ten metrics, one Holm family per structure: ``{(model, metric): label}``."""
    out = {}
    for is_encoder in (True, False):
        group = [r for r in reports if r["encoder"] == is_encoder]
        if group:
            out.update({(row["model"], row["metric"]): label(row) for row in table(group, list(METRICS))})
    return out


def rule2_labels(reports: list[dict]) -> dict[tuple[str, str], str]:
    """Rule 2's verdicts (registered 2026-11-30, replaced 2026-12-01) on the ten metrics, one Holm family per
    structure as it was registered: ``{(model, metric): label}``."""
    return _table_labels(reports, e1_table_rule2)


def rule3_labels(reports: list[dict]) -> dict[tuple[str, str], str]:
    """Rule 3's verdicts (registered 2026-12-01, replaced 2026-12-04) on the ten metrics, one Holm family per
    structure as it was applied: ``{(model, metric): label}``."""
    return _table_labels(reports, e1_table_rule3)


def verdicts(reports: list[dict], rows: list[dict], grid: dict) -> str:
    """Where the rule holds, partly holds and does not, on the ten metrics, and against rules 2 and 1
    (``e1_says``)."""
    models, decoders = _models(reports), _decoders(reports)
    now = {key: label(row) for key, row in grid.items()}
    old = rule1_labels(reports)
    words = sorted(set(now.values()), key=list(now.values()).index)
    total = len(now)
    holds = [key for key, row in grid.items() if row["verdict"] == "holds"]
    text = (f"**Where E1 holds.** Under the rule, E1 holds for {len(holds)} of {total} model-metric pairs"
            + (f": {_by_metric(now, models, 'holds')}." if holds else "."))
    partial = [w for w in words if w.startswith("partly")]
    reg = registered(rows)
    text += ("\n\n**Where it partly holds.** "
             + " ".join(f"*{w}*: {sum(v == w for v in now.values())} pairs ({_by_metric(now, models, w)})."
                        for w in partial)
             + ("No pair partly holds." if not partial else "")
             + " The registered metric `tv_norm_nosink` sits over the last third of the layers at "
             + "; ".join(f"{m} {x['late_trained']:.3f} against {x['late_nulls'][x['strongest_null']]:.3f} for its "
                         f"strongest null ({x['strongest_null']})" for m, x in reg.items()) + ".")
    fail = [key for key, row in grid.items() if row["verdict"] == "does not hold"]
    never = [k for k in METRICS if all((m, k) in fail for m in models)]
    wrong = [(m, k) for m in decoders for k in never if k.endswith("_nosink")
             and grid[m, k]["late_margin"] < grid[m, k]["early_margin"]]
    dec_curves = [(m, k) for m in decoders for k in never if k.endswith("_nosink")]
    text += (f"\n\n**Where it does not.** {len(fail)} pairs neither fall with depth nor stay stable in the deep "
             "layers; "
             + (f"{', '.join(f'`{k}`' for k in never)} fail{'s' if len(never) == 1 else ''} both in every model. "
                if never else "no metric fails both in every model. ")
             + (f"In the decoders, the margin below the strongest null from the model itself *shrinks* from the "
                f"first third of the layers to the last in {len(wrong)} of these {len(dec_curves)} sink-free curves."
                if dec_curves else ""))
    other = [key for key, row in grid.items() if not decided(row)]
    if other:
        text += (f"\n\n**Where the rule gives no verdict.** {len(other)} pairs: "
                 + ", ".join(f"{m} `{k}` ({now[m, k]})" for m, k in other) + ".")
    before = rule2_labels(reports)
    for name, old_labels in (("rule 3", rule3_labels(reports)), ("rule 2", before), ("the first rule", old)):
        differ = [key for key in now if old_labels[key] != now[key]]
        text += (f"\n\n**Against {name}.** {len(differ)} of {total} verdicts differ"
                 + (": " + ", ".join(f"{m} `{k}` ({old_labels[m, k]} -> {now[m, k]})" for m, k in differ) + "."
                    if differ else "."))
    return text


def structures(reports: list[dict]) -> str:
    """The encoder against the decoders: sinks, points per curve, shuffled text (``e1_structures_says``)."""
    models, decoders = _models(reports), _decoders(reports)
    rep = dict(zip(models, reports))
    encoders = [m for m in models if m not in decoders]
    # each walk-level curve on shuffled passages relative to real text, over the keys with a nonzero real-text value
    # (a model with no sink column has a sink mass of 0, as Qwen-0.5B has without a BOS token)
    gap = {m: max((abs(_late(rep[m], k, "shuffled") / _late(rep[m], k) - 1) for k in WALK_KEYS if _late(rep[m], k)),
                  default=math.nan) for m in models}
    text = ""
    if decoders:
        peak = [float(layer_means(rep[m], "sink").max()) for m in decoders]
        carries = [m for m in decoders if _late(rep[m], "tv_norm") / layer_means(rep[m], "tv_norm")[0]
                   < _late(rep[m], "tv_norm_nosink") / layer_means(rep[m], "tv_norm_nosink")[0]]
        text += (f"In the decoders, the detected sink takes {span(peak)} of the attention at its peak; the "
                 f"sink-inclusive `tv_norm` falls further than the sink-free one in "
                 f"{who(carries, decoders, 'decoder')}; and the sink-free spectra change more with depth in "
                 f"{who([m for m in decoders if _rho(rep[m], 'spec_nosink') > 0], decoders, 'decoder')}. ")
    for m in encoders:
        text += (f"{m} has {rep[m]['layers'] - 1} layer-to-layer points, so each third of its curve is "
                 f"{-(-(rep[m]['layers'] - 1) // 3)} of them; its walk-level curves on shuffled passages are within "
                 f"{gap[m]:.0%} of those "
                 "on real text (last-third means of " + ", ".join(f"`{k}`" for k in WALK_KEYS) + ")"
                 + (", so whatever stability its attention graphs have does not depend on word order. "
                    if gap[m] < 0.1 else ". "))
    if decoders:
        text += f"In the decoders the same gap reaches {span([gap[m] for m in decoders], '{:.0%}')}."
    return text.strip()


def quantisation(report: dict, q4: dict, q4_grid: dict, grid: dict) -> str:
    """A 4-bit round trip of the one float model: how far it moves the curves and whether it moves a verdict
    (``e1_q4_says``; ``q4_grid``: ``{metric: row}`` with the Q4 model in the trained model's place)."""
    m = report["model"]
    shift = {k: float(np.abs(layer_means(q4, k) - layer_means(report, k)).max()
                      / np.abs(layer_means(report, k)).max()) for k in METRICS}
    def before(k):           # the rule's word before the round trip's check (scorecard.same_after)
        moved = grid[m, k].get("moved", {})
        return next(iter(moved.values()))[0] if moved else label(grid[m, k])
    changed = [k for k in METRICS if label(q4_grid[k]) != before(k)]
    gated = [k for k in changed if grid[m, k]["verdict"] == "inconclusive" and grid[m, k].get("moved")]
    return (f"The 4-bit round trip moves {m}'s curves by at most {span(shift.values(), '{:.0%}')} of each curve's "
            "largest value (metric by metric), and changes "
            + (f"{len(changed)} of its {len(METRICS)} words: "
               + ", ".join(f"`{k}` ({before(k)} -> {label(q4_grid[k])})" for k in changed) if changed
               else f"none of its {len(METRICS)} words") + "."
            + (f" A word that the round trip changes does not stand: {names([f'`{k}`' for k in gated])} "
               f"{'is' if len(gated) == 1 else 'are'} registered as *inconclusive* for {m}." if gated else ""))


def long_context(short: dict, long: dict, layer_types: list[str], short_row: dict, long_row: dict,
                 full: bool) -> str:
    """Gemma-3 on passages longer than its sliding window, against the short passages (``e1_long_says``)."""
    local = [i for i, k in enumerate(layer_types) if k == "sliding_attention"]
    glob = [i for i, k in enumerate(layer_types) if k != "sliding_attention"]
    if not local or not glob:
        raise ValueError("layer_types must name both sliding_attention and full-attention layers, got "
                         f"{sorted(set(layer_types))}")
    mean = lambda rep, k, ls: float(np.mean(layer_means(rep, k)[ls]))     # noqa: E731
    d = {name: mean(long, "uniform_dist", ls) - mean(short, "uniform_dist", ls)
         for name, ls in (("local", local), ("global", glob))}
    sink = {name: (mean(short, "sink", ls), mean(long, "sink", ls)) for name, ls in (("local", local), ("global", glob))}
    null = long_row["strongest_null"]
    text = (f"At {long['tokens']} tokens ({long['passages']} passages) the rule gives *{label(long_row)}* for "
            f"Gemma-3, against *{label(short_row)}* at {short['tokens']} tokens; the late `tv_norm_nosink` is "
            f"{long_row['late_trained']:.2f} (strongest null: {null}, {long_row['late_nulls'][null]:.2f}) against "
            f"{short_row['late_trained']:.2f}. Going from {short['tokens']} to {long['tokens']} tokens moves the "
            f"walks' distance from the uniform walk by {d['local']:+.3f} in the {len(local)} local layers and by "
            f"{d['global']:+.3f} in the {len(glob)} global ones, and the sink mass from {sink['local'][0]:.2f} to "
            f"{sink['local'][1]:.2f} (local) and from {sink['global'][0]:.2f} to {sink['global'][1]:.2f} (global).")
    took = long.get("condition_seconds", {})
    seeds = [took[c] for c in random_nulls(long) if c in took]
    if seeds and "trained" in took:
        text += (f" Each random-init seed's measurement took {span(seeds, '{:.0f}')} s here, against "
                 f"{took['trained']:.0f} s for the trained model's.")
    if long_row["verdict"] == "insufficient data":
        n_seeds, n_pass = len(random_nulls(long)), long["passages"]
        short = ([f"{n_pass} passage{'s' * (n_pass != 1)} (the rule needs {MIN_PASSAGES})"]
                 * (n_pass < MIN_PASSAGES)
                 + [f"{n_seeds} random-init seed{'s' * (n_seeds != 1)} (it needs {MIN_SEEDS})"]
                 * (n_seeds < MIN_SEEDS))
        text += (f" With {' and '.join(short) or 'too few layers'}, the rule gives no verdict: the numbers above "
                 "describe this measurement and decide nothing"
                 + ("; the full build's are the ones to read." if not full else "."))
    elif not full:
        text += " This build's sample is small; the full build's numbers are the ones to read."
    return text


def paragraphs(reports: list[dict], rows: list[dict], grid: dict, *, q4: tuple, long: tuple,
               full: bool = False) -> dict[str, str]:
    """Every glued text of the chapter, ``{key: markdown}`` (:data:`KEYS`).

    ``rows``: the scorecard's rows; ``grid``: :func:`ten_metrics`; ``q4``: ``(q4 report, {metric: row})`` for the
    float model; ``long``: ``(long report, layer types, its E1 row)`` for Gemma-3's long passages.
    """
    q4_report, q4_grid = q4
    long_report, layer_types, long_row = long
    encoder = next(r for r in reports if r["model"] == q4_report["model"])
    short = next(r for r in reports if r["model"] == long_report["model"])
    out = {**report_paragraphs(reports, rows, grid),
           "e1_q4_says": quantisation(encoder, q4_report, q4_grid, grid),
           "e1_long_says": long_context(short, long_report, layer_types, registered(rows)[short["model"]],
                                        long_row, full)}
    assert set(out) == set(KEYS)
    return {k: out[k] for k in KEYS}


# ----------------------------------------------------------------------- what the rule can see
def rule_power(power: dict, *, draws: int, passages: int) -> str:
    """What the rule in force says on synthetic records of this build's shape (``e1_power_says``), from ``power``
    (:func:`connlap_lite.verdicts.synthetic.e1_power` with ``draws`` draws of ``passages`` passages).

    >>> text = rule_power({"converges": {0.05: {"holds": 0.5, "inconclusive": 0.5}, 0.07: {"holds": 0.9,
    ...                   "inconclusive": 0.1}}, "nulls rise": {0.07: {"does not hold": 1.0}}}, draws=20, passages=8)
    >>> "by 0.07 in 90%" in text and "*inconclusive* in 50%" in text and "never said *does not hold*" in text
    True
    """
    conv, rise = power["converges"], power["nulls rise"]
    sizes = sorted(conv, reverse=True)
    share = lambda said, word: said.get(word, 0.0)            # noqa: E731
    held = [f"by {f:g} in {share(conv[f], 'holds'):.0%}" for f in sizes]
    weakest = min(sizes, key=lambda f: share(conv[f], "holds"))
    other = max((w for w in conv[weakest] if w != "holds"), key=lambda w: conv[weakest][w], default=None)
    refuted = max(share(s_, "does not hold") for s_ in conv.values())
    text = (f"On synthetic records of this build's shape ({passages} passages, 12 layers, five random-init seeds and "
            f"five shuffle permutations; `connlap_lite.verdicts.synthetic.e1_power`, {draws} draws each), the rule says "
            f"*holds* for a curve that falls and lies below every null by as much as it falls (the nulls falling as "
            f"fast) {', '.join(held)} of the draws")
    if other is not None and share(conv[weakest], "holds") < 1:
        text += f"; at a fall of {weakest:g} it says *{other}* in {conv[weakest][other]:.0%}"
    text += (". It " + ("never said *does not hold*" if refuted == 0 else
                        f"said *does not hold* in at most {refuted:.0%}") + " of these converging curves. ")
    text += " ".join(f"For a flat curve under nulls that rise by {r:g} it says *holds* in {share(said, 'holds'):.0%}."
                     for r, said in sorted(rise.items()))
    if refuted <= ALPHA and min(share(s_, "holds") for s_ in conv.values()) < 0.8:
        text += (" So at this sample a small convergence is more often left *inconclusive* than called *does not "
                 "hold*: a *does not hold* below is a finding, an *inconclusive* may be a fall too small to see.")
    return text


# ----------------------------------------------------------------------- the exercises' solutions
def exercise_two(d_causal: list[float], d_full: list[float], report: dict, n: int) -> str:
    """The second exercise's paragraph (``e1_ex2_says``): a small random-init decoder's walks against the
    causal-uniform walk ``d_causal`` and the uniform walk ``d_full`` (one value per layer), beside the report's
    random-init seed 0 and trained model (``uniform_dist``), on ``n`` tokens."""
    null, trained = layer_means(report, "uniform_dist", "random0"), layer_means(report, "uniform_dist")
    gap = (n - 1) / (2 * n)
    closer = float(trained.min()) / max(d_causal)
    return (f"In part 2, the walks of the random {len(d_causal)}-layer decoder are {span(d_causal, '{:.3f}')} from "
            f"$U^{{c}}$, and those of the report's {report['layers']}-layer random-init {report['model']} (seed 0) "
            f"{span(null, '{:.3f}')}; the trained model's are {span(trained)}"
            + (f", so even its layer closest to $U^{{c}}$ is {closer:.1f} times as far from it as the farthest layer "
               "of the small random decoder. " if closer > 1 else
               ", so some layer of the trained model is as close to $U^{c}$ as the farthest layer of the small random "
               "decoder. ")
            + f"The small decoder's distance from $U$ is {span(d_full, '{:.3f}')}, within $d(P, U^{{c}})$ of "
            f"$\\frac{{n-1}}{{2n}} = {gap:.3f}$ ($n = {n}$), as the triangle inequality requires.")


def tv_norm_levels(reports: list[dict], seeds=("random0", "random1")) -> tuple[dict, dict]:
    """The late ``tv_norm`` per model: the mean over ``seeds`` of each random-init seed's, and the trained model's
    (each the mean over passages of the last-third average, :func:`connlap_lite.verdicts.record.late_value`)."""
    null = {r["model"]: float(np.mean([_late(r, "tv_norm", c) for c in seeds])) for r in reports}
    return null, {r["model"]: _late(r, "tv_norm") for r in reports}


def exercise_three(toy: dict, reports: list[dict], seeds=("random0", "random1")) -> str:
    """The third exercise's paragraph (``e1_ex3_says``): ``toy`` ``{(causal, scale): tv_norm}`` of independent
    softmax walks, beside the reports' late ``tv_norm`` (:func:`tv_norm_levels`)."""
    scales = sorted({s for _, s in toy})
    models = _models(reports)
    null, trained = tv_norm_levels(reports, seeds)
    falls = all(toy[c, a] > toy[c, b] for c in (False, True) for a, b in zip(scales, scales[1:]))
    near_sqrt2 = [m for m in models if abs(null[m] - math.sqrt(2)) < 0.15]
    at_least_one = [m for m in models if null[m] >= 1]
    not_uniform = [m for m in near_sqrt2 if m not in near_uniform(reports)]
    lo, hi = scales[0], scales[-1]
    return (f"In part 3, the toy ratio is {toy[False, lo]:.3f} for full walks and {toy[True, lo]:.3f} for causal "
            f"ones at $\\sigma = {lo:g}$, against $\\sqrt 2 \\approx 1.414$, and {toy[False, hi]:.3f} and "
            f"{toy[True, hi]:.3f} at $\\sigma = {hi:g}$"
            + (": it falls as $\\sigma$ grows, towards 1, the value for walks that are nearly one-hot on unrelated "
               "tokens. " if falls else ". ")
            + f"The random-init nulls' late `tv_norm` (seeds {names(list(seeds))}, mean over the last third of the "
            "layers) is " + ", ".join(f"{m} {v:.2f}" for m, v in null.items())
            + f": within 0.15 of $\\sqrt 2$ in {who(near_sqrt2, models)}"
            + (f", including {names(not_uniform)}, whose random-init walks are more than {NEAR} from $U$ in some "
               "layer" if not_uniform else "")
            + f", and at least 1 in {who(at_least_one, models)}. The trained models' late `tv_norm` is "
            f"{span(trained.values())}, below 1 in {who([m for m in models if trained[m] < 1], models)}.")


def report_paragraphs(reports: list[dict], rows: list[dict], grid: dict) -> dict[str, str]:
    """The glued texts written from the models' reports and the rule's rows alone: every key of :data:`KEYS` but
    the quantisation's and the long passages' (which read measurements of their own). tools/same_numbers.py
    compares them across Pythons."""
    out = {"e1_summary": summary(reports, rows),
           "e1_verdict": verdict_box(rows, "E1", {f"{m}/{k}": label(row) for (m, k), row in grid.items()}),
           **takeaways(reports, rows),
           "e1_diag_says": diagnostics(reports), "e1_tv_says": distances(reports),
           "e1_decoder_says": (decoder_finding(reports, rows).strip()
                               or "No decoder has a verdict of the rule, so there is no decoder finding."),
           "e1_nulls_says": stronger_nulls(reports, rows), "e1_input_says": input_dependence(reports),
           "e1_spec_says": spectra(reports), "e1_rev_says": cross_and_reversibility(reports),
           "e1_says": verdicts(reports, rows, grid), "e1_structures_says": structures(reports)}
    return {k: out[k] for k in KEYS if k in out}


# ----------------------------------------------------------------------- the tables (plain text, for print)
def model_table(report: dict, grid: dict) -> str:
    """One model's ten metrics: first and last value, the margin below the strongest passage-level null over the
    first and the last third, the late mean, the strongest null, the Holm-corrected p-values of the rule's three
    conditions (falls, stable, below every null) and of the shared structure, and the verdict."""
    m = report["model"]
    lines = [f"{m}  ({report['layers']} layers)",
             f"  {'metric':<15}{'first':>7}{'last':>7}{'m early':>8}{'m late':>8}{'late':>7}"
             f"{'strongest null':>24}{'p(i)':>7}{'p(ii)':>7}{'p(iii)':>7}{'p(sh)':>7}  verdict"]
    for k in METRICS:
        y, row = layer_means(report, k), grid[m, k]
        null = row["strongest_null"]
        lines.append(f"  {k:<15}{y[0]:7.3f}{y[-1]:7.3f}{row['early_margin']:+8.3f}{row['late_margin']:+8.3f}"
                     f"{row['late_trained']:7.3f}{null + ' ' + format(row['late_nulls'][null], '.3f'):>24}"
                     f"{row['p_falls_holm']:7.3f}{row.get('p_stable_holm', math.nan):7.3f}{row['p_level_holm']:7.3f}"
                     f"{row['p_share_holm']:7.3f}  {label(row)}")
    return "\n".join(lines)


def rule_table(reports: list[dict], grid: dict) -> str:
    """The ten metrics' verdicts under rules 1, 2 and 3 and under the rule in force (4), one block per model."""
    old, before, third_ = rule1_labels(reports), rule2_labels(reports), rule3_labels(reports)
    lines = []
    for m in _models(reports):
        lines += [f"{m}", f"  {'metric':<16}{'rule 1':<18}{'rule 2':<18}{'rule 3':<18}rule 4"]
        lines += [f"  {k:<16}{old[m, k]:<18}{before[m, k]:<18}{third_[m, k]:<18}{label(grid[m, k])}"
                  for k in METRICS]
    return "\n".join(lines)


# ----------------------------------------------------------------------- the rival reading: layers that write little
# (rule "where_it_matters", connlap_lite.verdicts.readings, registered 2026-12-04; its words are the rule's, never chosen here)
WRITE_KEYS = ("e1_write_take", "e1_write_says")
_UNITS = {False: "of next-token loss", True: "mean relative change of the final representations"}


def _cost(report: dict, value: float) -> str:
    """An ablation cost in its unit: ``'0.05 nats'`` (a decoder's loss), ``'5%'`` (an encoder's relative change).

    >>> _cost({"encoder": False}, 0.0512), _cost({"encoder": True}, 0.0512)
    ('0.05 nats', '5%')
    """
    return f"{value:.0%}" if report.get("encoder") else f"{value:.2f} nats"


def _thirds(report: dict, metric: str, condition: str = "trained") -> tuple[float, float]:
    """The per-layer mean of ``metric`` averaged over the first and over the last third of the layers
    (:func:`connlap_lite.verdicts.record.third`)."""
    y = layer_means(report, metric, condition)
    k = third(len(y))
    return float(y[:k].mean()), float(y[-k:].mean())


def write_take(reports: list[dict]) -> str:
    """The first sentence of the figure's caption (``e1_write_take``): in how many models zero-ablating one layer's
    attention costs less, and its update ratio is smaller, over the last third of the layers than over the first."""
    models = _models(reports)
    cheaper = [r["model"] for r in reports if _thirds(r, "ablation_zero")[1] < _thirds(r, "ablation_zero")[0]]
    smaller = [r["model"] for r in reports if _thirds(r, "update_ratio")[1] < _thirds(r, "update_ratio")[0]]
    return (f"Zero-ablating one attention layer costs less over the last third of the layers than over the first in "
            f"{who(cheaper, models)}, and the attention update is smaller against the residual stream there in "
            f"{who(smaller, models)}.")


def _of(n: int, total: int, noun: str) -> str:
    """``'all 5 steps'``, ``'no step'``, ``'1 of the 23 steps'``.

    >>> _of(5, 5, "step"), _of(0, 5, "step"), _of(1, 23, "step"), _of(0, 0, "step")
    ('all 5 steps', 'no step', '1 of the 23 steps', 'no step')
    """
    if n == 0:
        return f"no {noun}"
    if n == total:
        return f"all {n} {noun}s" if n != 1 else f"the one {noun}"
    return f"{n} of the {total} {noun}s"


def _matters_sentence(report: dict, row: dict) -> str:
    """What the rule ``row`` (:func:`connlap_lite.verdicts.readings.where_it_matters`) says of E1 on the layers that matter
    and of the rival reading, in words, with the rule's own verdict words."""
    n, rest = len(row["steps"]), len(row["other_steps"])
    steps = _of(n, report["layers"] - 1, "step")
    steps = f"{steps[0].upper()}{steps[1:]} {'joins' if n <= 1 else 'join'} two layers that matter"
    if row["verdict"] == "not testable" and n < 2:
        return (f"{steps}, too few for the rule (it needs 2): E1 on the layers that matter is *not testable*, and "
                "so is the rival reading.")
    if row["verdict"] not in ("holds", "does not hold"):
        return f"{steps}; the rule gives *{row['verdict']}* on them, and *{row['reading']}* for the rival reading."
    text = (f"{steps}. There E1's margin (its strongest null made from the model itself minus the trained distance, "
            f"averaged over those steps) is {row['margin']:+.3f} (one-sided {pvalue(row['p'])}): E1 "
            f"*{row['verdict']}* on the layers that matter.")
    if row["reading"] == "not testable":
        few = "no step joins" if rest == 0 else f"only {rest} step{'s join' if rest != 1 else ' joins'}"
        return text + (f" As {few} a layer that does not matter (the rule needs 2), the rival reading is "
                       "*not testable*.")
    return text + (f" The rival reading, that E1's stable layers are the ones that write little, predicts a larger "
                   f"margin on the other {rest} steps; the rule finds it *{row['reading']}* ({pvalue(row['p_rival'])}, "
                   "Holm-corrected with the first).")


def write_little(reports: list[dict], rows: dict[str, dict]) -> str:
    """``e1_write_says``: per model, what zero-ablating one attention layer costs and how large the attention update
    is, early and late, and what the registered rule ``rows`` (``{model: readings.where_it_matters(report)}``) says:
    E1 on the layers that matter and the rival reading, in its own words; then the threshold, fixed before reading,
    and what the ablations cost to measure."""
    from ..prose import layers_of

    lines = []
    for r in reports:
        m, row = r["model"], rows[r["model"]]
        cost = layer_means(r, "ablation_zero")
        top = int(np.argmax(cost))
        (c0, c1), (u0, u1) = _thirds(r, "ablation_zero"), _thirds(r, "update_ratio")
        seeds = [_thirds(r, "update_ratio", c) for c in random_nulls(r)
                 if "update_ratio" in r["conditions"][c]]
        kind = "encoder" if r["encoder"] else "decoder"
        verb = "changes the final representations by" if r["encoder"] else "costs"
        line = (f"- **{m}** ({kind}, {r['layers']} layers): zero-ablating one layer's attention {verb} "
                f"{_cost(r, float(cost[top]))} at most ({layers_of([top])}), {_cost(r, c0)} on average over the first "
                f"third of the layers and {_cost(r, c1)} over the last; the update ratio is {u0:.2g} over the first "
                f"third and {u1:.2g} over the last")
        if seeds:
            line += (f" (random init: {span([s[0] for s in seeds], '{:.2g}')} and "
                     f"{span([s[1] for s in seeds], '{:.2g}')}, "
                     f"{len(seeds)} seed{'s' * (len(seeds) != 1)})")
        lines.append(f"{line}. {_of(len(row['layers']), r['layers'], 'layer').capitalize()} matter"
                     f"{'s' * (len(row['layers']) == 1)}. " + _matters_sentence(r, row))
    first = reports[0]
    passages = len(first["conditions"]["trained"]["ablation_zero"][0])
    took = [r["rival_seconds"]["trained"]["ablation"] for r in reports
            if "ablation" in r.get("rival_seconds", {}).get("trained", {})]
    rest = [r["rival_seconds"]["trained"]["rival"] for r in reports
            if "rival" in r.get("rival_seconds", {}).get("trained", {})]
    thresholds = sorted({(bool(r["encoder"]), rows[r["model"]]["threshold"]) for r in reports})
    rule = "; ".join(f"{'an encoder' if enc else 'a decoder'}: {_cost({'encoder': enc}, t)} {_UNITS[enc]}"
                     for enc, t in thresholds)
    text = "\n".join(lines) + (
        f"\n\nA layer *matters* when zero-ablating its attention output costs at least the registered threshold "
        f"({rule}), fixed on {rows[first['model']]['date']} from the published reading, before the rule read any "
        "of these measurements (a first look at some ablation costs and update ratios came before it; the "
        f"threshold was not taken from them). Each cost is the mean over the first {passages} "
        f"passage{'s' * (passages != 1)} (one forward per layer for zero-ablation and one for mean-ablation).")
    if took:
        text += (f" Measuring the ablations took {span(took, '{:.2g}')} s per model when this build's measurements "
                 f"were made (the other rival measures of the trained model {span(rest, '{:.2g}')} s).")
    return text


def write_paragraphs(reports: list[dict], rows: dict[str, dict]) -> dict[str, str]:
    """The section's glued texts, ``{key: markdown}`` (:data:`WRITE_KEYS`); ``rows``:
    ``{model: readings.where_it_matters(report)}``."""
    return {"e1_write_take": write_take(reports), "e1_write_says": write_little(reports, rows)}


def write_figure(reports: list[dict], rows: dict[str, dict], n_boot: int = 1000):
    """One column per model: the consecutive-layer distance (E1's registered metric, sinks set aside), each layer's
    zero- and mean-ablation cost with the registered threshold (a dotted line; symmetric-log scale) and its update
    ratio against random-init seed 0 (log scale). ``rows``: as :func:`write_little`. Returns the figure."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    from .. import plots

    fig = plots.curve_grid(reports, [
        [(R.E1_METRIC, "trained", "trained", plots.STYLE["trained"])],
        [("ablation_zero", "trained", "zero-ablation", plots.STYLE["trained"]),
         ("ablation_mean", "trained", "mean-ablation", dict(color="C2", ls="-."))],
        [("update_ratio", "trained", "trained", plots.STYLE["trained"]),
         ("update_ratio", "random0", "random init (seed 0)", plots.STYLE["random0"])]],
        ylabels=["distance l to l+1", "ablation cost", "update ratio"], xlabel="layer l", n_boot=n_boot)
    axes = np.array(fig.axes).reshape(3, len(reports))
    for ax, r in zip(axes[1], reports):
        t = rows[r["model"]]["threshold"]
        ax.axhline(t, color="0.3", ls=":", lw=1)
        ax.set_yscale("symlog", linthresh=t)
        lo, hi = ax.get_ylim()
        ticks = [v for v in (-t, 0.0, t, 0.5 if hi < 1 else 1.0, 10.0) if lo <= v <= hi]
        ax.yaxis.set_major_locator(FixedLocator(ticks))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_locator(NullLocator())
    for ax in axes[2]:
        ax.set_yscale("log")
        ax.yaxis.set_minor_formatter(NullFormatter())
    return fig
