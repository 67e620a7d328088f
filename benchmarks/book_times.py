"""How long the book takes: each notebook executed on its own, and optionally the whole ``make test``.

    python benchmarks/book_times.py                 # every notebook of _toc.yml, one at a time (nbclient)
    python benchmarks/book_times.py --make-test     # the whole `make test`, timed; each notebook's time read
                                                    # from its pytest durations (the Makefile asks for them)
    python benchmarks/book_times.py --from-log LOG  # read `pytest --durations=0` output instead of running
    python benchmarks/book_times.py --make-book     # the full build (`make book`, 32 x 64), timed; each
                                                    # notebook's time read from myst-nb's log lines
    python benchmarks/book_times.py --from-book-log LOG   # read such a log instead of running
    python benchmarks/book_times.py --quick         # a two-cell scratch notebook (tests the machinery)

Each notebook runs in a fresh kernel with its own folder as working directory, exactly as
``pytest --nbval-lax`` runs it, one after another (never two at once on a shared machine).
Results are merged into ``benchmarks/results/book_times.json``: a later run of only some
notebooks (``--only``) keeps the other notebooks' earlier numbers, each with its date.
``make_test`` and ``make_book`` each record ONE run: its commit (``git rev-parse HEAD``), date, exit status and
seconds, the state of every cache it started from (pip's download cache, the model cache, the measurement cache:
empty or warm; and whether make's virtual environment was already installed), and each notebook's seconds within
that run. ``earlier`` keeps older records that are not one run, each saying what it was.
The goals: the whole ``make test`` within 20 minutes, and the whole ``make book`` within 60 minutes
from an empty model cache, on the 2-core reference machine.

Chapter: *Performance* (``book/appendix/performance.ipynb``).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import os

# make test is timed as CI runs it, with the thread setting of the caller's environment, not the
# benchmarks' one thread that importing _common sets by default
_CALLER_OMP = os.environ.get("OMP_NUM_THREADS")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

GOAL_SECONDS = 20 * 60
GOAL_BOOK_SECONDS = 60 * 60
BOOK_END = "make book finished:"          # the last line of a make book log: "make book finished: 3012 s, exit 0"
PENDING = ("not measured as one run yet: run `python benchmarks/book_times.py --make-test` in a fresh clone on a "
           "quiet machine (it records the run's commit, date and caches)")


def commit() -> str | None:
    """The checkout's commit (``git rev-parse HEAD``), or None outside a git checkout."""
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=C.ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def _holds_files(folder: Path, skip=()) -> bool:
    """Whether ``folder`` holds any file (outside its subfolders named in ``skip``; lock files not counted)."""
    if not folder.is_dir():
        return False
    for entry in folder.iterdir():
        if entry.name in skip or entry.name.endswith(".lock"):
            continue
        if entry.is_file() or (entry.is_dir() and _holds_files(entry)):
            return True
    return False


def cache_state(env=None) -> dict:
    """Each cache a run of ``make test`` or ``make book`` reads, ``"empty"`` or ``"warm"`` at its start (pip's:
    ``"off"`` under ``PIP_NO_CACHE_DIR``): pip's download cache, the model cache (the offline models' files
    assembled and converted under ``$CONNLAP_CACHE``, and Hugging Face's hub cache) and the measurement cache
    (``$CONNLAP_CACHE``'s measurements and known results).

    >>> import tempfile; home = tempfile.mkdtemp()
    >>> cache_state({"HOME": home, "CONNLAP_CACHE": home + "/c", "PIP_NO_CACHE_DIR": "1"})
    {'pip': 'off', 'model': 'empty', 'measurement': 'empty'}
    """
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    word = lambda full: "warm" if full else "empty"                      # noqa: E731
    if env.get("PIP_NO_CACHE_DIR", "").lower() not in ("", "0", "false", "no", "off"):
        pip = "off"
    else:
        pip = word(_holds_files(Path(env.get("PIP_CACHE_DIR") or home / ".cache" / "pip")))
    connlap = Path(env.get("CONNLAP_CACHE") or home / ".cache" / "connlap_lite")
    hub = Path(env.get("HF_HUB_CACHE") or Path(env.get("HF_HOME") or home / ".cache" / "huggingface") / "hub")
    model = _holds_files(connlap, skip=("measurements", "known")) or _holds_files(hub)
    measurement = _holds_files(connlap / "measurements") or _holds_files(connlap / "known")
    return {"pip": pip, "model": word(model), "measurement": word(measurement)}


