"""The published statements, the chapter's rule that judges each one on a report, and its tables.

Chapter: *Known results, reproduced*.
"""
from __future__ import annotations

import math

import torch

from .._backend import to_tensor
from ..verdicts.record import random_nulls
from ..measure.stats import mean_interval, seed_p
from ..verdicts.words import ALPHA, MIN_PASSAGES, MIN_SEEDS
from .sinks import INPUTS, middle_layers

PROPOSITION_TOL = 1e-4    # float32 rounding through a few dozen layers stays far below this (the chapter shows it)
COLLAPSE = 0.1            # "collapsed": the residual from rank one fell below this fraction of the input's
KNOWN_VERDICTS = ("agree", "disagree", "inconclusive", "insufficient data", "not comparable", "undefined")


def mean_of(values) -> float:
    return float(torch.tensor(values, dtype=torch.float64).mean())


def per_passage(values, layers=None) -> torch.Tensor:
    """Per-passage values ``(B,)``: a list of per-passage values, or per-layer lists averaged over ``layers``."""
    v = torch.tensor(values, dtype=torch.float64)
    if v.ndim == 1:
        return v
    return (v if layers is None else v[list(layers)]).mean(0)


def interval(diff, n_boot: int = 1000) -> tuple[float, float, float]:
    """Mean of per-passage values and its 95% interval: the percentile bootstrap (passages resampled,
    :func:`connlap_lite.measure.stats.mean_interval`) widened about the mean by :func:`connlap_lite.measure.stats.expansion` of
    the number of passages (Hesterberg's expanded percentile bootstrap: 1.29 times wider at 8 passages, where the
    plain interval lies above 0 in about 6% of draws without an effect). NaN where a value is not finite.

    Examples
    --------
    >>> m, lo, hi = interval(torch.tensor([0.1, 0.2, 0.3, 0.4]))
    >>> lo <= m <= hi
    True

    Chapter: *Known results, reproduced*.
    """
    values = to_tensor(diff, "diff", finite=False).double().reshape(-1)
    return mean_interval(values, n_boot=n_boot, expand=len(values) >= 2)     # undefined (NaN) if a value is


STATEMENTS = {   # key: (result, bibliography key, the published statement, a short label for the table)
    "sink_order": ("Attention sinks", "gu2025when",
                   "sink rate on natural text >= on random tokens >= on one repeated token, in every model",
                   "sink rate: natural >= random >= repeated"),
    "sink_repeated": ("Attention sinks", "gu2025when",
                      "sink rate 0 on one repeated token in models with rotary positions",
                      "sink rate 0 on one repeated token (rotary)"),
    "proposition": ("Attention sinks", "gu2025when",
                    "identical tokens, no absolute positions: every layer's states are equal at every position",
                    "one repeated token: equal states at every position"),
    "clark_sep": ("Special tokens", "clark2019what",
                  "more than half of the attention in the middle layers goes to [SEP]",
                  "over half of middle-layer attention on [SEP]"),
    "kobayashi_norm": ("Special tokens", "kobayashi2020attention",
                       "weighting each edge by the norm of the vector it carries removes most of the sink mass",
                       "norm weighting removes most sink mass"),
    "dong_walks": ("Rank collapse", "dong2021attention",
                   "attention alone, composed over the layers, drives the tokens to rank one",
                   "walks alone collapse to rank one"),
    "dong_skip": ("Rank collapse", "dong2021attention", "with the skip connections, the token states do not collapse",
                  "states with skips do not collapse"),
    "sinkformer": ("Doubly stochastic", "sander2022sinkformers",
                   "training brings attention closer to doubly stochastic",
                   "training approaches doubly stochastic"),
    "reuse": ("Consecutive layers", "bhojanapalli2021leveraging",
              "adjacent layers attend alike: more than layers two apart, and more than a layer and the next layer "
              "of another passage",
              "adjacent layers most alike, beyond other passages"),
}


def statement_row(report, key, verdict, trained, null, tested=None, **extra) -> dict:
    result, cite, statement, _ = STATEMENTS[key]
    if verdict not in KNOWN_VERDICTS:
        raise ValueError(f"verdict must be one of {KNOWN_VERDICTS}, got {verdict!r}")
    return {"key": key, "result": result, "cite": cite, "statement": statement, "model": report["model"],
            "trained": trained, "null": null, "tested": tested or [], "verdict": verdict, **extra}


def _tested(diff: torch.Tensor) -> list:
    """``[mean, lo, hi]``: the mean of ``diff`` over passages and its 95% interval."""
    return list(interval(diff))


