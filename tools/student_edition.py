"""The student edition of the book, and a grader for it (``make student``).

    .venv/bin/python tools/student_edition.py [ROOT] [DEST]            # default: . _build/student
    .venv/bin/python tools/student_edition.py --grade NOTEBOOK ...      # score filled-in student notebooks

``DEST`` becomes a tree to publish as the repository's ``student`` branch, which the student edition's Colab
badges open and its set-up cells install from:

* every notebook of ``book/``, with each solution dropdown emptied and each graded cell split in two: the
  stub (imports and ``def`` lines, every body ``raise NotImplementedError``, no docstrings) and the checker
  call, carrying nbgrader's cell metadata (an autograded answer and its locked test cell, with the points
  the exercise states), so that nbgrader (``generate_assignment``, ``autograde``) grades them;
* the package without the teacher's key (``connlap_lite/pages/exercises/_reference.py``) and with
  ``answers.npz``, the expected results and named mistakes of every checker's practice cases, in its place.
  The student's check cell checks the practice cases; the grade comes from the graded check
  (``check_...(function, graded=True)``: cases drawn at grading time, answered by the teacher's references),
  nbgrader's hidden test in the course folder (``--course``), which no file of the student edition can answer;
* the project files that make it installable (pyproject.toml with the key as package data, the licence, the
  book's configuration). The book itself is never touched.

``--grade`` is a local stand-in for nbgrader's autograde that reads the same metadata: it runs a notebook's
answer cells and, for each test cell, its graded check (as nbgrader runs the hidden test), in order in one fresh
namespace (the exercise cells are self-contained, which tests/pages/test_exercises.py checks), and gives each test
cell its points if it runs without an error. It needs the book's package (the teacher's references).
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import io
import json
import re
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import colab_cells  # (tools/colab_cells.py: the badges and set-up cells of the book)

STUDENT_BRANCH = "student"
NOTES = {False: "*Student edition: the worked solution is left out.*",
         True: "*Student edition: fill in the function in the next cell; the cell after it checks your answer.*"}
_DIRECTIVE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{solution-(?P<kind>start|end)\}.*?^(?P=fence)[ \t]*$",
                        re.M | re.S)
# the Colab edition's forms of the same (book/_ext/edition_builder.py): a solution's closed <details>, the code
# cells folded under its title after it, and an exercise's label as the anchor of its heading
_EDITION_SOLUTION = re.compile(r"<details>\n<summary><b>Solution to [^<]*(?<!\(continued\))</b></summary>.*?</details>",
                               re.S)
_EDITION_CONTINUED = re.compile(r"<details>\n<summary><b>Solution to [^<]*\(continued\)</b></summary>.*?</details>",
                                re.S)
_EDITION_CODE = "#@title Solution to "
_EDITION_LABEL = re.compile(r'^### Exercise [^\n]*<a id="([^"]+)"></a>', re.M)
_POINTS = re.compile(r"^\*Graded, (\d+) points? · level: (\w+) · about (\d+) minutes\*$", re.M)
STUB = 'raise NotImplementedError("your code here")'
# nbgrader's markers of a hidden test: generate_assignment removes the lines between them from the students'
# release; autograde restores the test cell from the source and runs them
HIDDEN = ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")
PROJECT_FILES = ("pyproject.toml", "LICENSE", "README.md", "_config.yml", "_toc.yml", "constraints.txt")
TEACHER_ONLY = ("connlap_lite/pages/exercises/_reference.py",)
KEY = "connlap_lite/pages/exercises/answers.npz"


# ------------------------------------------------------------------------------ the stubs
def _functions(source: str) -> list[ast.FunctionDef]:
    """The top-level functions of ``source``, last first (so that editing one leaves the lines above in place)."""
    return sorted((n for n in ast.parse(source).body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))),
                  key=lambda n: n.lineno, reverse=True)


def _body_start(lines: list[str], node: ast.FunctionDef) -> int:
    """The index of the first line after ``node``'s ``def`` header (comments before the body count as body)."""
    end = node.body[0].lineno - 2
    while end > node.lineno - 1 and (lines[end].strip().startswith("#") or not lines[end].strip()):
        end -= 1
    return end + 1


