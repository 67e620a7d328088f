"""The verdicts on E1-E3 from measurement reports: the rules in force, registered on 2026-12-04 and frozen (rule 4 for
E1 and E3, rule 5 for E2; ``tests/verdicts/test_frozen_rules.py`` holds a digest of each rule function and constant).

Every empirical chapter, the scorecard and the command line decide E1-E3 here; the record's shape and
its reading functions are :mod:`connlap_lite.verdicts.record`'s, the vocabulary (:data:`VERDICTS`) and the
multiplicity machinery :mod:`connlap_lite.verdicts.words`'s, and the rules replaced (rule 3 for E1 and E3, rule 4 for E2,
with ``RULE_CHANGES``) :mod:`connlap_lite.verdicts.history`'s, still runnable.

**Units.** The unit of resampling is the passage (E2's heads: the layer, then the value-sharing group of heads within
it, :func:`hierarchical_draws`); trained and null conditions are measured on the same passages and resampled together
(paired).  A one-sided bootstrap p-value is ``(1 + #{draws where the trained model does not win}) / (n_boot + 1)``,
the draws widened first for the number of units (:func:`connlap_lite.measure.stats.expansion`), undefined if any draw is not
finite.  The **random-init seeds and the shuffled null's permutations are units** of their own: a comparison with
them is Student's t over the seeds or permutations (:func:`units_p`, a prediction interval: size alpha for any number
of them), never "below every seed" (size ``1/(k+1)``).  Below :data:`~connlap_lite.verdicts.words.MIN_SEEDS` (3) seeds or
permutations, or :data:`~connlap_lite.verdicts.words.MIN_PASSAGES` (8) passages, the answer is "insufficient data".

**Every null, not the lowest.** A condition against several nulls holds only if it holds against each of them (an
intersection-union test: its p-value is the largest of the per-null p-values).  No null is chosen per step or per
draw (rule 3 took the lowest passage null at each step in each draw, which favours the trained model where the nulls
are noisier).  The p-values of one claim's table are Holm-corrected as one family, with at least
:func:`connlap_lite.measure.stats.draws_for` draws.

**A word only when it is stable.** A verdict word other than "inconclusive" (holds, partly, does not hold) stands
only if the same rule, applied again to :data:`RESAMPLES` resamples of the units (the other rows of the table kept
as they are in its Holm family), gives the same word in at least :data:`STABILITY` (80%) of them; otherwise the
verdict is **inconclusive**.  The row keeps the word (``word``) and its share (``word_stability``).

**Outcomes.** holds / partly / does not hold (below); inconclusive (an unstable word; E3: neither direction
shown); insufficient data (too few passages, seeds, permutations or layers); undefined (a value the rule reads is
NaN or infinite: the row's ``nonfinite`` names each ``(condition, metric, layer)``); not testable (E3 below three
sizes of one family).

E1, per model, metric ``tv_norm_nosink`` (smaller = more alike), "attention converges to stable operators in
deeper layers", three conditions:
    (i) *falls*: the trained consecutive-layer distance falls from the first third of the steps to the last
        (paired bootstrap of late minus early: ``p_falls``; ``trained_rise_interval`` its 95% interval);
    (ii) *stable*: the deep layers are stable: the separation profile ``D_k``, the last-third mean of
        d(l, l + k) for k = 1 .. K (K = 4 where measured, ``sep<k>_tv_norm_nosink``), grows from k = 1 to K by
        less than :data:`PROFILE_TOL` (10%) of ``D_1`` (a one-sided test that the growth is below the tolerance:
        ``p_profile_growth``), and ``D_K`` is below the same profile of every null that has one (the shuffled
        null's permutations, paired bootstrap and as units; the random-init seeds as units: ``p_profile_nulls``);
        a metric without a measured profile cannot show (ii) (``profile_measured`` False);
    (iii) *below every null late*: the last-third mean is below every passage-level null (shuffled, its
        permutations also as units; cross-passage; positional), each separately (``p_level_by_null``), and below
        the random-init seeds as units.
    **holds**: (i), (ii) and (iii); **partly**: (i) or (ii), not all three; **does not hold**: neither (i) nor
    (ii) (no part of convergence shown, whatever (iii) says: a late level below the nulls alone is similarity,
    not convergence).  Beside the verdict, two findings in their own words, not conditions: *the advantage over
    shuffled text grows with depth* (``advantage_grows``, also under rule 3's key ``deepens``) and *consecutive
    layers share input-specific structure at every depth* (``shares_structure``: at every step below every
    passage-level null), each Holm-corrected across the table.
E2, per model (rule 5):
    (a) *heads*: the mean ``head_defect`` is below the Gaussian heads' (hierarchical bootstrap: layers, then
        value-sharing groups within each drawn layer, heads of one group kept together; paired by position) and
        below the random-init seeds' (seeds as units);
    (b) *data*: the mean ``data_defect_nosink`` is below Gaussian transports on the same inputs (bootstrap over
        passages) and below the transports of the first three random-init seeds on the same inputs (seeds as units).
    holds: (a) and (b); partly: one; does not hold: neither.
E3, per structure and metric (smaller = more of the claim; rule 4): the late-layer *gap*, trained minus the metric's
    strongest registered null (:func:`gap_null`; for the data defect ``data_defect_nosink`` against Gaussian
    transports and the random-init seeds' transports on the same inputs, as E2), against log10(non-embedding
    parameters), the same relative depth (the last third) for every model, within one family of at least three
    sizes, the models as units: a one-sided t-test of the least-squares slope (``n - 2`` degrees of freedom);
    holds if the slope is below 0 (p < alpha) and every leave-one-model-out slope is below 0; does not hold if
    it is above 0 (p < alpha) and every leave-one-out slope above 0; inconclusive otherwise; **not testable** below
    three sizes of one family.  A leave-one-out slope whose remaining models span less than :data:`MIN_SPAN`
    (0.3) decades is not computed (None).  Two sizes are reported as a step; a fit across families is
    exploratory, with its leave-one-model-out slopes.  :func:`connlap_lite.verdicts.synthetic.e3_power` gives the test's
    power for a number of sizes.

:data:`CONFIRMATION_SEED` is the seed of the confirmation split, registered with these rules (no chapter or test used
it before): the passages on which the frozen rules are confirmed once.

Chapters: *E1*, *E2*, *E3*, *Scorecard*, *Beyond*.
"""
from __future__ import annotations

