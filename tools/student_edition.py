"""The student edition of the book: every notebook with its graded solutions emptied (``make student``).

    .venv/bin/python tools/student_edition.py [SRC] [DEST]      # default: book _build/student

In the copy, each cell tagged ``solution`` keeps its imports, ``def`` lines, docstrings and final checker call,
and every function body becomes ``raise NotImplementedError("your code here")``; the solution dropdowns lose
their content. The book itself is never touched. tests/test_exercises.py checks that every stub fails its
checker with a clear message.
"""
from __future__ import annotations

import argparse
import ast
import copy
import json
import re
import sys
from pathlib import Path

NOTES = {False: "*Student edition: the worked solution is left out.*",
         True: "*Student edition: fill in the function in the next cell; its last line checks your answer.*"}
_DIRECTIVE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{solution-(?P<kind>start|end)\}.*?^(?P=fence)[ \t]*$",
                        re.M | re.S)
STUB = 'raise NotImplementedError("your code here")'


def stub_source(source: str) -> str:
    """``source`` with the body of every top-level function replaced by ``raise NotImplementedError``.

    Imports, other statements, the ``def`` lines and docstrings are kept.

    >>> print(stub_source('import math\\n\\ndef f(x):\\n    \"\"\"Twice x.\"\"\"\\n    return 2 * x\\n\\nf(1)\\n'))
    import math
    <BLANKLINE>
    def f(x):
        \"\"\"Twice x.\"\"\"
        raise NotImplementedError("your code here")
    <BLANKLINE>
    f(1)
    <BLANKLINE>
    """
    lines = source.splitlines(keepends=True)
    tree = ast.parse(source)
    for node in sorted((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))),
                       key=lambda n: n.lineno, reverse=True):
        body = node.body
        doc = body[0] if (isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                          and isinstance(body[0].value.value, str)) else None
        rest = body[1:] if doc else body
        if not rest:                                          # a docstring and nothing else
            indent = " " * doc.col_offset
            lines[doc.end_lineno:doc.end_lineno] = [f"{indent}{STUB}\n"]
            continue
        head = lines[rest[0].lineno - 1][:rest[0].col_offset]   # the indent, or "def f(x): " on one line
        start = doc.end_lineno if doc and not head.strip() else rest[0].lineno - 1   # drops comments after a docstring
        lines[start:node.end_lineno] = [f"{head}{STUB}\n"]
    return "".join(lines)


def _strip_solutions(text: str, inside: bool, graded: list[bool]) -> tuple[str, bool]:
    """Markdown ``text`` without what lies between ``{solution-start}`` and ``{solution-end}``.

    Each solution is replaced by a note, which ``graded`` (one flag per solution still to come)
    chooses: whether a stubbed code cell follows.
    """
    pieces, pos = [], 0
    for m in _DIRECTIVE.finditer(text):
        if not inside:
            pieces.append(text[pos:m.start()])
        if m["kind"] == "start":
            pieces.append(NOTES[graded.pop(0)])
        inside = m["kind"] == "start"
        pos = m.end()
    if not inside:
        pieces.append(text[pos:])
    return re.sub(r"\n{3,}", "\n\n", "".join(pieces)).strip("\n"), inside


def student_notebook(nb: dict) -> dict:
    """A student copy of a notebook (a dict in nbformat 4): solutions out, graded functions stubbed."""
    nb = copy.deepcopy(nb)
    graded, inside = [], False                    # per solution: does it hold a graded code cell?
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            for m in _DIRECTIVE.finditer("".join(cell["source"])):
                inside = m["kind"] == "start"
                graded += [False] if inside else []
        elif inside and "solution" in cell.get("metadata", {}).get("tags", []):
            graded[-1] = True
    cells, inside = [], False
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        tags = cell.get("metadata", {}).get("tags", [])
        if cell["cell_type"] == "markdown":
            src, inside = _strip_solutions(src, inside, graded)
            if not src.strip():
                continue
        elif cell["cell_type"] == "code":
            if "solution" in tags:
                src = stub_source(src)
                cell["metadata"]["tags"] = [t for t in tags if t != "hide-input"]
            elif inside:
                continue
            cell["outputs"], cell["execution_count"] = [], None
        cell["source"] = src.splitlines(keepends=True)
        cells.append(cell)
    nb["cells"] = cells
    return nb


def student_edition(src="book", dest="_build/student") -> list[Path]:
    """Write the student edition of every notebook under ``src`` to ``dest``, mirroring the tree.

    Never touches ``src``, and refuses a ``dest`` inside it. Returns the written paths.
    """
    src, dest = Path(src).resolve(), Path(dest).resolve()
    if not src.is_dir():
        raise FileNotFoundError(f"src must be the book's folder of notebooks; {src} is not a folder")
    if dest == src or src in dest.parents:
        raise ValueError(f"dest ({dest}) lies inside the source folder {src}; the student edition must not be "
                         "written into the book. Pass another folder, e.g. _build/student")
    written = []
    for path in sorted(p for p in src.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts):
        nb = student_notebook(json.loads(path.read_text(encoding="utf-8")))
        target = dest / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(target)
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="tools/student_edition.py",
                                 description="Write the student edition of the book's notebooks.")
    s = ap
    s.add_argument("src", nargs="?", default="book", help="the book's folder (default: book)")
    s.add_argument("dest", nargs="?", default="_build/student", help="output folder (default: _build/student)")
    args = ap.parse_args(argv)
    try:
        written = student_edition(args.src, args.dest)
    except (ValueError, FileNotFoundError) as exc:
        ap.error(str(exc))
    print(f"student edition: {len(written)} notebooks in {Path(args.dest)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