def stub_source(source: str) -> str:
    """``source`` with the body of every top-level function, docstring included, replaced by a ``raise``.

    Imports, other statements and the ``def`` lines are kept.

    >>> print(stub_source('import math\\n\\ndef f(x):\\n    \"\"\"Twice x.\"\"\"\\n    return 2 * x\\n\\nf(1)\\n'))
    import math
    <BLANKLINE>
    def f(x):
        raise NotImplementedError("your code here")
    <BLANKLINE>
    f(1)
    <BLANKLINE>
    """
    lines = source.splitlines(keepends=True)
    for node in _functions(source):
        first = node.body[0]
        head = lines[first.lineno - 1][:first.col_offset]     # the indent, or "def f(x): " on one line
        if head.strip():
            lines[first.lineno - 1:node.end_lineno] = [f"{head}{STUB}\n"]
        else:
            lines[_body_start(lines, node):node.end_lineno] = [f"{head}{STUB}\n"]
    return "".join(lines)


def mark_solution(source: str) -> str:
    """``source`` with the body of every top-level function between nbgrader's solution markers, which
    nbgrader's ``generate_assignment`` replaces by its code stub (the teacher's source of an assignment).

    >>> print(mark_solution('def f(x):\\n    return 2 * x\\n'))
    def f(x):
        ### BEGIN SOLUTION
        return 2 * x
        ### END SOLUTION
    <BLANKLINE>
    """
    lines = source.splitlines(keepends=True)
    for node in _functions(source):
        first = node.body[0]
        indent = " " * first.col_offset
        if lines[first.lineno - 1][:first.col_offset].strip():
            raise ValueError(f"function {node.name} has its body on its def line; put it on lines of its own")
        lines[node.end_lineno:node.end_lineno] = [f"{indent}### END SOLUTION\n"]
        lines[_body_start(lines, node):_body_start(lines, node)] = [f"{indent}### BEGIN SOLUTION\n"]
    return "".join(lines)


def graded_call(call: str) -> str:
    """The graded check of a checker call: cases drawn at check time, answered by the teacher's references.

    >>> graded_call("check_f(f)")
    'check_f(f, graded=True)'
    """
    m = re.fullmatch(r"(check_\w+)\((\w+)\)", call.strip())
    if not m:
        raise ValueError(f"a test cell holds one checker call, check_...(function); got {call!r}")
    return f"{m[1]}({m[2]}, graded=True)"


def course_check(call: str) -> str:
    """A test cell of the teacher's course folder: the practice check, then the graded check as nbgrader's
    hidden test (removed from the students' release, run by autograde).

    >>> print(course_check("check_f(f)"))
    check_f(f)
    ### BEGIN HIDDEN TESTS
    check_f(f, graded=True)
    ### END HIDDEN TESTS
    """
    return f"{call}\n{HIDDEN[0]}\n{graded_call(call)}\n{HIDDEN[1]}"


def split_check(source: str) -> tuple[str, str]:
    """A graded cell split into its answer (everything before the final checker call) and that call.

    >>> split_check('def f(x):\\n    return x\\n\\n\\ncheck_f(f)')
    ('def f(x):\\n    return x\\n', 'check_f(f)')
    """
    lines = source.rstrip().splitlines()
    if not re.fullmatch(r"check_\w+\(\w+\)", lines[-1].strip()):
        raise ValueError(f"a graded cell must end with its checker call, check_...(function); it ends with "
                         f"{lines[-1]!r}")
    return "\n".join(lines[:-1]).rstrip() + "\n", lines[-1].strip()


# ---------------------------------------------------------------------- the student notebook
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


def _nbgrader(grade_id: str, *, points: int | None = None) -> dict:
    """nbgrader's cell metadata (schema 3): an autograded answer, or (with ``points``) its locked test cell."""
    test = points is not None
    meta = {"grade": test, "grade_id": grade_id, "locked": test, "schema_version": 3, "solution": not test,
            "task": False}
    return {**meta, "points": points} if test else meta


