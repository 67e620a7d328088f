"""Write the teaching kit's two computed tables into book/teaching.md: every exercise with its points, level
and minutes (read from the exercises themselves), and each chapter's measured times and disk (read from the
committed records: benchmarks/results/book_times.json for `make test` and `make book`, and
benchmarks/results/colab_chapters.json, written by `make colab`, for a first run on Colab's runtime).

    .venv/bin/python tools/teaching_tables.py          # rewrites the tables between their markers

Each table sits between ``<!-- teaching_tables: NAME -->`` and ``<!-- /teaching_tables -->``; the rest of the
page is left alone. tests/pages/test_exercises.py fails when the page and what this script writes differ.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from toc import toc_files  # noqa: E402  (tools/toc.py: the one reader of _toc.yml)
from connlap_lite.pages.prose import (caches_at_start, measured_at)  # noqa: E402  (the performance appendix says them alike)

PAGE = ROOT / "book" / "teaching.md"
TIMES = ROOT / "benchmarks" / "results" / "book_times.json"
COLAB = ROOT / "benchmarks" / "results" / "colab_chapters.json"
NOT_MEASURED = measured_at(None)
HEADER = re.compile(r"\*(?:Graded, (?P<points>\d+) points? · level|Level): (?P<level>basic|intermediate|advanced) · "
                    r"about (?P<minutes>\d+) minutes\*")
EXERCISE = re.compile(r"```\{exercise\}[^\n]*\n:label: (?P<label>\S+)\n\n(?P<head>[^\n]*)\n")
BLOCK = re.compile(r"(<!-- teaching_tables: (?P<name>\w+) -->\n).*?(?=<!-- /teaching_tables -->)", re.S)


def chapters(root: Path = ROOT) -> list[Path]:
    """The book's notebooks in reading order (the table of contents)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    return [p for p in (root / f"{f}.ipynb" for f in toc_files(toc)) if p.exists()]


