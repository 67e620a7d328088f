"""Array plumbing: numpy or torch in, the same type out, checked on the way in.

Everything inside :mod:`connlap_lite` computes with ``torch`` tensors, on whatever
device the caller's tensors live.  A numpy array that comes in is turned into a
tensor (float64 unless it already is a float type) and the result goes back out
as numpy.  Every check names the argument it rejects and what it expected.
"""
from __future__ import annotations

import math
import operator
import warnings
from typing import Any

import numpy as np
import torch

Array = Any  # a numpy array or a torch tensor


def is_numpy(x: Array) -> bool:
    """True when ``x`` is not a torch tensor (numpy arrays, lists, scalars)."""
    return not isinstance(x, torch.Tensor)


def to_tensor(x: Array, name: str, *, ndim: int | tuple[int, ...] | None = None,
              finite: bool = True, dtype: torch.dtype | None = None) -> torch.Tensor:
    """Turn ``x`` into a floating tensor and check it.

    Raises
    ------
    TypeError
        If ``x`` is not array-like.
    ValueError
        If it has the wrong number of dimensions or holds NaN or inf.
    """
    if isinstance(x, torch.Tensor):
        t = x
    else:
        try:
            a = np.asarray(x)
        except Exception as exc:  # pragma: no cover - numpy rarely refuses
            raise TypeError(f"{name} must be a numpy array or torch tensor, got {type(x).__name__}") from exc
        if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
            raise TypeError(f"{name} must be a numeric array or tensor, got {type(x).__name__} of dtype {a.dtype}")
        t = torch.from_numpy(np.ascontiguousarray(a))
    if t.is_complex():
        raise TypeError(f"{name} must be real, got dtype {t.dtype}")
    if dtype is not None:
        t = t.to(dtype)
    elif not t.is_floating_point():
        t = t.to(torch.float64)
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else ndim
        if t.ndim not in allowed:
            want = " or ".join(str(k) for k in allowed)
            raise ValueError(f"{name} must have {want} dimensions, got shape {tuple(t.shape)}")
    if finite and t.numel() and not all_finite(t):
        bad = "NaN" if bool(torch.isnan(t).any()) else "inf"
        raise ValueError(f"{name} contains {bad}; pass finite values")
    return t


def integer(value) -> int | None:
    """``value`` as an int if it is integer-like (an int, a numpy or 0-d torch integer: ``operator.index``
    takes it), else None; a bool (``True`` is no count) and a float (never truncated) are not.

    Examples
    --------
    >>> integer(np.int64(3)), integer(torch.tensor(2)), integer(2.0), integer(True)
    (3, 2, None, None)
    """
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, torch.Tensor) and (value.dtype == torch.bool or value.ndim):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def check_int(value, name: str, *, low: int | None = None, high: int | None = None, why: str = "") -> int:
    """``value`` as an int in ``[low, high)``, or an error naming ``name``: a float, a bool or a string is refused.

    Examples
    --------
    >>> check_int(3, "k", low=1)
    3
    >>> check_int(2.5, "k")
    Traceback (most recent call last):
    ...
    TypeError: k must be an int, got 2.5 (float)
    """
    as_int = integer(value)
    if as_int is None:
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    value = as_int
    if (low is not None and value < low) or (high is not None and value >= high):
        span = (f"in [{low}, {high})" if high is not None and low is not None
                else f"at least {low}" if low is not None else f"below {high}")
        raise ValueError(f"{name} must be {span}, got {value}" + (f" ({why})" if why else ""))
    return value


def check_index(value, name: str, n: int) -> int:
    """``value`` as an index in ``[0, n)``: an int (numpy ints too), never a float silently truncated.

    Examples
    --------
    >>> check_index(2, "i", 3)
    2
    >>> check_index(1.5, "i", 3)
    Traceback (most recent call last):
    ...
    TypeError: i must be an int index in [0, 3), got 1.5 (float)
    """
    as_int = integer(value)
    if as_int is None:
        raise TypeError(f"{name} must be an int index in [0, {n}), got {value!r} ({type(value).__name__})")
    if not 0 <= as_int < n:
        raise ValueError(f"{name} must be an index in [0, {n}), got {as_int}: out of range")
    return as_int


def check_indices(values, name: str, n: int) -> list[int]:
    """A sequence of indices in ``[0, n)`` (see :func:`check_index`); a bare int or a string is refused."""
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a list of int indices in [0, {n}), got {values!r}")
    return [check_index(v, f"{name} entries", n) for v in values]


def check_float_dtype(dtype, name: str = "dtype") -> None:
    """Refuse a non-floating dtype (integers would truncate probabilities to 0 and 1)."""
    if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise TypeError(f"{name} must be a floating torch dtype (torch.float32, torch.float64, ...) or None, "
                        f"got {dtype!r}")


def all_finite(t: torch.Tensor) -> bool:
    """Whether every entry is finite, in one reduction: NaN propagates to both ends, inf shows at one.  A permuted
    view of a contiguous tensor (a head-split weight) is read in its memory order, four times faster.

    >>> W = torch.ones(4, 6); W[1, 5] = float("nan")
    >>> all_finite(W), all_finite(W.reshape(4, 2, 3).permute(1, 0, 2)), all_finite(torch.ones(3, 2).t())
    (False, False, True)
    """
    if not t.is_contiguous():
        order = sorted(range(t.ndim), key=lambda k: -t.stride(k))
        if t.permute(order).is_contiguous():
            t = t.permute(order)
    lo, hi = torch.aminmax(t)
    return math.isfinite(lo.item()) and math.isfinite(hi.item())


