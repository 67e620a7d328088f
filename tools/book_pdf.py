"""The whole book as one PDF, for teaching from paper (`make pdf`).

    .venv/bin/python tools/book_pdf.py SITE OUT.pdf

SITE is the folder of the executed book's HTML build (``_build/html`` of `jupyter-book build .`). Debian's
Chromium opens every page of the table of contents in reading order, waits until MathJax has typeset every
formula and every image has loaded, and prints it on A4 with the book's print style (book/_static/connlap.css:
no navigation, wrapped code, tables in smaller type). Each chapter starts on a new page, under running heads
(the book's title on the left, the chapter's number and title on the right) with the page number at the foot,
numbered through the whole book. A front matter (title page, contents, list of figures, with page numbers
i, ii, ...) is printed last, once the pages are known, and put first.

What is printed of the code: a cell tagged ``hide-input`` (collapsed on the page) prints its output only;
every other code cell longer than ``FOLD_AFTER`` lines prints its first ``FOLD_KEEP`` lines and a note of how
many more the notebook holds, unless it is tagged ``print-input``, which prints it whole. The dropdowns that
fold secondary figures and tables on screen print open, so that every figure the list of figures names is on
its page.

Before printing, each page is laid out at the printed column's width and searched for a table, code block,
equation or figure wider than that column (tools/chromium.py's OVERFLOW); a table is first shrunk to fit, down
to ``MIN_TABLE_ZOOM`` of its size. Whatever is still too wide fails the run. The PDF is then checked with pypdf:
every chapter title in its text, every body page carrying its own number, the printed contents and list of
figures pointing at the pages that hold each chapter's title and each figure's number, no unresolved
reference (``??``), every figure loaded and present as an image, and no TeX error. A failed check exits
non-zero and says which.
"""
import base64
import html
import io
import re
import sys
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import chromium  # noqa: E402
from toc import title, toc_files  # noqa: E402

sys.path.insert(0, str(HERE.parent / "book" / "_ext"))
from plain_captions import constants, technical  # noqa: E402  (the strict build's caption check)

A4_CM = (21.0, 29.7)
MARGIN_CM = {"top": 2.0, "bottom": 2.0, "side": 1.8}
# the printed text column in CSS pixels (96 per inch), the width every page is checked at before printing
COLUMN_PX = round((A4_CM[0] - 2 * MARGIN_CM["side"]) / 2.54 * 96)
FOLD_AFTER, FOLD_KEEP = 14, 8
MIN_TABLE_ZOOM = 0.7
BOOK = "Attention as a Connection Walk"

PAGE_STYLE = """@page {{ size: A4; margin: {top}cm {side}cm {bottom}cm {side}cm;
  @top-left {{ content: "{left}"; font: 8pt sans-serif; color: #555; }}
  @top-right {{ content: "{right}"; font: 8pt sans-serif; color: #555; }}
  @bottom-center {{ content: counter(page{style}); font: 9pt sans-serif; }} }}
@page :first {{ @top-left {{ content: none; }} @top-right {{ content: none; }} }}
html {{ counter-reset: page {before}; }}"""

# Runs in the page: the print layout of tools/book_pdf.py. Inserts the page style (arguments[0]), opens every
# dropdown (a folded figure or table would be lost on paper, though the list of figures names it), and folds
# each code input longer than arguments[1] lines to its first arguments[2] lines (cut from the page itself:
# Chromium prints a box whole whatever its max-height); returns how many inputs it folded.
PREPARE = r"""
const [style, after, keep] = arguments;
document.head.insertAdjacentHTML("beforeend", "<style>" + style + "</style>");
// paper cannot unfold: the dropdowns (secondary figures, tables, superseded rules) print open
for (const d of document.querySelectorAll("details.sd-dropdown")) d.open = true;
let folded = 0;
for (const cell of document.querySelectorAll("div.cell")) {
  const pre = cell.querySelector(".cell_input pre");
  if (!pre || cell.classList.contains("tag_print-input") || cell.classList.contains("tag_hide-input")) continue;
  const lines = pre.textContent.replace(/\n+$/, "").split("\n").length;
  if (lines <= after) continue;
  // keep the first `keep` lines: cut the text node that holds the keep-th line end, drop all after it
  let ends = 0, node, cut = null;
  const walk = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
  while (!cut && (node = walk.nextNode())) {
    const parts = node.data.split("\n");
    if (ends + parts.length - 1 >= keep) { node.data = parts.slice(0, keep - ends).join("\n"); cut = node; }
    ends += parts.length - 1;
  }
  for (let n = cut; n && n !== pre; n = n.parentNode) while (n.nextSibling) n.parentNode.removeChild(n.nextSibling);
  const note = document.createElement("p");
  note.className = "print-folded";
  note.textContent = "\u22ef " + (lines - keep) + " more lines of this cell in the notebook";
  cell.querySelector(".cell_input").after(note);
  folded += 1;
}
return folded;
"""

