"""The package as readers get it: built from what a clone holds, installed from the wheel into a fresh
virtual environment outside the checkout, and one theory chapter and the reading chapter copied out of the
repository alone and executed there through their own set-up cell (its install branch, pointed at the wheel
by ``$CONNLAP_LITE_SOURCE``), as Colab opens a single notebook.

Run by ``make reader`` (part of ``make test``); pip's cache keeps the installs to minutes.
"""
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = ["book/theory/walks.ipynb", "book/models/reading.ipynb"]
# What Colab's runtime already has before a set-up cell runs: torch (the CPU build of constraints.txt here)
# and a Jupyter kernel. Everything else comes from the wheel and its extras, through the cell.
PREINSTALLED = ["torch", "ipykernel", "nbclient", "nbformat"]
KERNEL = "connlap-reader"


def run(cmd, **kw):
    """Run a command; on failure, show its output (the test's message), not a bare CalledProcessError."""
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n" \
                                 f"{proc.stderr[-3000:]}"
    return proc.stdout


def package_sources(root: Path) -> set[str]:
    """Every file of the package as a wheel must hold it: each module, ``py.typed`` and the corpora's data."""
    return {p.relative_to(root).as_posix() for p in (root / "connlap_lite").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """The sdist and the wheel, built (the wheel from the sdist) from a copy of the files git tracks."""
    tmp = tmp_path_factory.mktemp("dist")
    src = tmp / "clone"
    tracked = run(["git", "ls-files", "-z"], cwd=ROOT).split("\0")
    for name in filter(None, tracked):
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    run([sys.executable, "-m", "build", "--outdir", tmp / "out", src])
    wheel = next((tmp / "out").glob("*.whl"))
    sdist = next((tmp / "out").glob("*.tar.gz"))
    return {"src": src, "wheel": wheel, "sdist": sdist}


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A fresh virtual environment outside the checkout, with what Colab has before any set-up cell."""
    where = tmp_path_factory.mktemp("reader") / "venv"
    run([sys.executable, "-m", "venv", where])
    py = where / "bin" / "python"
    run([py, "-m", "pip", "install", "-q", "-c", ROOT / "constraints.txt", *PREINSTALLED])
    run([py, "-m", "ipykernel", "install", "--sys-prefix", "--name", KERNEL])
    assert ROOT not in Path(where).resolve().parents
    return py


def reader_env(wheel: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env["CONNLAP_LITE_SOURCE"] = wheel.resolve().as_uri()
    env["PIP_CONSTRAINT"] = str(ROOT / "constraints.txt")   # this machine's CPU torch; Colab keeps its own
    return env


def test_sdist_and_wheel_carry_every_module_and_py_typed(dist):
    expected = package_sources(dist["src"])
    assert {"connlap_lite/py.typed", "connlap_lite/models/adapters/__init__.py", "connlap_lite/models/corpora/corpora.json",
            "connlap_lite/models/corpora/narrative.json.xz"} <= expected
    with zipfile.ZipFile(dist["wheel"]) as whl:
        in_wheel = set(whl.namelist())
        metadata = next(whl.read(n).decode() for n in in_wheel if n.endswith(".dist-info/METADATA"))
        scripts = next(whl.read(n).decode() for n in in_wheel if n.endswith(".dist-info/entry_points.txt"))
    assert not expected - in_wheel, f"the wheel lacks {sorted(expected - in_wheel)}"
    # the runtime dependencies it declares are pyproject's (the one list; requirements.txt points at the project)
    declared = [l.split(": ", 1)[1] for l in metadata.splitlines() if l.startswith("Requires-Dist: ") and "extra ==" not in l]
    wanted = tomllib.loads((dist["src"] / "pyproject.toml").read_text())["project"]["dependencies"]
    assert declared == wanted, f"the wheel declares {declared}, pyproject.toml says {wanted}"
    assert "Requires-Python: >=3.11" in metadata and "connlap = connlap_lite.__main__:main" in scripts
    with tarfile.open(dist["sdist"]) as sd:
        in_sdist = {"/".join(n.split("/")[1:]) for n in sd.getnames()}
    assert not (expected | {"pyproject.toml", "README.md", "LICENSE"}) - in_sdist, \
        f"the sdist lacks {sorted((expected | {'pyproject.toml', 'README.md', 'LICENSE'}) - in_sdist)}"


# The runner, executed by the fresh environment's Python: the notebook, then one cell that says where
# connlap_lite was imported from (the executed copy is written back for the test to read).
RUNNER = """
import sys
import nbformat
from nbclient import NotebookClient
path = sys.argv[1]
nb = nbformat.read(path, as_version=4)
nb.cells.append(nbformat.v4.new_code_cell("import connlap_lite, sys; print(connlap_lite.__file__); print(sys.executable)"))
NotebookClient(nb, timeout=1200, kernel_name=sys.argv[2], resources={"metadata": {"path": sys.argv[3]}}).execute()
nbformat.write(nb, path)
"""


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: Path(c).stem)
def test_chapter_copied_alone_runs_against_the_installed_wheel(chapter, dist, venv, tmp_path):
    alone = tmp_path / "alone"
    alone.mkdir()
    copy = alone / Path(chapter).name
    shutil.copy(ROOT / chapter, copy)
    (alone / "runner.py").write_text(RUNNER)
    run([venv, alone / "runner.py", copy, KERNEL, alone], cwd=alone, env=reader_env(dist["wheel"]))
    nb = nbformat.read(copy, as_version=4)
    setup = next(c for c in nb.cells if c.cell_type == "code")
    assert "CONNLAP_LITE_SOURCE" in setup.source, "the chapter's own set-up cell did the install"
    where, executable = "".join(o.get("text", "") for o in nb.cells[-1].outputs).split()
    site = Path(executable).parents[1]
    assert Path(where).resolve().is_relative_to(site.resolve()), f"connlap_lite came from {where}, not the wheel in {site}"
    assert not Path(where).resolve().is_relative_to(ROOT), f"connlap_lite came from the checkout: {where}"


def test_every_module_imports_from_the_installed_wheel(dist, venv, tmp_path):
    wheel = dist["wheel"].resolve()
    env = reader_env(wheel)
    run([venv, "-m", "pip", "install", "-q", f"connlap-lite[offline-models] @ {wheel.as_uri()}"], env=env, cwd=tmp_path)
    code = ("import importlib, pkgutil, connlap_lite\n"
            "names = [m.name for m in pkgutil.walk_packages(connlap_lite.__path__, 'connlap_lite.')]\n"
            "for name in names: importlib.import_module(name)\n"
            "print(connlap_lite.__file__, len(names))")
    where, count = run([venv, "-c", code], env=env, cwd=tmp_path).split()
    assert not Path(where).resolve().is_relative_to(ROOT), where
    modules = {p for p in package_sources(dist["src"]) if p.endswith(".py")}
    assert int(count) == len(modules) - 1, "every module imported (less the root)"
