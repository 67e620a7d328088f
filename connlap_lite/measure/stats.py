"""Statistics shared by the empirical chapters: bootstrap intervals, rank correlation, Holm's correction.

``bootstrap_ci(values)``     percentile bootstrap interval of the mean over the first axis (passages);
``spearman(x, y)``           Spearman's rho and its two-sided p-value (exact up to 8 points);
``holm(pvalues)``            Holm's step-down adjustment of one family of p-values (NaN stays NaN);
``draws_for(family)``        bootstrap draws enough to resolve a Holm family (``check_resolution`` refuses fewer);
``seed_p(trained, seeds)``   a one-sided test with the random-init seeds as its units (Student's t);
``jackknife_slope(x, y)``    a slope with a leave-one-out (model-level) interval.

The paired bootstrap of the rules (:mod:`connlap_lite.verdicts.rules`) draws units (passages or heads) with
replacement, the same draws for every condition, and reads a one-sided p-value and a 95% percentile
interval off the resamples; the private helpers here are those three steps.

Chapters: *E1*, *E2*, *E3*, *Scorecard*.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import torch

from .._backend import check_int, to_tensor, undefined

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



def mean_interval(values, *, n_boot: int = 1000, expand: bool = False) -> tuple[float, float, float]:
    """``bootstrap_ci`` of a one-dimensional sample as three floats, or three NaNs, with one
    :class:`~connlap_lite._backend.UndefinedWarning`, where a value is not finite: the rules and the chapters'
    bands read an undefined value as undefined, never as a number (the public :func:`bootstrap_ci` refuses it).
    ``expand`` widens the interval about the mean by :func:`expansion` of the sample's size, as the rules widen
    their draws: a plain bootstrap of a few units (four passages, say) is too narrow.

    >>> m, lo, hi = mean_interval([0.1, 0.2, 0.3, 0.4])
    >>> lo <= m <= hi
    True
    >>> _, wlo, whi = mean_interval([0.1, 0.2, 0.3, 0.4], expand=True)
    >>> round((whi - wlo) / (hi - lo), 2) == round(expansion(4), 2)
    True
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     mean_interval([0.1, float("nan")])
    (nan, nan, nan)
    """
    values = to_tensor(values, "values", finite=False).double().reshape(-1)
    if not bool(torch.isfinite(values).all()):
        undefined(torch.tensor([float("nan")]), "a mean and its bootstrap interval",
                  "a value it averages is undefined (NaN or inf)")
        return (float("nan"),) * 3
    mean, lo, hi = (float(x) for x in bootstrap_ci(values, n_boot=n_boot))
    if expand:
        k = expansion(len(values))
        lo, hi = mean + k * (lo - mean), mean + k * (hi - mean)
    return mean, lo, hi

def spearman(x, y) -> tuple[float, float]:
    """Spearman's rho and its two-sided p-value.

    Up to 8 points the p-value is exact, from all ``n!`` orderings of ``y`` (scipy's
    large-sample approximation is anti-conservative there); beyond, scipy's t approximation.
    An undefined rho (a constant ``x`` or ``y``, a NaN in either) gives ``(nan, nan)``: undefined is never
    significant, with one :class:`~connlap_lite._backend.UndefinedWarning` saying why.  So do fewer than three
    points: two points have rho = +-1 whatever they are, so a trend over two layers says nothing.

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
    if len(x) < 3:
        undefined(torch.tensor([nan]), "Spearman's rho", "it has fewer than three points (two give +-1 whatever "
                  "they are)")
        return nan, nan
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        undefined(torch.tensor([nan]), "Spearman's rho", "x or y holds NaN or inf")
        return nan, nan
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        undefined(torch.tensor([nan]), "Spearman's rho", "x or y is constant (no ranks to correlate)")
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

    An undefined (NaN) p-value stays undefined and still counts in the family's size.

    >>> [round(p, 3) for p in holm([0.01, 0.04, 0.03])]
    [0.03, 0.06, 0.06]
    >>> holm([0.01, float("nan")])
    [0.02, nan]
    """
    p = np.asarray(list(pvalues), dtype=float)
    adjusted = np.full_like(p, np.nan)
    defined = np.flatnonzero(np.isfinite(p))
    running = 0.0
    for rank, i in enumerate(defined[np.argsort(p[defined])]):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        adjusted[i] = running
    return adjusted.tolist()


def unit_draws(units: int, n_boot: int, seed: int) -> np.ndarray:
    """``(n_boot, units)`` indices: units drawn with replacement, the same draws for every condition."""
    return np.random.default_rng(seed).integers(0, units, size=(n_boot, units))


def p_win(diff: np.ndarray, units: int | None = None) -> float:
    """One-sided bootstrap p-value that the trained value is below its null (``diff`` = trained - null).

    A non-finite difference is no win and no loss: any among the draws makes the p-value undefined (NaN).
    ``units``: the number of units resampled; the draws are then widened about their mean by
    :func:`expansion` before counting (a bootstrap of few units is too narrow).

    >>> p_win(np.array([-1.0, -2.0, 0.5])), p_win(np.array([-1.0, float("nan")]))
    (0.5, nan)
    """
    diff = np.asarray(diff, dtype=float)
    if not np.isfinite(diff).all():
        return float("nan")
    if units is not None:
        diff = diff.mean() + expansion(units) * (diff - diff.mean())
    return float((1 + np.sum(diff >= 0)) / (len(diff) + 1))


@functools.lru_cache(maxsize=None)
def expansion(units: int) -> float:
    """How much wider to make a bootstrap of ``units`` units: ``sqrt(n / (n - 1)) t_{0.975, n-1} / z_{0.975}``.

    The plain bootstrap's spread is ``sqrt((n - 1) / n)`` of the standard error, and the normal quantile is
    below Student's for few units; widening by both (Hesterberg's expanded percentile bootstrap) keeps a
    one-sided test near its size down to a few units: 1.12 for 16 passages, 1.29 for 8.

    >>> round(expansion(16), 3), round(expansion(8), 3)
    (1.123, 1.29)
    """
    from scipy.stats import norm, t as student

    check_int(units, "units", low=2)
    return math.sqrt(units / (units - 1)) * float(student.ppf(0.975, units - 1) / norm.ppf(0.975))


def depth_rhos(curves: np.ndarray) -> np.ndarray:
    """Spearman's rho of each row of ``curves`` ``(k, layers)`` against depth."""
    return _rank_corr(np.arange(curves.shape[1]), curves)


