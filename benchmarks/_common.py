"""What every benchmark shares: thread settings, machine facts, interleaved timing, peak memory, JSON.

Absolute times on a shared machine are noisy, so each benchmark reports *ratios* of two
variants timed in the same process, interleaved round by round (the order rotates every
round), and takes medians.  Peak memory is measured in a fresh subprocess per variant:
the kernel's resident-set high-water mark (``VmHWM``) is reset through
``/proc/self/clear_refs`` just before the variant runs, and the peak is reported as
``VmHWM`` after it minus ``VmRSS`` before it.  glibc's mmap threshold is pinned at
64 KiB in those subprocesses so that a freed tensor leaves the resident set at once.

Chapter: *Performance* (``book/appendix/performance.ipynb``).
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
THREADS = int(os.environ.setdefault("OMP_NUM_THREADS", "1"))
WORKER_ENV = {"OMP_NUM_THREADS": str(THREADS), "MALLOC_MMAP_THRESHOLD_": "65536",
              "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1", "PYTHONHASHSEED": "0"}


def portable(path) -> str:
    """A path as the results may record it: relative to the repository inside it, else only its name
    (a committed result never carries a path of the machine it was made on)."""
    path = Path(os.path.abspath(path))
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name


def set_threads():
    """One setting for every benchmark: ``OMP_NUM_THREADS`` (default 1) threads in torch too."""
    import torch

    torch.set_num_threads(THREADS)
    return THREADS


def _meminfo_gib() -> float | None:
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        return None
    return None


def machine() -> dict:
    """The facts a number depends on: CPU, cores, memory, versions, threads, date, load.

    Runs without torch too (book_times.py times ``make test`` from a bare Python): torch's
    fields are then None.
    """
    try:
        import torch
    except ImportError:
        torch = None
    info = {
        "date_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "platform": platform.platform(),
        "processor": _cpu_name(),
        "cpus": os.cpu_count(),
        "memory_gib": _meminfo_gib(),
        "python": platform.python_version(),
        "torch": torch.__version__ if torch else None,
        "omp_num_threads": THREADS,
        "torch_threads": torch.get_num_threads() if torch else None,
        "cuda": torch.cuda.get_device_name() if torch and torch.cuda.is_available() else None,
        "load_average_at_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }
    for mod in ("transformers", "scipy", "numpy"):
        try:
            info[mod] = __import__(mod).__version__
        except ImportError:
            info[mod] = None
    return info


def _cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def interleaved(variants: dict, repeats: int, *, warmup: int = 1) -> dict:
    """Seconds of each zero-argument callable, ``repeats`` rounds, order rotated each round.

    Returns ``{name: [seconds, ...]}`` (every raw timing; warm-up runs are not kept).
    """
    names = list(variants)
    for _ in range(warmup):
        for name in names:
            variants[name]()
    times = {name: [] for name in names}
    for r in range(repeats):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            start = time.perf_counter()
            variants[name]()
            times[name].append(time.perf_counter() - start)
    return times


def median(xs) -> float:
    return float(statistics.median(xs))


def ratio(times: dict, num: str, den: str) -> float:
    """Median over rounds of the per-round ratio ``num / den`` (pairs from the same round)."""
    return median([a / b for a, b in zip(times[num], times[den])])


# ---------------------------------------------------------------- peak memory
def _status(key: str) -> int:
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


PAGE = 4096


def reset_peak() -> None:
    """Set the peak resident set (``VmHWM``) back to the current one (Linux: ``/proc/self/clear_refs``)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def resident() -> int:
    """The resident set now, bytes."""
    return _status("VmRSS")


def peak() -> int:
    """The peak resident set since the last :func:`reset_peak`, bytes."""
    return _status("VmHWM")


def peak_rss_delta(fn) -> dict:
    """Run ``fn()`` once; the peak resident set above the resident set just before (bytes).

    At least one page: a smaller growth cannot be seen in the resident set.

    Linux only: resets ``VmHWM`` through ``/proc/self/clear_refs``.  Call it in a fresh
    process (``in_subprocess``), for the first run of a variant, so nothing of an earlier
    run is still cached by the allocator.
    """
    import gc

    gc.collect()
    before = resident()
    reset_peak()
    start = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - start
    top = peak()
    del result
    return {"peak_bytes": max(top - before, PAGE), "rss_before_bytes": before, "seconds_first_run": seconds}


def in_subprocess(script: Path, args: list[str], *, python: str | None = None, timeout: float = 900) -> dict:
    """Run ``python script --worker ...`` in a fresh process; the JSON it prints last."""
    env = {**os.environ, **WORKER_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(HERE), env.get("PYTHONPATH", "")])
    proc = subprocess.run([python or sys.executable, str(script), "--worker", *args], capture_output=True,
                          text=True, env=env, timeout=timeout, cwd=str(ROOT))
    if proc.returncode != 0:
        raise RuntimeError(f"worker {script.name} {' '.join(args)} failed (exit {proc.returncode}):\n"
                           f"{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------ results
def goal(what: str, measured, target: float, unit: str, *, op: str = "<=", reason: str = "") -> dict:
    """One row of the summary table: a measured number against its goal."""
    if measured is None:
        met = None
    else:
        measured = float(measured)
        met = bool(measured <= target) if op == "<=" else bool(measured >= target)
    return {"what": what, "measured": measured, "goal": float(target), "op": op, "unit": unit,
            "met": met, "reason": reason}


def finite_positive(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def write(name: str, payload: dict, path: str | Path | None = None) -> Path:
    """Write ``payload`` (plus name and machine facts) to ``benchmarks/results/<name>.json``.

    A ``--quick`` payload never lands there by default (it would overwrite the committed
    numbers): it goes to ``<tmp>/connlap-bench/<name>.json`` unless a path is given.
    """
    if path:
        path = Path(path)
    elif payload.get("quick"):
        import tempfile

        path = Path(tempfile.gettempdir()) / "connlap-bench" / f"{name}.json"
    else:
        path = RESULTS / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"benchmark": name, "machine": machine(), **payload}
    tmp = path.with_suffix(f".tmp-{os.getpid()}")
    tmp.write_text(json.dumps(payload, indent=1) + "\n")
    os.replace(tmp, path)
    return path


def print_goals(payload: dict):
    for g in payload["goals"]:
        m = "n/a" if g["measured"] is None else f"{g['measured']:.3g}"
        ok = {True: "yes", False: "NO", None: "not run"}[g["met"]]
        print(f"  {g['what']:<58} {m:>9} {g['op']} {g['goal']:<6g} {g['unit']:<22} {ok}")


def finish(name: str, report: dict, path=None) -> dict:
    """Write ``report`` (see :func:`write`), print its goal table and where it went; return it."""
    out = write(name, report, path)
    print_goals(report)
    print(f"wrote {out}")
    return report


def quick_json_main(name: str, run, doc: str, argv=None):
    """The command line of a benchmark taking only ``--quick`` and ``--json``: ``run(quick, json)``."""
    import argparse

    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (seconds)")
    ap.add_argument("--json", default=None, help=f"where to write (default benchmarks/results/{name}.json)")
    args = ap.parse_args(argv)
    return run(args.quick, args.json)