def student_links(src: str) -> str:
    """A cell's Colab badge and set-up install pointed at the student branch instead of the book's own (or its
    Colab edition's).

    >>> print(student_links(f"(https://colab.research.google.com/github/{colab_cells.REPO_URL[19:]}/blob/"
    ...                     f"{colab_cells.EDITION_BRANCH}/book/x.ipynb)").split("/blob/")[1])
    student/book/x.ipynb)
    """
    owner_repo = colab_cells.REPO_URL.removeprefix("https://github.com/")
    colab = f"https://colab.research.google.com/github/{owner_repo}/blob/"
    for branch in (colab_cells.BRANCH, colab_cells.EDITION_BRANCH):
        src = src.replace(f"{colab}{branch}/", f"{colab}{STUDENT_BRANCH}/")
    src = src.replace(f"git+{colab_cells.REPO_URL}@{colab_cells.EDITION_BRANCH}",
                      f"git+{colab_cells.REPO_URL}@{STUDENT_BRANCH}")
    return src.replace(f'"git+{colab_cells.REPO_URL}"', f'"git+{colab_cells.REPO_URL}@{STUDENT_BRANCH}"')


def _code(source: str, metadata: dict) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": metadata, "outputs": [],
            "source": source.splitlines(keepends=True)}


def student_notebook(nb: dict, *, source: bool = False) -> dict:
    """A student copy of a notebook (a dict in nbformat 4): solutions out, graded functions stubbed and split
    from their checker calls, with nbgrader metadata; Colab links to the student branch.

    ``source=True`` gives nbgrader's source version instead: the graded functions keep their solutions,
    between nbgrader's markers (:func:`mark_solution`), for the teacher's course folder and never for students.
    """
    nb = copy.deepcopy(nb)
    graded, inside = [], False                    # per solution: does it hold a graded code cell?
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            for m in _DIRECTIVE.finditer(src):
                inside = m["kind"] == "start"
                graded += [False] if inside else []
            graded += [False] * len(_EDITION_SOLUTION.findall(src))
        elif (inside or src.startswith(_EDITION_CODE)) and "solution" in cell.get("metadata", {}).get("tags", []):
            graded[-1] = True
    cells, inside, label, points = [], False, None, None
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        tags = cell.get("metadata", {}).get("tags", [])
        if cell["cell_type"] == "markdown":
            found = re.findall(r":label: (\S+)", src) + _EDITION_LABEL.findall(src)
            label = found[-1] if found else label
            src = _EDITION_SOLUTION.sub(lambda m: NOTES[graded.pop(0)], _EDITION_CONTINUED.sub("", src))
            stated = _POINTS.findall(src)
            points = int(stated[-1][0]) if stated else points
            src, inside = _strip_solutions(student_links(src), inside, graded)
            if not src.strip():
                continue
        elif cell["cell_type"] == "code":
            if src.startswith(_EDITION_CODE):         # the edition's folded solution code: out, or unfolded to fill
                if "solution" not in tags:
                    continue
                src = src.split("\n", 1)[1]
                cell["metadata"] = {k: v for k, v in cell["metadata"].items() if k not in ("cellView", "jupyter")}
            if "solution" in tags:
                if points is None:
                    raise ValueError(f"graded exercise {label} states no points (*Graded, N points · ...*)")
                answer, call = split_check(src)
                meta = {**cell["metadata"], "tags": [t for t in tags if t != "hide-input"],
                        "nbgrader": _nbgrader(label)}
                stub = {**_code((mark_solution if source else stub_source)(answer), meta), **({"id": cell["id"]} if "id" in cell else {})}
                test = _code(course_check(call) if source else call,
                             {"tags": ["check"], "nbgrader": _nbgrader(f"{label}-check", points=points)})
                if "id" in cell:
                    test["id"] = f"{cell['id']}-check"[:64]
                cells += [stub, test]
                points = None
                continue
            if inside:
                continue
            src = student_links(src)
            cell["outputs"], cell["execution_count"] = [], None
        cell["source"] = src.splitlines(keepends=True)
        cells.append(cell)
    nb["cells"] = cells
    return nb