def percentile_interval(samples: np.ndarray) -> tuple[float, float]:
    """The 95% percentile interval of bootstrap ``samples`` (NaN where any is non-finite)."""
    samples = np.asarray(samples, dtype=float)
    if not np.isfinite(samples).all():
        return float("nan"), float("nan")
    lo, hi = np.percentile(samples, [2.5, 97.5])
    return float(lo), float(hi)


# ----------------------------------------------------------------------- resolution, seeds as units, models
RESOLUTION = 10   # the rules draw enough resamples that a family's smallest Holm-adjusted p is alpha / 10


def smallest_p(n_boot: int) -> float:
    """The smallest p-value a bootstrap of ``n_boot`` draws can give: ``1 / (n_boot + 1)``.

    >>> smallest_p(1000)
    0.000999000999000999
    """
    check_int(n_boot, "n_boot", low=1)
    return 1 / (n_boot + 1)


def draws_for(family: int, alpha: float = 0.05, *, at_least: int = 1000) -> int:
    """Bootstrap draws enough for a Holm family of ``family`` p-values: ``family * smallest_p < alpha / RESOLUTION``.

    With 1000 draws a family of 54 cannot pass (``54 / 1001 > 0.05``); this gives 10,800.

    >>> draws_for(54), draws_for(2)
    (10800, 1000)
    """
    check_int(family, "family", low=1)
    return max(at_least, math.ceil(RESOLUTION * family / alpha))


