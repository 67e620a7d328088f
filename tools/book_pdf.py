"""The whole book as one PDF, for teaching from paper (`make pdf`).

    .venv/bin/python tools/book_pdf.py SITE OUT.pdf

SITE is the folder of the executed book's HTML build (``_build/html`` of `jupyter-book build .`). Debian's
Chromium opens every page of the table of contents in reading order, waits until MathJax has typeset every
formula and every image has loaded, and prints it on A4 (the theme's print style drops the navigation). The
pages are joined into one PDF with an outline entry per chapter. The PDF is then checked: every chapter title in
its text, no unresolved reference (``??``), every figure loaded and present as an image, and no TeX error. A
failed check exits non-zero and says which.
"""
import base64
import io
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import chromium  # noqa: E402
from toc import title, toc_files  # noqa: E402

A4_CM = (21.0, 29.7)
# On paper a wide cell output cannot scroll: wrap preformatted text instead of cutting it at the margin.
PRINT_STYLE = """document.head.insertAdjacentHTML("beforeend",
  "<style>@media print { pre { white-space: pre-wrap !important; overflow-wrap: anywhere; } }</style>");"""


def words(text: str) -> str:
    """Text reduced to lower-case words, so that line breaks and hyphenation in the PDF do not matter."""
    return " ".join(re.findall(r"[a-z0-9]+", text.lower().replace("-\n", "")))


def print_pages(site: Path, pages: list[str]) -> list[tuple[str, bytes, dict]]:
    """Each page of ``site`` printed to PDF bytes, with what the page showed before printing."""
    from selenium.webdriver.common.print_page_options import PrintOptions

    options = PrintOptions()
    options.page_width, options.page_height = A4_CM
    options.margin_top = options.margin_bottom = options.margin_left = options.margin_right = 1.5
    options.background = True
    printed = []
    with chromium.serve(site) as url, chromium.browser() as driver:
        for page in pages:
            driver.get(url + f"{page}.html")
            seen = driver.execute_async_script(chromium.INSPECT)
            driver.execute_script(PRINT_STYLE)
            printed.append((page, base64.b64decode(driver.print_page(options)), seen))
            print(f"  printed {page}", flush=True)
    return printed


def join(printed, out: Path) -> None:
    """One PDF of the printed pages, with an outline entry (bookmark) at the start of each chapter."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for page, pdf, _ in printed:
        start = len(writer.pages)
        writer.append(PdfReader(io.BytesIO(pdf)))
        writer.add_outline_item(title=title(page), page_number=start)
    writer.add_metadata({"/Title": title(printed[0][0])})
    with open(out, "wb") as f:
        writer.write(f)


def check(out: Path, printed) -> list[str]:
    """Everything wrong with the printed book (an empty list when it is sound)."""
    from pypdf import PdfReader

    reader = PdfReader(str(out))
    text = "\n".join(page.extract_text() or "" for page in reader.pages)
    flat = words(text)
    images = sum(len(page.images) for page in reader.pages)
    titles = [title(page) for page, _, _ in printed]
    problems = []
    missing = [t for t in titles if words(t) not in flat]
    if missing:
        problems.append(f"chapter titles not found in the PDF's text: {missing}")
    if "??" in text:
        at = text.index("??")
        problems.append(f"an unresolved reference (??) in the PDF: ...{text[max(0, at - 60):at + 20]!r}")
    for page, _, seen in printed:
        if seen["broken_images"]:
            problems.append(f"{page}: images that did not load: {seen['broken_images'][:5]}")
        if seen["math"] and (seen["mathjax"] != "ok" or seen["typeset"] < seen["math"]):
            problems.append(f"{page}: MathJax typeset {seen['typeset']} of {seen['math']} formulas ({seen['mathjax']})")
        if seen["merror"]:
            problems.append(f"{page}: TeX errors: {seen['merror'][:5]}")
    if images == 0:
        problems.append("the PDF holds no image: the figures are missing")
    formulas = sum(seen["typeset"] for _, _, seen in printed)
    print(f"{out}: {len(reader.pages)} pages, {len(printed)} chapters, {images} images, {formulas} formulas typeset")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    site, out = Path(argv[0]), Path(argv[1])
    pages = toc_files()
    absent = [p for p in pages if not (site / f"{p}.html").is_file()]
    if absent:
        print(f"error: {site} lacks the pages {absent}: build the book first (`jupyter-book build .`; make pdf does)")
        return 2
    out.parent.mkdir(parents=True, exist_ok=True)
    printed = print_pages(site, pages)
    join(printed, out)
    problems = check(out, printed)
    for p in problems:
        print(f"error: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