def side(tested) -> str:
    """The verdict on one published "greater than" from ``[mean, lo, hi]`` of its difference: **agree** if the
    95% interval lies above 0, **disagree** if it lies below 0, **inconclusive** if it holds 0, **undefined** if
    any of the three is not finite.

    >>> side([0.3, 0.1, 0.5]), side([-0.3, -0.5, -0.1]), side([0.1, -0.1, 0.3]), side([float("nan")] * 3)
    ('agree', 'disagree', 'inconclusive', 'undefined')
    """
    m, lo, hi = (float(v) for v in tested)
    if not all(math.isfinite(v) for v in (m, lo, hi)):
        return "undefined"
    return "agree" if lo > 0 else "disagree" if hi < 0 else "inconclusive"


def both_parts(a: str, b: str) -> str:
    """Two parts of one statement: undefined if either is, disagree if either disagrees, agree if both agree."""
    for v in ("undefined", "disagree", "inconclusive"):
        if v in (a, b):
            return v
    return "agree"


def _finite(*values) -> bool:
    return all(math.isfinite(float(v)) for v in values)


def _enough(verdict: str, passages: int) -> str:
    """``verdict``, or "insufficient data" below :data:`connlap_lite.verdicts.words.MIN_PASSAGES` passages (undefined
    and not comparable stay)."""
    return "insufficient data" if passages < MIN_PASSAGES and verdict not in ("undefined", "not comparable") \
        else verdict


def order(steps, overall) -> str:
    """Gu et al.'s "natural >= random >= repeated" from ``[mean, lo, hi]`` of its two steps and of natural minus
    repeated: **agree** if the overall drop is above 0 (its interval) and no step is reversed (no step's interval
    below 0), **disagree** if a step is reversed, **inconclusive** otherwise (no reversal, no drop either: ties
    everywhere are consistent with the statement and no evidence for it), **undefined** if a number is not finite.

    >>> order([[0.1, 0.0, 0.2], [0.1, -0.05, 0.2]], [0.2, 0.1, 0.3])
    'agree'
    >>> order([[0.0, -0.1, 0.1], [0.0, -0.1, 0.1]], [0.0, -0.1, 0.1])
    'inconclusive'
    >>> order([[0.3, 0.2, 0.4], [-0.2, -0.3, -0.1]], [0.1, 0.0, 0.2])
    'disagree'
    """
    if not _finite(*(v for s in [*steps, overall] for v in s)):
        return "undefined"
    if any(hi < 0 for _, _, hi in steps):
        return "disagree"
    return "agree" if overall[1] > 0 else "inconclusive"


def below_seeds(tested, value: float, seeds) -> tuple[str, float, float]:
    """A trained ``value`` against the random-init ``seeds`` (each seed's value on the same passages) with the
    seeds as units, and ``tested``, ``[mean, lo, hi]`` of the seeds' mean minus the trained value per passage:
    **agree** if that interval lies above 0 and :func:`connlap_lite.measure.stats.seed_p` puts the trained value below the
    seeds (p < ALPHA), **disagree** if the interval lies below 0 and the trained value is above the seeds by the
    same test, **inconclusive** otherwise, **undefined** if a number is not finite.  Returns the verdict and the
    two one-sided p-values (below, above).

    >>> below_seeds([0.3, 0.2, 0.4], 0.1, [0.40, 0.41, 0.39, 0.42, 0.38])[0]
    'agree'
    >>> below_seeds([0.3, 0.2, 0.4], 0.1, [0.40, 0.1, 0.7, 0.2, 0.6])[0]          # the seeds vary too much
    'inconclusive'
    """
    seeds = [float(v) for v in seeds]
    below, above = seed_p(value, seeds), seed_p(-value, [-v for v in seeds])
    if not _finite(*tested, value, *seeds, below, above):
        return "undefined", below, above
    word = side(tested)
    verdict = ("agree" if word == "agree" and below < ALPHA else
               "disagree" if word == "disagree" and above < ALPHA else "inconclusive")
    return verdict, below, above


