"""The answer key of the graded exercises: every case's expected result, and what each common mistake gives.

In the book's own edition the key is computed on demand from :mod:`connlap_lite.pages.exercises._reference`, the
teacher's reference implementations and named mistakes. The student edition (``tools/student_edition.py``)
ships without that module and with ``answers.npz`` beside this one instead: results only, for the practice
cases the checkers make, with a fingerprint of each case's inputs so that a key made for other cases is
refused rather than read as a wrong answer. A graded check (``graded=True``) draws its cases at check time and
takes their answers from the references only: no file the student edition ships can answer it.

Chapter: the ``## Exercises`` section of every chapter.
"""
from __future__ import annotations

import copy
import hashlib
import warnings
from pathlib import Path

import numpy as np

ANSWERS = Path(__file__).with_name("answers.npz")


def fingerprint(args) -> str:
    """A short digest of a case's arguments (arrays rounded to 8 decimals, so the last bit does not matter).

    >>> fingerprint((np.eye(2), [0, 1], 0.5)) == fingerprint((np.eye(2) + 1e-13, [0, 1], 0.5))
    True
    >>> fingerprint((np.eye(2),)) == fingerprint((np.eye(3),))
    False
    """
    h = hashlib.sha256()
    for a in args:
        if isinstance(a, (str, bool, int)) or a is None:
            h.update(repr(a).encode())
        else:
            a = np.asarray(a, dtype=float)
            h.update(repr(a.shape).encode() + np.round(a, 8).tobytes())
    return h.hexdigest()[:16]


def _attempt(fn, case):
    """What ``fn`` gives on ``case`` (reference arguments included), or None where it fails."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return fn(*copy.deepcopy(case.args), *case.extra)
        except Exception:
            return None


def has_reference() -> bool:
    """Whether this edition ships the teacher's references (the book's does, the student edition does not)."""
    import importlib.util

    return importlib.util.find_spec(f"{__package__}._reference") is not None


def computed(name: str, cases, *, graded: bool = False) -> tuple[list, dict[str, list]]:
    """The key from the reference implementations (the book's edition only)."""
    try:
        from . import _reference
    except ImportError:
        if graded:
            raise RuntimeError(f"{name}(..., graded=True) grades on cases drawn now, whose answers only the teacher's "
                               "edition of connlap_lite computes (exercises._reference), which the student edition "
                               "does not ship: grade with the book's package, e.g. nbgrader's autograde in the course "
                               "folder (make student), or call the checker without graded=True to check your answer "
                               "on the practice cases") from None
        raise RuntimeError(f"this edition of connlap_lite ships neither the teacher's key (exercises._reference) "
                           f"nor its answers ({ANSWERS.name}); reinstall it from the student branch") from None
    reference = _reference.REFERENCES[name]
    expected = [reference(*copy.deepcopy(c.args), *c.extra) for c in cases]
    return expected, {m: [_attempt(fn, c) for c in cases] for m, fn in _reference.MISTAKES.get(name, {}).items()}


# ------------------------------------------------------------------- the student edition's file
def _put(store: dict, key: str, value) -> None:
    if value is None:
        return
    if isinstance(value, tuple):                      # a tuple of results (P, T); a list is one array
        store[f"{key}#n"] = np.array(len(value))
        for i, v in enumerate(value):
            _put(store, f"{key}#{i}", v)
        return
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    store[key] = np.asarray(value)


def stored(store, key: str):
    if f"{key}#n" in store:
        return tuple(stored(store, f"{key}#{i}") for i in range(int(store[f"{key}#n"])))
    if key not in store:
        return None
    a = store[key]
    return str(a) if a.dtype.kind == "U" else a


def record(checkers: dict, path: Path = ANSWERS) -> Path:
    """Write the key of every checker of ``checkers`` (name -> checker with ``.cases``) to ``path``."""
    store = {}
    for name, check in sorted(checkers.items()):
        cases = check.cases()
        expected, mistakes = computed(name, cases)
        store[f"{name}/mistakes"] = np.array(list(mistakes), dtype=str)
        for k, case in enumerate(cases):
            store[f"{name}/{k}/inputs"] = np.array(fingerprint(case.args))
            _put(store, f"{name}/{k}/expected", expected[k])
            for m, results in mistakes.items():
                _put(store, f"{name}/{k}/{m}", results[k])
    path = Path(path)
    with path.open("wb") as out:
        np.savez_compressed(out, **store)
    return path


def from_file(name: str, cases, path: Path) -> tuple[list, dict[str, list]]:
    with np.load(path, allow_pickle=False) as f:
        store = dict(f)
    if f"{name}/mistakes" not in store:
        raise RuntimeError(f"the answer key {path} has no entry for {name}: rebuild the student edition "
                           "(make student) with the same connlap_lite")
    for k, case in enumerate(cases):
        if str(store.get(f"{name}/{k}/inputs")) != fingerprint(case.args):
            raise RuntimeError(f"the answer key {path} was made for other cases of {name} (case {k + 1} differs; "
                               "another numpy?): rebuild the student edition (make student) where you grade")
    expected = [stored(store, f"{name}/{k}/expected") for k in range(len(cases))]
    mistakes = {str(m): [stored(store, f"{name}/{k}/{m}") for k in range(len(cases))]
                for m in store[f"{name}/mistakes"]}
    return expected, mistakes


def answers(name: str, cases, *, graded: bool = False) -> tuple[list, dict[str, list]]:
    """The expected results of ``cases`` and, by mistake, what each common mistake gives (None: it fails).

    The practice cases' are read from ``answers.npz`` where the student edition put one, else computed from the
    references; a graded check's (cases drawn at check time, which no shipped file holds) only ever from the
    references.
    """
    if graded:
        return computed(name, cases, graded=True)
    if ANSWERS.exists():
        return from_file(name, cases, ANSWERS)
    return computed(name, cases)
