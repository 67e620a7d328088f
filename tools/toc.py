"""The book's table of contents, read once: the pages of ``_toc.yml`` in reading order.

Used by the tests (tests/conftest.py), the browser test, the PDF (tools/book_pdf.py) and the timing benchmark
(benchmarks/book_times.py), so that no list of chapters is kept by hand.
"""
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def toc_files(toc: dict | None = None, skip_parts=()) -> list[str]:
    """The pages of a Jupyter Book ``_toc.yml`` (default: this book's) in reading order: the root, then every
    chapter and (nested) section of every part whose caption is not in ``skip_parts``."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text()) if toc is None else toc
    files = [toc["root"]]

    def collect(entries):
        for entry in entries:
            if "file" in entry:
                files.append(entry["file"])
            collect(entry.get("sections", []))

    for part in toc.get("parts", []):
        if part.get("caption") not in skip_parts:
            collect(part.get("chapters", []))
    return files


def title(page: str) -> str:
    """The '# ' title of a page of the toc (a notebook's first markdown cell, or a Markdown file)."""
    import json
    import re

    nb, md = ROOT / f"{page}.ipynb", ROOT / f"{page}.md"
    if nb.exists():
        text = "\n".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "markdown")
    else:
        text = md.read_text()
    return re.search(r"^# (.+)$", text, re.M).group(1).strip()
