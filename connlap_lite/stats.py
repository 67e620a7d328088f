"""Statistics shared by the empirical chapters: bootstrap intervals, rank correlation, Holm's correction.

``bootstrap_ci(values)``     percentile bootstrap interval of the mean over the first axis (passages);
``spearman(x, y)``           Spearman's rho and its two-sided p-value (exact up to 8 points);
``holm(pvalues)``            Holm's step-down adjustment of one family of p-values.

The paired bootstrap of the rules (:mod:`connlap_lite.report`) draws units (passages or heads) with
replacement, the same draws for every condition, and reads a one-sided p-value and a 95% percentile
interval off the resamples; the private helpers here are those three steps.

Chapters: *E1*, *E2*, *E3*, *Scorecard*.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from ._backend import check_int, to_tensor

def bootstrap_ci(values: torch.Tensor, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0):
    """Percentile bootstrap interval of the mean over the first axis (passages): ``(mean, low, high)``.

    Every sample must be finite: a NaN (an undefined value) or an inf would make the mean and the interval
    meaningless, so it is refused by position; drop undefined values first, and say how many.

    >>> mean, low, high = bootstrap_ci([1.0, 2.0, 3.0, 6.0])
    >>> float(mean), bool(1.0 <= low < mean < high <= 6.0)
    (3.0, True)
    >>> bootstrap_ci([1.0, float("inf"), 2.0])
    Traceback (most recent call last):
    ...
    ValueError: values must be finite: 1 of its 3 samples is inf or NaN (the first at index (1,)); drop the undefined values first (values[np.isfinite(values)])
    """
    values = to_tensor(values, "values", finite=False).double()
    if values.ndim < 1 or values.shape[0] == 0:
        raise ValueError(f"values must hold at least one value along the first axis, got shape {tuple(values.shape)}")
    bad = ~torch.isfinite(values)
    if bool(bad.any()):
        first = tuple(int(i) for i in torch.nonzero(bad)[0])
        raise ValueError(f"values must be finite: {int(bad.sum())} of its {values.numel()} samples is inf or NaN "
                         f"(the first at index {first}); drop the undefined values first "
                         "(values[np.isfinite(values)])")
    check_int(n_boot, "n_boot", low=1)
    check_int(seed, "seed", low=0)
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"level must be a number in (0, 1) such as 0.95, got {level!r}")
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, values.shape[0], (n_boot, values.shape[0]), generator=g)
    means = values[idx].mean(1)
    lo, hi = (1 - level) / 2, 1 - (1 - level) / 2
    return values.mean(0), torch.quantile(means, lo, dim=0), torch.quantile(means, hi, dim=0)


def spearman(x, y) -> tuple[float, float]:
    """Spearman's rho and its two-sided p-value.

    Up to 8 points the p-value is exact, from all ``n!`` orderings of ``y`` (scipy's
    large-sample approximation is anti-conservative there); beyond, scipy's t approximation.
    An undefined rho (fewer than two points, a constant ``x`` or ``y``, a NaN in either) gives
    ``(nan, nan)``: undefined is never significant.

    >>> rho, p = spearman(range(5), [1, 2, 3, 4, 5])
    >>> round(rho, 6), round(p, 4)           # 2 of the 120 orderings are as extreme: p = 1/60
    (1.0, 0.0167)
    >>> spearman(range(3), [2.0, 2.0, 2.0])  # a constant curve has no trend, significant or not
    (nan, nan)
    """
    from itertools import permutations

    from scipy.stats import spearmanr

    x, y = _sample(x, "x"), _sample(y, "y")
    if len(x) != len(y):
        raise ValueError(f"x and y must have the same length, got {len(x)} and {len(y)}")
    nan = float("nan")
    if len(x) < 2 or not (np.isfinite(x).all() and np.isfinite(y).all()) or np.ptp(x) == 0 or np.ptp(y) == 0:
        return nan, nan
    result = spearmanr(x, y)
    rho = float(result.statistic)
    if not math.isfinite(rho):
        return nan, nan
    if len(x) > 8:
        return rho, float(result.pvalue)
    orders = np.array(list(permutations(range(len(y)))))
    rhos = _rank_corr(x, y[orders])
    return rho, float(np.mean(np.abs(rhos) >= abs(rho) - 1e-12))


def _sample(v, name: str) -> np.ndarray:
    """A one-dimensional float sample, or an error naming the argument."""
    if isinstance(v, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of numbers, got a string")
    try:
        if isinstance(v, torch.Tensor):
            v = v.detach().cpu()
        a = np.asarray(v if isinstance(v, (np.ndarray, torch.Tensor)) else list(v), dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a sequence of numbers, got {type(v).__name__}") from exc
    if a.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {a.shape}")
    return a


def _rank_corr(x, Y):
    """Spearman's rho of ``x`` with each row of ``Y`` (ties get average ranks)."""
    from scipy.stats import rankdata

    rx = rankdata(x) - (len(x) + 1) / 2
    rY = rankdata(Y, axis=1) - (len(x) + 1) / 2
    den = (rx ** 2).sum() ** 0.5 * ((rY ** 2).sum(1) ** 0.5)
    return (rY @ rx) / np.where(den > 0, den, np.inf)


def holm(pvalues) -> list[float]:
    """Holm's step-down adjustment of a family of p-values (same order as given).

    >>> [round(p, 3) for p in holm([0.01, 0.04, 0.03])]
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(list(pvalues), dtype=float)
    order = np.argsort(p)
    adjusted = np.empty_like(p)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        adjusted[i] = running
    return adjusted.tolist()


def _draws(units: int, n_boot: int, seed: int) -> np.ndarray:
    """``(n_boot, units)`` indices: units drawn with replacement, the same draws for every condition."""
    return np.random.default_rng(seed).integers(0, units, size=(n_boot, units))


def _p_win(diff: np.ndarray) -> float:
    """One-sided bootstrap p-value that the trained value is below its null (``diff`` = trained - null)."""
    return float((1 + np.sum(diff >= 0)) / (len(diff) + 1))


def _rhos(curves: np.ndarray) -> np.ndarray:
    """Spearman's rho of each row of ``curves`` ``(k, layers)`` against depth."""
    return _rank_corr(np.arange(curves.shape[1]), curves)


def _interval(samples: np.ndarray) -> tuple[float, float]:
    """The 95% percentile interval of bootstrap ``samples``."""
    lo, hi = np.percentile(samples, [2.5, 97.5])
    return float(lo), float(hi)
