"""Synthetic known-results reports whose answer is known: the statements' rules' size and power are measured on
them (``tests/verdicts/test_rules.py``), and the chapter's paragraphs are tested on them (``tests/pages/test_findings.py``).

``report(...)``     one model's report in the shape :func:`connlap_lite.known.known_results` returns, each published
                    statement holding by a stated margin (``effect``, in units of :data:`SPREAD`) or not at all;
``statement(...)``  per-passage differences with mean ``effect`` and unit spread.

Chapters: none (the tests' instrument).
"""
from __future__ import annotations

import numpy as np


def statement(*, effect: float = 0.0, passages: int = 16, draws: int = 1, seed: int = 0) -> np.ndarray:
    """``(draws, passages)`` per-passage differences with mean ``effect`` and unit spread."""
    return effect + np.random.default_rng(seed).standard_normal((draws, passages))


SPREAD = 0.01   # per-passage spread of each known-results difference the rule tests


def report(*, effect: float = 0.0, effects: dict | None = None, passages: int = 8, layers: int = 6,
           encoder: bool = True, absolute_positions: bool = False, seeds: int = 5, nan: str | None = None,
           model: str = "m", seed: int = 0) -> dict:
    """One model's synthetic known-results report (the shape :func:`connlap_lite.known.known_results` returns,
    without ``verdicts``), each published statement holding by a stated margin or not at all.

    ``effect`` (or ``effects[key]`` for statement ``key`` of :data:`connlap_lite.known.STATEMENTS`) in units of
    :data:`SPREAD`, the per-passage spread ``s`` of what the rule tests:

    - ``sink_order``: sink rates repeated ``0.3 + N(0, s)``, random that plus ``effect * s + N(0, s)``, natural
      random's plus the same again (each step ``effect`` spreads);
    - ``sink_repeated`` and ``proposition`` (exact statements): with ``effect > 0`` the repeated-token sink rate
      is exactly 0 (its latent 0.3 still sets the other rates) and the states differ by float rounding (1e-7),
      else the rate is the latent one and the states differ by 0.05;
    - ``clark_sep``: the middle layers' [SEP] mass ``0.5 + effect * s + N(0, s)``;
    - ``kobayashi_norm``: half the attention-weighted sink mass minus the norm-weighted one;
    - ``dong_walks``: ``COLLAPSE`` times the embeddings' residual minus the walks' last one; ``dong_skip``: the
      last states' residual minus ``COLLAPSE`` times the embeddings';
    - ``sinkformer``: the column-sum defect of ``seeds`` random-init seeds (``random0`` ...) is ``0.4`` plus a
      passage effect ``N(0, s)`` shared by every condition, the seed's own shift ``N(0, s)`` and noise
      ``N(0, s)``; the trained model's is ``effect * s`` below ``0.4`` plus its own shift ``N(0, s)``, the
      passage effect and noise (with ``effect`` 0 the trained model is one more seed);
    - ``reuse``: layers two apart minus adjacent (head-matched), and the cross-passage null minus the passage's
      own ``tv_norm``, each ``effect * s + N(0, s)``; ``effects["reuse"]`` may be a pair, one per part.

    Each quantity is the same at every layer it is averaged over.  ``nan``: a statement key whose quantity is
    NaN in the first passage.  ``passages`` below 8 or ``seeds`` below 3: the rule's "insufficient data".

    >>> r = report(seed=0)
    >>> sorted(r["conditions"]), r["passages"], len(r["conditions"]["trained"]["natural"]["tv_norm_cross"])
    (['random0', 'random1', 'random2', 'random3', 'random4', 'trained'], 8, 5)
    """
    from .statements import COLLAPSE, STATEMENTS

    effects = {**{k: effect for k in STATEMENTS}, **(effects or {})}
    unknown = sorted(set(effects) - set(STATEMENTS))
    if unknown or (nan is not None and nan not in STATEMENTS):
        raise ValueError(f"effects and nan must name statements of connlap_lite.known.STATEMENTS "
                         f"{sorted(STATEMENTS)}, got {unknown or nan!r}")
    rng = np.random.default_rng(seed)
    s, B, L = SPREAD, passages, layers
    reuse = effects["reuse"] if isinstance(effects["reuse"], (tuple, list)) else (effects["reuse"],) * 2

    def z(n=None):
        return rng.standard_normal(B if n is None else (n, B))

    def per_layer(v, n=L):                                    # the same value at every layer: (n, B)
        return np.repeat(np.asarray(v, dtype=float)[None, :], n, axis=0)

    def condition(d: dict) -> dict:
        latent = 0.3 + s * z()
        random = latent + d["sink_order"] * s + s * z()
        natural = random + d["sink_order"] * s + s * z()
        exact = d["sink_repeated"] > 0
        spread = np.abs(1e-7 * z(L + 1)) if d["proposition"] > 0 else 0.05 + 0.01 * np.abs(z(L + 1))
        weight = 0.6 + s * z()
        x0 = 0.9 + s * z()
        last_walk = COLLAPSE * x0 - d["dong_walks"] * s - s * z()
        last_state = COLLAPSE * x0 + d["dong_skip"] * s + s * z()
        t = np.linspace(0, 1, L + 1)[:, None]
        adjacent, own = 0.3 + s * z(), 0.6 + s * z()
        nat = {"rate": natural, "mass_first": per_layer(0.2 + s * z()),
               "mass_last": per_layer(0.5 + d["clark_sep"] * s + s * z()), "mass_sinks": per_layer(weight),
               "norm_first": per_layer(0.1 + s * z()), "norm_last": per_layer(0.1 + s * z()),
               "norm_sinks": per_layer(0.5 * weight - d["kobayashi_norm"] * s - s * z()),
               "walk_residual": (1 - t) * x0 + t * last_walk, "walk_spread": (1 - t) * 2.0 + t * 0.5 + 0 * z(),
               "state_residual": (1 - t) * x0 + t * last_state,
               "tv": per_layer(0.2 + s * z(), L - 1), "tv_norm": per_layer(own, L - 1),
               "tv_norm_cross": per_layer(own + d["reuse"][1] * s + s * z(), L - 1),
               "head_tv": per_layer(adjacent, L - 1), "tv2": per_layer(0.3 + s * z(), L - 2),
               "tv_norm2": per_layer(0.8 + s * z(), L - 2),
               "head_tv2": per_layer(adjacent + d["reuse"][0] * s + s * z(), L - 2)}
        return {"natural": nat, "random": {"rate": random},
                "repeated": {"rate": np.zeros(B) if exact else latent, "spread": spread}}

    none = {**{k: 0.0 for k in STATEMENTS}, "reuse": (0.0, 0.0)}
    conditions = {"trained": condition({**effects, "reuse": reuse}), "random0": condition(none)}
    u = s * z()                                                    # the passage effect on the column defects
    for k in range(seeds):
        defect = per_layer(0.4 + u + s * rng.standard_normal() + s * z())
        if k:
            conditions[f"random{k}"] = {"natural": {"column_defect": defect, "column_defect_nosink": 0.5 * defect}}
        else:
            conditions["random0"]["natural"].update(column_defect=defect, column_defect_nosink=0.5 * defect)
    own = per_layer(0.4 - effects["sinkformer"] * s + u + s * rng.standard_normal() + s * z())
    conditions["trained"]["natural"].update(column_defect=own, column_defect_nosink=0.5 * own)
    if nan is not None:
        where = {"sink_order": ("natural", "rate"), "sink_repeated": ("repeated", "rate"),
                 "proposition": ("repeated", "spread"), "clark_sep": ("natural", "mass_last"),
                 "kobayashi_norm": ("natural", "norm_sinks"), "dong_walks": ("natural", "walk_residual"),
                 "dong_skip": ("natural", "state_residual"), "sinkformer": ("natural", "column_defect"),
                 "reuse": ("natural", "tv_norm_cross")}[nan]
        v = conditions["trained"][where[0]][where[1]]
        v[..., 0] = np.nan
    for values in conditions.values():
        for group in values.values():
            for key, v in group.items():
                group[key] = np.asarray(v, dtype=float).tolist()
    return {"model": model, "family": "synthetic", "encoder": encoder, "absolute_positions": absolute_positions,
            "layers": L, "heads": 12, "passages": B, "tokens": 64, "seed": seed, "eps": 0.3, "main": "trained",
            "conditions": conditions}
