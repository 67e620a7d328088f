"""Execute chapters as a reader opens them: each notebook copied out alone into a fresh temporary folder and run
there by nbclient on the running Python's ``python3`` kernel, as Colab opens a single notebook.

    VENV/bin/python tools/alone.py [--report FILE] [--beside PATH ...] NOTEBOOK ...

Used by ``make floor`` and ``make colab`` with their own virtual environments (where connlap_lite is the
installed wheel, never the checkout). ``--beside benchmarks/results`` copies that folder of the checkout beside
each notebook, standing in for what a chapter fetches from the repository on Colab (the performance appendix's
recorded results; this machine reaches no GitHub). It prints one line per chapter (passed or failed, and its time), then the
failures' last error, writes the table to ``--report`` (JSON) if given, and exits 1 if a chapter failed.
"""
import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]
# the last cell says where connlap_lite came from, so a run against the checkout cannot pass for the wheel's
WHERE = "import connlap_lite; print('connlap_lite from', connlap_lite.__file__)"


def run_alone(path: Path, timeout: int, beside=()) -> dict:
    """Run one notebook copied alone into a temporary folder (with the folders ``beside``, at their paths relative
    to the checkout); its outcome, time and where connlap_lite came from."""
    with tempfile.TemporaryDirectory(prefix="alone-") as tmp:
        for folder in beside:
            shutil.copytree(folder, Path(tmp) / folder.resolve().relative_to(ROOT))
        copy = Path(tmp) / path.name
        shutil.copy(path, copy)
        nb = nbformat.read(copy, as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell(WHERE))
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": tmp}})
        start = time.perf_counter()
        try:
            client.execute()
            error = None
        except CellExecutionError as e:
            error = re.sub(r"\x1b\[[0-9;]*m", "", str(e)).strip().splitlines()[-1][:300]   # (no colours)
        except Exception as e:                        # (a dead kernel, a timeout)
            error = f"{type(e).__name__}: {e}"[:300]
        seconds = time.perf_counter() - start
    where = "".join(o.get("text", "") for o in nb.cells[-1].get("outputs", [])).strip()
    if error is None and (not where or Path(where.split()[-1]).is_relative_to(ROOT / "connlap_lite")):
        error = f"connlap_lite was not the installed wheel ({where or 'nothing printed'})"
    return {"chapter": str(path), "passed": error is None, "seconds": round(seconds, 1), "error": error,
            "where": where.removeprefix("connlap_lite from ")}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--report", type=Path, help="write the table here (JSON)")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds a cell may take (default 3600)")
    parser.add_argument("--beside", type=Path, action="append", default=[],
                        help="a folder of the checkout to copy beside each notebook (what Colab would fetch)")
    args = parser.parse_args(argv)
    for folder in args.beside:
        if not folder.is_dir() or not folder.resolve().is_relative_to(ROOT):
            parser.error(f"--beside {folder}: not a folder of the checkout")
    rows = []
    for path in args.notebooks:
        row = run_alone(path.resolve(), args.timeout, args.beside)
        rows.append(row)
        print(f"{'passed' if row['passed'] else 'FAILED'} {row['seconds']:7.1f} s  {path}", flush=True)
        if args.report:
            args.report.write_text(json.dumps(rows, indent=1) + "\n")
    failed = [r for r in rows if not r["passed"]]
    for r in failed:
        print(f"\n{r['chapter']}: {r['error']}")
    print(f"\n{len(rows) - len(failed)} of {len(rows)} chapters passed in {sum(r['seconds'] for r in rows):.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
