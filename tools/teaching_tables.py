"""Write the teaching kit's two computed tables into book/teaching.md: every exercise with its points, level
and minutes (read from the exercises themselves), and each chapter's measured first-run time (read from
benchmarks/results/book_times.json).

    .venv/bin/python tools/teaching_tables.py          # rewrites the tables between their markers

Each table sits between ``<!-- teaching_tables: NAME -->`` and ``<!-- /teaching_tables -->``; the rest of the
page is left alone. tests/test_exercises.py fails when the page and what this script writes differ.
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

PAGE = ROOT / "book" / "teaching.md"
TIMES = ROOT / "benchmarks" / "results" / "book_times.json"
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
    return re.match(r"\((\S+)\)=", _markdown(path)).group(1)


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


def times_table(root: Path = ROOT) -> str:
    data = json.loads((root / TIMES.relative_to(ROOT)).read_text(encoding="utf-8"))
    test, book = data["notebooks"], data["make_book"]["notebooks"]
    m = data["machine"]
    lines = ["| chapter | first run, `make test` sizes | first run, full build |", "|---|---|---|"]
    for path in chapters(root):
        rel = path.relative_to(root).as_posix()
        cell = lambda d: duration(d[rel]["seconds"] if isinstance(d[rel], dict) else d[rel]) if rel in d else "not measured"  # noqa: E731
        lines.append(f"| {{ref}}`{_label(path)}` | {cell(test)} | {cell(book)} |")
    caches = " and ".join(sorted({data["make_test"].get("cache_at_start"), data["make_book"].get("cache_at_start")}))
    dates = " and ".join(sorted({data["make_test"]["date_utc"][:10], data["make_book"]["date_utc"][:10]}))
    note = (f"\nMeasured on {m['cpus']} CPU cores and {m['memory_gib']} GiB of memory with Python {m['python']}, on "
            f"{dates}: the first column in `make test`'s run of every notebook under nbval, the second in `make "
            f"book`'s full build, each starting from {caches} measurement caches and running the chapters one at a "
            f"time in the book's order, so a chapter that reuses measurements an earlier chapter made reads them "
            f"from the cache. Installing the package and the models' packages comes on top; the disk each chapter "
            f"needs has not been measured.\n")
    return "\n".join(lines) + "\n" + note


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
