"""One address per name: no import circle in ``connlap_lite`` (any module, any subpackage, imports at the top of a
module or inside a function alike), no module forwarding a name it does not define, every caller (the package,
the tests, the tools, the benchmarks, the book's notebooks) reading each name from the module that defines it, and
every name a caller reads existing there.

Exempt: the *facades*, the ``__init__.py`` of a package that declares its public names in ``__all__``
(``connlap_lite`` itself, ``connlap_lite.known``, ``connlap_lite.pages.exercises``): they gather the public names of
their package for its users, by convention.  The package's own modules do not read names through them; tests,
tools and benchmarks may (the facade is the public interface they test).

Each check is a function of a folder, run here on the package and on a small synthetic package in which every
kind of fault is planted, so that each check is seen to fail.
"""
from __future__ import annotations

import ast
import json
import pathlib
import textwrap

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "connlap_lite"


# ------------------------------------------------------------------------------------------------ reading the code
def source(path: pathlib.Path) -> str:
    """The Python of a file: a module's text, or a notebook's code cells one after another (IPython's ``%`` and
    ``!`` lines blanked, so that line numbers count the notebook's code lines)."""
    if path.suffix != ".ipynb":
        return path.read_text()
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    code = "\n".join("".join(c["source"]) for c in cells).splitlines()
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in code) + "\n"


