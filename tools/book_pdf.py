"""The whole book as one PDF, for teaching from paper (`make pdf`).

    .venv/bin/python tools/book_pdf.py SITE OUT.pdf

SITE is the folder of Jupyter Book's single-page HTML build of the executed book
(`jupyter-book build . --builder singlehtml`). Debian's Chromium opens it, waits until MathJax has typeset
every formula and every image has loaded, and prints it on A4 with backgrounds. The PDF is then checked:
at least one page per chapter, every chapter's title in its text, no unresolved reference (``??``), every
figure loaded and present as an image, and no TeX error. A failed check exits non-zero and says which.
"""
import base64
import re
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import chromium  # noqa: E402

A4_CM = (21.0, 29.7)


def chapter_titles() -> list[str]:
    """The '# ' title of every page of _toc.yml, in reading order."""
    import json

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", [])]
    titles = []
    for f in files:
        nb, md = (ROOT / f).with_suffix(".ipynb"), (ROOT / f).with_suffix(".md")
        if nb.exists():
            text = "\n".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"]
                             if c["cell_type"] == "markdown")
        else:
            text = md.read_text()
        titles.append(re.search(r"^# (.+)$", text, re.M).group(1).strip())
    return titles


def words(text: str) -> str:
    """Text reduced to lower-case words, so that line breaks and hyphenation in the PDF do not matter."""
    return " ".join(re.findall(r"[a-z0-9]+", text.lower().replace("-\n", "")))


def print_pdf(site: Path, out: Path) -> dict:
    """Print the single page of ``site`` to ``out``; what the page showed before printing."""
    from selenium.webdriver.common.print_page_options import PrintOptions

    with chromium.serve(site) as url, chromium.browser() as driver:
        driver.get(url + "index.html")
        seen = driver.execute_async_script(chromium.INSPECT)
        options = PrintOptions()
        options.page_width, options.page_height = A4_CM
        options.margin_top = options.margin_bottom = 1.5
        options.margin_left = options.margin_right = 1.5
        options.background = True
        out.write_bytes(base64.b64decode(driver.print_page(options)))
    return seen


def check(out: Path, seen: dict, titles: list[str]) -> list[str]:
    """Everything wrong with the printed book (an empty list when it is sound)."""
    from pypdf import PdfReader

    reader = PdfReader(str(out))
    text = "\n".join(page.extract_text() or "" for page in reader.pages)
    flat = words(text)
    images = sum(len(page.images) for page in reader.pages)
    problems = []
    if len(reader.pages) < len(titles):
        problems.append(f"{len(reader.pages)} pages for {len(titles)} chapters")
    missing = [t for t in titles if words(t) not in flat]
    if missing:
        problems.append(f"chapter titles not found in the PDF's text: {missing}")
    if "??" in text:
        at = text.index("??")
        problems.append(f"an unresolved reference (??) in the PDF: ...{text[max(0, at - 60):at + 20]!r}")
    if seen["broken_images"]:
        problems.append(f"images that did not load: {seen['broken_images'][:5]}")
    if images == 0:
        problems.append("the PDF holds no image: the figures are missing")
    if seen["math"] and (seen["mathjax"] != "ok" or seen["typeset"] < seen["math"]):
        problems.append(f"MathJax typeset {seen['typeset']} of {seen['math']} formulas ({seen['mathjax']})")
    if seen["merror"]:
        problems.append(f"TeX errors: {seen['merror'][:5]}")
    print(f"{out}: {len(reader.pages)} pages, {images} images, {seen['typeset']} formulas, "
          f"{len(titles)} chapter titles found" if not missing else f"{out}: {len(reader.pages)} pages")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    site, out = Path(argv[0]), Path(argv[1])
    if not (site / "index.html").is_file():
        print(f"error: no single-page build at {site} (index.html): build it with "
              "`jupyter-book build . --builder singlehtml` (make pdf does)")
        return 2
    out.parent.mkdir(parents=True, exist_ok=True)
    problems = check(out, print_pdf(site, out), chapter_titles())
    for p in problems:
        print(f"error: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
