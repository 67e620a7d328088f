"""Synthetic measurement reports whose answer is known, shared by the tests of several scopes: ``fake`` (every
condition the rules in force read: the scorecard's tests, the command line's, the faults') and ``fake_report`` (the
first rules' shape: their record and the bad-input table).

>>> sorted(fake()["conditions"])[:3], fake_report("m", 1e8, False)["model"]
(['random0', 'random1', 'random2'], 'm')
"""
import numpy as np

L, B, H = 9, 12, 4


def curve(start, stop, noise, rng, layers=L, units=B):
    base = np.linspace(start, stop, layers)[:, None]
    return (base + noise * rng.standard_normal((layers, units))).tolist()


def fake(model="m", *, falls=True, gap=-0.3, family="llama", size=1e8, encoder=False, data_gap=-0.02, seed=0):
    """A report whose trained E1 curve falls (or not) and sits ``gap`` below (or above) every null."""
    rng = np.random.default_rng(seed)
    null = lambda: {"tv_norm_nosink": curve(1.3, 1.3, 0.02, rng, L - 1),             # noqa: E731
                    "head_defect": curve(0.3, 0.3, 0.01, rng, L, H),
                    "data_defect": curve(0.1, 0.1, 0.005, rng)}
    conditions = {f"random{s}": null() for s in range(5)}
    for p in range(5):                                             # the shuffled null's five permutations
        conditions["shuffled" + (str(p) if p else "")] = {"tv_norm_nosink": curve(1.25, 1.25, 0.02, rng, L - 1)}
    top = 1.2 + gap
    conditions["trained"] = {
        "tv_norm_nosink": curve(top + (0.5 if falls else 0), top, 0.02, rng, L - 1),
        "cross_passage_tv_norm_nosink": curve(1.2, 1.2, 0.02, rng, L - 1),
        "positional_tv_norm_nosink": curve(1.22, 1.22, 0.02, rng, L - 1),
        "head_defect": curve(0.2, 0.2, 0.01, rng, L, H), "head_defect_gaussian": curve(0.3, 0.3, 0.01, rng, L, H),
        "data_defect_nosink": curve(0.1 + data_gap, 0.1 + data_gap, 0.002, rng),
        "data_defect_cross": curve(0.1, 0.1, 0.002, rng), "data_defect_cross_2": curve(0.101, 0.101, 0.002, rng),
        "data_defect_cross_3": curve(0.099, 0.099, 0.002, rng), "data_defect_gaussian": curve(0.1, 0.1, 0.002, rng)}
    for cond, values in conditions.items():                       # a flat separation profile, k = 2..4
        level = float(np.mean(values["tv_norm_nosink"][-1]))
        for k in (2, 3, 4):
            values[f"sep{k}_tv_norm_nosink"] = curve(level, level, 0.02, rng, L - k)
    return {"model": model, "family": family, "encoder": encoder, "layers": L, "passages": B,
            "parameters": size * 1.3, "non_embedding_parameters": size, "conditions": conditions}


def fake_report(name, params, encoder, falls=True, L=6, seed=0):
    rng = np.random.default_rng(seed)
    depth = np.arange(L - 1)
    tv = [list((1.0 - 0.15 * l if falls else 0.3 + 0.1 * l) + 0.01 * rng.random(4)) for l in depth]
    flat = [list(1.2 + 0.01 * rng.random(4)) for _ in depth]
    heads = [list(0.1 + 0.01 * rng.random(3)) for _ in range(L)]
    nullh = [list(0.3 + 0.01 * rng.random(3)) for _ in range(L)]
    data = [list(0.05 + 0.01 * rng.random(4)) for _ in range(L)]
    nulld = [list(0.2 + 0.01 * rng.random(4)) for _ in range(L)]
    null = {"tv_norm_nosink": flat, "head_defect": nullh, "data_defect": nulld}
    return {"model": name, "parameters": params, "non_embedding_parameters": params / 2, "family": "llama",
            "encoder": encoder,
            "conditions": {"trained": {"tv_norm_nosink": tv, "head_defect": heads, "head_defect_gaussian": nullh,
                                       "data_defect": data},
                           "random0": null, "random1": null}}
