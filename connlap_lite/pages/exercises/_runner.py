"""The shared runner of every checker: cases, the answer key, the failure message with its diagnosis (the
random inputs the checkers draw are :mod:`._cases`').

A checker is a function that makes its cases, decorated with :func:`checker`; the decorated name takes the
reader's function. The expected results and the results of the common mistakes come from
:mod:`connlap_lite.pages.exercises.answer_key`, never from the checker's own module.

Chapter: the ``## Exercises`` section of every chapter.
"""
from __future__ import annotations

import contextlib
import copy
import importlib
import inspect
import secrets
import sys
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

from . import _cases, answer_key


class ExerciseFailed(AssertionError):
    """A checker's verdict on a wrong or unfinished answer. The message says what to fix.

    In Jupyter (and on Colab, and in nbgrader's feedback) a failure shows the message alone, or, when the
    reader's function raised, that function's own traceback and then the message: never the runner's frames
    (IPython's ``_render_traceback_``).
    """

    def _render_traceback_(self) -> list[str]:
        import traceback

        cause = self.__cause__
        lines = []
        if cause is not None and cause.__traceback__ is not None:
            lines += traceback.format_exception(type(cause), cause, cause.__traceback__)
            lines.append("\nwhile checking your function:\n")
        lines.append(f"{type(self).__name__}: {self}")
        return "".join(lines).splitlines()


@dataclass(frozen=True)
class Case:
    """One test case: a label naming its parameters, the positional arguments, and any extra
    arguments that only the reference takes (a seed, say)."""

    label: str
    args: tuple
    extra: tuple = ()


# ------------------------------------------------------------------------------ the runner
def _numeric(x, what: str) -> np.ndarray | str:
    """``x`` as a float (or complex) numpy array, or a sentence saying why it is not one."""
    if x is None:
        return f"{what} is None: did the function forget to `return` its result?"
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    try:
        a = np.asarray(x)
    except Exception:  # pragma: no cover - numpy accepts nearly anything
        a = np.asarray(None)
    if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        return f"{what} is a {type(x).__name__}, not a number or an array of numbers"
    return a if np.iscomplexobj(a) else a.astype(np.float64)


def _show(a: np.ndarray) -> str:
    return np.array2string(np.asarray(a), precision=5, suppress_small=True, max_line_width=110, threshold=12)


def _compare_arrays(got, expected, rtol: float, atol: float, what: str) -> str | None:
    e = np.asarray(expected)
    g = _numeric(got, what)
    if isinstance(g, str):
        return "  " + g
    if e.ndim == 0 and g.size == 1:
        g = g.reshape(())
    if g.shape != e.shape:
        return f"  {what} has shape {g.shape}, expected shape {e.shape}"
    bad_value = ~np.isfinite(g) & np.isfinite(e)
    if bad_value.any():
        idx = tuple(int(k) for k in np.argwhere(bad_value)[0])
        return f"  {what} holds {g[idx] if idx else g} at index {idx}, where {_show(e[idx] if idx else e)} was expected"
    err = np.abs(g - e)
    excess = err - (atol + rtol * np.abs(e))
    if not (excess > 0).any():
        return None
    if e.ndim == 0:
        return f"  expected {float(e):.10g}, got {float(g):.10g} (abs error {float(err):.2e})"
    idx = np.unravel_index(int(np.argmax(excess)), e.shape)
    row = idx[:-1]
    where = ", ".join(str(int(k)) for k in row) + (", :" if row else ":")
    return (f"  {what}: shape {e.shape} is right; max abs error {float(err.max()):.2e} "
            f"(tolerance {atol:.0e} + {rtol:.0e} * |expected|), worst at index {tuple(int(k) for k in idx)}\n"
            f"  expected[{where}] = {_show(e[row])}\n"
            f"  got[{where}]      = {_show(g[row])}")


def _compare(got, expected, rtol: float, atol: float, names: Sequence[str] | None) -> str | None:
    """None when ``got`` matches ``expected``, else a few lines saying how it differs."""
    if got is None:
        return "  your function returned None: did it forget to `return` its result?"
    if isinstance(expected, str):
        return None if got == expected else f"  expected {expected!r}, got {got!r}"
    if isinstance(expected, tuple):
        names = names or [f"item {k}" for k in range(len(expected))]
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return (f"  expected a tuple of {len(expected)} values ({', '.join(names)}), "
                    f"got {type(got).__name__}{'' if not isinstance(got, (tuple, list)) else f' of {len(got)}'}")
        for name, g, e in zip(names, got, expected):
            problem = _compare_arrays(g, e, rtol, atol, name)
            if problem:
                return problem
        return None
    return _compare_arrays(got, expected, rtol, atol, "your result")


class _Forbidden(Exception):
    """Raised inside the reader's function when it calls the package's own answer to the exercise."""


def _code_of(target: str):
    """The code object of ``"module:name"`` or ``"module:Owner.method"``."""
    module, _, path = target.partition(":")
    obj = importlib.import_module(module)
    for part in path.split("."):
        obj = getattr(obj, part)
    return inspect.unwrap(obj).__code__


