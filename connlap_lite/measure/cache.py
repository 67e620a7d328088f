"""The measurement cache: one pipeline (key, validation, lock, atomic write) for every cached report.

:func:`connlap_lite.measure.analysis.analyze` and :func:`connlap_lite.known.known_results` both keep their JSON reports
under ``$CONNLAP_CACHE`` (default ``~/.cache/connlap_lite``) through :func:`cached`: the report's file
is named by a digest of the model name, the measurement's ``SCHEMA`` and its arguments; a cached
report is read only if it parses and has the expected shape (otherwise a warning, and it is measured
again); a new one is written under a temporary name and renamed into place, inside a lock on its
folder (:mod:`connlap_lite._files`).  A report is measured under a lock of its own (``computing/<kind>/<report>.json.lock`` in the cache): a
second process that asks for it meanwhile waits, then reads it, so that two processes sharing the cache (make
test's and make book's two lanes) never measure one report twice.  The cache serves the report, never the other way round: a
cache that cannot be written (a file where its folder should be, a read-only or full disk, a
file-size limit) is a warning naming the path and ``CONNLAP_CACHE``, and the report is returned.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import warnings
from pathlib import Path
from typing import Callable

from .._files import atomic_write_text, locked, read_json, sweep
from ..models.offline import OFFLINE, cache_dir

ENV = "CONNLAP_CACHE"


def key(name: str, schema: str, **fields) -> str:
    """The cache key of a measurement: a digest of the model name, its ``schema`` and its arguments.

    Examples
    --------
    >>> key("m", "s", n=1) == key("m", "s", n=1) != key("m", "s", n=2)
    True
    """
    blob = json.dumps({"name": name, "schema": schema, **fields}, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def folder_identity(name: str) -> str | None:
    """For a local folder, a digest of its files' names, sizes and modification times; else None.

    The offline short names pin their packages' versions in the name of their files (and hashes
    in :mod:`connlap_lite.models.offline`), so their key is left as it was.
    """
    if name in OFFLINE or not Path(name).expanduser().is_dir():
        return None
    h = hashlib.sha256()
    for f in sorted(Path(name).expanduser().rglob("*")):
        if f.is_file() and not any(part.startswith(".") for part in f.relative_to(Path(name).expanduser()).parts):
            st = f.stat()
            h.update(f"{f.relative_to(Path(name).expanduser())}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def path(kind: str, name: str, digest: str) -> Path:
    """Where a report of ``kind`` (``"measurements"``, ``"known"``) on model ``name`` with key ``digest`` lives.

    Examples
    --------
    >>> path("known", "org/model v2", "abc").name
    'org_model_v2-abc.json'
    """
    slug = "".join(c if c.isalnum() or c in ".-" else "_" for c in name.strip("/"))[-80:]
    return cache_dir() / kind / f"{slug}-{digest}.json"


def load(file: Path, problem: Callable[[object], str | None]) -> dict | None:
    """The cached report at ``file``, or None: absent, unreadable, or refused by ``problem`` (which says why
    a report cannot be used, None if it can; a warning names the file and the reason)."""
    report = read_json(file)
    if report is None:
        return None
    why = problem(report)
    if why:
        warnings.warn(f"the cached measurement {file} is not usable ({why}); recomputing it", stacklevel=3)
        return None
    return report


def store(file: Path, report: dict) -> bool:
    """Write ``report`` to ``file`` atomically, holding the lock on its folder; True if it was written.

    A failure to write is a warning that names ``file`` and ``$CONNLAP_CACHE`` and returns False: the caller
    keeps its report.

    Examples
    --------
    >>> import tempfile, pathlib, warnings
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> store(folder / "measurements" / "r.json", {"a": 1})
    True
    >>> (folder / "blocked").write_text("a file where a folder should be")
    31
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     store(folder / "blocked" / "r.json", {"a": 1})
    False
    >>> "set CONNLAP_CACHE" in str(caught[0].message)
    True
    """
    file = Path(file)
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        with locked(file.parent):                  # one lock for the folder: no lock file per report
            sweep(file, everything=True)
            atomic_write_text(file, json.dumps(report))
        return True
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        where = f"${ENV}={cache_dir()}" if os.environ.get(ENV) else f"the default cache {cache_dir()}"
        warnings.warn(f"the measurement was not cached: cannot write {file} ({reason}; {where}); the report is "
                      f"returned but will be measured again next time: set {ENV} to a writable folder with free "
                      "space", stacklevel=4)
        return False


def _stamp(file: Path) -> tuple | None:
    """The file's size and modification time, or None where there is none: whether it changed since."""
    try:
        st = file.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def cached(kind: str, name: str, schema: str, fields: dict, problem: Callable[[object], str | None],
           compute: Callable[[], dict], *, read: bool = True, write: bool = True) -> dict:
    """The report of ``kind`` on ``name``: from the cache when ``read`` and a usable one is there, else
    ``compute()``, stored when ``write`` (a failed write warns and the report is still returned)."""
    file = path(kind, name, key(name, schema, **fields))
    seen = _stamp(file)
    report = load(file, problem) if read else None
    if report is not None:
        return report
    with contextlib.ExitStack() as stack:
        if read and write:           # one process measures a report: another that asks for it meanwhile waits for
            try:                     # it, then reads it (the two lanes of make test and make book share the cache)
                stack.enter_context(locked(file.parent.parent / "computing" / file.parent.name / file.name))
                report = load(file, problem) if _stamp(file) != seen else None
            except OSError:          # (a cache that cannot hold a lock: measured here all the same)
                pass
        if report is None:
            report = compute()
            if write:
                store(file, report)
    return report
