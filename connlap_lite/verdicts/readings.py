"""The rival readings' registered rules (dated 2026-12-04): which reading of attention a model's report supports.

Registered before any rival measure of the book's models was read through them (the issue that asked for them
quoted first tries of the ablation costs and update ratios on make test's passages; the thresholds below were
fixed from the published readings, not from those numbers).  Each rule reads a report's rival measures
(:data:`connlap_lite.verdicts.record.RIVAL_METRICS`) and answers in the verdict vocabulary (:data:`connlap_lite.verdicts.words.VERDICTS`):

``where_it_matters(report)``  "layers that write little" (He et al. 2024): E1 stated also on the steps whose two
                              layers matter (zero-ablating each costs at least :data:`MATTERS`), and whether E1's
                              margin is larger on the layers that write little than on those that matter
                              (the rival's prediction);
``dominance(report)``         "a dominant direction, the opposite of an isometry": each head's spectral dominance
                              ``sigma_1^2 / sum sigma^2`` against the Gaussian and rotated heads, and the states'
                              alignment with each layer's top ``W_O W_V`` direction against random init;
``self_loop(report)``         "the self-loop grows with depth": the self-loop share (sinks set aside) above the
                              uniform walk's and the random-init seeds', and its margin growing from the first to the
                              last third of the layers.

:data:`RULES` names each rule with its date and statement; :func:`frozen` gives them in the form the frozen-rule
digest mechanism reads (a name, a date, the statement and the source of the function), for it to freeze.
Every test is one-sided at :data:`connlap_lite.verdicts.words.ALPHA`; passages are resampled (a paired bootstrap,
widened for few passages), heads within resampled layers, and the random-init seeds are the seed test's units.
Their size and power are measured on synthetic records at the book's sample sizes (``tests/verdicts/test_readings.py``).

Chapters: *E1*, *E2*, *Beyond*.
"""
from __future__ import annotations

import inspect

import numpy as np

from .record import late, matrix, random_nulls, registered_nulls, third
from ..measure.stats import unit_draws, p_win, holm, seed_p
from .words import ALPHA, check_report, combine, data_status, flag

DATE = "2026-12-04"
# A layer "matters" when zero-ablating its attention costs at least this much: 0.05 nats of next-token loss
# (a 5% rise in perplexity) for a decoder; a 5% mean relative change of the final representations for an encoder.
MATTERS = {"decoder": 0.05, "encoder": 0.05}
MIN_STEPS = 2          # fewer steps between layers that matter: "not testable"
E1_METRIC = "tv_norm_nosink"


def _kind(report) -> str:
    return "encoder" if report.get("encoder") else "decoder"


def mattering_layers(report, threshold: float | None = None) -> list[int]:
    """The layers whose zero-ablation cost (the mean over passages) is at least ``threshold`` (default
    :data:`MATTERS` for the report's kind).

    >>> mattering_layers({"encoder": False, "conditions": {"trained": {"ablation_zero": [[0.2, 0.3], [0.01, 0.0],
    ...                                                                                  [0.06, 0.04]]}}})
    [0, 2]
    """
    threshold = MATTERS[_kind(report)] if threshold is None else threshold
    costs = [float(np.mean(v)) for v in report["conditions"]["trained"]["ablation_zero"]]
    return [l for l, c in enumerate(costs) if c >= threshold]


def _passage_nulls(report, metric: str) -> list[np.ndarray]:
    return [v for n, v in registered_nulls(report, metric).items() if not n.startswith("random")]


def _margin_draws(report, steps: list[int], idx: np.ndarray) -> np.ndarray:
    """Per bootstrap draw, the strongest passage null minus the trained distance, averaged over ``steps``."""
    trained = matrix(report, E1_METRIC)[steps]
    nulls = np.stack([v[steps] for v in _passage_nulls(report, E1_METRIC)])       # (nulls, steps, passages)
    t = trained[:, idx].mean(-1).mean(0)                                          # (n_boot,)
    lowest = nulls[:, :, idx].mean(-1).mean(1).min(0)                             # the strongest null, per draw
    return lowest - t


