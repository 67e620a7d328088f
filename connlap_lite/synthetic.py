"""Synthetic measurement records whose answer is known: the rules' size and power are measured on them.

Every value is drawn from a stated distribution (numpy's generator, vectorised), so a test can say how
often a rule answers "holds" when the effect is there (power) and when it is not (size):

``record(...)``     one model's record: E1's curve and its nulls, E2's heads and data defects, with the
                    effects ``e1_early``/``e1_late`` (trained below its strongest passage null at the first and
                    last step), ``heads`` and ``data`` (trained below the Gaussian nulls), ``seed_gap``
                    (the random-init seeds above the trained model, in units of the seeds' spread) and
                    ``data_seed_level`` (where three seeds' transports put E2's data null, each seed shifted);
``ladder(...)``     one family's records at several sizes, the E3 gap moving by ``slope`` per decade of
                    non-embedding parameters, with a between-model spread ``model_sd``;
``statement(...)``  per-passage differences for the known-results statements: mean ``effect``, unit spread.

The model of a value: ``mean + passage effect + noise``, the passage effect shared by every condition
measured on that passage (``tau``), so that trained and nulls are paired as in a real record; each
random-init seed adds its own shift (``seed_sd``) to every value it measures.

>>> r = record(seed=0)
>>> sorted(r["conditions"])[:3], r["passages"], r["layers"]
(['random0', 'random1', 'random2'], 16, 12)

Chapters: none (the tests' instrument).
"""
from __future__ import annotations

import numpy as np

NOISE = 0.05        # per-passage noise of a walk metric at one step
TAU = 0.05          # the passage effect shared by every condition on that passage
HEAD_NOISE = 0.02   # per-head noise of a head defect
DATA_SEED_SD = 0.002   # the spread of E2's data null between random-init seeds (their transports on the same inputs)