# Runs in the page, laid out at the printed width: shrinks each table wider than the column to fit (not
# below arguments[0] of its size); returns how many it shrank.
FIT_TABLES = r"""
const col = document.querySelector("article.bd-article") || document.body;
const room = col.getBoundingClientRect().width;
let fitted = 0;
for (const t of col.querySelectorAll("table")) {
  const w = t.getBoundingClientRect().width;
  if (w > room + 1) { t.style.zoom = Math.max(arguments[0], (room - 2) / w); fitted += 1; }
}
return fitted;
"""

# Runs in the page: the chapter's number and title, and its numbered figures with their captions.
CHAPTER = r"""
const h1 = document.querySelector("article.bd-article h1") || document.querySelector("h1");
const num = h1 && h1.querySelector(".section-number");
const clean = e => e ? e.textContent.replace(/[#¶]/g, "").replace(/\s+/g, " ").trim() : "";
return {
  number: num ? clean(num).replace(/\.$/, "") : "",
  title: clean(h1).replace(num ? clean(num) : "", "").trim(),
  figures: [...document.querySelectorAll("article.bd-article figure")].map(f => {
    const n = f.querySelector("figcaption .caption-number");
    const cap = f.querySelector("figcaption .caption-text") || f.querySelector("figcaption");
    return {number: clean(n).replace(/\.$/, ""), caption: clean(cap)};
  }).filter(f => f.number),
};
"""


def words(text: str) -> str:
    r"""Text reduced to lower-case words, so that line breaks and hyphens in the PDF do not matter (a line
    broken at the hyphen of "low-rank" reads "low-\nrank"; both read "lowrank"; a ligature reads as its letters).

    >>> words("Low-\nrank heads, ﬁnd")
    'lowrank heads find'
    """
    text = unicodedata.normalize("NFKC", text)          # the PDF's ligatures (ﬁ) as letters
    return " ".join(re.findall(r"[a-z0-9]+", text.lower().replace("-\n", "-").replace("-", "")))