# -------------------------------------------------------------------------- the student tree
def student_edition(root=".", dest="_build/student", edition=None) -> list[Path]:
    """Write the student edition of the project at ``root`` to ``dest`` (see the module's docstring): from the
    Colab edition at ``edition`` (``make colab-edition``'s tree, plain Jupyter Markdown, so that the student
    edition reads the same), or from the book's own notebooks.

    Never touches ``root``'s files, and refuses a ``dest`` inside its ``book/``. Returns the notebooks written.
    """
    root, dest = Path(root).resolve(), Path(dest).resolve()
    book = root / "book"
    if not book.is_dir() or not (root / "connlap_lite").is_dir():
        raise FileNotFoundError(f"root must be the project's folder (with book/ and connlap_lite/); {root} is not")
    if dest == root or book in (dest, *dest.parents) or root / "connlap_lite" in (dest, *dest.parents):
        raise ValueError(f"dest ({dest}) lies inside the project's book or package; the student edition must not "
                         "be written into the book. Pass another folder, e.g. _build/student")
    if dest.exists():
        shutil.rmtree(dest)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "_build", ".ipynb_checkpoints", "answers.npz")
    shutil.copytree(root / "connlap_lite", dest / "connlap_lite", ignore=skip)
    shutil.copytree(book, dest / "book", ignore=shutil.ignore_patterns("*.ipynb", "__pycache__", "_build",
                                                                       ".ipynb_checkpoints"))
    for name in PROJECT_FILES:
        if (root / name).exists():
            shutil.copy2(root / name, dest / name)
    for rel in TEACHER_ONLY:
        (dest / rel).unlink(missing_ok=True)
    pyproject = dest / "pyproject.toml"
    if pyproject.exists():
        text = pyproject.read_text(encoding="utf-8")
        new = text.replace('"*" = ["py.typed"]', '"*" = ["py.typed", "answers.npz"]')
        if new == text:
            raise ValueError('pyproject.toml has no package-data line "*" = ["py.typed"] to add the answer key to')
        pyproject.write_text(new, encoding="utf-8")
    config = dest / "_config.yml"
    if config.exists():                           # the launch buttons of a site built from the branch
        text = config.read_text(encoding="utf-8")
        config.write_text(re.sub(rf"^(  branch: ){re.escape(colab_cells.BRANCH)}$", rf"\g<1>{STUDENT_BRANCH}", text,
                                 count=1, flags=re.M), encoding="utf-8")
    _write_key(root, dest / KEY)
    written = []
    source = root if edition is None else Path(edition).resolve()
    if edition is not None:
        shutil.copy2(source / "connlap_lite" / "edition_refs.json", dest / "connlap_lite" / "edition_refs.json")
        text = pyproject.read_text(encoding="utf-8")
        pyproject.write_text(text.replace('"answers.npz"]', '"answers.npz", "edition_refs.json"]'), encoding="utf-8")
    for path in sorted(p for p in (source / "book").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts):
        nb = student_notebook(json.loads(path.read_text(encoding="utf-8")))
        target = dest / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(target)
    return written


NBGRADER_CONFIG = f"""# nbgrader's course folder for the book (tools/student_edition.py --course): one assignment per chapter.
c = get_config()  # noqa: F821
c.CourseDirectory.root = "."
# the stub of the student edition, so that nbgrader's release equals it
c.ClearSolutions.code_stub = {{"python": {STUB!r}}}
"""


def nbgrader_course(root=".", course="_build/nbgrader") -> list[Path]:
    """Write nbgrader's course folder for the book: ``source/<chapter>/<chapter>.ipynb`` for every notebook
    (the student edition with the graded solutions between nbgrader's markers) and ``nbgrader_config.py``.

    A teacher runs ``nbgrader generate_assignment <chapter>`` there, collects submissions under
    ``submitted/<student>/<chapter>/`` and runs ``nbgrader autograde <chapter>``. The folder holds the
    solutions: keep it out of the student branch.
    """
    root, course = Path(root).resolve(), Path(course).resolve()
    written = []
    for path in sorted(p for p in (root / "book").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts):
        nb = student_notebook(json.loads(path.read_text(encoding="utf-8")), source=True)
        target = course / "source" / path.stem / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(target)
    (course / "nbgrader_config.py").write_text(NBGRADER_CONFIG, encoding="utf-8")
    return written