def record(*, model: str = "m", layers: int = 12, passages: int = 16, heads: int = 8, seeds: int = 5,
           e1_early: float = 0.0, e1_late: float = 0.0, heads_effect: float = 0.0, data_effect: float = 0.0,
           seed_gap: float = 20.0, seed_sd: float = 0.01, nan_at: tuple | None = None, family: str = "llama",
           size: float = 1e8, encoder: bool = False, seed: int = 0, gap_shift: float = 0.0,
           trained_sd: float = 0.0, data_seed_level: float = 0.1, data_seed_sd: float = DATA_SEED_SD) -> dict:
    """One model's synthetic record (the shape :func:`connlap_lite.analysis.analyze` writes).

    E1 (``tv_norm_nosink``, ``layers - 1`` steps): the strongest passage null ("positional") has mean 1.0 at
    every step, the cross-passage and shuffled nulls 1.05 and 1.1; the trained curve sits ``e1_early`` below
    the strongest null at the first step and ``e1_late`` at the last (linear between), plus ``gap_shift``.
    Each seed's curve is the trained curve's mean at the last step plus ``seed_gap * seed_sd`` plus the seed's
    own shift ``N(0, seed_sd)``.  E2: Gaussian heads 0.3, trained heads ``0.3 - heads_effect``; seeds
    ``0.3 + seed_gap * seed_sd`` plus their shift; data defects 0.1, trained ``0.1 - data_effect``, their
    passage effect and noise scaled by 0.2.
    ``trained_sd``: the trained curve and heads get a shift ``N(0, trained_sd)`` of their own (with
    ``seed_gap=0`` and ``trained_sd=seed_sd`` the trained model is one more draw of the seeds' distribution).
    ``nan_at``: ``(condition, metric, layer)`` set to NaN.
    E2's data null from three random-init seeds' transports (``data_defect_cross``, ``_2``, ``_3``, as many as
    there are seeds, up to three): each at ``data_seed_level`` plus the seed's own shift ``N(0, data_seed_sd)``;
    the trained data defect carries the trained model's shift ``N(0, trained_sd)`` too (with ``data_seed_level``
    equal to ``0.1 - data_effect`` and ``trained_sd=data_seed_sd`` the trained model is one more seed).
    """
    rng = np.random.default_rng(seed)
    S = layers - 1
    u = TAU * rng.standard_normal(passages)                                  # the shared passage effect

    def curve(mean, scale=1.0):                                              # (len(mean), passages)
        mean = np.asarray(mean, dtype=float)[:, None]
        return mean + scale * (u[None, :] + NOISE * rng.standard_normal((len(mean), passages)))

    def per_head(mean):
        return mean + HEAD_NOISE * rng.standard_normal((layers, heads))

    effect = np.linspace(e1_early, e1_late, S)
    seed_level = float(1.0 - effect[-1] + gap_shift) + seed_gap * seed_sd
    own = trained_sd * rng.standard_normal()
    trained_mean = 1.0 - effect + gap_shift + own
    trained = {"tv_norm_nosink": curve(trained_mean),
               "positional_tv_norm_nosink": curve(np.full(S, 1.0)),
               "cross_passage_tv_norm_nosink": curve(np.full(S, 1.05)),
               "head_defect": per_head(0.3 - heads_effect + own), "head_defect_gaussian": per_head(0.3),
               "data_defect": curve(np.full(layers, 0.1 - data_effect), 0.2),
               "data_defect_nosink": curve(np.full(layers, 0.1 - data_effect + own), 0.2),
               "data_defect_cross": curve(np.full(layers, 0.1), 0.2),
               "data_defect_gaussian": curve(np.full(layers, 0.1), 0.2)}
    conditions = {"trained": trained, "shuffled": {"tv_norm_nosink": curve(np.full(S, 1.1))}}
    for s in range(seeds):
        shift = seed_sd * rng.standard_normal()
        conditions[f"random{s}"] = {"tv_norm_nosink": curve(np.full(S, seed_level + shift)),
                                    "head_defect": per_head(0.3 + seed_gap * seed_sd + shift),
                                    "data_defect": curve(np.full(layers, 0.1 + seed_gap * seed_sd + shift), 0.2)}
    for key in ("data_defect_cross", "data_defect_cross_2", "data_defect_cross_3")[:seeds]:
        trained[key] = curve(np.full(layers, data_seed_level + data_seed_sd * rng.standard_normal()), 0.2)
    conditions = {c: {m: v.tolist() for m, v in values.items()} for c, values in conditions.items()}
    if nan_at is not None:
        cond, metric, layer = nan_at
        conditions[cond][metric][layer] = [float("nan")] * len(conditions[cond][metric][layer])
    return {"model": model, "family": family, "encoder": encoder, "layers": layers, "passages": passages,
            "heads": heads, "parameters": size * 1.3, "non_embedding_parameters": size, "conditions": conditions}


def ladder(*, sizes=(1e8, 3e8, 1e9, 3e9, 1e10), slope: float = 0.0, model_sd: float = 0.0, seed: int = 0,
           family: str = "llama", **kw) -> list[dict]:
    """One family's records at ``sizes``: the late E1 gap to the strongest null is ``slope`` per decade of
    non-embedding parameters plus a between-model shift ``N(0, model_sd)`` (what passages cannot see)."""
    rng = np.random.default_rng(seed)
    x = np.log10(sizes)
    shifts = slope * (x - x.mean()) + model_sd * rng.standard_normal(len(sizes))
    return [record(model=f"{family}{i}", family=family, size=s, gap_shift=float(g), seed=seed * 1000 + i,
                   e1_early=0.1, e1_late=0.1, **kw) for i, (s, g) in enumerate(zip(sizes, shifts))]


def statement(*, effect: float = 0.0, passages: int = 16, draws: int = 1, seed: int = 0) -> np.ndarray:
    """``(draws, passages)`` per-passage differences with mean ``effect`` and unit spread."""
    return effect + np.random.default_rng(seed).standard_normal((draws, passages))