def where_it_matters(report, *, threshold: float | None = None, n_boot: int = 2000, seed: int = 0) -> dict:
    """Rule "layers that write little" (2026-12-04), on one report.

    ``matters``: E1's margin (the strongest passage null minus the trained consecutive-layer distance, sinks set
    aside) is positive on the steps whose two layers matter (:func:`mattering_layers`): one-sided paired passage
    bootstrap.  ``rival``: that margin is larger on the steps whose layers do not both matter than on those that
    do (the rival reading: "stable" layers are those that write little).  The two p-values are Holm-corrected
    together.  ``verdict`` answers E1 where ablation matters ("holds", "does not hold"), ``reading`` the rival
    ("supported", "not supported"); "not testable" with fewer than :data:`MIN_STEPS` steps on either side.
    """
    report = check_report(report, need=("model", "layers", "passages"))
    out = {"rule": "where_it_matters", "date": DATE, "model": report["model"],
           "threshold": MATTERS[_kind(report)] if threshold is None else threshold}
    layers = mattering_layers(report, out["threshold"])
    steps = [l for l in range(report["layers"] - 1) if l in layers and l + 1 in layers]
    rest = [l for l in range(report["layers"] - 1) if l not in steps]
    out.update(layers=layers, steps=steps, other_steps=rest)
    status = data_status(report)
    if status:
        return {**out, "verdict": status, "reading": status}
    if len(steps) < MIN_STEPS:
        return {**out, "verdict": "not testable", "reading": "not testable", "p": float("nan"),
                "p_rival": float("nan")}
    B = report["passages"]
    idx = unit_draws(B, n_boot, seed)
    here = _margin_draws(report, steps, idx)
    p = p_win(-here, B)
    p_rival = float("nan")
    if len(rest) >= MIN_STEPS:
        p_rival = p_win(here - _margin_draws(report, rest, idx), B)
        p, p_rival = holm([p, p_rival])
    out.update(margin=float(np.mean(here)), p=p, p_rival=p_rival)
    verdict = {True: "holds", False: "does not hold", None: "undefined"}[flag(p)]
    rival = flag(p_rival)
    reading = "not testable" if len(rest) < MIN_STEPS else {True: "supported", False: "not supported",
                                                            None: "undefined"}[rival]
    return {**out, "verdict": verdict, "reading": reading}


