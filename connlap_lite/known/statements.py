"""The published statements, the chapter's rule that judges each one on a report, and its tables.

Chapter: *Known results, reproduced*.
"""
from __future__ import annotations

import math

import torch

from ..stats import mean_interval
from .sinks import INPUTS, middle_layers

PROPOSITION_TOL = 1e-4    # float32 rounding through a few dozen layers stays far below this (the chapter shows it)
COLLAPSE = 0.1            # "collapsed": the residual from rank one fell below this fraction of the input's
VERDICTS = ("agree", "disagree", "inconclusive", "not comparable", "undefined")


def _mean(values) -> float:
    return float(torch.tensor(values, dtype=torch.float64).mean())


def _passages(values, layers=None) -> torch.Tensor:
    """Per-passage values ``(B,)``: a list of per-passage values, or per-layer lists averaged over ``layers``."""
    v = torch.tensor(values, dtype=torch.float64)
    if v.ndim == 1:
        return v
    return (v if layers is None else v[list(layers)]).mean(0)


def interval(diff: torch.Tensor, n_boot: int = 1000) -> tuple[float, float, float]:
    """Mean of per-passage values and its 95% percentile bootstrap interval (passages resampled).

    Examples
    --------
    >>> m, lo, hi = interval(torch.tensor([0.1, 0.2, 0.3, 0.4]))
    >>> lo <= m <= hi
    True

    Chapter: *Known results, reproduced*.
    """
    return mean_interval(diff, n_boot=n_boot)       # undefined (NaN) if a difference is


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


def _row(report, key, verdict, trained, null, tested=None) -> dict:
    result, cite, statement, _ = STATEMENTS[key]
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {VERDICTS}, got {verdict!r}")
    return {"key": key, "result": result, "cite": cite, "statement": statement, "model": report["model"],
            "trained": trained, "null": null, "tested": tested or [], "verdict": verdict}


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


def _both(a: str, b: str) -> str:
    """Two parts of one statement: undefined if either is, disagree if either disagrees, agree if both agree."""
    for v in ("undefined", "disagree", "inconclusive"):
        if v in (a, b):
            return v
    return "agree"