def css_string(text: str) -> str:
    """``text`` as the inside of a CSS string."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def page_style(right: str, before: int, style: str = "") -> str:
    """The @page rules of one printed part: running heads, and page numbers that start at ``before + 1``."""
    return PAGE_STYLE.format(left=css_string(BOOK), right=css_string(right), before=before, style=style,
                             **MARGIN_CM)


def pdf_of(driver) -> bytes:
    """The open page printed by Chromium with the page size and margins of its own @page rules."""
    out = driver.execute_cdp_cmd("Page.printToPDF", {
        "printBackground": True, "preferCSSPageSize": True, "displayHeaderFooter": False,
        "paperWidth": A4_CM[0] / 2.54, "paperHeight": A4_CM[1] / 2.54})
    return base64.b64decode(out["data"])


def too_wide(driver) -> list[dict]:
    """The content elements wider than the printed column, with the page laid out for print at that width
    (tables shrunk to fit first)."""
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": COLUMN_PX, "height": 1200, "deviceScaleFactor": 1, "mobile": False})
    try:
        driver.execute_script(FIT_TABLES, MIN_TABLE_ZOOM)
        return driver.execute_script(chromium.OVERFLOW)
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})


def print_pages(site: Path, pages: list[str]) -> list[dict]:
    """Each page of ``site`` printed to PDF bytes, numbered on from the pages before it, with what the page
    showed before printing (INSPECT), its chapter number, title and figures, and what was too wide."""
    from pypdf import PdfReader

    printed, before = [], 0
    with chromium.serve(site) as url, chromium.browser() as driver:
        for page in pages:
            driver.get(url + f"{page}.html")
            seen = driver.execute_async_script(chromium.INSPECT)
            chapter = driver.execute_script(CHAPTER)
            head = f"{chapter['number']}  {chapter['title']}".strip()
            folded = driver.execute_script(PREPARE, page_style(head, before), FOLD_AFTER, FOLD_KEEP)
            wide = too_wide(driver)
            pdf = pdf_of(driver)
            n = len(PdfReader(io.BytesIO(pdf)).pages)
            printed.append({"page": page, "pdf": pdf, "seen": seen, "start": before + 1, "pages": n,
                            "wide": wide, **chapter})
            print(f"  printed {page}: pages {before + 1}-{before + n}, {folded} code cells folded", flush=True)
            before += n
        front = front_matter(printed)
        driver.get("data:text/html;base64," + base64.b64encode(front.encode()).decode())
        front_pdf = pdf_of(driver)
    return [{"page": "front", "pdf": front_pdf, "start": 1,
             "pages": len(PdfReader(io.BytesIO(front_pdf)).pages)}] + printed


def figure_pages(chapter: dict) -> dict[str, int]:
    """The page (of the book) on which each figure of ``chapter`` has its numbered caption."""
    from pypdf import PdfReader

    texts = [words(p.extract_text() or "") for p in PdfReader(io.BytesIO(chapter["pdf"])).pages]
    where = {}
    for fig in chapter["figures"]:
        key = words(f"{fig['number']} {' '.join(fig['caption'].split()[:4])}")
        hits = [k for k, t in enumerate(texts) if key in t]
        if hits:
            where[fig["number"]] = chapter["start"] + hits[0]
    chapter["figure_pages"] = where
    return where


def parts() -> dict[str, str]:
    """{page: the caption of its part} for the chapters of _toc.yml (the contents group them so)."""
    import yaml

    toc = yaml.safe_load((HERE.parent / "_toc.yml").read_text())
    return {entry["file"]: part["caption"] for part in toc.get("parts", []) for entry in part.get("chapters", [])}


def edition(root: Path = HERE.parent) -> dict[str, str]:
    """The title page's facts, from CITATION.cff (the one source of the book's title, authors, version, release
    date and address): ``title``, ``subtitle``, ``authors``, ``edition``, ``date``, ``url``.

    >>> facts = edition()
    >>> facts["edition"].startswith("Version ") and facts["url"].startswith("https://")
    True
    """
    import datetime

    import yaml

    cff = yaml.safe_load((root / "CITATION.cff").read_text(encoding="utf-8"))
    title_, _, subtitle = cff["title"].partition(": ")
    names = [a.get("name") or " ".join(filter(None, (a.get("given-names"), a.get("family-names"))))
             for a in cff.get("authors", [])]
    released = cff.get("date-released")
    date = (datetime.date.fromisoformat(str(released)) if released else datetime.date.today())
    return {"title": title_, "subtitle": subtitle[:1].upper() + subtitle[1:], "authors": ", ".join(names), "edition": f"Version {cff['version']}",
            "date": f"{date:%B} {date.day}, {date.year}", "url": cff.get("url", "")}


def title_page(facts: dict[str, str]) -> str:
    """The title page's HTML: title, subtitle, authors, edition, date and the book's address."""
    e = {k: html.escape(v) for k, v in facts.items()}
    return (f'<h1 class="book">{e["title"]}</h1><p class="sub">{e["subtitle"]}</p>'
            f'<p class="authors">{e["authors"]}</p>'
            f'<p class="edition">{e["edition"]} · {e["date"]}</p>'
            f'<p class="address">{e["url"]}</p>')


def front_matter(printed: list[dict]) -> str:
    """The title page, the contents and the list of figures as one HTML document, numbered i, ii, ..."""
    rows, figs, part = [], [], None
    for ch in printed:
        label = ch["number"] or ""
        if parts().get(ch["page"], part) != part:
            part = parts()[ch["page"]]
            rows.append(f"<tr class=part><td></td><td colspan=2>{html.escape(part)}</td></tr>")
        rows.append(f"<tr><td class=n>{html.escape(label)}</td><td>{html.escape(ch['title'] or title(ch['page']))}"
                    f"</td><td class=p>{ch['start']}</td></tr>")
        pages = figure_pages(ch)
        for fig in ch["figures"]:
            first = re.split(r"(?<=[.!?])\s", fig["caption"], maxsplit=1)[0]
            figs.append(f"<tr><td class=n>{html.escape(fig['number'].removeprefix('Figure ').strip())}</td>"
                        f"<td>{html.escape(first)}</td><td class=p>{pages.get(fig['number'], '')}</td></tr>")
    style = page_style("", 0, ", lower-roman")
    return f"""<!DOCTYPE html><html><head><meta charset="utf-8"><style>{style}