def verdicts(report: dict) -> list[dict]:
    """The rule of the chapter, applied to one model's :func:`known_results` report.

    This is rule 2 (2026-12-02); :mod:`connlap_lite.known.history` keeps rule 1 and what changed.
    Every comparison is made passage by passage: the rule looks at the mean over passages of a
    per-passage difference and its 95% bootstrap interval, widened for few passages (:func:`interval`).
    A published statement that one quantity exceeds another (or a threshold) **agrees** when that interval
    lies entirely on the published side of 0, **disagrees** when it lies entirely on the other side, and is
    **inconclusive** when it holds 0 (:func:`side`; a statement of two parts agrees only if both do). A
    statement is **not comparable** where the model lacks what it is about, **undefined** where a number it
    compares is not finite, and, except for the two exact statements, **insufficient data** below
    :data:`connlap_lite.verdicts.words.MIN_PASSAGES` (8) passages, and for ``sinkformer`` below
    :data:`connlap_lite.verdicts.words.MIN_SEEDS` (3) random-init seeds.  On the synthetic reports of
    :func:`connlap_lite.known.synthetic.report` (8 passages), every statistical statement says "agree" in at most 5%
    of draws without an effect and in at least 80% with the effect stated in ``tests/verdicts/test_rules.py``. The
    statements:

    - ``sink_order``: natural - random and random - repeated sink rates, and natural - repeated
      (:func:`order`: a strict overall drop, no step reversed);
    - ``sink_repeated``: agree if the repeated-token sink rate is 0 in every passage (exact); not
      comparable with absolute positions;
    - ``proposition``: agree if every layer's states differ across positions by at most
      :data:`PROPOSITION_TOL` (relative; exact up to float rounding); not comparable with absolute positions;
    - ``clark_sep``: the attention to the last token ([SEP]), averaged over :func:`middle_layers`, minus 1/2;
      not comparable in a decoder (it has no [SEP]);
    - ``kobayashi_norm``: half the attention-weighted sink mass minus the norm-weighted one, averaged over
      layers (sinks: [CLS] and [SEP] in an encoder, the first token in a decoder);
    - ``dong_walks``: :data:`COLLAPSE` times the embeddings' residual from rank one minus that of the
      composed walks' output; ``dong_skip``: the last states' residual minus ``COLLAPSE`` times the
      embeddings';
    - ``sinkformer``: the random-init seeds' column-sum defect (their mean) minus the trained one, averaged
      over layers, per passage, and the trained defect against the seeds as units (:func:`below_seeds`);
      not comparable in a decoder (a causal walk is doubly stochastic only if it is the identity);
    - ``reuse``: both the head-matched distance of layers two apart minus that of adjacent layers, and the
      cross-passage null's normalised walk distance of adjacent layers (passage ``b`` at layer ``l`` against
      passage ``b + 1`` at layer ``l + 1``, the E1 chapter's null) minus the passage's own, averaged over the
      steps (the random-init null, near uniform, is beaten by construction: its numbers are shown, not tested).

    Each row is ``{"key", "result", "cite", "statement", "model", "trained", "null", "tested", "verdict"}``:
    the numbers compared for the model (as trained, or the random model with ``random_init``) and for its
    random-init null (for ``sinkformer`` the seeds' mean; its row adds ``seeds``, the number of seeds, and
    ``p_below``, ``p_above``, None where undefined), and ``[mean, lo, hi]`` of each difference tested.

    Examples
    --------
    >>> rows = verdicts(toy_report())
    >>> [(r["key"], r["verdict"]) for r in rows][:4]
    [('sink_order', 'agree'), ('sink_repeated', 'agree'), ('proposition', 'agree'), ('clark_sep', 'agree')]

    Chapter: *Known results, reproduced*.
    """
    main = report.get("main", "trained")
    c, z = report["conditions"][main], report["conditions"]["random0"]
    nat, rnd = c["natural"], z["natural"]
    absolute, encoder, L = report["absolute_positions"], report["encoder"], report["layers"]
    B = len(nat["rate"])
    rows = []

    rate = {i: per_passage(c[i]["rate"]) for i in INPUTS}
    rate0 = [mean_of(z[i]["rate"]) for i in INPUTS]
    steps = [_tested(rate["natural"] - rate["random"]), _tested(rate["random"] - rate["repeated"])]
    overall = _tested(rate["natural"] - rate["repeated"])
    rows.append(statement_row(report, "sink_order", _enough(order(steps, overall), B),
                     [float(rate[i].mean()) for i in INPUTS], rate0, [*steps, overall]))
    repeated = rate["repeated"]
    zero = ("undefined" if not bool(torch.isfinite(repeated).all()) else
            "agree" if bool((repeated == 0).all()) else "disagree")
    rows.append(statement_row(report, "sink_repeated", "not comparable" if absolute else zero,
                     float(repeated.mean()), rate0[2]))
    spread, spread0 = (torch.tensor(x["repeated"]["spread"], dtype=torch.float64) for x in (c, z))
    equal = ("undefined" if not bool(torch.isfinite(spread).all()) else
             "agree" if float(spread.max()) <= PROPOSITION_TOL else "disagree")
    rows.append(statement_row(report, "proposition", "not comparable" if absolute else equal, float(spread.max()),
                     float(spread0.max())))

    if encoder:
        mid = middle_layers(L)
        sep, sep0 = per_passage(nat["mass_last"], mid), per_passage(rnd["mass_last"], mid)
        tested = _tested(sep - 0.5)
        rows.append(statement_row(report, "clark_sep", _enough(side(tested), B), float(sep.mean()), float(sep0.mean()),
                         [tested]))
    else:
        rows.append(statement_row(report, "clark_sep", "not comparable", None, None))
    weight, norm = per_passage(nat["mass_sinks"]), per_passage(nat["norm_sinks"])
    tested = _tested(0.5 * weight - norm)
    rows.append(statement_row(report, "kobayashi_norm", _enough(side(tested), B),
                     [float(weight.mean()), float(norm.mean())], [mean_of(rnd["mass_sinks"]), mean_of(rnd["norm_sinks"])],
                     [tested]))

    walk, state = torch.tensor(nat["walk_residual"]), torch.tensor(nat["state_residual"])
    walk0, state0 = torch.tensor(rnd["walk_residual"]), torch.tensor(rnd["state_residual"])
    tested = _tested(COLLAPSE * walk[0] - walk[-1])
    rows.append(statement_row(report, "dong_walks", _enough(side(tested), B), [float(walk[0].mean()), float(walk[-1].mean())],
                     [float(walk0[0].mean()), float(walk0[-1].mean())], [tested]))
    tested = _tested(state[-1] - COLLAPSE * state[0])
    rows.append(statement_row(report, "dong_skip", _enough(side(tested), B), [float(state[0].mean()), float(state[-1].mean())],
                     [float(state0[0].mean()), float(state0[-1].mean())], [tested]))

    seeds = [s for s in random_nulls(report) if "column_defect" in report["conditions"][s].get("natural", {})]
    col = per_passage(nat["column_defect"])
    per_seed = torch.stack([per_passage(report["conditions"][s]["natural"]["column_defect"]) for s in seeds])
    tested = _tested(per_seed.mean(0) - col)
    word, below, above = below_seeds(tested, float(col.mean()), per_seed.mean(1).tolist())
    if not encoder:
        word = "not comparable"
    elif len(seeds) < MIN_SEEDS and _finite(*tested, *per_seed.mean(1)):
        word = "insufficient data"
    rows.append(statement_row(report, "sinkformer", _enough(word, B), float(col.mean()), float(per_seed.mean()), [tested],
                     seeds=len(seeds), **{k: p if math.isfinite(p) else None            # JSON: undefined is None
                                          for k, p in (("p_below", below), ("p_above", above))}))

    if not nat["head_tv2"]:                                   # fewer than three layers: no pair two apart
        rows.append(statement_row(report, "reuse", "not comparable", None, None))
        return rows
    adj, two = per_passage(nat["head_tv"]), per_passage(nat["head_tv2"])
    tvn, cross = per_passage(nat["tv_norm"]), per_passage(nat["tv_norm_cross"])
    tested_a = _tested(two - adj)
    tested_b = _tested(cross - tvn)
    rows.append(statement_row(report, "reuse", _enough(both_parts(side(tested_a), side(tested_b)), B),
                     [float(adj.mean()), float(two.mean()), float(tvn.mean()), float(cross.mean())],
                     [mean_of(rnd[k]) for k in ("head_tv", "head_tv2", "tv_norm", "tv_norm_cross")],
                     [tested_a, tested_b]))
    return rows