import math

import numpy as np

from .record import (DATA_SEED_KEYS, NULLS, PASSAGE_METRICS, SEED_NULL, Report, late, late_value, matrix, random_nulls,
                     registered_nulls, shuffled_nulls, third, values_of)
from ..measure.stats import percentile_interval, p_win, draws_for, expansion, holm
from .words import ALPHA, MIN_SEEDS, check_reports, data_status, flag

E1_METRIC = "tv_norm_nosink"
# the E1 metric's nulls measured inside the trained condition, by display name (from record.NULLS)
INNER_NULLS = {name: key for name, (cond, key) in NULLS[E1_METRIC].items() if cond == "trained"}
RULE = 4                  # E1 and E3
E2_RULE = 5               # E2
RULE_DATE = "2026-12-04"  # the day rules 4 (E1, E3) and 5 (E2) were registered and frozen
CONFIRMATION_SEED = 20261204   # the confirmation split's passages (registered with the frozen rules)
STABILITY = 0.8           # a word other than "inconclusive" needs the same word in this share of resamples
RESAMPLES = 100           # the resamples behind a word's stability
PROFILE_TOL = 0.10        # E1 (ii): the deep separation profile may grow from k = 1 to K by this share of D_1
MIN_SPAN = 0.3            # E3: decades of non-embedding size that a leave-one-out fit's remaining models must span
SEED_MEAN = "random-init (mean of seeds)"
DECIDED = ("holds", "partly", "does not hold")     # the words that need stability
# E1's separation profile of each metric that has one: d(l, l + k) for k = 1, 2, ... (record.SEP_METRICS)
PROFILES = {"tv_norm_nosink": ("tv_norm_nosink", "sep2_tv_norm_nosink", "sep3_tv_norm_nosink", "sep4_tv_norm_nosink")}
_UNIT_SALT = 7919         # the resamples' generator: seed + this (the bootstrap's is seed)


def p_max(*ps) -> float:
    """The p-value of an intersection of one-sided tests: the largest; undefined if any is."""
    ps = [float(p) for p in ps]
    return float("nan") if not all(math.isfinite(p) for p in ps) else max(ps)


def nonfinite_cells(report, metric_conditions) -> list[tuple[str, str, int]]:
    """Every ``(condition, metric, layer)`` among ``metric_conditions`` holding a non-finite value."""
    out = []
    for cond, metric in metric_conditions:
        a = matrix(report, metric, cond)
        out += [(cond, metric, int(layer)) for layer in np.flatnonzero(~np.isfinite(a).all(1))]
    return out


def null_sources(report, metric) -> list[tuple[str, str]]:
    """The ``(condition, key)`` pairs behind ``metric`` and its registered nulls in ``report``."""
    c = report["conditions"]
    out = [("trained", metric)] + [(s, SEED_NULL.get(metric, metric)) for s in random_nulls(report)]
    return out + [(cond, key) for cond, key in NULLS.get(metric, {}).values() if cond in c and key in c[cond]]


# ----------------------------------------------------------------------- units: bootstrap and Student's t
def counts(draws: np.ndarray, units: int) -> np.ndarray:
    """``(n_boot, units)`` how often each unit is drawn in each resample (from :func:`connlap_lite.measure.stats.unit_draws`'s
    indices), divided by ``units``: ``counts @ values`` is each resample's mean.

    >>> counts(np.array([[0, 0, 2]]), 3).tolist()
    [[0.6666666666666666, 0.0, 0.3333333333333333]]
    """
    n = len(draws)
    flat = (draws + units * np.arange(n)[:, None]).reshape(-1)
    return np.bincount(flat, minlength=n * units).reshape(n, units) / draws.shape[1]


def boot_p(means: np.ndarray, units: int) -> np.ndarray:
    """One-sided bootstrap p-values that each column of ``means`` (``(..., n_boot, k)``: resampled means of trained
    minus null) is below 0, the draws widened about their mean by :func:`~connlap_lite.measure.stats.expansion` of
    ``units``; NaN where a draw is not finite.  The same as :func:`connlap_lite.measure.stats.p_win`, for many at once.

    >>> from connlap_lite.measure.stats import p_win
    >>> d = np.array([[-1.0], [-2.0], [0.5]])
    >>> float(boot_p(d, 8)[0]) == p_win(d[:, 0], 8)
    True
    """
    m = means.mean(-2, keepdims=True)
    # m + e (x - m) >= 0, that is x >= m (1 - 1 / e): the widened draw that does not win
    p = (1 + (means >= m * (1 - 1 / expansion(units))).sum(-2)) / (means.shape[-2] + 1)
    return np.where(np.isfinite(means).all(-2), p, np.nan)


def units_p(trained, units) -> np.ndarray:
    """One-sided p that ``trained`` (``(...,)``) lies below the distribution the ``units`` (``(..., k)``: random-init
    seeds, shuffle permutations) are draws of: Student's t prediction interval with ``k - 1`` degrees of freedom,
    :func:`connlap_lite.measure.stats.seed_p` for many at once (NaN below two units or for a non-finite value).

    >>> from connlap_lite.measure.stats import seed_p
    >>> float(units_p(0.5, [1.0, 1.1, 0.9, 1.05, 0.95])) == seed_p(0.5, [1.0, 1.1, 0.9, 1.05, 0.95])
    True
    """
    from scipy.stats import t as student

    trained, units = np.asarray(trained, dtype=float), np.asarray(units, dtype=float)
    k = units.shape[-1]
    if k < 2:
        return np.full(trained.shape, np.nan)
    sd = units.std(-1, ddof=1)
    gap = units.mean(-1) - trained
    with np.errstate(divide="ignore", invalid="ignore"):
        p = student.sf(gap / (sd * math.sqrt(1 + 1 / k)), k - 1)
    p = np.where(sd == 0, np.where(gap > 0, 0.0, 1.0), p)
    ok = np.isfinite(trained) & np.isfinite(units).all(-1)
    return np.where(ok, p, np.nan)