def check_resolution(family: int, n_boot: int, alpha: float = 0.05) -> None:
    """Refuse a family that its draws cannot resolve: ``family * smallest_p(n_boot)`` must be below ``alpha``.

    >>> check_resolution(54, 1000)
    Traceback (most recent call last):
    ...
    ValueError: n_boot = 1000 cannot resolve a family of 54 p-values at alpha 0.05 (54 / 1001 >= alpha): draw at least 1080, e.g. stats.draws_for(54) = 10800
    """
    if family * smallest_p(n_boot) >= alpha:
        raise ValueError(f"n_boot = {n_boot} cannot resolve a family of {family} p-values at alpha {alpha} "
                         f"({family} / {n_boot + 1} >= alpha): draw at least {math.ceil(family / alpha)}, "
                         f"e.g. stats.draws_for({family}) = {draws_for(family, alpha)}")


def seed_p(trained: float, seeds) -> float:
    """One-sided p that ``trained`` lies below the distribution the random-init ``seeds`` are draws of.

    The seeds are the units: under the null the trained value is one more draw of the same (normal)
    distribution, so ``t = (mean(seeds) - trained) / (sd(seeds) sqrt(1 + 1/k))`` has Student's t with
    ``k - 1`` degrees of freedom (a prediction interval), and the test has size alpha for any ``k >= 2``.
    "Below every seed", by contrast, has size ``1 / (k + 1)``.  Undefined (NaN) below two seeds or for a
    non-finite value.

    >>> round(seed_p(0.5, [1.0, 1.1, 0.9, 1.05, 0.95]), 6)
    0.002234
    >>> seed_p(1.0, [1.0, 1.1, 0.9, 1.05, 0.95])
    0.5
    """
    from scipy.stats import t as student

    s = np.asarray(seeds, dtype=float)
    if len(s) < 2 or not np.isfinite(s).all() or not math.isfinite(trained):
        return float("nan")
    sd = float(s.std(ddof=1))
    k = len(s)
    gap = float(s.mean()) - trained
    if sd == 0:
        return 0.0 if gap > 0 else 1.0
    return float(student.sf(gap / (sd * math.sqrt(1 + 1 / k)), k - 1))


def jackknife_slope(x, y, level: float = 0.95) -> dict:
    """Slope of ``y`` on ``x`` with a model-level jackknife: leave-one-out slopes, their standard error and a
    Student-t interval with ``n - 1`` degrees of freedom (``n`` points, at least 3).

    >>> out = jackknife_slope([8, 9, 10, 11], [0.3, 0.2, 0.1, 0.0])
    >>> round(out["slope"], 6), out["signs_agree"], [round(v, 6) for v in out["interval"]]
    (-0.1, True, [-0.1, -0.1])
    """
    from scipy.stats import t as student

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = len(x)
    if n < 3 or len(set(np.round(x, 12))) < 3 or not (np.isfinite(x).all() and np.isfinite(y).all()):
        nan = float("nan")
        return {"slope": nan, "leave_one_out": [], "se": nan, "interval": (nan, nan), "signs_agree": False}
    slope = float(np.polyfit(x, y, 1)[0])
    loo = np.array([np.polyfit(np.delete(x, i), np.delete(y, i), 1)[0] for i in range(n)])
    se = float(np.sqrt((n - 1) / n * np.sum((loo - loo.mean()) ** 2)))
    q = float(student.ppf(0.5 + level / 2, n - 1))
    agree = bool((np.sign(loo) == np.sign(slope)).all() and slope != 0)
    return {"slope": slope, "leave_one_out": loo.tolist(), "se": se, "interval": (slope - q * se, slope + q * se),
            "signs_agree": agree}
