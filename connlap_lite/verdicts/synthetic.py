"""Synthetic measurement records whose answer is known: the rules' size and power are measured on them.

Every value is drawn from a stated distribution (numpy's generator, vectorised), so a test can say how
often a rule answers "holds" when the effect is there (power) and when it is not (size):

``record(...)``     one model's record: E1's curve and its nulls, E2's heads and data defects, with the
                    effects ``e1_early``/``e1_late`` (trained below its strongest passage null at the first and
                    last step), ``heads`` and ``data`` (trained below the Gaussian nulls), ``seed_gap``
                    (the random-init seeds above the trained model, in units of the seeds' spread) and
                    ``data_seed_level`` (where three seeds' transports put E2's data null, each seed shifted);
``ladder(...)``     one family's records at several sizes, the E3 gap moving by ``slope`` per decade of
                    non-embedding parameters, with a between-model spread ``model_sd``.
The known results' synthetic reports are :mod:`connlap_lite.known.synthetic`'s.

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
           trained_sd: float = 0.0, data_seed_level: float = 0.1, data_seed_sd: float = DATA_SEED_SD,
           shuffles: int = 5, shuffle_sd: float = 0.01, trained_rise: float = 0.0, null_rise: float = 0.0,
           null_noise: tuple = (1.0, 1.0), profile_growth: float = 0.0, null_profile_growth: float = 0.0,
           outlier: float = 0.0, layer_sd: float = 0.0, group_sd: float = 0.0, groups: int | None = None,
           null_gap: float = 0.05) -> dict:
    """One model's synthetic record (the shape :func:`connlap_lite.measure.analysis.analyze` writes).

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

    The depth cases of E1's rule 4 (each a line over the steps, ``t`` from 0 at the first step to 1 at the last):
    ``trained_rise`` is added to the trained curve times ``t``, ``null_rise`` to every passage-level null's (shuffled,
    cross-passage, positional), whose per-passage noise is ``NOISE`` times a factor going from ``null_noise[0]`` at the
    first step to ``null_noise[1]`` at the last, and which lie ``null_gap`` apart (positional 1.0, cross-passage
    ``1 + null_gap``, shuffled ``1 + 2 null_gap``, before the rise); ``outlier`` is added times ``t`` to the first
    passage's trained
    curve alone.  The shuffled null has ``shuffles`` permutations (``shuffled``, ``shuffled1``, ...), each shifted by
    its own ``N(0, shuffle_sd)``.  The separation profile (``sep<k>_tv_norm_nosink``, k = 2..4) of the trained model,
    every permutation and every seed: d(l, l + k) is the condition's step curve at ``l + (k - 1) / 2`` times
    ``1 + g (k - 1) / 3``, with ``g`` = ``profile_growth`` (trained), ``null_profile_growth`` (the permutations), 0 (the
    seeds), plus the passage effect and noise.  Heads cluster (E2): the trained heads get a layer effect
    ``N(0, layer_sd)`` and a value-group effect ``N(0, group_sd)`` shared by the heads of a group (``groups`` groups of
    a layer's heads, in order; every head its own group by default).  These draws come from a second generator, so
    that the other values are those of a record without them.
    """
    rng = np.random.default_rng(seed)
    S = layers - 1
    u = TAU * rng.standard_normal(passages)                                  # the shared passage effect

    def curve(mean, scale=1.0, noise=1.0):                                   # (len(mean), passages)
        mean = np.asarray(mean, dtype=float)[:, None]
        noise = np.asarray(noise, dtype=float).reshape(-1, 1)
        return mean + scale * (u[None, :] + noise * NOISE * rng.standard_normal((len(mean), passages)))

    def per_head(mean):
        return mean + HEAD_NOISE * rng.standard_normal((layers, heads))

    effect = np.linspace(e1_early, e1_late, S)
    seed_level = float(1.0 - effect[-1] + gap_shift) + seed_gap * seed_sd
    own = trained_sd * rng.standard_normal()
    t = np.linspace(0.0, 1.0, S)
    trained_mean = 1.0 - effect + gap_shift + own + trained_rise * t
    spread = np.linspace(null_noise[0], null_noise[1], S)
    trained = {"tv_norm_nosink": curve(trained_mean),
               "positional_tv_norm_nosink": curve(1.0 + null_rise * t, noise=spread),
               "cross_passage_tv_norm_nosink": curve(1.0 + null_gap + null_rise * t, noise=spread),
               "head_defect": per_head(0.3 - heads_effect + own), "head_defect_gaussian": per_head(0.3),
               "data_defect": curve(np.full(layers, 0.1 - data_effect), 0.2),
               "data_defect_nosink": curve(np.full(layers, 0.1 - data_effect + own), 0.2),
               "data_defect_cross": curve(np.full(layers, 0.1), 0.2),
               "data_defect_gaussian": curve(np.full(layers, 0.1), 0.2)}
    conditions = {"trained": trained, "shuffled": {"tv_norm_nosink": curve(1.0 + 2 * null_gap + null_rise * t,
                                                                             noise=spread)}}
    for s in range(seeds):
        shift = seed_sd * rng.standard_normal()
        conditions[f"random{s}"] = {"tv_norm_nosink": curve(np.full(S, seed_level + shift)),
                                    "head_defect": per_head(0.3 + seed_gap * seed_sd + shift),
                                    "data_defect": curve(np.full(layers, 0.1 + seed_gap * seed_sd + shift), 0.2)}
    for key in ("data_defect_cross", "data_defect_cross_2", "data_defect_cross_3")[:seeds]:
        trained[key] = curve(np.full(layers, data_seed_level + data_seed_sd * rng.standard_normal()), 0.2)
    _depth_cases(conditions, rng=np.random.default_rng([seed, 2026]), u=u, S=S, layers=layers, t=t,
                 trained_mean=trained_mean, null_mean=1.0 + 2 * null_gap + null_rise * t, spread=spread,
                 shuffles=shuffles,
                 shuffle_sd=shuffle_sd, profile_growth=profile_growth, null_profile_growth=null_profile_growth,
                 outlier=outlier, layer_sd=layer_sd, group_sd=group_sd, groups=groups, heads=heads)
    conditions = {c: {m: v.tolist() for m, v in values.items()} for c, values in conditions.items()}
    if nan_at is not None:
        cond, metric, layer = nan_at
        conditions[cond][metric][layer] = [float("nan")] * len(conditions[cond][metric][layer])
    out = {"model": model, "family": family, "encoder": encoder, "layers": layers, "passages": passages,
           "heads": heads, "parameters": size * 1.3, "non_embedding_parameters": size, "conditions": conditions}
    if groups is not None:
        out["groups"] = groups
    return out


def _depth_cases(conditions, *, rng, u, S, layers, t, trained_mean, null_mean, spread, shuffles, shuffle_sd,
                 profile_growth, null_profile_growth, outlier, layer_sd, group_sd, groups, heads) -> None:
    """The shuffled null's permutations, the separation profiles, the outlier passage and the heads' clusters of
    :func:`record`, added to ``conditions`` in place (from their own generator ``rng``)."""
    B = len(u)

    def noisy(mean, noise=1.0):
        mean = np.asarray(mean, dtype=float)[:, None]
        return mean + u[None, :] + np.asarray(noise).reshape(-1, 1) * NOISE * rng.standard_normal((len(mean), B))

    base = conditions["shuffled"]["tv_norm_nosink"]
    for p in range(shuffles):
        shift = shuffle_sd * rng.standard_normal()
        name = "shuffled" if p == 0 else f"shuffled{p}"
        conditions[name] = {"tv_norm_nosink": base + shift if p == 0 else noisy(null_mean + shift, spread)}
    if shuffles == 0:
        del conditions["shuffled"]
    steps = np.arange(S, dtype=float)

    def profile(cond, line, g):
        for k in (2, 3, 4):
            if layers - k >= 1:
                at = np.interp(np.arange(layers - k) + (k - 1) / 2, steps, line)
                conditions[cond][f"sep{k}_tv_norm_nosink"] = noisy(at * (1 + g * (k - 1) / 3))

    profile("trained", trained_mean, profile_growth)
    for c in [c for c in conditions if c.startswith("shuffled")]:
        profile(c, conditions[c]["tv_norm_nosink"].mean(1) - u.mean(), null_profile_growth)
    for c in [c for c in conditions if c.startswith("random")]:
        profile(c, conditions[c]["tv_norm_nosink"].mean(1) - u.mean(), 0.0)
    conditions["trained"]["tv_norm_nosink"][:, 0] += outlier * t
    if layer_sd or group_sd:
        G = groups or heads
        effect = layer_sd * rng.standard_normal((layers, 1)) + np.repeat(
            group_sd * rng.standard_normal((layers, G)), heads // G, axis=1)
        conditions["trained"]["head_defect"] = conditions["trained"]["head_defect"] + effect


def ladder(*, sizes=(1e8, 3e8, 1e9, 3e9, 1e10), slope: float = 0.0, model_sd: float = 0.0, seed: int = 0,
           family: str = "llama", **kw) -> list[dict]:
    """One family's records at ``sizes``: the late E1 gap to the strongest null is ``slope`` per decade of
    non-embedding parameters plus a between-model shift ``N(0, model_sd)`` (what passages cannot see)."""
    rng = np.random.default_rng(seed)
    x = np.log10(sizes)
    shifts = slope * (x - x.mean()) + model_sd * rng.standard_normal(len(sizes))
    return [record(model=f"{family}{i}", family=family, size=s, gap_shift=float(g), seed=seed * 1000 + i,
                   e1_early=0.1, e1_late=0.1, **kw) for i, (s, g) in enumerate(zip(sizes, shifts))]


# ------------------------------------------------------------------ E1's power
def e1_power(falls=(0.03, 0.05, 0.07), rises=(0.07,), *, draws: int = 40, passages: int = 8,
             seed: int = 0) -> dict:
    """What E1's rule in force (:func:`connlap_lite.verdicts.rules.e1`) says, and how often, on ``draws`` seeded records
    (:func:`record`, ``passages`` passages, 12 layers, 5 random-init seeds, 5 shuffle permutations) of two kinds:
    ``"converges"``, for each fall ``f`` of ``falls``, a trained curve that falls by ``f`` from the first step to
    the last and lies ``f`` below every null, whose curves fall as fast (the rule's harness calls it a real
    convergence); ``"nulls rise"``, for each ``r`` of ``rises``, a flat curve 0.03 below nulls that rise by ``r``
    (it does not converge).  ``{kind: {size: {verdict: share of draws}}}``; each share is within
    ``sqrt(p (1 - p) / draws)`` of the rule's rate.

    >>> out = e1_power((0.07,), (), draws=2)
    >>> list(out["converges"]), round(sum(out["converges"][0.07].values()), 6)
    ([0.07], 1.0)
    """
    from .record import Report
    from .rules import e1

    cases = {"converges": {f: dict(e1_early=f, e1_late=f, trained_rise=-f, null_rise=-f) for f in falls},
             "nulls rise": {r: dict(e1_early=0.03, e1_late=0.03, null_rise=r) for r in rises}}
    out: dict = {}
    for kind, sizes in cases.items():
        out[kind] = {}
        for size, kw in sizes.items():
            said = [e1(Report(record(seed=seed + d, passages=passages, **kw)))["verdict"] for d in range(draws)]
            out[kind][size] = {v: said.count(v) / draws for v in dict.fromkeys(said)}
    return out


# ------------------------------------------------------------------ E3's power
def e3_power(counts=(3, 5, 8), *, slope: float = -0.05, model_sd: float = 0.01, decades: tuple = (8.0, 10.0),
             draws: int = 100, passages: int = 8, seed: int = 0) -> dict[int, float]:
    """How often E3's rule in force (:func:`connlap_lite.verdicts.rules.e3`) says "holds" on one family of each number of
    sizes in ``counts``, spread evenly over ``decades`` (log10 of the non-embedding parameters), the late gap moving
    ``slope`` per decade with a between-model spread ``model_sd`` (:func:`ladder`, ``passages`` passages each):
    ``{sizes: share of draws}``, over ``draws`` seeded ladders per count (each share within
    ``sqrt(p (1 - p) / draws)`` of the rule's power).

    >>> power = e3_power((3, 8), draws=4)
    >>> sorted(power), all(0 <= v <= 1 for v in power.values())
    ([3, 8], True)
    """
    from .rules import e3

    out = {}
    for n in counts:
        sizes = 10 ** np.linspace(decades[0], decades[1], n)
        said = [e3(ladder(sizes=sizes, slope=slope, model_sd=model_sd, seed=seed + d, passages=passages, heads=2),
                   "tv_norm_nosink")["verdict"] for d in range(draws)]
        out[n] = float(np.mean([v == "holds" for v in said]))
    return out


# ------------------------------------------------------------------ the rival readings
ALIGN_SEED_SD = 0.01   # the spread of the states' alignment between random-init seeds


def rivals(*, layers: int = 12, passages: int = 16, heads: int = 8, seeds: int = 5, matters=None,
           e1_matters: float = 0.0, e1_rest: float = 0.0, dominance_gaussian: float = 0.0,
           dominance_rotation: float = 0.0, alignment: float = 0.0, self_loop: float = 0.0,
           self_loop_growth: float = 0.0, self_loop_seed_gap: float | None = None, encoder: bool = False, model: str = "m",
           seed: int = 0) -> dict:
    """One model's synthetic record of the rival readings (what :mod:`connlap_lite.verdicts.readings` reads), each effect
    stated.

    ``matters``: each layer's mean zero-ablation cost (default 0.3 in the first half of the layers, 0.01 in the
    second), per passage that times ``1 + N(0, 0.2)``.  E1 (``tv_norm_nosink``, as :func:`record`: positional null
    1.0, cross-passage 1.05, shuffled 1.1, passage effect and noise) sits ``e1_matters`` below the positional null
    on the steps whose two layers matter (cost >= 0.05) and ``e1_rest`` on the others.  Head dominance: Gaussian
    heads 0.2, rotated heads 0.2 + ``dominance_gaussian - dominance_rotation``, trained 0.2 + ``dominance_gaussian``
    (per-head noise :data:`HEAD_NOISE`, a per-layer shift shared by the layer's heads of the same size).  States'
    alignment: seeds ``0.1 + N(0, ALIGN_SEED_SD)``, trained ``0.1 + alignment * ALIGN_SEED_SD`` plus its own
    draw.  Self-loop share: uniform walk 0.2 at every layer; trained ``0.2 + self_loop`` plus ``self_loop_growth``
    times the layer's depth in [0, 1]; each seed ``self_loop_seed_gap`` below the trained curve (default: at the
    uniform walk's 0.2) plus its own ``N(0, 0.005)``; passage noise 0.02.

    >>> r = rivals(seed=0)
    >>> r["layers"], sorted(r["conditions"])[:2], len(r["conditions"]["trained"]["tv_norm_nosink"])
    (12, ['random0', 'random1'], 11)
    """
    rng = np.random.default_rng(seed)
    L, S, B = layers, layers - 1, passages
    cost = np.where(np.arange(L) < L / 2, 0.3, 0.01) if matters is None else np.asarray(matters, dtype=float)
    u = TAU * rng.standard_normal(B)

    def curve(mean, scale=1.0, noise=NOISE):
        mean = np.asarray(mean, dtype=float)[:, None]
        return mean + scale * (u[None, :] + noise * rng.standard_normal((len(mean), B)))

    def per_head(mean):
        return mean + HEAD_NOISE * (rng.standard_normal((L, 1)) + rng.standard_normal((L, heads)))

    big = cost >= 0.05
    both = big[:-1] & big[1:]
    effect = np.where(both, e1_matters, e1_rest)
    depth = np.linspace(0, 1, L)
    trained = {"tv_norm_nosink": curve(1.0 - effect), "positional_tv_norm_nosink": curve(np.full(S, 1.0)),
               "cross_passage_tv_norm_nosink": curve(np.full(S, 1.05)),
               "ablation_zero": cost[:, None] * (1 + 0.2 * rng.standard_normal((L, B))),
               "head_dominance": per_head(0.2 + dominance_gaussian), "head_dominance_gaussian": per_head(0.2),
               "head_dominance_rotation": per_head(0.2 + dominance_gaussian - dominance_rotation),
               "state_alignment": curve(np.full(L, 0.1 + ALIGN_SEED_SD * (alignment + rng.standard_normal())),
                                        0.1),
               "self_loop_nosink": curve(0.2 + self_loop + self_loop_growth * depth, 0.4),
               "self_loop_uniform": np.full((L, B), 0.2)}
    conditions = {"trained": trained, "shuffled": {"tv_norm_nosink": curve(np.full(S, 1.1))}}
    for s in range(seeds):
        conditions[f"random{s}"] = {
            "state_alignment": curve(np.full(L, 0.1 + ALIGN_SEED_SD * rng.standard_normal()), 0.1),
            "self_loop_nosink": curve(np.full(L, 0.2 + 0.005 * rng.standard_normal()) if self_loop_seed_gap is None
                                      else 0.2 + self_loop + self_loop_growth * depth - self_loop_seed_gap
                                      + 0.005 * rng.standard_normal(), 0.4)}
    conditions = {c: {m: np.asarray(v, dtype=float).tolist() for m, v in values.items()}
                  for c, values in conditions.items()}
    return {"model": model, "family": "synthetic", "encoder": encoder, "layers": L, "passages": B, "heads": heads,
            "conditions": conditions}
