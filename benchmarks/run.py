"""Run every benchmark, one after another, and print one table: measured | goal | met?

    python benchmarks/run.py                  # what `make bench` runs (the book's numbers; long)
    python benchmarks/run.py --quick          # every benchmark on tiny sizes (smoke test)
    python benchmarks/run.py --table          # only print the table from benchmarks/results/*.json
    python benchmarks/run.py --only spectra walk_apply

Each benchmark runs as its own process (``python benchmarks/<name>.py``), so one that fails
does not stop the others; the table is read back from the JSON each one writes.

Chapter: *Performance* (``book/appendix/performance.ipynb``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

BENCHMARKS = ["extraction", "walk_apply", "spectra", "gpu_8b", "book_times"]


def table(results: dict) -> str:
    """The summary table (plain text) of every goal row of every result."""
    lines = [f"{'benchmark':<11} {'what':<66} {'measured':>10}  {'goal':<14} {'met?':<7}",
             "-" * 112]
    for name, res in results.items():
        if res is None:
            lines.append(f"{name:<11} {'(no results: benchmark failed or not run)':<66}")
            continue
        for g in res.get("goals", []):
            m = "n/a" if g["measured"] is None else f"{g['measured']:.3g}"
            ok = {True: "yes", False: "NO", None: "not run"}[g["met"]]
            what = g["what"].split(": ", 1)[-1]
            lines.append(f"{name:<11} {what[:66]:<66} {m:>10}  {g['op']} {g['goal']:g} {g['unit'][:10]:<10} {ok}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes; results go to a temporary folder")
    ap.add_argument("--table", action="store_true", help="run nothing; print the table of the committed results")
    ap.add_argument("--only", nargs="+", choices=BENCHMARKS, default=None)
    ap.add_argument("--make-test", action="store_true", help="book_times also times the whole `make test`")
    args = ap.parse_args(argv)
    chosen = args.only or BENCHMARKS
    folder = Path(tempfile.mkdtemp(prefix="connlap-bench-")) if args.quick else C.RESULTS
    failed = []
    if not args.table:
        for name in chosen:
            cmd = [sys.executable, str(C.HERE / f"{name}.py")]
            if args.quick:
                cmd += ["--quick", "--json", str(folder / f"{name}.json")]
            if name == "book_times" and args.make_test and not args.quick:
                cmd.append("--make-test")
            print(f"== {' '.join(cmd[1:])}", flush=True)
            if subprocess.run(cmd, cwd=str(C.ROOT), env={**os.environ, **C.WORKER_ENV}).returncode:
                failed.append(name)
    results = {}
    for name in chosen:
        path = folder / f"{name}.json"
        results[name] = json.loads(path.read_text()) if path.exists() else None
    print()
    print(table(results))
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