class UndefinedWarning(RuntimeWarning):
    """A quantity is undefined for some of its inputs (0/0, too few points): those values are NaN."""


def undefined(t: torch.Tensor, quantity: str, why: str, *, stacklevel: int = 3) -> torch.Tensor:
    """``t`` unchanged; if it holds NaN, one :class:`UndefinedWarning` naming ``quantity`` and ``why`` (the same
    text every time, so Python shows it once per place it is raised from, not once per value or per call).

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = undefined(torch.tensor([1.0, float("nan")]), "ratio", "0/0 where both are zero")
    >>> str(caught[0].message)
    'ratio is undefined (NaN) where 0/0 where both are zero; those values are NaN, not numbers: leave them out'
    """
    if t.numel() and bool(torch.isnan(t).any()):
        warnings.warn(f"{quantity} is undefined (NaN) where {why}; those values are NaN, not numbers: leave them out",
                      UndefinedWarning, stacklevel=stacklevel)
    return t


def out(t: torch.Tensor, numpy: bool) -> Array:
    """Return ``t`` as numpy when the caller gave numpy, else as it is."""
    if numpy:
        return t.detach().cpu().numpy()
    return t


def check_shape(t: torch.Tensor, name: str, shape: tuple) -> None:
    """Check ``t.shape`` against ``shape`` (``None`` entries are free)."""
    ok = t.ndim == len(shape) and all(s is None or s == u for s, u in zip(shape, t.shape))
    if not ok:
        want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
        raise ValueError(f"{name} must have shape {want}, got {tuple(t.shape)}")


def common_dtype(*ts: torch.Tensor) -> torch.dtype:
    """The widest floating dtype among ``ts`` (at least float32)."""
    dt = torch.float32
    for t in ts:
        dt = torch.promote_types(dt, t.dtype)
    return dt


def harmonise(*ts: torch.Tensor | None) -> tuple:
    """``ts`` in their widest floating dtype (``None`` entries kept): float32 with float64 computes in float64.

    Examples
    --------
    >>> a, b, c = harmonise(torch.ones(2, dtype=torch.float32), torch.ones(2, dtype=torch.float64), None)
    >>> a.dtype, b.dtype, c
    (torch.float64, torch.float64, None)
    """
    dt = common_dtype(*(t for t in ts if t is not None))
    return tuple(t if t is None or t.dtype == dt else t.to(dt) for t in ts)


def tolerance(*dtypes: torch.dtype, n: int = 1) -> float:
    """The absolute tolerance of a check on values of ``dtypes`` summed ``n`` at a time.

    ``1e-8`` in float64; for a coarser dtype (the least precise one given counts) ``16 sqrt(n)``
    rounding units, so a float32 walk that is row-stochastic to its own precision passes.

    Examples
    --------
    >>> tolerance(torch.float64, n=128)
    1e-08
    >>> round(tolerance(torch.float32, n=100), 7)
    1.91e-05
    """
    eps = max(torch.finfo(dt).eps for dt in dtypes)
    return max(1e-8, 16 * eps * math.sqrt(max(n, 1)))


def compute_dtype(t: torch.Tensor) -> torch.dtype:
    """Half precision is upcast to float32 before any solve; others kept."""
    return torch.float32 if t.dtype in (torch.float16, torch.bfloat16) else t.dtype


def _lapack_on_cpu(t: torch.Tensor) -> bool:
    """NumPy can take ``t``: a finite float32/float64 CPU tensor outside autograd (anything else goes to torch,
    which raises its own clear error on NaN or inf)."""
    return t.device.type == "cpu" and not t.requires_grad and t.numel() > 0 and \
        t.dtype in (torch.float32, torch.float64) and all_finite(t)


def eigvalsh(K: torch.Tensor) -> torch.Tensor:
    """Eigenvalues of the symmetric ``K`` (batched), ascending, as ``torch.linalg.eigvalsh`` gives them.

    On the CPU through NumPy's LAPACK: while a second thread that ran torch's parallel kernels is alive
    (the paused forward of :func:`connlap_lite.attention_walks`), torch's own eigen-solver runs several
    times slower (8x measured for sixteen ``128 x 128`` walks on two threads); NumPy's is unaffected and
    as fast alone.  The same values to about ``1e-14`` relative.  Elsewhere (a GPU, autograd) torch's.

    >>> eigvalsh(torch.tensor([[2.0, 1.0], [1.0, 2.0]], dtype=torch.float64)).tolist()
    [1.0, 3.0]
    """
    if not _lapack_on_cpu(K):
        return torch.linalg.eigvalsh(K)
    return torch.from_numpy(np.linalg.eigvalsh(K.numpy())).to(K.dtype)


def svdvals(T: torch.Tensor) -> torch.Tensor:
    """Singular values of ``T`` (batched), decreasing, as ``torch.linalg.svdvals`` gives them; on the CPU
    through NumPy's LAPACK, for the reason :func:`eigvalsh` gives (torch's runs 2x slower there).

    >>> svdvals(torch.tensor([[3.0, 0.0], [0.0, -4.0]])).tolist()
    [4.0, 3.0]
    """
    if not _lapack_on_cpu(T):
        return torch.linalg.svdvals(T)
    return torch.from_numpy(np.linalg.svd(T.numpy(), compute_uv=False)).to(T.dtype)