def toy_report(n_layers: int = 3, n_passages: int = 8) -> dict:
    """A small report of the shape :func:`known_results` returns, with made-up numbers, for examples and tests.

    Each per-passage value is its base number times ``1 + 0.01 b`` for passage ``b``; the random-init seeds
    ``random1`` to ``random4`` hold the column-sum defect only, ``random0``'s times ``1 + 0.01 k`` for seed ``k``.

    Examples
    --------
    >>> rep = toy_report(n_layers=4)
    >>> rep["layers"], len(rep["conditions"]["trained"]["natural"]["walk_residual"])
    (4, 5)

    Chapter: *Known results, reproduced*.
    """
    L, B = n_layers, n_passages

    def pp(x):
        return [x * (1 + 0.01 * b) for b in range(B)]

    def cond(scale):
        zeros = [[0.0] * B for _ in range(L + 1)]
        nat = {"rate": pp(0.5 * scale), "mass_first": [pp(0.3 * scale)] * L, "mass_last": [pp(0.6 * scale)] * L,
               "mass_sinks": [pp(0.8 * scale)] * L, "norm_first": [pp(0.1)] * L, "norm_last": [pp(0.1)] * L,
               "norm_sinks": [pp(0.2)] * L, "column_defect": [pp(0.4 * scale)] * L,
               "column_defect_nosink": [pp(0.1)] * L,
               "walk_residual": [pp(1.0 / 10 ** k) for k in range(L + 1)], "state_residual": [pp(0.9)] * (L + 1),
               "walk_spread": zeros, "tv": [pp(0.1)] * (L - 1), "tv_norm": [pp(0.5 / scale)] * (L - 1),
               "tv_norm_cross": [pp(0.9 / scale)] * (L - 1),
               "head_tv": [pp(0.1)] * (L - 1), "tv2": [pp(0.2)] * (L - 2), "tv_norm2": [pp(0.7)] * (L - 2),
               "head_tv2": [pp(0.2)] * (L - 2)}
        return {"natural": nat, "random": {"rate": pp(0.25 * scale)},
                "repeated": {"rate": [0.0] * B, "spread": zeros}}

    seeds = {f"random{k}": {"natural": {key: [pp(0.04 * (1 + 0.01 * k))] * L
                                        for key in ("column_defect", "column_defect_nosink")}} for k in range(1, 5)}
    return {"model": "toy", "encoder": True, "absolute_positions": False, "layers": L, "main": "trained",
            "conditions": {"trained": cond(1.0), "random0": cond(0.1), **seeds}}


