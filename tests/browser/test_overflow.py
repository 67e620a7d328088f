"""The overflow checks of the browser test and of `make pdf` (tools/chromium.py's OVERFLOW, tools/book_pdf.py's
too_wide) on small pages made here: they find what is too wide, and only that. Needs Debian's Chromium (run by
`make browser`, which installs it)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import book_pdf
import chromium

PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><style>
body {{ margin: 0; }} article.bd-article {{ width: {column}px; margin-left: 200px; }}
.scroll {{ overflow-x: auto; }}</style></head>
<body><article class="bd-article"><section><h2>Where it is</h2>{content}</section></article></body></html>"""
WIDE_TABLE = "<table><tr>" + "".join(f"<td style='white-space:nowrap'>column number {k}</td>" for k in range(40)) + "</tr></table>"


def open_page(browser, tmp_path, content, column=700):
    (tmp_path / "p.html").write_text(PAGE.format(column=column, content=content))
    browser.get((tmp_path / "p.html").as_uri())


@pytest.mark.parametrize("content, kind", [
    (WIDE_TABLE, "table"),
    ("<div class='scroll'>" + WIDE_TABLE + "</div>", "table"),             # hidden behind a scroll
    ("<pre>" + "x" * 400 + "</pre>", "code"),
    ("<figure><img src='data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7' style='width:1200px;height:10px'></figure>",
     "figure"),
])
def test_overflow_finds_what_is_wider_than_the_column(browser, tmp_path, content, kind):
    open_page(browser, tmp_path, content)
    found = browser.execute_script(chromium.OVERFLOW)
    assert [f["kind"] for f in found] == [kind], found
    assert found[0]["under"] == "Where it is" and found[0]["width"] > found[0]["column"]


def test_overflow_passes_what_fits(browser, tmp_path):
    open_page(browser, tmp_path, "<table><tr><td>a</td><td>b</td></tr></table><pre>short</pre>"
                                "<div class='scroll'><pre>fits</pre></div>")
    assert browser.execute_script(chromium.OVERFLOW) == []


def test_the_pdf_shrinks_a_table_that_can_fit_and_fails_one_that_cannot(browser, tmp_path):
    # a table a little wider than the printed column is shrunk to fit; one three times wider is reported
    a_little = "<table style='width:%dpx'><tr><td>a</td></tr></table>" % int(book_pdf.COLUMN_PX * 1.2)
    open_page(browser, tmp_path, a_little, column=book_pdf.COLUMN_PX)
    assert book_pdf.too_wide(browser) == []
    far = "<table style='width:%dpx'><tr><td>a</td></tr></table>" % (3 * book_pdf.COLUMN_PX)
    open_page(browser, tmp_path, far, column=book_pdf.COLUMN_PX)
    assert [f["kind"] for f in book_pdf.too_wide(browser)] == ["table"]



def test_the_pdf_prints_the_dropdowns_open_and_leaves_a_folded_set_up_cell_folded(browser, tmp_path):
    # a secondary figure folded in a dropdown on screen is on paper; the set-up cell's folded input stays folded
    content = ("<details class='sd-dropdown'><summary>More</summary><figure><figcaption>Figure 1.2</figcaption>"
               "</figure></details><details class='hide above-input'><summary>Show code</summary><pre>x</pre></details>")
    open_page(browser, tmp_path, content, column=book_pdf.COLUMN_PX)
    browser.execute_script(book_pdf.PREPARE, "", book_pdf.FOLD_AFTER, book_pdf.FOLD_KEEP)
    assert browser.execute_script("return [...document.querySelectorAll('details')].map(d => d.open)") == [True, False]

FIRST_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><style>body {{ margin: 0; }}</style></head>
<body><article class="bd-article"><section><h1>A chapter</h1>
<p><a href="#"><img alt="badge" src="data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7"></a></p>
<p>{summary}</p><div style="height:{gap}px"></div>
<figure><img style="width:300px;height:200px" src="data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7">
<figcaption>A caption that says what the figure shows.</figcaption></figure>
<div class="cell"><details class="hide"><summary>Set-up: installs the package (show the source)</summary>
<div class="cell_input"><pre>import os</pre></div></details></div>
</section></article></body></html>"""
PLAIN = "A plain summary of what this chapter finds, in words that a student reads without the code at hand."


@pytest.mark.parametrize("summary, gap, problem", [
    (PLAIN, 0, None),
    (PLAIN, 2000, "figure"),                                           # the figure below the first screen
    (PLAIN.replace("words", "<code>tv_norm_nosink</code>"), 0, "identifier"),
])
def test_first_screen_finds_the_summary_the_figure_and_the_folded_set_up(browser, tmp_path, summary, gap, problem):
    (tmp_path / "p.html").write_text(FIRST_PAGE.format(summary=summary, gap=gap))
    browser.get((tmp_path / "p.html").as_uri())
    with chromium.viewport(browser, chromium.WIDTH, 800):
        seen = browser.execute_script(chromium.FIRST_SCREEN)
    assert seen["summary"]["text"].startswith("A plain summary") and seen["summary"]["top"] < 800
    assert seen["setup"] == {"folded": True, "note": "Set-up: installs the package (show the source)"}
    assert (seen["figure"]["top"] >= 800) == (problem == "figure")
    assert bool(seen["summary"]["identifiers"]) == (problem == "identifier")
