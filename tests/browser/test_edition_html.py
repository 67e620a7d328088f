"""The Colab edition as plain Jupyter shows it: each edition notebook rendered by nbconvert (no MyST, no Sphinx) and
opened in headless Chromium at the reader's 1280 px.

Run by `make test` (browser-run), which sets CONNLAP_EDITION to the edition `make colab-edition` wrote. The plain
HTML honours what JupyterLab honours (a cell whose ``jupyter.source_hidden`` is set shows its output only: the
set-up form and the cells that show a glued figure or paragraph). nbconvert loads MathJax 2 from a CDN, which the
test machine cannot reach, so the page gets the MathJax 3 that the HTML book serves itself, with the same ``$``
delimiters. Each page must typeset all its mathematics (no ``$...$`` left in the text, no MathJax error), show no
MyST, and show in its first screen (1280 x 800, at the top) the chapter's title and its plain-words summary, the
first paragraph of prose; that screen goes to _build/screenshots/edition/<chapter>.png.
"""
import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import chromium  # noqa: E402  (tools/chromium.py: the server and the browser, shared with the site's test)
import colab_edition  # noqa: E402  (tools/colab_edition.py: what counts as MyST)

if not os.environ.get("CONNLAP_EDITION"):
    pytest.skip("the edition's browser test runs through `make test` (browser-run), which sets CONNLAP_EDITION",
                allow_module_level=True)

EDITION = (ROOT / os.environ["CONNLAP_EDITION"]).resolve()
HTML = ROOT / "_build" / "edition-html"
SHOTS = ROOT / "_build" / "screenshots" / "edition"
FIRST = (chromium.WIDTH, 800)
NOTEBOOKS = sorted((EDITION / "book").rglob("*.ipynb"))
MATHJAX = "mathjax/tex-chtml.js"
MATHJAX_CONFIG = ("<script>window.MathJax = {tex: {inlineMath: [['$', '$'], ['\\\\(', '\\\\)']], "
                  "displayMath: [['$$', '$$'], ['\\\\[', '\\\\]']], processEscapes: true, processEnvironments: true}};"
                  "</script>")


def render(path: Path, dest: Path) -> Path:
    """``path`` as nbconvert's HTML (the lab template), the hidden inputs left out as JupyterLab folds them."""
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("jupyter", {}).get("source_hidden"):
            cell.metadata.setdefault("transient", {})["remove_source"] = True
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    cdn = re.search(r'<script src="(https://cdnjs[^"]*mathjax[^"]*)">', body)
    assert cdn, "nbconvert's page no longer loads MathJax from its CDN: update this test"
    depth = "../" * (len(path.relative_to(EDITION).parts) - 1)
    body = body.replace(cdn.group(0), f'{MATHJAX_CONFIG}<script src="{depth}{MATHJAX}">')
    out = dest / path.relative_to(EDITION).with_suffix(".html")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(body, encoding="utf-8")
    return out


@pytest.fixture(scope="session")
def pages():
    """Every edition notebook as plain HTML, served on a free loopback port; the base URL."""
    if not NOTEBOOKS:
        pytest.fail(f"no Colab edition in {EDITION}: run `make colab-edition`")
    if HTML.exists():
        shutil.rmtree(HTML)
    from importlib.metadata import distribution      # the MathJax 3 the HTML book serves (sphinx-mathjax-offline)
    mathjax = Path(distribution("sphinx-mathjax-offline").locate_file("sphinx-mathjax-offline/static/mathjax"))
    shutil.copytree(mathjax, HTML / "mathjax")
    for path in NOTEBOOKS:
        render(path, HTML)
    with chromium.serve(HTML) as url:
        yield url


SEEN = """
const done = arguments[arguments.length - 1];
const wait = (window.MathJax && MathJax.startup) ? MathJax.startup.promise : Promise.resolve();
wait.then(() => {
  const md = [...document.querySelectorAll('.jp-MarkdownCell .jp-RenderedMarkdown')];
  const prose = e => { const c = e.cloneNode(true);            // the prose: no code, no typeset math
                       c.querySelectorAll('code, pre, mjx-container').forEach(x => x.remove());
                       return c.textContent; };
  const text = md.map(prose).join('\\n');
  const title = document.querySelector('.jp-RenderedMarkdown h1');
  const para = md.flatMap(e => [...e.querySelectorAll(':scope > p')])
                 .find(p => p.innerText.split(/\\s+/).length >= 20);
  done({text: text,
        math: document.querySelectorAll('mjx-container').length,
        errors: document.querySelectorAll('mjx-merror, [data-mjx-error]').length,
        title: title ? {top: title.getBoundingClientRect().top, text: title.innerText} : null,
        summary: para ? {top: para.getBoundingClientRect().top, text: para.innerText.slice(0, 120)} : null,
        wide: Math.max(document.body.scrollWidth, document.documentElement.scrollWidth)});
}).catch(e => done({failed: String(e)}));
"""


def uses_math(path: Path) -> bool:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return any(re.search(r"\$[^$\s][^$]*\$", "".join(c["source"])) for c in nb["cells"] if c["cell_type"] == "markdown")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_plain_html_shows_summary_and_typeset_math_first(path, pages, browser):
    rel = path.relative_to(EDITION).with_suffix(".html").as_posix()
    with chromium.viewport(browser, *FIRST):
        browser.get(pages + rel)
        seen = browser.execute_async_script(SEEN)
        shot = chromium.capture(browser, SHOTS / f"{path.stem}.png")
    assert "failed" not in seen, seen
    problems = []
    if uses_math(path) and not seen["math"]:
        problems.append("no mathematics typeset")
    if seen["errors"]:
        problems.append(f"{seen['errors']} MathJax errors")
    raw = re.findall(r"(?<![\\$])\$[^$\s][^$\n]{0,60}\$", seen["text"])
    if raw:
        problems.append(f"mathematics left as text: {raw[:3]}")
    myst = colab_edition.myst_left(seen["text"])
    if myst:
        problems.append(f"MyST shown raw: {myst[:3]}")
    if not seen["title"] or seen["title"]["top"] >= FIRST[1]:
        problems.append(f"the chapter's title is not on the first screen ({seen['title']})")
    if not seen["summary"]:
        problems.append("no paragraph of prose")
    elif seen["summary"]["top"] >= FIRST[1]:
        problems.append(f"the summary starts at {seen['summary']['top']:.0f} px, below the first screen "
                        f"({seen['summary']['text']!r})")
    if seen["wide"] > FIRST[0] + 2:
        problems.append(f"the page is {seen['wide']} px wide at {FIRST[0]} px")
    assert not problems, f"{rel} ({shot.relative_to(ROOT)}):\n  " + "\n  ".join(problems)
