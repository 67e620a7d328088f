"""What make would run, asked of make itself rather than read off the Makefile's text: ``make -n`` (a dry run: the
commands printed, not run; a recursive ``$(MAKE)`` line is run, as a dry run too) and the values of its variables
as make resolves them. The tests of the Makefile's promises assert on these commands (tests/contracts/test_deps.py,
tests/book/test_same_numbers.py, tests/book/test_book.py).

>>> words("A=1 python 'a b.py' > out.txt; status=$?; exit $status && echo done")
[['A=1', 'python', 'a b.py', '>', 'out.txt'], ['status=$?'], ['exit', '$status'], ['echo', 'done']]
"""
import functools
import os
import shlex
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# make's own flags from a calling make (make test runs the tests under make -j: MAKEFLAGS holds -j and the variables
# given on its command line)
FLAGS = {"MAKEFLAGS", "MFLAGS", "GNUMAKEFLAGS", "MAKELEVEL", "MAKEFILES", "MAKEOVERRIDES"}


def database(env: dict[str, str]) -> list[str]:
    """make's database of the Makefile (its variables, rules and special targets), nothing made."""
    return subprocess.run(["make", "-pRrq", "-f", "Makefile", ":"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60).stdout.splitlines()             # (-q: a question, answered with exit 1)


@functools.cache
def makefile_variables() -> frozenset[str]:
    """The names the Makefile assigns, as make's database lists them (read with nothing but PATH in the
    environment): a caller's environment variable of one of these names would replace its default (?=)."""
    lines = database({"PATH": os.environ["PATH"]})
    return frozenset(lines[i + 1].split()[0] for i, line in enumerate(lines[:-1])
                     if line.startswith("# makefile (from 'Makefile'"))


def environment() -> dict[str, str]:
    """The caller's environment less make's flags and the Makefile's variables."""
    return {k: v for k, v in os.environ.items() if k not in FLAGS | makefile_variables()}


def make(*args: str) -> str:
    """What ``make ARGS`` prints, run in the checkout with none of the caller's make flags or variables."""
    r = subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT, env=environment(), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, f"make {' '.join(args)}: {r.stderr[-2000:]}"
    return r.stdout


def dry_run(*args: str) -> tuple[str, ...]:
    """The lines ``make -n ARGS`` prints: the commands, one a line (a recipe line continued with a backslash joined),
    and make's own notes (``make: Nothing to be done for 'install'.``)."""
    return tuple(make("-n", *args).replace("\\\n", " ").splitlines())


def words(line: str) -> list[list[str]]:
    """A shell line's simple commands (split at ``;``, ``&&`` and ``&``), each as the shell's words."""
    lex = shlex.shlex(line, posix=True, punctuation_chars=";&")
    lex.whitespace_split, lex.commenters = True, ""
    out = [[]]
    for word in lex:
        if set(word) <= set(";&"):
            out.append([])
        else:
            out[-1].append(word)
    return [c for c in out if c]


def commands(*args: str) -> list[list[str]]:
    """The simple commands ``make -n ARGS`` would run, in order, each as its words (no comments, no notes of make)."""
    return [c for line in dry_run(*args) if not line.startswith(("make: ", "#")) for c in words(line)]


def runs(cmds: list[list[str]], script: str) -> list[tuple[str, list[str]]]:
    """Each run of ``script`` among ``cmds``: the interpreter that runs it and the words after it."""
    return [(c[c.index(script) - 1], c[c.index(script) + 1:]) for c in cmds if script in c[1:]]


def variable(name: str) -> str:
    """A variable's value as make resolves it (its defaults, its functions) with no value given."""
    return make("-s", "-f", "Makefile", "--eval", "print-%: ; @echo $($*)", f"print-{name}").strip()


def phony() -> list[str]:
    """The Makefile's phony targets, as make's database lists them."""
    return next(line.split(":", 1)[1].split() for line in database(environment()) if line.startswith(".PHONY:"))