def _run_facts() -> dict:
    """What a run's record says of its start: commit, date, caches, make's venv, load."""
    return {"commit": commit(), "date_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "cache_at_start": cache_state(),
            "venv_at_start": "installed" if (C.ROOT / ".venv" / ".installed").exists() else "absent",
            "load_average_at_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None}


def venv_versions() -> dict | None:
    """Python's, torch's and transformers' versions in make's virtual environment (after a run), or None."""
    py = C.ROOT / ".venv" / "bin" / "python"
    code = ("import json, platform, torch, transformers; print(json.dumps({'python': platform.python_version(), "
            "'torch': torch.__version__, 'transformers': transformers.__version__}))")
    try:
        out = subprocess.run([str(py), "-c", code], capture_output=True, text=True, check=True, timeout=300).stdout
        return json.loads(out.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def toc_notebooks() -> list[str]:
    """Every notebook listed in ``_toc.yml``, as paths relative to the repository root (tools/toc.py reads it)."""
    sys.path.insert(0, str(C.ROOT / "tools"))
    from toc import toc_files

    return [f + ".ipynb" for f in toc_files() if (C.ROOT / (f + ".ipynb")).exists()]


def execute(path: Path, timeout: int = 3600) -> dict:
    """Run one notebook top to bottom in a fresh kernel; seconds and whether it passed."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(str(path), as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name=nb.metadata.get("kernelspec", {}).get("name", "python3"),
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    try:
        client.execute()
        status, error = "ok", None
    except Exception as exc:                      # a failing notebook is a result too
        status, error = "error", f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else ''}"
    return {"seconds": time.perf_counter() - start, "status": status, "error": error,
            "date_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}


def parse_durations(text: str) -> dict:
    """Seconds per notebook from ``pytest --durations=0`` lines (``12.3s call  book/x.ipynb::Cell 4``)."""
    per: dict[str, float] = {}
    for m in re.finditer(r"^\s*([\d.]+)s\s+(?:call|setup|teardown)\s+(\S+?\.ipynb)::", text, re.M):
        per[m.group(2)] = per.get(m.group(2), 0.0) + float(m.group(1))
    return per


def parse_book_log(text: str) -> dict:
    """From a ``make book`` log: seconds per notebook (myst-nb's ``x.ipynb: Executed notebook in 12.3 seconds``),
    the notebooks that failed, and the whole build's seconds and exit status (the log's ``make book finished:`` line).

    >>> log = ("/x/book/a.ipynb: Executed notebook in 2.50 seconds [mystnb]\\n"
    ...        "/x/book/b.ipynb: WARNING: Executing notebook failed: CellTimeoutError [mystnb.exec]\\n"
    ...        "make book finished: 75 s, exit 0")
    >>> parse_book_log(log)["notebooks"], parse_book_log(log)["failed"], parse_book_log(log)["seconds"]
    ({'book/a.ipynb': 2.5}, ['book/b.ipynb'], 75.0)
    """
    root = re.escape(str(C.ROOT)) + "/"
    per = {m.group(1): float(m.group(2)) for m in
           re.finditer(r"(?:^|\s)(?:" + root + r"|\S*/)?(book/\S+?\.ipynb): Executed notebook in ([\d.]+) seconds", text, re.M)}
    failed = sorted(set(re.findall(r"(book/\S+?\.ipynb):(?:\d+:)?\s*(?:\S*WARNING\S*:?\s*)?Executing notebook failed",
                                   text)))
    end = re.search(BOOK_END + r" ([\d.]+) s, exit (-?\d+)", text)
    return {"notebooks": per, "failed": failed, "seconds": float(end.group(1)) if end else None,
            "returncode": int(end.group(2)) if end else None}


def _scratch(folder: Path) -> Path:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = sum(range(10))"), nbformat.v4.new_code_cell("assert x == 45")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = folder / "scratch.ipynb"
    nbformat.write(nb, str(path))
    return path


def _load(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def main_setting(measurements: list[dict]) -> tuple[int, int] | None:
    """The full build's main setting, ``(passages, tokens)``: the one most of its measurements use.

    >>> main_setting([{"passages": 32, "tokens": 128}, {"passages": 8, "tokens": 640}, {"passages": 32, "tokens": 128}])
    (32, 128)
    """
    counts: dict = {}
    for m in measurements:
        key = (m["passages"], m["tokens"])
        counts[key] = counts.get(key, 0) + 1
    return max(counts, key=counts.get) if counts else None


def summarise(report: dict) -> dict:
    """Totals and the goal row from the per-notebook numbers and the `make test` run."""
    nbs = report["notebooks"]
    done = [v["seconds"] for v in nbs.values() if v.get("seconds") is not None]
    report["notebooks_total_seconds"] = sum(done) if len(done) == len(nbs) and nbs else None
    mt = report.get("make_test") or {}
    seconds = mt.get("seconds") if mt.get("returncode") == 0 else None      # (a failed run has no time to meet)
    reason = "" if seconds is not None else (f"the recorded run (`make_test`) failed: exit status {mt['returncode']}"
                                             if mt.get("seconds") is not None else PENDING)
    report["goals"] = [C.goal("book: whole `make test` (set-up, unit, notebooks, strict build, browser)", seconds, GOAL_SECONDS,
                              "seconds", reason=reason)]
    mb = report.get("make_book") or {}
    if mb.get("seconds") is not None:
        setting = mb.get("setting")                 # recorded by _make_book from the build's measurements
        label = f", {setting[0]} x {setting[1]}" if setting else ""
        report["goals"] += [C.goal(f"book: whole `make book` (set-up and the full build{label})", mb["seconds"],
                                   GOAL_BOOK_SECONDS, "seconds"),
                            C.goal("book: pages of `make book` whose notebook failed", len(mb.get("failed") or []), 0,
                                   "notebooks", reason=f"failed: {', '.join(mb.get('failed') or [])}")]
    if report["notebooks_total_seconds"] is not None:
        report["goals"].append(C.goal("book: every notebook executed once, one at a time",
                                      report["notebooks_total_seconds"], GOAL_SECONDS, "seconds"))
    return report


def _make_book(args) -> dict:
    """Run (or read the log of) the full ``make book``: its seconds, exit status and per-notebook seconds."""
    cache = Path(os.environ.get("CONNLAP_CACHE") or Path.home() / ".cache" / "connlap_lite")
    if args.make_book:
        facts = _run_facts()
        log = C.ROOT / "_build" / "make_book.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        with open(log, "w") as sink:
            proc = subprocess.run(["make", "book"], cwd=str(C.ROOT), stdout=sink, stderr=subprocess.STDOUT)
            sink.write(f"\n{BOOK_END} {time.perf_counter() - start:.0f} s, exit {proc.returncode}\n")
        facts["runtime"] = venv_versions()
    else:                                           # (a log read afterwards: only what the caller says is known)
        log = Path(args.from_book_log)
        facts = {"commit": args.commit, "date_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                 "cache_at_start": {"measurement": args.book_cache}}
    parsed = parse_book_log(log.read_text(errors="replace"))
    folder = Path(args.book_cache_dir) if getattr(args, "book_cache_dir", None) else cache
    made = measurements(folder / "measurements") if facts["cache_at_start"]["measurement"] == "empty" else []
    return {**facts, **parsed, "log": C.portable(log), "note": args.book_note, "measurements": made,
            "setting": main_setting(made)}


def measurements(folder: Path) -> list[dict]:
    """What each cached ``analyze`` report cost: model, setting and seconds (the reports record their own time).

    After a build from an empty cache these are the build's measurements, so the cost of a larger setting can be
    read from them (forward passes and per-passage metrics grow with the passages).
    """
    rows = []
    for f in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            r = json.loads(f.read_text())
            if Path(r["model"]).is_absolute():       # (a chapter's temporary model, the ladder's: not the book's)
                continue
            rows.append({"model": r["model"], "passages": r["passages"], "tokens": r["tokens"], "corpus": r.get("corpus"),
                         "conditions": sorted(r["conditions"]), "q4": r.get("q4", False), "bos": r.get("bos"),
                         "seconds": float(r["seconds"])})
        except (OSError, ValueError, KeyError, TypeError):
            continue                                   # not a report (a lock, a half-written file): not counted
    return rows


def run(args) -> dict:
    path = Path(args.json) if args.json else None
    if args.quick:
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="connlap-booktimes-"))
        scratch = _scratch(folder)
        report = {"quick": True, "notebooks": {"scratch.ipynb": execute(scratch, timeout=120)}}
        summarise(report)
        report["goals"][0].update(measured=report["notebooks"]["scratch.ipynb"]["seconds"],
                                  what="book: a two-cell scratch notebook (--quick)")
        report["goals"][0]["met"] = report["goals"][0]["measured"] <= GOAL_SECONDS
        out = C.write("book_times", report, path)
        print(f"wrote {out}")
        return report
    target = path or C.RESULTS / "book_times.json"
    # a new --json file starts from the committed results, so a run of one part keeps the others' numbers
    old = _load(target) if target.exists() else _load(C.RESULTS / "book_times.json")
    notebooks = toc_notebooks()
    report = {"quick": False, "notebooks": {nb: old.get("notebooks", {}).get(nb, {"seconds": None, "status": PENDING})
                                            for nb in notebooks},
              "make_test": old.get("make_test"), "make_book": old.get("make_book"), "earlier": old.get("earlier", []),
              "method": "nbclient, one notebook at a time, fresh kernel each"}
    if args.make_book or args.from_book_log:
        report["make_book"] = _make_book(args)
    if args.make_test:
        # one run gives both numbers: make test's wall time, and each notebook's time from its pytest durations
        facts = _run_facts()
        log = C.ROOT / "_build" / "make_test.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        with open(log, "w") as sink:
            env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
            if _CALLER_OMP is not None:
                env["OMP_NUM_THREADS"] = _CALLER_OMP
            proc = subprocess.run(["make", "test"], cwd=str(C.ROOT), stdout=sink, stderr=subprocess.STDOUT, env=env)
        report["make_test"] = {**facts, "seconds": time.perf_counter() - start, "returncode": proc.returncode,
                               "log": C.portable(log), "omp_num_threads": _CALLER_OMP or "unset (torch's default)",
                               "notebooks": parse_durations(log.read_text(errors="replace")),
                               "runtime": venv_versions()}
        args.from_log = args.from_log or str(log)
    if args.from_log:
        per = parse_durations(Path(args.from_log).read_text())
        for nb, s in per.items():
            report["notebooks"][nb] = {"seconds": s, "status": "from log", "log": C.portable(args.from_log)}
        report["method"] = f"pytest --durations log {C.portable(args.from_log)}"
    elif not args.list_only and not (args.make_book or args.from_book_log):   # (without any log to read)
        chosen = [nb for nb in notebooks if not args.only or any(o in nb for o in args.only)]
        for nb in chosen:
            print(f"{nb} ...", end=" ", flush=True)
            report["notebooks"][nb] = execute(C.ROOT / nb)
            r = report["notebooks"][nb]
            print(f"{r['seconds']:.0f} s {r['status']}", flush=True)
    summarise(report)
    return C.finish("book_times", report, target)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a scratch notebook only (seconds)")
    ap.add_argument("--make-test", action="store_true", help="also time the whole `make test`")
    ap.add_argument("--only", nargs="+", default=None, help="notebooks whose path contains one of these")
    ap.add_argument("--from-log", default=None, help="a `pytest --durations=0` log to read instead of running")
    ap.add_argument("--make-book", action="store_true", help="also time the full `make book`")
    ap.add_argument("--from-book-log", default=None, help="a `make book` log to read instead of running it")
    ap.add_argument("--book-cache", default="empty", choices=("empty", "warm"),
                    help="with --from-book-log: the model cache when that build started (default empty)")
    ap.add_argument("--book-note", default="", help="what else ran on the machine during the build, if anything")
    ap.add_argument("--commit", default=None, help="with --from-book-log: the commit that build ran at")
    ap.add_argument("--book-cache-dir", default=None,
                    help="with --from-book-log: the CONNLAP_CACHE that build used (its reports' seconds are read)")
    ap.add_argument("--list-only", action="store_true", help="write the notebook list, run nothing")
    ap.add_argument("--json", default=None, help="where to write (default benchmarks/results/book_times.json); a new file "
                    "starts from the committed results (its machine block then describes only the run that wrote it)")
    return run(ap.parse_args(argv))


if __name__ == "__main__":
    main()