def modules(package: pathlib.Path) -> dict[str, pathlib.Path]:
    """Every module of ``package`` (subpackages included), by dotted name."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _source_module(name: str, path: pathlib.Path, node: ast.ImportFrom) -> str:
    """The dotted module an ``ImportFrom`` in module ``name`` (at ``path``) reads from."""
    if node.level == 0:
        return node.module or ""
    base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _dotted(path: pathlib.Path, package: pathlib.Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: pathlib.Path, package: pathlib.Path, mods: dict) -> list[tuple[str, str | None, str, int]]:
    """Every import of a module of ``package`` in the file at ``path``, at any depth:
    ``(module, name or None, bound as, line)``; ``name`` None for a whole module imported."""
    me = _dotted(path, package) if package in path.parents else path.stem
    out = []
    for node in ast.walk(ast.parse(source(path))):
        if isinstance(node, ast.ImportFrom):
            src = _source_module(me, path, node)
            if src not in mods:
                continue
            for a in node.names:
                if f"{src}.{a.name}" in mods:
                    out.append((f"{src}.{a.name}", None, a.asname or a.name, node.lineno))
                else:
                    out.append((src, a.name, a.asname or a.name, node.lineno))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in mods:
                    out.append((a.name, None, a.asname or a.name.split(".")[0], node.lineno))
    return out


def facades(mods: dict) -> set[str]:
    """The packages whose ``__init__`` declares ``__all__``."""
    return {name for name, path in mods.items() if path.name == "__init__.py" and any(
        isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)
        for n in ast.parse(path.read_text()).body)}


def _top_level(tree: ast.Module):
    """The statements at module level, looking into ``if`` and ``try`` blocks (not into functions or classes)."""
    todo = list(tree.body)
    while todo:
        node = todo.pop(0)
        yield node
        if isinstance(node, (ast.If, ast.Try)):
            todo += [*node.body, *node.orelse, *getattr(node, "handlers", ()), *getattr(node, "finalbody", ())]
        elif isinstance(node, ast.ExceptHandler):
            todo += node.body


def defined(path: pathlib.Path) -> set[str]:
    """The names a module defines itself at module level (functions, classes, assignments), not those it imports."""
    out = set()
    for node in _top_level(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for target in getattr(node, "targets", [getattr(node, "target", None)]):
                out |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return out


def module_reads(tree: ast.Module, aliases: set[str]):
    """The ``alias.attr`` nodes of ``tree`` whose ``alias`` still names the module where it is read: not rebound
    at module level, nor in the function (or lambda) that holds the read."""
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)

    def bound(scope) -> set[str]:
        out, todo = set(), list(ast.iter_child_nodes(scope))
        while todo:
            node = todo.pop()
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                out.add(node.id)
            elif isinstance(node, ast.arg):
                out.add(node.arg)
            if not isinstance(node, scopes):
                todo += ast.iter_child_nodes(node)
        return out

    top = bound(tree)

    def visit(node, shadowed):
        if isinstance(node, scopes):
            shadowed = shadowed | bound(node)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                and node.value.id not in shadowed:
            yield node
        for child in ast.iter_child_nodes(node):
            yield from visit(child, shadowed)

    yield from visit(tree, top)


def reads(path: pathlib.Path, package: pathlib.Path, mods: dict):
    """Every read in the file at ``path`` of a name through a module of ``package``, as ``(module, name, line,
    shown, attribute)``: each ``from m import n`` (shown as written), then each ``alias.n`` where ``alias`` names
    a module imported whole and still does where it is read (``attribute`` True)."""
    aliases = {}
    for module, name, bound, line in imports(path, package, mods):
        if name is None:
            aliases[bound] = module
        else:
            yield module, name, line, f"from {module} import {name}", False
    for node in module_reads(ast.parse(source(path)), set(aliases)):
        yield aliases[node.value.id], node.attr, node.lineno, f"{node.value.id}.{node.attr}", True


# ------------------------------------------------------------------------------------------------ the four checks
def import_cycles(package: pathlib.Path) -> list[list[str]]:
    """The import circles among ``package``'s modules (each as the path that closes it), top-level and
    function-level imports alike; an edge goes to the module named in the import (``from .a import f``: to
    ``a``; ``from . import a``: to ``a``)."""
    mods = modules(package)
    graph = {name: sorted({m for m, *_ in imports(path, package, mods)} - {name}) for name, path in mods.items()}
    cycles, done = [], set()

    def visit(node, trail):
        if node in trail:
            cycle = trail[trail.index(node):] + [node]
            if frozenset(cycle) not in done:
                done.add(frozenset(cycle))
                cycles.append(cycle)
            return
        if node in seen:
            return
        seen.add(node)
        for nxt in graph.get(node, ()):
            visit(nxt, trail + [node])

    seen: set[str] = set()
    for start in graph:
        visit(start, [])
    return cycles


def forwarders(package: pathlib.Path) -> list[str]:
    """Every place where a module of ``package`` (facades exempt) forwards a name it does not define: an import from
    a sibling module bound at module level and never used in the module, a module-level alias of such a name
    (``b = a``, ``b = module.a``), or a module ``__getattr__``."""
    mods = modules(package)
    exempt = facades(mods)
    out = []
    for name, path in mods.items():
        if name in exempt:
            continue
        tree = ast.parse(path.read_text())
        top = list(_top_level(tree))
        bound = {}                                         # name bound at module level by an import of the package
        for node in top:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                bound |= {b: (m, n, line) for m, n, b, line in imports(path, package, mods) if line == node.lineno}
        loads = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
        aliases = set()
        for node in top:
            if isinstance(node, ast.Assign):
                values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
                for v in values:
                    head = v
                    while isinstance(head, ast.Attribute):
                        head = head.value
                    if isinstance(head, ast.Name) and head.id in bound and (head is v or bound[head.id][1] is None):
                        aliases.add(id(head))
                        out.append(f"{path.relative_to(package.parent)}:{node.lineno}: {ast.unparse(node)} "
                                   f"(an alias of {bound[head.id][0]}'s name)")
            if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
                out.append(f"{path.relative_to(package.parent)}:{node.lineno}: a module __getattr__")
        used = {n.id for n in loads if id(n) not in aliases}
        for b, (m, n, line) in bound.items():
            if b not in used:
                out.append(f"{path.relative_to(package.parent)}:{line}: {b} imported from {m} and never used "
                           f"here (forwarded)")
    return out


def misaddressed(package: pathlib.Path, callers: list[pathlib.Path]) -> list[str]:
    """Every read in ``callers`` (files inside or outside ``package``) of a name of ``package`` through a module
    that does not define it: ``from pkg.m import n`` or ``m.n`` where ``m`` only imports ``n``.  Facades answer for
    their ``__all__``, to files outside the package only."""
    mods = modules(package)
    exempt = facades(mods)
    own = {name: defined(path) for name, path in mods.items()}
    imported = {name: {b for m, n, b, _ in imports(path, package, mods)} for name, path in mods.items()}
    out = []
    for path in callers:
        inside = package in path.parents
        where = path.relative_to(package.parent) if inside else path.name

        def wrong(module, name):
            if module in exempt and not inside:
                return False
            return name in imported[module] and name not in own[module]

        for module, name, line, shown, attribute in reads(path, package, mods):
            if wrong(module, name):
                out.append(f"{where}:{line}: {shown} " + (f"({module} does not define it)" if attribute
                                                          else "(not defined there)"))
    return out


def missing(package: pathlib.Path, callers: list[pathlib.Path]) -> list[str]:
    """Every read in ``callers`` of ``m.n`` or ``from m import n``, ``m`` a module of ``package``, where ``m``
    neither defines nor imports ``n`` and has no submodule ``n``: an ``AttributeError`` or ``ImportError``
    waiting for the reader who runs that line (a name moved or renamed, its old address still in use)."""
    mods = modules(package)
    known = {name: defined(path) | {b for _, _, b, _ in imports(path, package, mods)}
             | {b for n in _top_level(ast.parse(path.read_text())) if isinstance(n, (ast.Import, ast.ImportFrom))
                for b in ((a.asname or a.name.split(".")[0]) for a in n.names)}
             for name, path in mods.items()}
    dunder = {"__file__", "__name__", "__doc__", "__path__", "__spec__", "__dict__", "__all__", "__version__"}

    def absent(module, name):
        return name not in known[module] and f"{module}.{name}" not in mods and name not in dunder

    out = []
    for path in callers:
        where = path.relative_to(package.parent) if package in path.parents else path.name
        for module, name, line, shown, attribute in reads(path, package, mods):
            if absent(module, name):
                out.append(f"{where}:{line}: {shown} " + (f"(no such name in {module})" if attribute
                                                          else "(no such name)"))
    return out


# ------------------------------------------------------------------------------------------------ on the package
def _callers() -> list[pathlib.Path]:
    return [*sorted(PACKAGE.rglob("*.py")), *sorted((ROOT / "tests").glob("*.py")),
            *sorted((ROOT / "tools").glob("*.py")), *sorted((ROOT / "benchmarks").glob("*.py")),
            *sorted((ROOT / "book").rglob("*.ipynb"))]


def test_no_import_circle_anywhere_in_the_package():
    assert len(modules(PACKAGE)) > 60                      # every subpackage is read
    assert import_cycles(PACKAGE) == []


def test_no_module_forwards_a_name_it_does_not_define():
    assert facades(modules(PACKAGE)) == {"connlap_lite", "connlap_lite.known", "connlap_lite.pages.exercises"}
    assert forwarders(PACKAGE) == []


def test_every_caller_reads_a_name_from_its_defining_module():
    assert misaddressed(PACKAGE, _callers()) == []


def test_every_name_a_caller_reads_exists():
    assert missing(PACKAGE, _callers()) == []


# ------------------------------------------------------------------------------------------------ the wings' order
WINGS = ("models", "measure", "verdicts", "known", "pages")


def wing(name: str) -> str:
    """The wing of module ``name``: its subpackage (:data:`WINGS`), "theory" for a module at the top of the package,
    "face" for the package itself and its command line, which gather every wing."""
    parts = name.split(".")
    if len(parts) == 1 or parts[1] == "__main__":
        return "face"
    return parts[1] if parts[1] in WINGS else "theory"


def order_breaches(package: pathlib.Path) -> list[str]:
    """Every import that runs against the wings' order: the theory imports nothing of a wing; nothing but the
    book's pages (and the face) imports ``pages``; ``measure`` never imports ``known`` (the known results read the
    measurements, not the other way round)."""
    mods = modules(package)
    out = []
    for name, path in mods.items():
        mine = wing(name)
        for module, _, _, line in imports(path, package, mods):
            theirs = wing(module)
            if (mine == "theory" and theirs not in ("theory",) or theirs == "pages" and mine not in ("pages", "face")
                    or (mine, theirs) == ("measure", "known")):
                out.append(f"{path.relative_to(package.parent)}:{line}: {mine} imports {module} ({theirs})")
    return sorted(set(out))


def test_the_wings_keep_their_order():
    assert {wing(m) for m in modules(PACKAGE)} == {"face", "theory", *WINGS}
    assert order_breaches(PACKAGE) == []


def test_the_order_check_fails_where_a_wing_runs_up(tmp_path):
    package = tmp_path / "pkg"
    files = {"__init__.py": "", "walks.py": "from .measure import metrics\n",
             "measure/__init__.py": "", "measure/metrics.py": "def f():\n    from ..known import report\n",
             "known/__init__.py": "", "known/report.py": "from ..measure.metrics import f\n",
             "verdicts/__init__.py": "", "verdicts/words.py": "from ..pages import plots\n",
             "pages/__init__.py": "", "pages/plots.py": "from ..verdicts import words\n"}
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    assert order_breaches(package) == [
        "pkg/measure/metrics.py:2: measure imports pkg.known.report (known)",
        "pkg/verdicts/words.py:1: verdicts imports pkg.pages.plots (pages)",
        "pkg/walks.py:1: theory imports pkg.measure.metrics (measure)"]


# ------------------------------------------------------------------------------------------------ the checks can fail
SYNTHETIC = {
    "__init__.py": """
        from .a import f
        __all__ = ["f"]
        """,
    "a.py": """
        from . import b

        def f():
            return b.g()
        """,
    "b.py": """
        def g():
            from .a import f               # a circle through a function-level import
            return f
        """,
    "c.py": """
        from .a import f                   # noqa: F401  (forwarded: never used here)
        from .b import g
        from . import b
        h = g                              # an alias of b's name
        k = b.g                            # the same, through the module

        def __getattr__(name):             # a module forwarder
            return getattr(b, name)
        """,
    "d.py": """
        from .c import f                   # f read through c, which only imports it
        from . import c
        from . import f as facade          # inside the package: not through the facade either

        def use():
            return f, c.g, facade
        """,
    "sub/__init__.py": """
        from .x import y
        __all__ = ["y"]
        """,
    "sub/x.py": """
        def y():
            return 1
        """,
    "clean.py": """
        from .a import f
        from .sub.x import y

        def use():
            return f(), y()
        """,
}


def _synthetic(tmp_path) -> pathlib.Path:
    package = tmp_path / "pkg"
    for name, text in SYNTHETIC.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(textwrap.dedent(text))
    return package


def test_the_checks_fail_on_a_package_with_every_fault(tmp_path):
    package = _synthetic(tmp_path)
    assert import_cycles(package) == [["pkg.a", "pkg.b", "pkg.a"]]
    assert sorted(forwarders(package)) == sorted([
        "pkg/c.py:2: f imported from pkg.a and never used here (forwarded)",
        "pkg/c.py:3: g imported from pkg.b and never used here (forwarded)",    # used only in the alias below
        "pkg/c.py:5: h = g (an alias of pkg.b's name)", "pkg/c.py:6: k = b.g (an alias of pkg.b's name)",
        "pkg/c.py:8: a module __getattr__"])
    outside = tmp_path / "caller.py"                       # a test or tool: the facades answer there
    outside.write_text("import pkg\nfrom pkg import f, sub\nfrom pkg.sub import y\nfrom pkg import c as C\n"
                       "print(pkg.f, f, sub.y, y, C.f, C.g)\n")
    wrong = misaddressed(package, [*sorted(package.rglob("*.py")), outside])
    assert sorted(wrong) == sorted([
        "pkg/d.py:2: from pkg.c import f (not defined there)",
        "pkg/d.py:4: from pkg import f (not defined there)",
        "pkg/d.py:7: c.g (pkg.c does not define it)",
        "caller.py:5: C.f (pkg.c does not define it)", "caller.py:5: C.g (pkg.c does not define it)"]), wrong
    # a notebook reads like a module, its code cells in order; a function's own ``C`` is not the module
    notebook = tmp_path / "chapter.ipynb"
    cells = ["%matplotlib inline\nfrom pkg import c as C\nfrom pkg.a import gone", "print(C.g, C.nothing)",
             "def f(C):\n    return C.nothing", "# C.nothing in a comment"]
    notebook.write_text(json.dumps({"cells": [{"cell_type": "code", "source": text} for text in cells]
                                   + [{"cell_type": "markdown", "source": "C.nothing"}]}))
    assert misaddressed(package, [notebook]) == ["chapter.ipynb:4: C.g (pkg.c does not define it)"]
    assert missing(package, [notebook, outside]) == ["chapter.ipynb:3: from pkg.a import gone (no such name)",
                                                     "chapter.ipynb:4: C.nothing (no such name in pkg.c)"]


def test_the_checks_pass_a_package_without_faults(tmp_path):
    package = _synthetic(tmp_path)
    for name in ("b.py", "c.py", "d.py"):
        (package / name).unlink()
    (package / "a.py").write_text("def f():\n    return 1\n")
    callers = list(package.rglob("*.py"))
    assert import_cycles(package) == [] and forwarders(package) == [] and misaddressed(package, callers) == []
    assert missing(package, callers) == []


# ------------------------------------------------------------------------------------------------ one name per theorem
PAPER_LABEL = r"\b(?:[TP][1-3]|D[1-5][ab]?)\b"             # the seed paper's T1-T3, P1-P3, D1-D5 (D3a, D3b)


def paper_labels(paths: list[pathlib.Path]) -> list[tuple[str, int, str]]:
    """Every string (docstrings included) in ``paths`` that names a result by the seed paper's label, as ``(file,
    line, label)``: the book numbers its results per chapter, so the code names them by title and chapter instead
    (the paper's labels appear once, in the table of the chapter *Connection walks*)."""
    import re

    return [(path.name, node.lineno, label) for path in paths for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            for label in re.findall(PAPER_LABEL, node.value)]


def test_results_are_named_by_title_not_by_the_papers_labels(tmp_path):
    # the notebooks are test_book's to check (it allows the walks chapter's table of both names), and the two
    # checks' own tests plant labels on purpose
    planters = {pathlib.Path(__file__).name, "test_book.py"}
    assert paper_labels([p for p in _callers() if p.suffix == ".py" and p.name not in planters]) == []
    planted = tmp_path / "planted.py"
    planted.write_text('"""The walk of T2."""\nT2 = 1   # a name, not a string: allowed\nx = f"{T2} (D3b)"\n')
    assert paper_labels([planted]) == [("planted.py", 1, "T2"), ("planted.py", 3, "D3b")]


SCOPES = ("theory", *WINGS, "contracts", "book", "reader", "edition", "browser")


def test_the_tests_sit_in_folders_by_scope():
    """Unit tests beside the wing they test (a folder per wing, and ``theory`` for the package's top), then the
    contracts, the book, the reader, the Colab edition and the browser: no test file loose at the top of ``tests/``."""
    tests = ROOT / "tests"
    loose = sorted(p.name for p in tests.glob("test_*.py"))
    assert not loose, f"test files at the top of tests/: {loose}; put each in the folder of its scope ({SCOPES})"
    folders = {p.relative_to(tests).parts[0] for p in tests.rglob("test_*.py")}
    assert folders <= set(SCOPES), f"test folders that are no scope: {sorted(folders - set(SCOPES))}"
    assert {"theory", *WINGS} <= folders, f"wings without unit tests: {sorted({'theory', *WINGS} - folders)}"