def _stable_word(word: str, words: list[str]) -> tuple[str, float | None]:
    """The verdict from the rule's ``word`` and the words of its resamples: the word if at least :data:`STABILITY` of
    them agree with it, else "inconclusive"; and that share (None for a word that needs no stability)."""
    if word not in DECIDED:
        return word, None
    share = float(np.mean([w == word for w in words]))
    return (word if share >= STABILITY else "inconclusive"), share


def holm_rows(P: np.ndarray) -> np.ndarray:
    """Holm's adjustment of each row of ``P`` (``(k, family)``), as :func:`connlap_lite.measure.stats.holm` does one family
    (an undefined p-value stays undefined and counts in the family's size).

    >>> holm_rows(np.array([[0.01, 0.04, 0.03], [0.01, np.nan, 0.2]])).round(3).tolist()
    [[0.03, 0.06, 0.06], [0.03, nan, 0.4]]
    """
    P = np.atleast_2d(np.asarray(P, dtype=float))
    m = P.shape[1]
    order = np.argsort(np.where(np.isfinite(P), P, np.inf), axis=1, kind="stable")
    ranked = np.take_along_axis(P, order, 1)
    adjusted = np.minimum(1.0, np.maximum.accumulate(np.where(np.isfinite(ranked), (m - np.arange(m)) * ranked,
                                                              -np.inf), axis=1))
    out = np.empty_like(P)
    np.put_along_axis(out, order, adjusted, 1)
    return np.where(np.isfinite(P), out, np.nan)


def _holm_words(rows: list[dict], conditions: tuple, word_of, stable_p: str = "_resample_p") -> None:
    """Holm-correct the table's p-values (each row's ``conditions`` that are defined by design: a row's
    ``_skip`` names those that are not) as one family, set each row's flags and word, and its verdict after the
    stability check: in each of the row's resamples (``row[stable_p]``, ``(resamples, len(conditions))``) its own
    p-values replace the row's in the family, the others kept."""
    slots = [(i, j) for i, r in enumerate(rows) for j, (p, _) in enumerate(conditions) if p not in r.get("_skip", ())]
    family = np.array([rows[i][conditions[j][0]] for i, j in slots], dtype=float)
    for (i, j), q in zip(slots, holm_rows(family[None])[0]):
        rows[i][conditions[j][0] + "_holm"] = float(q)
    for i, r in enumerate(rows):
        flags = []
        for p, key in conditions:
            if p in r.get("_skip", ()):
                r[p + "_holm"], r[key] = float("nan"), None
            else:
                r[key] = None if r.get("verdict") == "undefined" else flag(r[p + "_holm"])
            flags.append(r[key])
        if r.get("verdict") is None:
            r["word"] = word_of(*flags)
            mine = [k for k, (ii, _) in enumerate(slots) if ii == i]
            draws = np.asarray(r[stable_p], dtype=float)                       # (resamples, conditions)
            fam = np.repeat(family[None], len(draws), 0)
            fam[:, mine] = draws[:, [slots[k][1] for k in mine]]
            won = holm_rows(fam)[:, mine] < ALPHA                              # (NaN: not won)
            combos, which = np.unique(won, axis=0, return_inverse=True)
            said = []
            for w in combos:                                                   # each pattern of flags once
                f = [None if p in r.get("_skip", ()) else False for p, _ in conditions]
                for k, ok in zip(mine, w):
                    f[slots[k][1]] = bool(ok)
                said.append(word_of(*f))
            words = [said[j] for j in np.ravel(which)]
            r["verdict"], r["word_stability"] = _stable_word(r["word"], words)
        else:
            r["word"], r["word_stability"] = r["verdict"], None
        r.pop(stable_p, None)
        r.pop("_skip", None)


# ----------------------------------------------------------------------- E1
def e1_nulls(report, metric: str = E1_METRIC) -> dict[str, np.ndarray]:
    """Every registered null of E1 for ``metric`` as ``(layers, passages)`` arrays, by display name: the random-init
    seeds, the shuffled null's first permutation ("shuffled"), and the nulls inside the trained condition."""
    return registered_nulls(report, metric)


def e1_word(falls, stable, below) -> str:
    """E1's word from its three conditions' flags (None: not shown, or undefined where the row is):

    >>> e1_word(True, True, True), e1_word(True, False, True), e1_word(False, True, False), e1_word(False, False, True)
    ('holds', 'partly', 'partly', 'does not hold')
    """
    if falls and stable and below:
        return "holds"
    return "partly" if falls or stable else "does not hold"


def _profile(report, metric: str, condition: str) -> np.ndarray | None:
    """``(K, passages)``: the last-third mean of d(l, l + k) for k = 1 .. K (the separations measured in a row from
    1), or None where ``metric`` has no separation profile in ``condition``."""
    keys = PROFILES.get(metric)
    have = report["conditions"].get(condition, {})
    if not keys or keys[1] not in have:
        return None
    rows = []
    for key in keys:
        if key not in have:
            break
        a = matrix(report, key, condition)
        rows.append(a[-third(len(a)):].mean(0))
    return np.array(rows)