def _markdown(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def _label(path: Path) -> str:
    return re.search(r"^\((\S+)\)=", _markdown(path), re.M).group(1)   # (a macro cell may come first)


def exercise_rows(path: Path) -> list[dict]:
    """Every exercise of a chapter: its label, points (0 if not graded), level and minutes."""
    rows = []
    for m in EXERCISE.finditer(_markdown(path)):
        h = HEADER.fullmatch(m["head"])
        if not h:
            raise ValueError(f"{path.name}: exercise {m['label']} does not open with *Level: ... · about N minutes*")
        rows.append({"label": m["label"], "points": int(h["points"] or 0), "level": h["level"],
                     "minutes": int(h["minutes"])})
    return rows


def exercises_table(root: Path = ROOT) -> str:
    lines = ["| chapter | exercise | graded | level | minutes |", "|---|---|---|---|---|"]
    for path in chapters(root):
        rows = exercise_rows(path)
        for k, r in enumerate(rows):
            chapter = f"{{ref}}`{_label(path)}`" if k == 0 else ""
            graded = f"{r['points']} point{'s' * (r['points'] != 1)}" if r["points"] else "no"
            lines.append(f"| {chapter} | {{ref}}`{r['label']}` | {graded} | {r['level']} | {r['minutes']} |")
        if rows:
            total = sum(r["minutes"] for r in rows)
            points = sum(r["points"] for r in rows)
            lines.append(f"| | *all {len(rows)}* | *{points} points* | | *{total}* |")
    return "\n".join(lines) + "\n"


def duration(seconds: float) -> str:
    """Seconds as a reader reads them.

    >>> duration(2.21), duration(67.7), duration(918.2)
    ('2 s', '1 min 8 s', '15 min 18 s')
    """
    s = round(seconds)
    return f"{s} s" if s < 60 else f"{s // 60} min {s % 60} s"


def size(n: float) -> str:
    """Bytes as a reader reads them.

    >>> size(3.5e9), size(2.4e8), size(1.2e6), size(3e3)
    ('3.5 GB', '240 MB', '1.2 MB', '0 MB')
    """
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB" if n >= 1e7 else f"{n / 1e6:.1f} MB" if n >= 5e5 \
        else "0 MB"


def _load(path: Path) -> dict | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def times_table(root: Path = ROOT) -> str:
    """Per chapter: its time in one `make test`, in one `make book`, and run alone on Colab's runtime (CPU) with the
    disk that takes; each column headed with the run it comes from, and "not measured" where no record has it."""
    data = _load(root / TIMES.relative_to(ROOT)) or {}
    test, book = data.get("make_test") or None, data.get("make_book") or None
    colab = _load(root / COLAB.relative_to(ROOT))
    rows = {r["chapter"]: r for r in colab["chapters"]} if colab else {}

    def run_cell(rec, rel):
        seconds = (rec or {}).get("notebooks", {}).get(rel)
        return duration(seconds["seconds"] if isinstance(seconds, dict) else seconds) if seconds is not None \
            else NOT_MEASURED

    def colab_cells(rel):
        r = rows.get(rel)
        if r is None:
            return NOT_MEASURED, NOT_MEASURED
        time_ = duration(r["seconds"]) if r["passed"] else f"failed after {duration(r['seconds'])}"
        if r.get("commit") and r["commit"] != colab.get("commit"):     # (run again after a fix: make colab-again)
            time_ += f" (again at {r['commit'][:7]})"
        installs = r.get("installs_bytes")
        disk = (f"{size(installs)} + {size(r['cache_bytes'])}" if installs is not None
                else f"installs not measured + {size(r['cache_bytes'])}")
        return time_, disk

    def at(rec):
        r = (rec or {}).get("runtime") or {}
        return measured_at(rec) + "".join(f", {k.capitalize() if k == 'python' else k} {r[k]}"
                                          for k in ("python", "torch", "transformers") if r.get(k))

    lines = [f"| chapter | `make test` ({at(test)}) | `make book` ({at(book)}) | "
             f"Colab, first run, CPU ({at(colab and {**colab, 'runtime': colab.get('versions')})}) | "
             f"disk on Colab: installs + cache |", "|---|---|---|---|---|"]
    for path in chapters(root):
        rel = path.relative_to(root).as_posix()
        lines.append(f"| {{ref}}`{_label(path)}` | {run_cell(test, rel)} | {run_cell(book, rel)} | "
                     + " | ".join(colab_cells(rel)) + " |")
    said = []
    for name, rec in (("`make test`", test), ("`make book`", book)):
        if rec:
            said.append(f"{name}'s column is one run's, {measured_at(rec)} ({caches_at_start(rec)} at its start, exit "
                        f"status {rec.get('returncode')})")
    note = ("\n" + ("; ".join(said) + ". " if said else "")
            + "In those two columns each chapter is timed inside one run of the whole target: `make test` runs the "
            "notebooks under nbval in two lanes side by side (the known results beside the unit tests, the theory "
            "chapters after them, beside the strict build; the others in path order, Beyond first "
            "of the empirical chapters), and `make book` executes them in its own order beside a lane that measures "
            "into the same cache (the scorecard's measurements first); chapters that measure the same models share the measurement cache, so the "
            "first of them pays for the measurements and the others read them. They are not each chapter's first "
            "run. The Colab columns are: each chapter copied "
            "out alone and run by `make colab` on Colab's versions (CPU), with an empty measurement cache of its own, "
            "as a reader's first run on Colab is; its disk is what its set-up cell installs on a runtime with "
            "Colab's packages (the package, and the models' packages where the chapter reads models) plus its "
            "measurement cache after the run (the models' assembled files and the measurements), pip's download "
            "cache not counted. " + _colab_jobs(colab)
            + "A cell says \"not measured\" where no committed record has the number.\n")
    return "\n".join(lines) + "\n" + note


def _colab_jobs(colab: dict | None) -> str:
    """What the Colab column's times are when `make colab` ran chapters side by side (``alone.py --jobs``).

    >>> _colab_jobs({"jobs": 2})[:60]
    '`make colab` ran 2 chapters at a time, each on one core, aft'
    >>> _colab_jobs({"jobs": 1}), _colab_jobs(None)
    ('', '')
    """
    jobs = (colab or {}).get("jobs", 1)
    again = ("A time marked \"again at\" is a chapter run again after a fix, at that commit, on the same runtime "
             "(`make colab-again`), with the installs its first run measured. ") if (colab or {}).get("reruns") else ""
    return again + ((f"`make colab` ran {jobs} chapters at a time, each on one core, after the first chapter of each "
                     "kind of set-up, which ran alone to measure its installs: a chapter's time is one core's (the "
                     "record gives each row's threads), where a Colab runtime gives it two. ") if jobs > 1 else "")


TABLES = {"exercises": exercises_table, "times": times_table}


def render(text: str, root: Path = ROOT) -> str:
    """``text`` with every marked table replaced by what :data:`TABLES` computes."""
    names = [m["name"] for m in BLOCK.finditer(text)]
    if sorted(names) != sorted(TABLES):
        raise ValueError(f"{PAGE.name} must hold one marked block per table {sorted(TABLES)}; it holds {names}")
    return BLOCK.sub(lambda m: m[1] + TABLES[m["name"]](root), text)


def main() -> int:
    text = PAGE.read_text(encoding="utf-8")
    new = render(text)
    if new != text:
        PAGE.write_text(new, encoding="utf-8")
    print(f"{PAGE.relative_to(ROOT)}: {'rewritten' if new != text else 'already current'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
