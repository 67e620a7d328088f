"""Sphinx extension: the book shows the version of connlap_lite it was built with.

The version has one source, ``__version__`` in ``connlap_lite/__init__.py``; this reads it (without
importing the package) into Sphinx's ``version``/``release`` and into the MyST substitution
``{{ version }}`` that the preface uses.
"""
import re
from pathlib import Path

INIT = Path(__file__).resolve().parents[2] / "connlap_lite" / "__init__.py"


def read_version() -> str:
    found = re.search(r'^__version__ = "([^"]+)"', INIT.read_text(), re.M)
    if not found:
        raise RuntimeError(f"no __version__ = \"...\" line in {INIT}")
    return found.group(1)


def _set(app, config):
    v = read_version()
    config.version = config.release = v
    config.myst_substitutions = {**(config.myst_substitutions or {}), "version": v}


def setup(app):
    app.connect("config-inited", _set)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