def e1_evidence(report, metric: str = E1_METRIC, *, n_boot: int = 1000, seed: int = 0,
                resamples: int = RESAMPLES) -> dict:
    """The numbers behind E1 on one model, before the table's multiplicity correction and the stability check.

    The row's ``_resample_p`` holds, for each of ``resamples`` resamples of the passages, the three conditions'
    p-values (:func:`e1_table` reads and removes it)."""
    trained = matrix(report, metric, "trained")
    nulls = e1_nulls(report, metric)
    seeds = [n for n in nulls if n.startswith("random")]
    if not seeds:
        raise ValueError(f"report on {report.get('model')!r} has no random-init null: analyze with random_seeds")
    inner = {n: v for n, v in nulls.items() if not n.startswith("random") and n != "shuffled"}
    shuffle_key = NULLS.get(metric, {}).get("shuffled", ("shuffled", metric))[1]
    perms = [c for c in shuffled_nulls(report) if shuffle_key in report["conditions"][c]]
    if not inner and not perms:
        raise ValueError(f"report on {report.get('model')!r} has no passage-level null of {metric!r} (shuffled, "
                         "cross-passage, positional): analyze with shuffle=True")
    S, B = trained.shape
    k = third(S)
    early = lambda a: a[..., :k, :].mean(-2)                               # noqa: E731  (..., passages)
    lately = lambda a: a[..., -k:, :].mean(-2)                              # noqa: E731
    sh = np.array([matrix(report, shuffle_key, c) for c in perms]) if perms else np.zeros((0, S, B))
    rs = np.array([nulls[s] for s in seeds])
    passage = {**({"shuffled": sh.mean(0)} if perms else {}), **inner}    # the passage-level nulls, by name
    # (i) falls; (iii) below every passage null late; the advantage over shuffled text (a finding)
    cols = {"falls": lately(trained) - early(trained)}
    cols.update({f"level {n}": lately(trained) - lately(v) for n, v in passage.items()})
    if perms:
        cols["advantage"] = (lately(sh.mean(0)) - lately(trained)) - (early(sh.mean(0)) - early(trained))
    # (ii) stable: the profile's growth below the tolerance, and its widest separation below every null's
    prof = _profile(report, metric, "trained")
    null_prof = {c: _profile(report, metric, c) for c in perms + seeds}
    measured = prof is not None and all(v is not None and len(v) >= len(prof) for v in null_prof.values())
    if measured:
        K = len(prof)
        sh_prof = np.array([null_prof[c][:K] for c in perms]) if perms else np.zeros((0, K, B))
        rs_prof = np.array([null_prof[s][:K] for s in seeds])
        cols["growth"] = prof[-1] - (1 + PROFILE_TOL) * prof[0]
        if perms:
            cols["profile shuffled"] = prof[-1] - sh_prof.mean(0)[-1]
    names_ = list(cols)
    V = np.stack([cols[n] for n in names_], 1)                             # (passages, columns)
    rng = np.random.default_rng(seed)
    C = counts(rng.integers(0, B, (n_boot, B)), B)
    boot = C @ V                                                            # (n_boot, columns)
    p = dict(zip(names_, boot_p(boot, B)))
    if "advantage" in p:                                                    # (a growth above 0 is its win)
        p["advantage"] = float(boot_p(-boot[:, [names_.index("advantage")]], B)[0])

    def unit_ps(o):
        """The unit tests on passages ``o`` (``(r, passages)`` indices): level and profile against the
        permutations and the seeds, ``{name: (r,)}``."""
        m = lambda a: a[..., o].mean(-1)                                   # noqa: E731  (..., r)
        t_late = m(lately(trained))
        out = {"level seeds": units_p(t_late, m(lately(rs)).T)}
        if perms:
            out["level shuffled units"] = units_p(t_late, m(lately(sh)).T)
            g = (m(lately(sh)) - t_late) - (m(early(sh)) - m(early(trained)))       # (perms, r)
            out["advantage units"] = _t_above(g.T)
        if measured:
            t_k = m(prof[-1])
            out["profile seeds"] = units_p(t_k, m(rs_prof[:, -1]).T)
            if perms:
                out["profile shuffled units"] = units_p(t_k, m(sh_prof[:, -1]).T)
        return out

    top = {n: float(v[0]) for n, v in unit_ps(np.arange(B)[None]).items()}

    def conditions(pb: dict, pu: dict):
        """(p_falls, p_stable, p_level) from bootstrap and unit p-values (arrays or floats)."""
        level = [pb[n] for n in names_ if n.startswith("level ")] + [pu["level seeds"]]
        level += [pu["level shuffled units"]] if perms else []
        stable = ([pb["growth"], pu["profile seeds"]] + ([pb["profile shuffled"], pu["profile shuffled units"]]
                                                           if perms else [])) if measured else []
        stable.append(np.full(np.shape(pb["falls"]), np.nan if not measured else -np.inf))
        mx = lambda xs: np.max(np.stack(np.broadcast_arrays(*xs)), 0)      # noqa: E731  NaN if any is
        return pb["falls"], mx(stable), mx(level)

    p_falls, p_stable, p_level = (float(x) for x in conditions(p, top))
    # the stability resamples: the passages drawn again, the same bootstrap counts inside each
    out_rng = np.random.default_rng(seed + _UNIT_SALT)
    o = out_rng.integers(0, B, (resamples, B))
    inner_boot = np.matmul(C, V[o])                                         # (resamples, n_boot, columns)
    pr = dict(zip(names_, np.moveaxis(boot_p(inner_boot, B), -1, 0)))
    again = np.stack(conditions(pr, unit_ps(o)), 1)                        # (resamples, 3)
    # the findings beside the verdict
    per_step = []
    for s in range(S):
        diffs = np.stack([trained[s] - v[s] for v in passage.values()], 1)
        per_step.append(float(np.max(boot_p(C @ diffs, B))))
    p_adv = p_max(p["advantage"], top["advantage units"]) if perms else float("nan")
    idx = rng.integers(0, B, (n_boot, B))
    t_b = trained[-k:][:, idx].mean(-1).mean(0)
    late_t = lately(trained)
    late_n = {**({"shuffled": lately(sh.mean(0))} if perms else {}), **{n: lately(v) for n, v in inner.items()},
              **{s: lately(nulls[s]) for s in seeds}}
    strongest = min(late_n, key=lambda n: late_n[n].mean())
    fixed = min(passage, key=lambda n: passage[n].mean())                  # one passage null for every step
    bad = nonfinite_cells(report, null_sources(report, metric) + [(c, shuffle_key) for c in perms[1:]])
    status = (data_status(report, seeds=min(len(seeds), len(perms) if perms or not inner else MIN_SEEDS))
              or ("insufficient data" if S < 2 else None))
    row = {"claim": "E1", "model": report["model"], "metric": metric, "rule": RULE, "date": RULE_DATE,
           # (i)
           "early_trained": float(early(trained).mean()), "late_trained": float(late_t.mean()),
           "trained_rise": float(cols["falls"].mean()), "trained_rise_interval": percentile_interval(boot[:, 0]),
           "p_falls": p_falls,
           # (ii)
           "profile_measured": measured, "tolerance": PROFILE_TOL,
           "profile": prof.mean(1).tolist() if measured else None,
           "profile_growth": float(prof[-1].mean() / prof[0].mean() - 1) if measured else float("nan"),
           "profile_growth_interval": percentile_interval((C @ prof[-1]) / (C @ prof[0]) - 1) if measured else (np.nan,) * 2,
           "profile_nulls": ({**({"shuffled": sh_prof.mean((0, 2)).tolist()} if perms else {}),
                              **{s: null_prof[s][:K].mean(1).tolist() for s in seeds}} if measured else {}),
           "p_profile_growth": float(p["growth"]) if measured else float("nan"),
           "p_profile_nulls": (p_max(top["profile seeds"], *([p["profile shuffled"], top["profile shuffled units"]]
                                                              if perms else [])) if measured else float("nan")),
           "p_stable": p_stable,
           # (iii)
           "late_interval": percentile_interval(t_b), "late_nulls": {n: float(v.mean()) for n, v in late_n.items()},
           "p_level_by_null": {**{n[6:]: float(p[n]) for n in names_ if n.startswith("level ")},
                               **({"shuffled (permutations as units)": top["level shuffled units"]} if perms else {}),
                               "random-init seeds": top["level seeds"]},
           "p_level_passage_nulls": p_max(*[p[n] for n in names_ if n.startswith("level ")],
                                          *([top["level shuffled units"]] if perms else [])),
           "p_level_seeds": top["level seeds"], "p_level": p_level,
           "strongest_null": strongest, "gap_to_strongest": float(late_t.mean() - late_n[strongest].mean()),
           "gap_interval": percentile_interval(t_b - late_n[strongest][idx].mean(1)),
           # the findings beside the verdict (reported, not conditions)
           "passage_null": fixed,
           "early_margin": float((early(passage[fixed]) - early(trained)).mean()),
           "late_margin": float((lately(passage[fixed]) - lately(trained)).mean()),
           "early_passage_null": float(early(passage[fixed]).mean()),
           "late_passage_null": float(lately(passage[fixed]).mean()),
           "shuffled_early_margin": float((early(sh.mean(0)) - early(trained)).mean()) if perms else float("nan"),
           "shuffled_late_margin": float((lately(sh.mean(0)) - lately(trained)).mean()) if perms else float("nan"),
           "advantage_growth": float(cols["advantage"].mean()) if perms else float("nan"),
           "advantage_growth_interval": (percentile_interval(boot[:, names_.index("advantage")]) if perms
                                         else (float("nan"),) * 2),
           "p_advantage": p_adv, "p_share": p_max(*per_step), "p_share_per_step": per_step,
           "n_passages": B, "n_seeds": len(seeds), "n_shuffles": len(perms), "n_boot": n_boot,
           "resamples": resamples, "nonfinite": bad, "verdict": "undefined" if bad else status,
           "_resample_p": again.tolist(), "_skip": () if measured else ("p_stable",)}
    return row