def _fmt(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, (list, tuple)):
        return " / ".join(_fmt(v) for v in x)
    if x == 0:
        return "0"
    return f"{x:.2g}" if abs(x) < 0.01 else f"{x:.2f}"


def verdict_table(reports: list[dict]) -> str:
    """The chapter's table in Markdown: one row per published statement, one column per model; each cell
    gives the verdict, the model's number(s) and, below them, the random-init null's.

    Examples
    --------
    >>> print(verdict_table([toy_report()]).splitlines()[2])
    | sink rate: natural >= random >= repeated {cite}`gu2025when` | **agree**<br>0.52 / 0.26 / 0<br>null 0.05 / 0.03 / 0 |

    Chapter: *Known results, reproduced*.
    """
    rows = {r["model"]: {x["key"]: x for x in verdicts(r)} for r in reports}
    models = [r["model"] for r in reports]
    lines = ["| published | " + " | ".join(f"`{m}`" for m in models) + " |", "|---|" + "---|" * len(models)]
    for key, (result, cite, statement, short) in STATEMENTS.items():
        cells = []
        for m in models:
            x = rows[m][key]
            numbers = "" if x["trained"] is None else f"<br>{_fmt(x['trained'])}<br>null {_fmt(x['null'])}"
            cells.append(f"**{x['verdict']}**{numbers}")
        lines.append(f"| {short} {{cite}}`{cite}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def verdict_counts(reports: list[dict]) -> str:
    """The opening box's Markdown: per published result, how many statement-model pairs got each verdict,
    and which ones disagree.

    Examples
    --------
    >>> print(verdict_counts([toy_report()]))
    - **Attention sinks** (3 statement-model pairs): *agree* 3
    - **Special tokens** (2 statement-model pairs): *agree* 2
    - **Rank collapse** (2 statement-model pairs): *agree* 2
    - **Doubly stochastic** (1 statement-model pairs): *disagree* 1
    - **Consecutive layers** (1 statement-model pairs): *agree* 1
    - **all** (9): *agree* 8, *disagree* 1, *inconclusive* 0, *insufficient data* 0, *not comparable* 0, *undefined* 0
    - *disagree*: `toy` (training approaches doubly stochastic)

    Chapter: *Known results, reproduced*.
    """
    counts: dict[str, dict[str, int]] = {}
    against: dict[str, list[str]] = {}
    for r in reports:
        for x in verdicts(r):
            c = counts.setdefault(x["result"], {})
            c[x["verdict"]] = c.get(x["verdict"], 0) + 1
            if x["verdict"] == "disagree":
                against.setdefault(r["model"], []).append(STATEMENTS[x["key"]][3])
    lines = []
    for result, c in counts.items():
        lines.append(f"- **{result}** ({sum(c.values())} statement-model pairs): "
                     + ", ".join(f"*{v}* {c[v]}" for v in KNOWN_VERDICTS if v in c))
    total = {v: sum(c.get(v, 0) for c in counts.values()) for v in KNOWN_VERDICTS}
    lines.append(f"- **all** ({sum(total.values())}): " + ", ".join(f"*{v}* {total[v]}" for v in KNOWN_VERDICTS))
    if against:
        lines.append("- *disagree*: " + "; ".join(f"`{m}` ({', '.join(k)})" for m, k in against.items()))
    return "\n".join(lines)
