"""The Colab edition of the book (``make colab-edition``): every chapter in plain Jupyter Markdown, checked.

    .venv/bin/python tools/colab_edition.py BUILT DEST --html SITE     # default DEST: _build/colab

``BUILT`` is the folder that Sphinx's ``colab_edition`` builder wrote (book/_ext/edition_builder.py, run by the
Makefile through jupyter-book's custom builder on the strict build: its notebooks, ``edition.json`` and
``edition_refs.json``). ``DEST`` becomes a tree to publish as the repository's ``colab`` branch, which every Colab
badge of the book opens and whose set-up cells install from it: the edition's notebooks under ``book/``, the
package (with ``edition_refs.json``, the book's labels as the HTML book shows them, for the computed paragraphs'
references) and the project files that make it installable. The student edition (``make student``) is then
built from this tree.

Before it writes, it checks the edition (:func:`problems`): no MyST construct in any Markdown cell or in any
shown caption or paragraph; against the HTML build ``SITE``, the same theorem, figure and exercise numbers on
each chapter; every glued key of the chapter shown once, in the section where the book pastes it.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BRANCH = "colab"
PROJECT_FILES = ("pyproject.toml", "LICENSE", "README.md", "_config.yml", "_toc.yml", "constraints.txt")
REFS = "connlap_lite/edition_refs.json"
SHOW = "edition-show"
# MyST that plain Markdown shows raw: roles, directives (backticks or colons), targets, substitutions
MYST = re.compile(r"\{(glue|prf:|exercise|solution|cite|numref|ref|doc|term|eq|math|download|abbr)[\w:-]*\}`"
                  r"|^\s*(`{3,}|:{3,})\s*\{[\w:-]+\}|^\s*:(label|class|name|alt|format|figwidth):\s|"
                  r"^\([\w-]+\)=\s*$|\{\{\s*\w+\s*\}\}|\{(glue|prf|exercise|solution)[:-]", re.M)


def myst_left(text: str) -> list[str]:
    """The MyST constructs in ``text`` that a plain Markdown renderer would show raw.

    >>> myst_left("see {numref}`fig-x`;\\n(a-label)=\\n```{admonition} Note\\n:class: tip\\n```")
    ['{numref}`', '(a-label)=', '```{admonition}', ':class:']
    >>> myst_left("**Theorem 3.1 (walks).** $x \\\\in \\\\mathbb{R}$ [Figure 2.1](https://x#f)")
    []
    """
    return [m.group(0).strip() for m in MYST.finditer(text)]


def shown_text(cell: dict) -> str:
    """What a cell puts before a reader as Markdown: a Markdown cell's source, or the caption and paragraph
    templates a show cell (``connlap_lite.pages.edition.show``) displays."""
    src = "".join(cell["source"])
    if cell["cell_type"] == "markdown":
        return src
    if SHOW in cell.get("metadata", {}).get("tags", []):
        return src.split("edition.show(", 1)[1]
    return ""


def glue_keys_by_section(nb: dict) -> list[tuple[str, str]]:
    """``(key, heading)`` for every ``{glue:...}`` paste in the source notebook's Markdown, with the title of the
    heading above it (the chapter's title before its first section)."""
    out, heading = [], ""
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        for line in "".join(cell["source"]).splitlines():
            h = re.match(r"#{1,6} (.+)", line)
            if h:
                heading = h.group(1).strip()
            for m in re.finditer(r"\{glue(?::\w+)?\}(?:`([^`:]+)(?::\w+)?`| +(\S+))", line):
                out.append((m.group(1) or m.group(2), heading))
    return out


def html_numbers(page: Path) -> dict[str, dict[str, str]]:
    """The numbers the HTML page gives its theorem-like boxes, figures and exercises: ``{kind: {number: id}}``."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    out = {"theorems": {}, "figures": {}, "exercises": {}}
    for span in soup.select("span.caption-number"):
        m = re.match(r"(\w+) ([\d.]+)", span.get_text(" ", strip=True))
        if not m:
            continue
        holder = span.find_parent(id=True)
        kind = {"Figure": "figures", "Exercise": "exercises", "Table": None}.get(m.group(1), "theorems")
        if kind:
            out[kind][m.group(2)] = holder["id"] if holder else ""
    for title in soup.select("div.proof > p.admonition-title, div.admonition.proof > p.admonition-title"):
        m = re.match(r"(\w+) ([\d.]+)", title.get_text(" ", strip=True))
        holder = title.find_parent(id=True)
        if m and m.group(1) != "Proof":
            out["theorems"][m.group(2)] = holder["id"] if holder else ""
    return out


def _heading_words(title: str) -> str:
    """A heading's words, for comparing the source's with the edition's (Sphinx curls the quotes)."""
    title = title.translate(str.maketrans("\u2018\u2019\u201c\u201d", "''\"\""))
    return re.sub(r"[`*$\\{}]", "", title).strip().lower()


def problems(edition: Path, record: dict, source_root: Path, site: Path | None) -> list[str]:
    """Every way the edition at ``edition`` (its ``book/``) falls short against the source notebooks under
    ``source_root`` and the HTML build ``site`` (see the module's docstring); empty when it passes."""
    found = []
    for path in sorted((edition / "book").rglob("*.ipynb")):
        rel = path.relative_to(edition)
        docname = rel.with_suffix("").as_posix()
        nb = json.loads(path.read_text(encoding="utf-8"))
        for i, cell in enumerate(nb["cells"]):
            left = myst_left(shown_text(cell))
            if left:
                found.append(f"{rel} cell {i}: MyST left for Colab to show raw: {left[:4]}")
            if cell["cell_type"] == "markdown" and "\u27e6" in "".join(cell["source"]):
                found.append(f"{rel} cell {i}: a glued value's place in a Markdown cell, which shows nothing there")
        shows = "\n".join("".join(c["source"]) for c in nb["cells"] if SHOW in c.get("metadata", {}).get("tags", []))
        source = json.loads((source_root / rel).read_text(encoding="utf-8"))
        rec = record.get(docname, {})
        for key, heading in glue_keys_by_section(source):
            times = len(re.findall(rf"\u27e6{re.escape(key)}\u27e7|figure={re.escape(repr(key))}", shows))
            if times != 1:
                found.append(f"{rel}: glued {key!r} is shown {times} times in the edition, not once")
            sections = [s for s in rec.get("glue", {}).get(key, [])]
            if sections and heading and _heading_words(sections[0]) != _heading_words(heading):
                found.append(f"{rel}: glued {key!r} is shown under {sections[0]!r}, the book pastes it under "
                             f"{heading!r}")
        if site is not None:
            page = site / f"{docname}.html"
            if not page.exists():
                found.append(f"{rel}: no HTML page {page} to compare the numbers with")
                continue
            html = html_numbers(page)
            for kind in ("theorems", "figures", "exercises"):
                ours = {n: v["id"] for n, v in rec.get(kind, {}).items()}
                if ours != html[kind]:
                    found.append(f"{rel}: {kind} numbered {sorted(ours.items())} in the edition, "
                                 f"{sorted(html[kind].items())} in the HTML book")
    return found


def colab_edition(built: Path, dest: Path, root: Path = ROOT, site: Path | None = None) -> list[Path]:
    """Check the builder's notebooks in ``built`` and write the edition's tree to ``dest`` (the module's
    docstring). Refuses a ``dest`` inside the project's book or package. Returns the notebooks written."""
    built, dest, root = Path(built).resolve(), Path(dest).resolve(), Path(root).resolve()
    if not (built / "edition.json").exists():
        raise FileNotFoundError(f"{built} holds no edition.json: run the colab_edition builder first (make "
                                "colab-edition does)")
    if dest == root or any(p in (dest, *dest.parents) for p in (root / "book", root / "connlap_lite")):
        raise ValueError(f"dest ({dest}) lies inside the project's book or package; pass another folder, e.g. "
                         "_build/colab")
    record = json.loads((built / "edition.json").read_text(encoding="utf-8"))
    bad = problems(built, record, root, site) if (built / "book").is_dir() else [
        f"no notebooks in {built / 'book'}"]
    if bad:
        raise ValueError("the Colab edition is not plain Jupyter Markdown, or its numbers differ from the HTML "
                         "book's:\n  " + "\n  ".join(bad))
    if dest.exists():
        shutil.rmtree(dest)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "_build", ".ipynb_checkpoints")
    shutil.copytree(root / "connlap_lite", dest / "connlap_lite", ignore=skip)
    shutil.copytree(root / "book", dest / "book", ignore=shutil.ignore_patterns("*.ipynb", "__pycache__", "_build",
                                                                               ".ipynb_checkpoints"))
    for name in PROJECT_FILES:
        if (root / name).exists():
            shutil.copy2(root / name, dest / name)
    shutil.copy2(built / "edition_refs.json", dest / REFS)
    pyproject = dest / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    new = text.replace('"*" = ["py.typed"]', '"*" = ["py.typed", "edition_refs.json"]')
    if new == text:
        raise ValueError('pyproject.toml has no package-data line "*" = ["py.typed"] to add edition_refs.json to')
    pyproject.write_text(new, encoding="utf-8")
    written = []
    for path in sorted((built / "book").rglob("*.ipynb")):
        target = dest / path.relative_to(built)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
        written.append(target)
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="tools/colab_edition.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("built", help="the colab_edition builder's folder (_build/strict/_build/colab_edition)")
    ap.add_argument("dest", nargs="?", default="_build/colab", help="output folder (default: _build/colab)")
    ap.add_argument("--html", metavar="SITE", help="the HTML build to compare the numbers with "
                                                   "(_build/strict/_build/html)")
    args = ap.parse_args(argv)
    try:
        written = colab_edition(Path(args.built), Path(args.dest), site=Path(args.html) if args.html else None)
    except (ValueError, FileNotFoundError) as exc:
        print(f"tools/colab_edition.py: {exc}", file=sys.stderr)
        return 1
    print(f"Colab edition: {len(written)} notebooks and the package in {Path(args.dest)}; publish it as the "
          f"{BRANCH!r} branch, which the book's Colab badges open")
    return 0


if __name__ == "__main__":
    sys.exit(main())