def _t_above(g: np.ndarray) -> np.ndarray:
    """One-sided p that the mean of ``g`` (``(..., k)``: one value per permutation) is above 0: Student's t over
    the ``k`` units (NaN below two)."""
    from scipy.stats import t as student

    k = g.shape[-1]
    if k < 2:
        return np.full(g.shape[:-1], np.nan)
    sd = g.std(-1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = student.sf(g.mean(-1) / (sd / math.sqrt(k)), k - 1)
    return np.where(sd == 0, np.where(g.mean(-1) > 0, 0.0, 1.0), p)


E1_CONDITIONS = (("p_falls", "falls"), ("p_stable", "stable"), ("p_level", "below_nulls"))


def e1_table(reports, metric=E1_METRIC, *, n_boot: int = 1000, seed: int = 0, resamples: int = RESAMPLES) -> list[dict]:
    """E1 on every model of ``reports``: the evidence, Holm-corrected p-values, each model's word, its stability
    and its verdict.

    ``metric`` may be a list: one row per model and metric, the Holm correction across all of them.
    ``n_boot`` is a minimum: the table draws at least :func:`~connlap_lite.measure.stats.draws_for` its family.
    """
    metrics = [metric] if isinstance(metric, str) else list(metric)
    reports = check_reports(reports)
    draws = max(n_boot, draws_for(len(E1_CONDITIONS) * len(reports) * len(metrics), ALPHA))
    rows = [e1_evidence(r, m, n_boot=draws, seed=seed, resamples=resamples) for r in reports for m in metrics]
    _holm_words(rows, E1_CONDITIONS, e1_word)
    for key, p in (("advantage_grows", "p_advantage"), ("shares_structure", "p_share")):   # the findings
        for r, q in zip(rows, holm([r[p] for r in rows])):
            r[p + "_holm"], r[key] = q, None if r["verdict"] == "undefined" else flag(q)
    for r in rows:                                     # rule 3's key for its depth condition, now the finding
        r["deepens"] = r["advantage_grows"]
    return rows


def e1(report, metric: str = E1_METRIC, *, n_boot: int = 1000, seed: int = 0, resamples: int = RESAMPLES) -> dict:
    """E1 on one model (a table of one: Holm over its three conditions)."""
    return e1_table([report], metric, n_boot=n_boot, seed=seed, resamples=resamples)[0]


# ----------------------------------------------------------------------- E2
def value_groups(report, heads: int) -> int:
    """How many value-sharing groups a layer's ``heads`` form (the report's ``groups``, the key-value heads); every
    head its own group where the report does not say, or says something that does not divide ``heads``.

    >>> value_groups({"groups": 3}, 9), value_groups({}, 8), value_groups({"groups": 5}, 8)
    (3, 8, 8)
    """
    g = report.get("groups")
    return g if isinstance(g, int) and not isinstance(g, bool) and g >= 1 and heads % g == 0 else heads


def hierarchical_draws(layers: int, groups: int, n_boot: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The hierarchical bootstrap's indices: ``(n_boot, layers)`` layers drawn with replacement, then for each drawn
    layer ``(n_boot, layers, groups)`` its value-sharing groups drawn with replacement (a group's heads together)."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, layers, (n_boot, layers)), rng.integers(0, groups, (n_boot, layers, groups))


def hierarchical_weights(draws, groups: int) -> np.ndarray:
    """``(n_boot, layers * groups)``: how often each (layer, value group) is drawn in each hierarchical resample
    (:func:`hierarchical_draws`), over ``layers * groups``: ``weights @ group_means.ravel()`` is each resample's
    mean."""
    layer_idx, group_idx = draws
    n, L = layer_idx.shape
    per_slot = (group_idx[..., None] == np.arange(groups)).sum(-2)            # (n_boot, layers, groups)
    W = np.zeros((n, L, groups))
    np.add.at(W, (np.repeat(np.arange(n), L), layer_idx.reshape(-1)), per_slot.reshape(n * L, groups))
    return W.reshape(n, L * groups) / (L * groups)


def hierarchical_means(values: np.ndarray, groups: int, draws) -> np.ndarray:
    """Each hierarchical resample's mean of ``values`` (``(..., layers, heads)``, heads in value-group order, a
    group's heads next to each other): ``(..., n_boot)``.  ``draws``: :func:`hierarchical_draws`, or their
    :func:`hierarchical_weights`.

    >>> a = np.arange(12.0).reshape(3, 4)
    >>> same = (np.tile(np.arange(3), (5, 1)), np.tile(np.arange(2), (5, 3, 1)))   # every layer and group once
    >>> bool(np.allclose(hierarchical_means(a, 2, same), a.mean()))
    True
    """
    W = draws if isinstance(draws, np.ndarray) else hierarchical_weights(draws, groups)
    H = values.shape[-1]
    g = values.reshape(*values.shape[:-1], groups, H // groups).mean(-1)     # (..., layers, groups)
    return g.reshape(*g.shape[:-2], -1) @ W.T


def e2_word(heads, data) -> str:
    """E2's word from its two conditions' flags.

    >>> e2_word(True, True), e2_word(False, True), e2_word(False, False)
    ('holds', 'partly', 'does not hold')
    """
    return "holds" if heads and data else ("partly" if heads or data else "does not hold")


def e2_evidence(report, *, n_boot: int = 1000, seed: int = 0, heads_metric: str = "head_defect",
                resamples: int = RESAMPLES) -> dict:
    """The numbers behind E2 on one model, before the table's multiplicity correction and the stability check.

    ``heads_metric="head_defect_gain"`` is the ablation with the pre-attention norm's gain folded into the
    trained heads (the nulls' gains are one, so their defects are unchanged).
    """
    seeds = random_nulls(report)
    if not seeds:
        raise ValueError(f"report on {report.get('model')!r} has no random-init null: analyze with random_seeds")
    heads = matrix(report, heads_metric, "trained")                    # (layers, heads)
    gaussian = matrix(report, "head_defect_gaussian", "trained")
    seed_heads = np.array([matrix(report, "head_defect", s) for s in seeds])
    L, H = heads.shape
    G = value_groups(report, H)
    hd = hierarchical_weights(hierarchical_draws(L, G, n_boot, seed), G)
    diff = heads - gaussian
    p_gauss = p_win(hierarchical_means(diff, G, hd), L) if L >= 2 else float("nan")
    p_seeds = float(units_p(heads.mean(), seed_heads.mean((1, 2))))
    per_passage = lambda m: matrix(report, m, "trained").mean(0)   # noqa: E731  mean over layers
    data = per_passage("data_defect_nosink")
    cross = [k for k in DATA_SEED_KEYS if k in report["conditions"]["trained"]]
    if not cross:
        raise ValueError(f"report on {report.get('model')!r} has no random-init transports on its inputs "
                         "(data_defect_cross): analyze with random_seeds or data_seeds")
    by_seed = np.array([per_passage(k) for k in cross])            # each data seed's transports, per passage
    gauss_data = per_passage("data_defect_gaussian")
    B = len(data)
    Cd = counts(np.random.default_rng(seed + 1).integers(0, B, (n_boot, B)), B)
    p_data_gauss = float(boot_p((Cd @ (data - gauss_data))[:, None], B)[0])
    p_data_seeds = float(units_p(data.mean(), by_seed.mean(1)))
    # the stability resamples: layers (then groups) for the heads, passages for the data, drawn again
    rng = np.random.default_rng(seed + _UNIT_SALT)
    ol, og = rng.integers(0, L, (resamples, L)), rng.integers(0, G, (resamples, L, G))
    od = rng.integers(0, B, (resamples, B))
    grouped = lambda a: a.reshape(*a.shape[:-1], G, H // G).mean(-1)       # noqa: E731  (..., layers, groups)
    pick = lambda a: grouped(a)[..., ol[:, :, None], og]                    # noqa: E731  (..., resamples, L, G)
    d_r = pick(diff)                                                        # (resamples, layers, groups)
    ph = (boot_p((d_r.reshape(resamples, -1) @ hd.T)[..., None], L)[:, 0] if L >= 2
          else np.full(resamples, np.nan))
    ps = units_p(pick(heads).mean((-1, -2)), pick(seed_heads).mean((-1, -2)).T)
    pdg = boot_p(np.matmul(Cd, (data - gauss_data)[od][..., None]), B)[:, 0]
    pds = units_p(data[od].mean(-1), by_seed[:, od].mean(-1).T)
    mx = lambda a, b: np.where(np.isfinite(a) & np.isfinite(b), np.maximum(a, b), np.nan)   # noqa: E731
    again = np.stack([mx(ph, ps), mx(pdg, pds)], 1).tolist()
    heads_b = hierarchical_means(heads, G, hd)
    data_nulls = {"random-init transports": by_seed.mean(0), "Gaussian transports": gauss_data}
    head_nulls = {"Gaussian heads": gaussian, **dict(zip(seeds, seed_heads))}
    strongest_head = min(head_nulls, key=lambda n: head_nulls[n].mean())
    strongest_data = min(data_nulls, key=lambda n: data_nulls[n].mean())
    used = [("trained", heads_metric), ("trained", "head_defect_gaussian"), *((s, "head_defect") for s in seeds),
            ("trained", "data_defect_nosink"), *(("trained", k) for k in cross), ("trained", "data_defect_gaussian")]
    bad = nonfinite_cells(report, used)
    return {"claim": "E2", "model": report["model"], "rule": E2_RULE, "date": RULE_DATE,
            "head_defect": float(heads.mean()), "head_interval": percentile_interval(heads_b),
            "head_nulls": {n: float(v.mean()) for n, v in head_nulls.items()}, "strongest_head_null": strongest_head,
            "value_groups": G,
            "data_defect": float(data.mean()), "data_interval": percentile_interval(Cd @ data),
            "data_nulls": {n: float(v.mean()) for n, v in data_nulls.items()}, "strongest_data_null": strongest_data,
            "data_seed_nulls": [float(v.mean()) for v in by_seed],
            "p_heads_gaussian": p_gauss, "p_heads_seeds": p_seeds, "p_heads": p_max(p_gauss, p_seeds),
            "p_data_gaussian": p_data_gauss, "p_data_seeds": p_data_seeds, "p_data": p_max(p_data_gauss, p_data_seeds),
            "n_passages": B, "n_layers": L, "n_seeds": len(seeds), "data_null_seeds": len(cross),
            "n_boot": n_boot, "resamples": resamples, "nonfinite": bad, "_resample_p": again,
            "verdict": "undefined" if bad else data_status(report, seeds=min(len(seeds), len(cross)))}


E2_CONDITIONS = (("p_heads", "heads_below_nulls"), ("p_data", "data_below_nulls"))


def e2_table(reports, *, n_boot: int = 1000, seed: int = 0, heads_metric: str = "head_defect",
             resamples: int = RESAMPLES) -> list[dict]:
    """E2 on every model of ``reports``: evidence, Holm-corrected p-values, each model's word, its stability and
    its verdict."""
    reports = check_reports(reports)
    draws = max(n_boot, draws_for(len(E2_CONDITIONS) * len(reports), ALPHA))
    rows = [e2_evidence(r, n_boot=draws, seed=seed, heads_metric=heads_metric, resamples=resamples)
            for r in reports]
    _holm_words(rows, E2_CONDITIONS, e2_word)
    return rows


def e2(report, *, n_boot: int = 1000, seed: int = 0, resamples: int = RESAMPLES) -> dict:
    """E2 on one model (a table of one)."""
    return e2_table([report], n_boot=n_boot, seed=seed, resamples=resamples)[0]


# ----------------------------------------------------------------------- E3
def gap_null(report, metric: str) -> tuple[str, np.ndarray]:
    """The strongest registered null of ``metric`` for E3 and its per-unit late values: the lowest late mean among
    the metric's registered nulls other than the seeds (:data:`connlap_lite.verdicts.record.NULLS`) and the seeds' mean.
    The data defect is ``data_defect_nosink``'s, against E2's nulls: Gaussian transports and the random-init seeds'
    transports (their mean over the data seeds), all on the trained model's inputs; ``data_defect`` (its random-init
    null measured on the random network's own inputs, retired as confounded) is refused."""
    if metric == "data_defect":
        raise ValueError("metric 'data_defect' has no fair null (its random-init null runs on the random network's "
                         "own, collapsing inputs): use 'data_defect_nosink', set against E2's nulls on the same inputs")
    values_of(report, metric)                                  # (an error naming the metrics measured, if not)
    if metric == "data_defect_nosink":
        cross = [k for k in DATA_SEED_KEYS if k in report["conditions"]["trained"]]
        candidates = {"Gaussian transports": np.array(late_value(report, "data_defect_gaussian"))}
        if cross:
            candidates["random-init transports"] = np.mean([late_value(report, k) for k in cross], axis=0)
    else:
        nulls = {n: v for n, v in registered_nulls(report, metric).items() if not n.startswith("random")}
        seeds = random_nulls(report)
        candidates = {n: np.mean(np.array(late(list(v)), dtype=float), axis=0) for n, v in nulls.items()}
        if seeds and all(metric in report["conditions"][s] for s in seeds):
            candidates[SEED_MEAN] = np.mean([late_value(report, metric, s) for s in seeds], axis=0)
    if not candidates:
        raise ValueError(f"report on {report.get('model')!r} has no registered null of {metric!r}: analyze with "
                         "random_seeds and shuffle=True")
    name = min(candidates, key=lambda n: float(np.mean(candidates[n])))
    return name, candidates[name]


def gap(report, metric: str) -> np.ndarray:
    """Per-unit late-layer gap: trained minus the metric's strongest registered null (:func:`gap_null`), paired
    by passage or head."""
    return late_value(report, metric) - gap_null(report, metric)[1]


def row_slopes(x: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Least-squares slope of each row of ``Y`` on ``x``."""
    xc = x - x.mean()
    return (Y - Y.mean(-1, keepdims=True)) @ xc / (xc @ xc)


def leave_one_out(x, y, min_span: float = MIN_SPAN) -> list:
    """The slope of ``y`` on ``x`` without each point in turn; None where the remaining points span less than
    ``min_span`` (decades), which makes a slope of noise.

    >>> [None if v is None else round(v, 3) for v in leave_one_out([8.0, 8.1, 9.0], [0.0, 0.1, 0.3])]
    [0.222, 0.3, None]
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    out = []
    for i in range(len(x)):
        xr, yr = np.delete(x, i), np.delete(y, i)
        out.append(float(row_slopes(xr, yr[None])[0]) if len(xr) >= 2 and np.ptp(xr) >= min_span else None)
    return out


def slope_test(x, y) -> dict:
    """The models as units: the least-squares slope of ``y`` on ``x``, its standard error and one-sided p-values
    (Student's t with ``n - 2`` degrees of freedom) that it is below 0 (``p_down``) and above 0 (``p_up``); NaN below
    three distinct ``x``.

    >>> out = slope_test([8, 9, 10, 11], [0.31, 0.2, 0.11, 0.0])
    >>> round(out["slope"], 3), out["p_down"] < 0.01 < 0.99 < out["p_up"]
    (-0.102, True)
    """
    from scipy.stats import t as student

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n, nan = len(x), float("nan")
    if n < 3 or len(set(np.round(x, 12))) < 3 or not (np.isfinite(x).all() and np.isfinite(y).all()):
        return {"slope": nan, "se": nan, "df": max(n - 2, 0), "p_down": nan, "p_up": nan}
    xc = x - x.mean()
    b = float(xc @ (y - y.mean()) / (xc @ xc))
    resid = y - y.mean() - b * xc
    se = float(math.sqrt(resid @ resid / (n - 2) / (xc @ xc)))
    if se == 0:
        return {"slope": b, "se": 0.0, "df": n - 2, "p_down": float(b >= 0), "p_up": float(b <= 0)}
    t = b / se
    return {"slope": b, "se": se, "df": n - 2, "p_down": float(student.cdf(t, n - 2)),
            "p_up": float(student.sf(t, n - 2))}


def e3(reports, metric: str, *, n_boot: int = 2000, seed: int = 0) -> dict:
    """E3 for one structure's models and one metric: the gap against size, within and across families."""
    reports = check_reports(reports, need=("model", "family", "non_embedding_parameters"))
    bad = [i for i, r in enumerate(reports) if isinstance(r["non_embedding_parameters"], bool) or not
           isinstance(r["non_embedding_parameters"], (int, float, np.number)) or not r["non_embedding_parameters"] > 0]
    if bad:
        raise ValueError(f"reports[{bad[0]}]'s non_embedding_parameters must be positive, got "
                         f"{reports[bad[0]]['non_embedding_parameters']!r}")
    gaps = [gap_null(r, metric) for r in reports]
    samples = [late_value(r, metric) - g for r, (_, g) in zip(reports, gaps)]
    rng = np.random.default_rng(seed)
    boots = np.stack([s[rng.integers(0, len(s), (n_boot, len(s)))].mean(1) for s in samples], 1)  # (n_boot, models)
    x = np.log10([r["non_embedding_parameters"] for r in reports])
    y = np.array([s.mean() for s in samples])
    models = [{"model": r["model"], "family": r["family"], "x": float(xi), "gap": float(yi), "null": g[0],
               "interval": percentile_interval(boots[:, i]), "layers": r.get("layers"), "heads": r.get("heads"),
               "groups": r.get("groups"), "d": r.get("d"), "passages": r.get("passages"),
               "status": "undefined" if not np.isfinite(samples[i]).all() else data_status(r)}
              for i, (r, xi, yi, g) in enumerate(zip(reports, x, y, gaps))]
    families: dict[str, list[int]] = {}
    for i, r in enumerate(reports):
        families.setdefault(r["family"], []).append(i)
    within, steps = {}, []
    for fam, ix in families.items():
        sizes = sorted(ix, key=lambda i: x[i])
        if len({round(x[i], 6) for i in ix}) >= 3:
            test = slope_test(x[sizes], y[sizes])
            loo = leave_one_out(x[sizes], y[sizes])
            computed = [v for v in loo if v is not None]
            status = {models[i]["status"] for i in sizes} - {None}
            down = test["p_down"] < ALPHA and bool(computed) and all(v < 0 for v in computed)
            up = test["p_up"] < ALPHA and bool(computed) and all(v > 0 for v in computed)
            verdict = ("undefined" if "undefined" in status or not math.isfinite(test["slope"]) else
                       "insufficient data" if status else "holds" if down else "does not hold" if up
                       else "inconclusive")
            within[fam] = {"slope": test["slope"], "se": test["se"], "df": test["df"], "p_down": test["p_down"],
                           "p_up": test["p_up"], "interval": percentile_interval(row_slopes(x[sizes], boots[:, sizes])),
                           "leave_one_out": loo, "signs_agree": bool(computed) and len({v < 0 for v in computed}) == 1
                           and (computed[0] < 0) == (test["slope"] < 0), "verdict": verdict}
        for a, b in zip(sizes, sizes[1:]):
            d = boots[:, b] - boots[:, a]
            steps.append({"family": fam, "from": reports[a]["model"], "to": reports[b]["model"],
                          "change": float(y[b] - y[a]), "interval": percentile_interval(d)})
    verdicts = {w["verdict"] for w in within.values()}
    verdict = "not testable" if not verdicts else verdicts.pop() if len(verdicts) == 1 else "partly"
    across = None
    if len(reports) >= 3 and len(set(np.round(x, 6))) >= 2:
        loo = leave_one_out(x, y)
        across = {"slope": float(row_slopes(x, y[None])[0]), "interval": percentile_interval(row_slopes(x, boots)),
                  "leave_one_out": {r["model"]: v for r, v in zip(reports, loo)}}
    return {"claim": "E3", "metric": metric, "rule": RULE, "date": RULE_DATE, "n_models": len(reports),
            "models": models, "within": within, "steps": steps, "across": across, "verdict": verdict}


# ----------------------------------------------------------------------- robustness
def resample(report, idx) -> Report:
    """A copy of ``report`` with its passages replaced by ``idx`` (in every condition, so pairs stay paired)."""
    idx = list(idx)
    out = {**report, "conditions": {}, **({"passages": len(idx)} if "passages" in report else {})}
    for cond, values in report["conditions"].items():
        out["conditions"][cond] = {m: ([[v[i] for i in idx] for v in per_layer] if m in PASSAGE_METRICS else per_layer)
                                   for m, per_layer in values.items()}
    return Report(out, name="the resampled report")


def substitute(report, trained) -> Report:
    """``report`` with its trained condition taken from ``trained`` (an ablation measured on the same passages,
    e.g. ``analyze(..., q4=True)``); the nulls stay ``report``'s.

    The two must be reports on the same model, setting and text spans: the same corpus (its digest) and the same
    passage windows (``windows``, which toggling the BOS token keeps; :func:`connlap_lite.models.text.windows`), else
    the ablated passages would be paired with other passages' nulls.  The ablation's own sink columns come with
    its trained condition (``sink_columns``); where its sink-mass columns differ from ``report``'s, the nulls'
    ``sink`` (measured on ``report``'s columns) is left out rather than set beside a mass on other tokens."""
    keys = ("model", "passages", "tokens", "seed", "corpus", "corpus_digest")
    differ = [k for k in keys if report.get(k) != trained.get(k)]
    if "windows" not in report or "windows" not in trained:
        differ.append("windows (one of them does not say which passages it measured: re-measure it)")
    elif report["windows"] != trained["windows"]:
        differ.append("windows")
    if differ or "trained" not in trained.get("conditions", {}):
        raise ValueError(f"trained must be a report on the same model and passages as report, with a 'trained' "
                         f"condition; they differ in {differ or ['conditions']}")
    conditions = {**report["conditions"], "trained": trained["conditions"]["trained"]}
    if report.get("sink_mass_columns") != trained.get("sink_mass_columns"):
        conditions = {c: (v if c == "trained" else {m: x for m, x in v.items() if m != "sink"})
                      for c, v in conditions.items()}
    out = {**report, "conditions": conditions, "sink_mass_columns": trained.get("sink_mass_columns")}
    if "sink_columns" in report and "sink_columns" in trained:
        out["sink_columns"] = {**report["sink_columns"], "trained": trained["sink_columns"]["trained"]}
    return Report(out, name="the substituted report")

