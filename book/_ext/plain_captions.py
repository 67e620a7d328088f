"""Sphinx extension: nothing technical in the polished parts of the book.

A reader of a figure's caption, of the PDF's list of figures (made from the captions, tools/book_pdf.py) or of a
computed paragraph (a glued text) should meet words and typeset mathematics, never the plumbing: a ``$`` that
was meant to open a formula and printed as a dollar, or the name of one of the package's constants
(``COLLAPSE``, ``MIN_SEEDS``) where the value or its meaning belongs. After each page is resolved this warns,
with the page and the text, on

* a ``$`` printed (outside code and mathematics) in a caption or in glued Markdown: unrendered dollar
  mathematics;
* an upper-case constant name in a figure's or table's caption (code included) or in a glued text of the page.

Glued Markdown is read as MyST, as the book's own cells are (myst-nb's ``{glue:md}`` role and directive read
it as CommonMark unless told otherwise, and CommonMark prints a formula as raw dollars); what they paste is
marked with the class ``glued``, which the check reads.

The strict build (``-W``, ``make html-strict`` in ``make test``) turns the warnings into a failure.
"""
from __future__ import annotations

import ast
import functools
import json
import re
from pathlib import Path

from docutils import nodes

PACKAGE = Path(__file__).resolve().parents[2] / "connlap_lite"
# text whose `$` is not printed mathematics: code, formulas, raw HTML, comments
SKIP = (nodes.literal_block, nodes.literal, nodes.math, nodes.math_block, nodes.raw, nodes.comment, nodes.FixedTextElement)
_UNDERSCORED = re.compile(r"\b[A-Z][A-Z0-9]+_[A-Z0-9_]*[A-Z0-9]\b")      # MIN_SEEDS, not a matrix W_O
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$]*\$", re.S)


@functools.lru_cache
def constants(package: Path = PACKAGE) -> frozenset[str]:
    """The upper-case names the package's modules assign at their top level (three letters or more)."""
    found = set()
    for path in package.rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = (node.targets if isinstance(node, ast.Assign) else
                       [node.target] if isinstance(node, ast.AnnAssign) else [])
            found |= {t.id for t in targets if isinstance(t, ast.Name) and re.fullmatch(r"[A-Z][A-Z0-9_]{2,}", t.id)}
    return frozenset(found)


def technical(text: str, names: frozenset[str] = frozenset(), *, dollars: bool = True) -> list[str]:
    """What in ``text`` a reader should not see: a ``$`` and constant names (``names``, or any upper-case name
    with an underscore).

    >>> technical("dotted: `COLLAPSE` times the residual", frozenset({"COLLAPSE"}))
    ['COLLAPSE']
    >>> technical("rank $G d_h = 64$; below MIN_SEEDS seeds")
    ['$', 'MIN_SEEDS']
    >>> technical("E1 holds in GPT-2 and BERT-base (TV distance) for $W_O W_V$", frozenset({"COLLAPSE"}), dollars=False)
    []
    """
    found = ["$"] if dollars and "$" in text else []
    words = set(re.findall(r"\b[A-Z][A-Z0-9_]+\b", _MATH.sub(" ", text)))
    return found + sorted(w for w in words if w in names or _UNDERSCORED.fullmatch(w))


def _printed(node) -> bool:
    parent = node.parent
    while parent is not None:
        if isinstance(parent, SKIP) or "math" in parent.get("classes", []):
            return False
        parent = parent.parent
    return True


def _glued(app, docname: str) -> dict[str, str]:
    """The page's glued texts (myst-nb writes each executed notebook's glue data beside it)."""
    path = Path(app.outdir).parent / "jupyter_execute" / f"{docname}.glue.json"
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {key: value["data"].get("text/markdown", "") for key, value in data.items()
            if isinstance(value, dict) and "text/markdown" in value.get("data", {})}


def _inside_math(node) -> bool:
    while node is not None:
        if isinstance(node, (nodes.math, nodes.math_block)):
            return True
        node = node.parent
    return False


def _polished(node) -> bool:
    """Whether ``node`` lies in a caption or in glued Markdown."""
    while node is not None:
        if isinstance(node, nodes.caption) or (isinstance(node, nodes.Element) and "glued" in node["classes"]):
            return True
        node = node.parent
    return False


def check(app, doctree, docname: str) -> None:
    from sphinx.util import logging

    log = logging.getLogger(__name__)
    names = constants()

    def warn(where, what: str, text: str, node=None) -> None:
        log.warning(f"{what} shows {', '.join(where)} to the reader: {' '.join(text.split())[:160]!r}",
                    location=node if node is not None else docname, type="connlap", subtype="plain")

    for text in doctree.findall(nodes.Text):
        if "$" in text and _printed(text) and _polished(text):
            warn(["$"], "a caption or glued text (unrendered dollar mathematics?)", text.parent.astext(), text.parent)
    for caption in [*doctree.findall(nodes.caption),
                    *(t for table in doctree.findall(nodes.table) for t in table.children if isinstance(t, nodes.title))]:
        words = " ".join(t for t in caption.findall(nodes.Text) if not _inside_math(t))       # code included
        bad = technical(words, names, dollars=False)
        if bad:
            warn(bad, "a caption", caption.astext(), caption)
    for key, text in _glued(app, docname).items():
        bad = technical(text, names, dollars=False)
        if bad:
            warn(bad, f"the glued text {key!r}", text)


def _glue_as_myst() -> None:
    """myst-nb's ``{glue:md}`` role and directive, reading MyST by default and marking what they paste."""
    from myst_nb.ext.glue.directives import PasteMarkdownDirective
    from myst_nb.ext.glue.domain import NbGlueDomain
    from myst_nb.ext.glue.roles import PasteMarkdownRole

    def mark(found):
        for node in found:
            if isinstance(node, nodes.Element):
                node["classes"].append("glued")
        return found

    class Role(PasteMarkdownRole):
        def run(self):
            if ":" not in self.text:
                self.text += ":myst"
            found, messages = super().run()
            return ([nodes.inline("", "", *found, classes=["glued"])] if found else found), messages

    class Directive(PasteMarkdownDirective):
        def run(self):
            self.options.setdefault("format", "myst")
            return mark(super().run())

    NbGlueDomain.roles = {**NbGlueDomain.roles, "md": Role()}
    NbGlueDomain.directives = {**NbGlueDomain.directives, "md": Directive}


def setup(app):
    _glue_as_myst()
    app.connect("doctree-resolved", check)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