body {{ font: 11pt/1.45 sans-serif; color: #111; }}
h1.book {{ font-size: 26pt; margin: 30% 0 0.3em; }} p.sub {{ font-size: 13pt; color: #222; margin: 0 0 3em; }}
p.authors {{ font-size: 14pt; margin: 0 0 0.4em; }} p.edition, p.address {{ font-size: 11pt; margin: 0.2em 0; }}
h2 {{ break-before: page; font-size: 18pt; }}
table {{ width: 100%; border-collapse: collapse; }} td {{ padding: 0.18em 0.3em; vertical-align: top; }}
td.n {{ width: 3.5em; }} td.p {{ width: 3em; text-align: right; }}
tr.part td {{ padding-top: 0.8em; font-weight: 600; }}
</style></head><body>
{title_page(edition())}
<h2>Contents</h2><table class="contents">{''.join(rows)}</table>
<h2>List of figures</h2><table class="figures">{''.join(figs)}</table></body></html>"""


def join(printed: list[dict], out: Path) -> None:
    """One PDF: the front matter (pages i, ii, ...), then the chapters (pages 1, 2, ...), with an outline
    entry (bookmark) at the start of each chapter."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.constants import PageLabelStyle

    writer = PdfWriter()
    for part in printed:
        start = len(writer.pages)
        writer.append(PdfReader(io.BytesIO(part["pdf"])))
        if part["page"] != "front":
            writer.add_outline_item(title=f"{part['number']} {part['title']}".strip() or title(part["page"]),
                                    page_number=start)
    front = printed[0]["pages"]
    writer.set_page_label(0, front - 1, style=PageLabelStyle.LOWERCASE_ROMAN)
    writer.set_page_label(front, len(writer.pages) - 1, style=PageLabelStyle.DECIMAL, start=1)
    writer.add_metadata({"/Title": BOOK})
    with open(out, "wb") as f:
        writer.write(f)


def check(out: Path, printed: list[dict]) -> list[str]:
    """Everything wrong with the printed book (an empty list when it is sound)."""
    from pypdf import PdfReader

    reader = PdfReader(str(out))
    texts = [page.extract_text() or "" for page in reader.pages]
    front, chapters = printed[0], printed[1:]
    body = texts[front["pages"]:]
    text = "\n".join(texts)
    flat = words(text)
    images = sum(len(page.images) for page in reader.pages)
    problems = []
    missing = [title(ch["page"]) for ch in chapters if words(title(ch["page"])) not in flat]
    if missing:
        problems.append(f"chapter titles not found in the PDF's text: {missing}")
    unnumbered = [k for k, t in enumerate(body, 1) if not re.search(rf"(?m)^\s*{k}\s*$", t)]
    if unnumbered:
        problems.append(f"{len(unnumbered)} pages do not carry their page number, e.g. {unnumbered[:5]}")
    contents = words("\n".join(texts[:front["pages"]]))
    for ch in chapters:
        entry = words(f"{ch['number']} {ch['title']} {ch['start']}")
        if entry not in contents:
            problems.append(f"the printed contents lack '{ch['number']} {ch['title']} ... {ch['start']}'")
        if words(ch["title"]) not in words(body[ch["start"] - 1]):
            problems.append(f"the contents send '{ch['title']}' to page {ch['start']}, which does not show it")
        for fig in ch["figures"]:
            at = ch["figure_pages"].get(fig["number"])
            if at is None:
                problems.append(f"{ch['page']}: {fig['number']}'s caption is not found on any of its pages")
            elif words(fig["number"]) not in words(body[at - 1]):
                problems.append(f"the list of figures sends {fig['number']} to page {at}, which does not show it")
        for w in ch["wide"]:
            problems.append(f"{ch['page']}: a {w['kind']} of {w['width']} px is wider than the printed "
                            f"{w['column']} px column, under '{w['under']}' ({w['text']!r})")
    facts = edition()
    first = words(texts[0]) if texts else ""
    lacking = [k for k in ("title", "authors", "edition", "date", "url") if words(facts[k]) not in first]
    if lacking:
        problems.append(f"the title page lacks the book's {', '.join(lacking)} (CITATION.cff)")
    for ch in chapters:
        for fig in ch["figures"]:
            shown = technical(re.split(r"(?<=[.!?])\s", fig["caption"], maxsplit=1)[0], constants())
            if shown:
                problems.append(f"the list of figures' entry of {fig['number']} shows {', '.join(shown)}: "
                                f"{fig['caption'][:100]!r}")
    if "??" in text:
        at = text.index("??")
        problems.append(f"an unresolved reference (??) in the PDF: ...{text[max(0, at - 60):at + 20]!r}")
    for ch in chapters:
        seen, page = ch["seen"], ch["page"]
        if seen["broken_images"]:
            problems.append(f"{page}: images that did not load: {seen['broken_images'][:5]}")
        if seen["math"] and (seen["mathjax"] != "ok" or seen["typeset"] < seen["math"]):
            problems.append(f"{page}: MathJax typeset {seen['typeset']} of {seen['math']} formulas ({seen['mathjax']})")
        if seen["merror"]:
            problems.append(f"{page}: TeX errors: {seen['merror'][:5]}")
    if images == 0:
        problems.append("the PDF holds no image: the figures are missing")
    formulas = sum(ch["seen"]["typeset"] for ch in chapters)
    figures = sum(len(ch["figures"]) for ch in chapters)
    print(f"{out}: {front['pages']} front pages and {len(body)} numbered pages, {len(chapters)} chapters, "
          f"{figures} numbered figures, {images} images, {formulas} formulas typeset")
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