def verdicts(report: dict) -> list[dict]:
    """The rule of the chapter, applied to one model's :func:`known_results` report.

    Every comparison is made passage by passage: the rule looks at the mean over passages of a
    per-passage difference and its 95% bootstrap interval (:func:`interval`). A published statement that
    one quantity exceeds another (or a threshold) **agrees** when that interval lies entirely on the
    published side of 0, **disagrees** when it lies entirely on the other side, and is **inconclusive**
    when it holds 0 (:func:`side`; a statement of two parts agrees only if both do); Gu et al.'s ordering
    allows ties (>=), so it agrees unless one of its steps is reversed beyond the noise (an interval
    entirely below 0). A statement is **not comparable** where the model lacks what it is about, and
    **undefined** where a number it compares is not finite.  On per-passage differences of unit spread
    over 16 passages, "agree" comes in at most 5% of draws without an effect and in at least 80% with an
    effect of one spread (``tests/test_rules.py``). The statements:

    - ``sink_order``: natural - random and random - repeated sink rates (ordering, ties allowed);
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
    - ``sinkformer``: the null's column-sum defect minus the trained one, averaged over layers; not
      comparable in a decoder (a causal walk is doubly stochastic only if it is the identity);
    - ``reuse``: both the head-matched distance of layers two apart minus that of adjacent layers, and the
      cross-passage null's normalised walk distance of adjacent layers (passage ``b`` at layer ``l`` against
      passage ``b + 1`` at layer ``l + 1``, the E1 chapter's null) minus the passage's own, averaged over the
      steps (the random-init null, near uniform, is beaten by construction: its numbers are shown, not tested).

    Each row is ``{"key", "result", "cite", "statement", "model", "trained", "null", "tested", "verdict"}``:
    the numbers compared for the model (as trained, or the random model with ``random_init``) and for its
    random-init null, and ``[mean, lo, hi]`` of each difference tested.

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
    rows = []

    rate = {i: _passages(c[i]["rate"]) for i in INPUTS}
    rate0 = [_mean(z[i]["rate"]) for i in INPUTS]
    steps = [interval(rate["natural"] - rate["random"]), interval(rate["random"] - rate["repeated"])]
    reversed_ = any(hi < 0 for _, _, hi in steps)
    order = ("undefined" if not all(math.isfinite(v) for s in steps for v in s) else
             "disagree" if reversed_ else "agree")
    rows.append(_row(report, "sink_order", order,
                     [float(rate[i].mean()) for i in INPUTS], rate0, [list(s) for s in steps]))
    zero = bool((rate["repeated"] == 0).all())
    rows.append(_row(report, "sink_repeated", "not comparable" if absolute else ("agree" if zero else "disagree"),
                     float(rate["repeated"].mean()), rate0[2]))
    spread = max(max(v) for v in c["repeated"]["spread"])
    spread0 = max(max(v) for v in z["repeated"]["spread"])
    rows.append(_row(report, "proposition", "not comparable" if absolute else
                     ("agree" if spread <= PROPOSITION_TOL else "disagree"), spread, spread0))

    if encoder:
        mid = middle_layers(L)
        sep, sep0 = _passages(nat["mass_last"], mid), _passages(rnd["mass_last"], mid)
        tested = _tested(sep - 0.5)
        rows.append(_row(report, "clark_sep", side(tested), float(sep.mean()), float(sep0.mean()),
                         [tested]))
    else:
        rows.append(_row(report, "clark_sep", "not comparable", None, None))
    weight, norm = _passages(nat["mass_sinks"]), _passages(nat["norm_sinks"])
    tested = _tested(0.5 * weight - norm)
    rows.append(_row(report, "kobayashi_norm", side(tested),
                     [float(weight.mean()), float(norm.mean())], [_mean(rnd["mass_sinks"]), _mean(rnd["norm_sinks"])],
                     [tested]))

    walk, state = torch.tensor(nat["walk_residual"]), torch.tensor(nat["state_residual"])
    walk0, state0 = torch.tensor(rnd["walk_residual"]), torch.tensor(rnd["state_residual"])
    tested = _tested(COLLAPSE * walk[0] - walk[-1])
    rows.append(_row(report, "dong_walks", side(tested), [float(walk[0].mean()), float(walk[-1].mean())],
                     [float(walk0[0].mean()), float(walk0[-1].mean())], [tested]))
    tested = _tested(state[-1] - COLLAPSE * state[0])
    rows.append(_row(report, "dong_skip", side(tested), [float(state[0].mean()), float(state[-1].mean())],
                     [float(state0[0].mean()), float(state0[-1].mean())], [tested]))

    col, col0 = _passages(nat["column_defect"]), _passages(rnd["column_defect"])
    tested = _tested(col0 - col)
    rows.append(_row(report, "sinkformer", "not comparable" if not encoder else side(tested),
                     float(col.mean()), float(col0.mean()), [tested]))

    if not nat["head_tv2"]:                                   # fewer than three layers: no pair two apart
        rows.append(_row(report, "reuse", "not comparable", None, None))
        return rows
    adj, two = _passages(nat["head_tv"]), _passages(nat["head_tv2"])
    tvn, cross = _passages(nat["tv_norm"]), _passages(nat["tv_norm_cross"])
    tested_a = _tested(two - adj)
    tested_b = _tested(cross - tvn)
    rows.append(_row(report, "reuse", _both(side(tested_a), side(tested_b)),
                     [float(adj.mean()), float(two.mean()), float(tvn.mean()), float(cross.mean())],
                     [_mean(rnd[k]) for k in ("head_tv", "head_tv2", "tv_norm", "tv_norm_cross")],
                     [tested_a, tested_b]))
    return rows


def toy_report(n_layers: int = 3, n_passages: int = 3) -> dict:
    """A small report of the shape :func:`known_results` returns, with made-up numbers, for examples and tests.

    Each per-passage value is its base number times ``1 + 0.01 b`` for passage ``b``.

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

    return {"model": "toy", "encoder": True, "absolute_positions": False, "layers": L, "main": "trained",
            "conditions": {"trained": cond(1.0), "random0": cond(0.1)}}


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
    | sink rate: natural >= random >= repeated {cite}`gu2025when` | **agree**<br>0.51 / 0.25 / 0<br>null 0.05 / 0.03 / 0 |

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
    - **all** (9): *agree* 8, *disagree* 1, *inconclusive* 0, *not comparable* 0, *undefined* 0
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
                     + ", ".join(f"*{v}* {c[v]}" for v in VERDICTS if v in c))
    total = {v: sum(c.get(v, 0) for c in counts.values()) for v in VERDICTS}
    lines.append(f"- **all** ({sum(total.values())}): " + ", ".join(f"*{v}* {total[v]}" for v in VERDICTS))
    if against:
        lines.append("- *disagree*: " + "; ".join(f"`{m}` ({', '.join(k)})" for m, k in against.items()))
    return "\n".join(lines)