def _head_draws(a: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """The mean of a ``(layers, heads)`` array per draw: layers resampled, then heads within each."""
    rng = np.random.default_rng(seed)
    L, H = a.shape
    rows = rng.integers(0, L, (n_boot, L))
    cols = rng.integers(0, H, (n_boot, L, H))
    return a[rows[..., None], cols].mean((1, 2))


def dominance(report, *, n_boot: int = 2000, seed: int = 0) -> dict:
    """Rule "dominant direction vs isometry" (2026-12-04), on one report.

    The head dominance over every layer against each head null (Gaussian, rotated; trained minus null per draw,
    layers then heads resampled, the same draws for both, widened for few layers as
    :func:`connlap_lite.measure.stats.expansion` says): ``above`` where it exceeds both (Holm over the four
    one-sided p-values of this rule), ``below`` where it is under both.  The states' alignment with each
    layer's top ``W_O W_V`` direction (late third) against the random-init seeds' (:func:`connlap_lite.measure.stats.seed_p`,
    the seeds as units).  ``reading``: "dominant direction" (dominance above both head nulls and the alignment
    above random init), "towards isometry" (dominance below both), else "neither".
    """
    report = check_report(report, need=("model", "layers"))
    out = {"rule": "dominance", "date": DATE, "model": report["model"]}
    seeds = [s for s in random_nulls(report) if "state_alignment" in report["conditions"][s]]
    status = data_status(report, seeds=len(seeds))
    if status:
        return {**out, "reading": status}
    trained = _head_draws(matrix(report, "head_dominance"), n_boot, seed)
    nulls = {n: _head_draws(matrix(report, k, c), n_boot, seed)
             for n, (c, k) in (("Gaussian heads", ("trained", "head_dominance_gaussian")),
                               ("rotated heads", ("trained", "head_dominance_rotation")))}
    L = report["layers"]
    p_above = [p_win(v - trained, L) for v in nulls.values()]
    p_below = [p_win(trained - v, L) for v in nulls.values()]
    late_t = float(np.mean(late(matrix(report, "state_alignment"))))
    late_s = [float(np.mean(late(matrix(report, "state_alignment", s)))) for s in seeds]
    p_align = seed_p(-late_t, [-v for v in late_s])                                  # trained above the seeds
    adjusted = holm(p_above + p_below + [p_align])
    above, below = all(flag(p) for p in adjusted[:2]), all(flag(p) for p in adjusted[2:4])
    aligned = flag(adjusted[4])
    out.update(dominance=float(matrix(report, "head_dominance").mean()),
               nulls={n: float(v.mean()) for n, v in nulls.items()}, p_above=adjusted[:2], p_below=adjusted[2:4],
               alignment=late_t, alignment_seeds=late_s, p_alignment=adjusted[4])
    if any(not np.isfinite(p) for p in adjusted):
        return {**out, "reading": "undefined"}
    reading = "dominant direction" if above and aligned else "towards isometry" if below else "neither"
    return {**out, "above": above, "below": below, "aligned": aligned, "reading": reading}


def self_loop(report, *, n_boot: int = 2000, seed: int = 0) -> dict:
    """Rule "the self-loop grows with depth" (2026-12-04), on one report.

    ``level``: the late-third self-loop share (sinks set aside) above the uniform walk's (paired passage
    bootstrap) and above the random-init seeds' (:func:`connlap_lite.measure.stats.seed_p`); ``growth``: its margin over
    the uniform walk larger in the last third of the layers than in the first (paired passage bootstrap).  The
    three p-values Holm-corrected together; ``verdict`` from the two flags (:func:`connlap_lite.verdicts.words.combine`).
    """
    report = check_report(report, need=("model", "layers", "passages"))
    out = {"rule": "self_loop", "date": DATE, "model": report["model"]}
    seeds = [s for s in random_nulls(report) if "self_loop_nosink" in report["conditions"][s]]
    status = data_status(report, seeds=len(seeds))
    if status:
        return {**out, "verdict": status}
    t, u = matrix(report, "self_loop_nosink"), matrix(report, "self_loop_uniform")
    B, k = t.shape[1], third(len(t))
    idx = unit_draws(B, n_boot, seed)
    margin = (t - u)[:, idx].mean(-1)                                               # (layers, n_boot)
    late_m, early_m = margin[-k:].mean(0), margin[:k].mean(0)
    p_uniform = p_win(-late_m, B)
    late_t = float(t[-k:].mean())
    late_s = [float(matrix(report, "self_loop_nosink", s)[-k:].mean()) for s in seeds]
    p_seeds = seed_p(-late_t, [-v for v in late_s])
    p_growth = p_win(early_m - late_m, B) if len(t) >= 2 else float("nan")
    p_uniform, p_seeds, p_growth = holm([p_uniform, p_seeds, p_growth])
    level = None if flag(p_uniform) is None or flag(p_seeds) is None else flag(p_uniform) and flag(p_seeds)
    out.update(late=late_t, uniform=float(u[-k:].mean()), seeds=late_s, early_margin=float(early_m.mean()),
               late_margin=float(late_m.mean()), p_uniform=p_uniform, p_seeds=p_seeds, p_growth=p_growth,
               level=level, growth=flag(p_growth))
    return {**out, "verdict": combine(level, flag(p_growth))}


RULES = {
    "where_it_matters": (DATE, "E1 on the steps whose two layers matter (zero-ablation cost >= MATTERS); the rival "
                               "'layers that write little' when E1's margin is larger on the other steps", where_it_matters),
    "dominance": (DATE, "head dominance sigma_1^2/sum sigma^2 above the Gaussian and rotated heads, and the states' "
                        "alignment with the top W_O W_V direction above random init", dominance),
    "self_loop": (DATE, "the self-loop share above the uniform walk and random init, its margin growing with depth",
                  self_loop),
}


def frozen() -> list[dict]:
    """The rules as a frozen-rule registry reads them: name, date, statement, the source of the function, of the
    helpers it calls and of the constants it reads (what a digest is taken of: ``tests/verdicts/test_readings.py`` pins it).

    >>> [r["name"] for r in frozen()], frozen()[0]["date"]
    (['where_it_matters', 'dominance', 'self_loop'], '2026-12-04')
    """
    constants = f"MATTERS = {MATTERS!r}; MIN_STEPS = {MIN_STEPS}; ALPHA = {ALPHA}; E1_METRIC = {E1_METRIC!r}"
    helpers = "".join(inspect.getsource(f) for f in (_kind, mattering_layers, _passage_nulls, _margin_draws,
                                                     _head_draws))
    return [{"name": name, "date": date, "statement": statement, "constants": constants,
             "source": inspect.getsource(rule), "helpers": helpers} for name, (date, statement, rule) in RULES.items()]