@contextlib.contextmanager
def _forbidden(targets: Sequence[str]):
    """While active, a call of any of ``targets`` (``"module:name"``) raises :class:`_Forbidden`.

    The package's implementations of the quantities asked for are what the chapters use, so they ship with
    every edition; a reader's function that calls one of them is not an answer. A trace function watches the
    calls (it sees a function however it was imported); the previous one is restored on exit, even on error.
    """
    codes = {_code_of(t): t.split(":")[1] for t in targets}
    if not codes:
        yield
        return

    def watch(frame, event, arg):
        if event == "call" and frame.f_code in codes:
            raise _Forbidden(codes[frame.f_code])
        return None

    previous = sys.gettrace()
    sys.settrace(watch)
    try:
        yield
    finally:
        sys.settrace(previous)


HINTS = "the hints under the exercise go from a nudge to the idea to the formula"


def grade(name: str, fn: Callable, cases: Sequence[Case], *, forbid: Sequence[str] = (), rtol: float = 1e-7,
          atol: float = 1e-9, names: Sequence[str] | None = None, draw: int | None = None) -> None:
    """Run ``fn`` on every case and compare it with the answer key. Print one line, or raise :class:`ExerciseFailed`.

    ``fn`` gets a fresh copy of the arguments. Results are compared with ``atol + rtol * |expected|`` (arrays,
    tensors and numbers), by equality (strings), or item by item (tuples, with ``names``). A wrong result that
    matches one of the key's common mistakes is named in the message; ``forbid`` names the package's own
    implementations of the answer, which ``fn`` may not call. ``draw``: the cases are a graded check's, drawn
    with that number (their answers come from the teacher's references only, never from a shipped file).
    Returns None, so that a check cell has no output (nbgrader scores a cell by its error, not its value).
    """
    if not callable(fn):
        raise TypeError(f"{name} takes your function as its argument, got {type(fn).__name__}; "
                        f"call it as {name}(my_function)")
    expected, mistakes = answer_key.answers(name, cases, graded=draw is not None)
    drawn = "" if draw is None else f", graded draw {draw}"
    for k, case in enumerate(cases):
        where = f"case {k + 1} of {len(cases)} ({case.label}{drawn})"
        try:
            with _forbidden(forbid):
                got = fn(*copy.deepcopy(case.args))
        except NotImplementedError:
            raise ExerciseFailed(f"{name}: your function raised NotImplementedError on {where}: "
                                 "fill in the body") from None
        except _Forbidden as called:
            raise ExerciseFailed(f"{name}: your function called connlap_lite's {called}, which computes the "
                                 f"answer itself; write it with numpy (on {where})") from None
        except Exception as exc:
            # the reader's own frames, from their function down, without this runner's
            own = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
            raise ExerciseFailed(f"{name}: your function raised {type(exc).__name__}: {exc}\n"
                                 f"  on {where}\nhint: {HINTS}") from exc.with_traceback(own)
        problem = _compare(got, expected[k], rtol, atol, names)
        if problem:
            same = [m for m, results in mistakes.items()
                    if results[k] is not None and _compare(got, results[k], rtol, atol, names) is None]
            diagnosis = f"diagnosis: {'; or '.join(same)}\n" if same else ""
            raise ExerciseFailed(f"{name} failed on {where}\n{problem}\n{diagnosis}hint: {HINTS}")
    graded = "" if draw is None else f" (graded: cases drawn now, draw {draw})"
    print(f"{name}: {len(cases)}/{len(cases)} cases passed{graded}")


def checker(*, forbid: Sequence[str] = (), rtol: float = 1e-7, atol: float = 1e-9,
            names: Sequence[str] | None = None):
    """Turn a function that makes a checker's cases into the checker, which takes the reader's function.

    ``check(fn)`` checks ``fn`` on the practice cases (the case maker's fixed seeds; their answers ship with the
    student edition). ``check(fn, graded=True)`` grades it on cases of the same kinds drawn at check time (a
    random draw; an int repeats that draw), whose answers only the teacher's references compute: the hidden
    test of nbgrader's course folder, which no lookup of a shipped file can pass. Either returns None. A failure
    is raised from here, without the runner's frames (IPython also hides this one: ``__tracebackhide__``).

    The checker keeps the name and docstring of the decorated function, and the case maker as ``.cases``
    (the student edition's answer key is written from it; ``.cases(draw)`` makes a graded draw's cases).
    """
    def wrap(make_cases: Callable[[], list[Case]]):
        name = make_cases.__name__

        def cases(draw: int | None = None) -> list[Case]:
            if draw is None:
                return make_cases()
            with _cases.drawn(draw):
                return make_cases()

        def check(fn, *, graded: bool | int = False) -> None:
            __tracebackhide__ = True                       # (IPython and pytest hide this frame)
            draw = None if graded is False else secrets.randbits(32) if graded is True else int(graded)
            try:
                grade(name, fn, cases(draw), forbid=forbid, rtol=rtol, atol=atol, names=names, draw=draw)
            except (ExerciseFailed, TypeError, RuntimeError) as failure:
                raise failure.with_traceback(None) from failure.__cause__

        check.__name__ = check.__qualname__ = name
        check.__doc__, check.__module__ = make_cases.__doc__, make_cases.__module__
        check.cases = cases
        return check
    return wrap