def _write_key(root: Path, path: Path) -> None:
    """The answer key of the package at ``root``, computed there (its references) and written to ``path``."""
    sys.path.insert(0, str(root))
    try:
        from connlap_lite.pages import exercises
        from connlap_lite.pages.exercises import answer_key
        answer_key.record(exercises.CHECKERS, path)
    finally:
        sys.path.remove(str(root))


# ------------------------------------------------------------------------------ the grader
def grade_notebook(nb: dict) -> dict[str, tuple[float, float]]:
    """Score one filled-in student notebook by its nbgrader metadata: ``{grade_id: (score, points)}``.

    Answer cells (``solution``) and the graded checks of the test cells (``grade``: their call with
    ``graded=True``, as nbgrader's hidden test) run in order in one fresh namespace, the others not; a test
    cell scores its points if its graded check passes, else 0. An answer cell that fails makes the tests after
    it fail, as in nbgrader. Needs the book's package, whose references answer the graded cases.
    """
    from connlap_lite.pages.exercises import answer_key

    if not answer_key.has_reference():
        raise RuntimeError("grading needs the book's edition of connlap_lite (its exercises._reference answers the "
                           "graded cases); the student edition cannot grade")
    namespace, scores = {"__name__": "__main__"}, {}
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader")
        if cell["cell_type"] != "code" or not meta or not (meta.get("solution") or meta.get("grade")):
            continue
        ok = True
        code = "".join(cell["source"])
        try:
            if meta.get("grade"):
                code = graded_call(code.strip().splitlines()[0])
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(code, meta["grade_id"], "exec"), namespace)
        except BaseException as exc:                # (a submission's error is its score, 0)
            if isinstance(exc, KeyboardInterrupt):
                raise
            ok = False
        if meta.get("grade"):
            points = float(meta.get("points", 0))
            scores[meta["grade_id"]] = (points if ok else 0.0, points)
    return scores


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="tools/student_edition.py",
                                 description="Write the student edition of the book, or grade student notebooks.")
    ap.add_argument("root", nargs="?", default=".", help="the project's folder (default: .)")
    ap.add_argument("dest", nargs="?", default="_build/student", help="output folder (default: _build/student)")
    ap.add_argument("--edition", metavar="DIR", help="build it from the Colab edition in DIR (make colab-edition's "
                                                     "_build/colab) instead of the book's notebooks")
    ap.add_argument("--course", metavar="DIR", help="also write nbgrader's course folder (with the solutions) to DIR")
    ap.add_argument("--grade", nargs="+", metavar="NOTEBOOK", help="score these filled-in student notebooks")
    args = ap.parse_args(argv)
    if args.grade:
        for path in args.grade:
            try:
                scores = grade_notebook(json.loads(Path(path).read_text(encoding="utf-8")))
            except (OSError, ValueError) as exc:
                ap.error(f"cannot read {path}: {exc}")
            except RuntimeError as exc:
                ap.error(str(exc))
            got, total = sum(s for s, _ in scores.values()), sum(p for _, p in scores.values())
            print(f"{path}: {got:g}/{total:g} points " + " ".join(f"{k}={s:g}" for k, (s, _) in scores.items()))
        return 0
    try:
        written = student_edition(args.root, args.dest, edition=args.edition)
        if args.course:
            if Path(args.course).resolve() in (Path(args.dest).resolve(), *Path(args.dest).resolve().parents) or \
                    Path(args.dest).resolve() in Path(args.course).resolve().parents:
                raise ValueError(f"--course {args.course} holds the solutions; it must lie outside {args.dest}")
            nbgrader_course(args.root, args.course)
            print(f"nbgrader course folder (with the solutions; not for students): {Path(args.course)}")
    except (ValueError, FileNotFoundError) as exc:
        ap.error(str(exc))
    print(f"student edition: {len(written)} notebooks and the package in {Path(args.dest)}; publish it as the "
          f"{STUDENT_BRANCH!r} branch, which its Colab badges open")
    return 0


if __name__ == "__main__":
    sys.exit(main())
